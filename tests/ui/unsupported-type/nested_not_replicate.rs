use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(nested)]
    x: u32,
}

fn main() {}
