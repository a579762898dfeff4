use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(detail = 1, detail = 2)]
    x: u8,
}

fn main() {}
