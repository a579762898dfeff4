use fastarray::{FastArray, Replicate};

#[derive(Replicate, Clone, PartialEq, Debug)]
struct Member {
    hp: u8,
}

#[derive(Replicate)]
struct S {
    #[replicate(skip, detail = 1)]
    cache: u32,
    #[replicate(array, detail = 2)]
    members: FastArray<Member>,
}

fn main() {}
