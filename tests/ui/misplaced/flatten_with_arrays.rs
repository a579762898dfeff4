use fastarray::{FastArray, Replicate};

#[derive(Replicate, Clone)]
struct Member {
    hp: u16,
}

#[derive(Replicate, Clone)]
struct Squad {
    #[replicate(array)]
    members: FastArray<Member>,
}

#[derive(Replicate, Clone)]
struct Army {
    #[replicate(flatten)]
    squad: Squad,
}

// Evaluated when the type is used; a constant evaluates it at once.
const _: u32 = Army::FIELD_COUNT;

fn main() {}
