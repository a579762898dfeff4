use fastarray::Replicate;

#[derive(Replicate)]
#[replicate(default_baseline)]
struct Monster {
    health: u8,
}

fn main() {}
