use fastarray::Replicate;

#[derive(Replicate)]
#[replicate(crate = "fast array")]
struct Player {
    hp: u8,
}

fn main() {}
