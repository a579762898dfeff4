use fastarray::Replicate;

#[derive(Replicate)]
#[replicate(skip)]
struct Player {
    hp: u8,
}

fn main() {}
