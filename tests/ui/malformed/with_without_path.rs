use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(with)]
    x: u32,
}

fn main() {}
