use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(bits = 7, varint)]
    x: u32,
}

fn main() {}
