use fastarray::Replicate;

#[derive(Replicate)]
#[replicate(crate)]
struct Player {
    hp: u8,
}

fn main() {}
