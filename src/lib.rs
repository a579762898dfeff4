#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use fastarray_core::*;
/// Derives [`Replicate`](trait@Replicate) and [`BitCodec`] for a struct;
/// see the `fastarray-derive` crate for its attributes.
pub use fastarray_derive::Replicate;

/// The wire format and the reliability design, with a worked example in
/// bits (this is `WIRE.md`; its example runs as a test).
#[doc = include_str!("../WIRE.md")]
pub mod wire_format {}
