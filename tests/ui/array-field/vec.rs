use fastarray::Replicate;

#[derive(Replicate, Clone)]
struct Member {
    hp: u16,
}

#[derive(Replicate, Clone)]
struct Squad {
    tag: u8,
    #[replicate(array)]
    members: Vec<Member>,
}

fn main() {}
