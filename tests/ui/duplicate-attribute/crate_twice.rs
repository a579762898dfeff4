use fastarray::Replicate;

#[derive(Replicate)]
#[replicate(crate = "fastarray")]
#[replicate(crate = "fastarray")]
struct Player {
    hp: u8,
}

fn main() {}
