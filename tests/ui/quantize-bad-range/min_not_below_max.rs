use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = 5.0, max = 5, bits = 8))]
    x: f32,
}

fn main() {}
