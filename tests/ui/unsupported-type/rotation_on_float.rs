use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(bits = 8))]
    heading: f32,
}

fn main() {}
