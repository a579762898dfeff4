#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use fastarray_core::*;
/// Derives [`Replicate`](trait@Replicate) and [`BitCodec`] for a struct;
/// see the `fastarray-derive` crate for its attributes.
pub use fastarray_derive::Replicate;
