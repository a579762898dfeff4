use fastarray::Replicate;

#[derive(Replicate)]
struct Body {
    position: glam::Vec3,
}

fn main() {}
