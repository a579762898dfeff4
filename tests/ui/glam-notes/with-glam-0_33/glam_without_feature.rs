// The case of `../no-glam/glam_without_feature.rs`, built with the `glam-0_33` feature on.
include!("../no-glam/glam_without_feature.rs");
