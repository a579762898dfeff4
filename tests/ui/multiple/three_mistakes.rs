use fastarray::Replicate;

// One build reports every mistake, and nothing else: the stub impls the
// derive emits on error keep `needs_replicate` below from adding a
// "trait not implemented" error on top.
#[derive(Replicate)]
#[replicate(skip)]
struct Player {
    #[replicate(bitz = 7)]
    hp: u8,
    #[replicate(skip, skip)]
    cache: u32,
}

fn needs_replicate<T: fastarray::Replicate>() {}

fn main() {
    needs_replicate::<Player>();
}
