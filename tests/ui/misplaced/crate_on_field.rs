use fastarray::Replicate;

#[derive(Replicate)]
struct Player {
    #[replicate(crate = "fastarray")]
    hp: u8,
}

fn main() {}
