// An error about `flatten` names the attribute as written.
use fastarray::Replicate;

#[derive(Replicate)]
struct Point {
    x: i32,
}

#[derive(Replicate)]
enum Target {
    None,
    At(#[replicate(nested)] Point),
}

fn main() {}
