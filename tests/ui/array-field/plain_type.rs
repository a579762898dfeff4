use fastarray::Replicate;

#[derive(Replicate, Clone, Default)]
struct Lobby {
    #[replicate(array)]
    countdown: u8,
    #[replicate(array)]
    names: Option<String>,
}

fn main() {}
