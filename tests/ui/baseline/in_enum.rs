use fastarray::Replicate;

#[derive(Replicate, Default)]
#[replicate(default_baseline)]
enum Stance {
    #[default]
    Standing,
    Crouching(u8),
}

fn main() {}
