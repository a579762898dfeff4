use fastarray::Replicate;

#[derive(Replicate)]
struct Player {
    #[replicate(skipp)]
    hp: u8,
}

fn main() {}
