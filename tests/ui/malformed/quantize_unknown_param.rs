use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(lo = 0.0, max = 1.0, bits = 8))]
    x: f32,
}

fn main() {}
