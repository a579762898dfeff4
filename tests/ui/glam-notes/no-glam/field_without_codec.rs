use fastarray::Replicate;

struct Texture {
    id: u64,
}

#[derive(Replicate)]
struct Sprite {
    x: f32,
    texture: Texture,
}

fn main() {}
