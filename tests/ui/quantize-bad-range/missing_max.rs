use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = 0.0, bits = 8))]
    x: f32,
}

fn main() {}
