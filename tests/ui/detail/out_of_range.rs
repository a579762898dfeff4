use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(detail = 8)]
    x: u8,
}

fn main() {}
