use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(bits = 8)]
    x: f32,
}

fn main() {}
