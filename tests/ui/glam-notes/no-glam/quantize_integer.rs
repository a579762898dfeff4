use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = 0.0, max = 1.0, bits = 8))]
    x: u8,
}

fn main() {}
