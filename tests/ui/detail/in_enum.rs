use fastarray::Replicate;

#[derive(Replicate)]
enum E {
    A {
        #[replicate(detail = 1)]
        x: u8,
    },
}

fn main() {}
