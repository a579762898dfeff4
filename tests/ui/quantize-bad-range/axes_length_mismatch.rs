use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = [-1.0, -1.0, 0.0], max = [1.0, 1.0], bits = 8))]
    position: [f32; 3],
}

fn main() {}
