use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(bits = 65)]
    x: u64,
}

fn main() {}
