use fastarray::Replicate;

type Heading = f32;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(bits = 8))]
    heading: Heading,
}

fn main() {}
