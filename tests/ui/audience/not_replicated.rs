use fastarray::{FastArray, Replicate};

#[derive(Replicate, Clone, PartialEq, Debug)]
struct Member {
    hp: u8,
}

#[derive(Replicate)]
struct S {
    #[replicate(skip, owner_only)]
    cache: u32,
    #[replicate(array, skip_owner)]
    members: FastArray<Member>,
    #[replicate(skip, initial_only)]
    other: u32,
}

fn main() {}
