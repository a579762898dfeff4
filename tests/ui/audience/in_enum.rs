use fastarray::Replicate;

#[derive(Replicate)]
enum E {
    A {
        #[replicate(owner_only)]
        x: u8,
        #[replicate(initial_only)]
        y: u8,
    },
}

fn main() {}
