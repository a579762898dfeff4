use fastarray::Replicate;

#[derive(Replicate)]
struct Point {
    x: i32,
}

#[derive(Replicate)]
enum Target {
    None,
    At(#[replicate(flatten)] Point),
}

fn main() {}
