use fastarray::{FastArray, Replicate};

#[derive(Replicate, Clone)]
struct Chat {
    #[replicate(array)]
    lines: FastArray<String>,
}

fn main() {}
