use fastarray::Replicate;

#[derive(Replicate)]
struct Player {
    hp: u8,
    #[replicate(skip = true)]
    cache: u32,
}

fn main() {}
