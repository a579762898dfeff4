use fastarray::Replicate;

#[derive(Replicate)]
struct S {
    #[replicate(owner_only, skip_owner)]
    x: u8,
}

fn main() {}
