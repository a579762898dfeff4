use fastarray::Replicate;

#[derive(Replicate)]
union Bits {
    int: u32,
    float: f32,
}

fn main() {}
