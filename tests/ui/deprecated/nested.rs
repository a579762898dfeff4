// `nested` is the old name of `flatten`: it still works, with a
// deprecation warning at the old name (made an error here to record it).
#![deny(deprecated)]

use fastarray::Replicate;

#[derive(Replicate)]
struct Point {
    x: i32,
    y: i32,
}

#[derive(Replicate)]
struct Body {
    hp: u8,
    #[replicate(nested)]
    at: Point,
}

fn main() {}
