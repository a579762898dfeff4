use fastarray::Replicate;

#[derive(Replicate)]
enum Never {}

fn needs_replicate<T: fastarray::Replicate>() {}

fn main() {
    needs_replicate::<Never>();
}
