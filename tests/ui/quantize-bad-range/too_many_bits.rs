use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = -1, max = 1, bits = 33))]
    x: f64,
}

fn main() {}
