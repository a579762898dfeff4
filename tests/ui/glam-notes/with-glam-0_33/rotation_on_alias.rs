// The case of `../no-glam/rotation_on_alias.rs`, built with the `glam-0_33` feature on.
include!("../no-glam/rotation_on_alias.rs");
