use fastarray::{FastArray, Replicate};

#[derive(Replicate, Clone)]
struct Unit {
    hp: u8,
}

#[derive(Replicate)]
enum Side {
    Empty,
    Army(#[replicate(array)] FastArray<Unit>),
}

fn main() {}
