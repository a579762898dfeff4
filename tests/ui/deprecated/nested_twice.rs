// `nested` and `flatten` are one attribute: writing both is a duplicate.
use fastarray::Replicate;

#[derive(Replicate)]
struct Point {
    x: i32,
}

#[derive(Replicate)]
struct Body {
    #[replicate(flatten, nested)]
    at: Point,
}

fn main() {}
