use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(bits = 9)]
    x: u8,
}

fn main() {}
