use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = [-1.0, 5.0], max = [1.0, 5.0], bits = 8))]
    position: (f32, f32),
    #[replicate(quantize(min = 0.0, max = 1.0, bits = [8, 33]))]
    pair: [f32; 2],
    #[replicate(quantize(min = [], max = 1.0, bits = 8))]
    empty: f32,
}

fn main() {}
