use fastarray::{FastArray, Replicate};

#[derive(Replicate, Clone, PartialEq, Default)]
struct Slot {
    item: u16,
}

#[derive(Replicate, Default)]
#[replicate(default_baseline)]
struct Hero {
    health: u8,
    #[replicate(array)]
    slots: FastArray<Slot>,
}

fn main() {}
