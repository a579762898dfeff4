// The case of `../no-glam/field_without_codec.rs`, built with the `glam-0_33` feature on.
include!("../no-glam/field_without_codec.rs");
