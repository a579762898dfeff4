use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(serde)]
    x: Vec<u8>,
}

fn main() {}
