use fastarray::Replicate;

#[derive(Replicate)]
enum Shape {
    Circle { radius: f32 },
    Square(f32),
}

fn needs_replicate<T: fastarray::Replicate>() {}

fn main() {
    needs_replicate::<Shape>();
}
