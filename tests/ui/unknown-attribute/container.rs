use fastarray::Replicate;

#[derive(Replicate)]
#[replicate(rename = "Hero")]
struct Player {
    hp: u8,
}

fn main() {}
