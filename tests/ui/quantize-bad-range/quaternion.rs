use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = -1.0, max = 1.0, bits = 8))]
    ranged: glam::Quat,
    #[replicate(quantize(bits = 2))]
    too_few_bits: glam::Quat,
    #[replicate(quantize(bits = [8, 8]))]
    listed_bits: glam::DQuat,
}

fn main() {}
