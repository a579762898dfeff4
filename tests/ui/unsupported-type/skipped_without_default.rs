use fastarray::Replicate;

struct Handle(u32);

#[derive(Replicate)]
struct Sprite {
    x: f32,
    #[replicate(skip)]
    handle: Handle,
}

fn main() {}
