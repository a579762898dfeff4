use fastarray::Replicate;

#[derive(Replicate)]
struct Player {
    hp: u8,
    #[replicate(skip)]
    #[replicate(skip)]
    cache: u32,
}

fn main() {}
