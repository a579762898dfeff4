use fastarray::Replicate;
use std::time::Duration;

#[derive(Replicate)]
struct Cooldown {
    left: Duration,
}

fn main() {}
