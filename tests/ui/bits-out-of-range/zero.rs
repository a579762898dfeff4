use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(bits = 0)]
    x: u8,
}

fn main() {}
