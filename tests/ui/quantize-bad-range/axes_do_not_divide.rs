use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = -1.0, max = [1.0, 2.0, 3.0], bits = 8))]
    corners: [f32; 4],
    #[replicate(quantize(min = [0.0, 0.0], max = 1.0, bits = 8))]
    point: glam::Vec3,
}

fn main() {}
