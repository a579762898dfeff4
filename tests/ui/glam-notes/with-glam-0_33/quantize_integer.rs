// The case of `../no-glam/quantize_integer.rs`, built with the `glam-0_33` feature on.
include!("../no-glam/quantize_integer.rs");
