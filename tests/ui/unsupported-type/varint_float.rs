use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(varint)]
    x: f32,
}

fn main() {}
