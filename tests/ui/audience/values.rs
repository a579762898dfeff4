use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(owner_only = true)]
    x: u8,
    #[replicate(initial_only(1))]
    y: u8,
    #[replicate(skip_owner, skip_owner)]
    z: u8,
    #[replicate(initial_only, initial_only)]
    w: u8,
}

fn main() {}
