use fastarray::Replicate;

#[derive(Replicate, Default)]
#[replicate(default_baseline = true)]
struct Monster {
    health: u8,
}

#[derive(Replicate, Default)]
#[replicate(default_baseline, default_baseline)]
struct Twice {
    health: u8,
}

fn main() {}
