use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(flatten)]
    x: u32,
}

fn main() {}
