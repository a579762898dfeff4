// The case of `../no-glam/foreign_type.rs`, built with the `glam-0_33` feature on.
include!("../no-glam/foreign_type.rs");
