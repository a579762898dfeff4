use fastarray::Replicate;

type Corners = [f32; 4];

#[derive(Replicate)]
struct S {
    #[replicate(quantize(min = -1.0, max = [1.0, 2.0, 3.0], bits = 8))]
    corners: Corners,
}

fn main() {}
