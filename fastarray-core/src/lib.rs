//! The runtime of [fastarray](https://docs.rs/fastarray): replication ids,
//! the [`FastArray`] container with automatic change capture, the bit codec
//! and full snapshots.
//!
//! Most users depend on the `fastarray` crate, which re-exports everything
//! here together with `#[derive(Replicate)]`.
//!
//! ```
//! use fastarray_core::{BitReader, BitWriter, BitCodec};
//!
//! let mut bytes = Vec::new();
//! let mut writer = BitWriter::new(&mut bytes);
//! (true, 300u16, Some("hi".to_string())).encode(&mut writer).unwrap();
//! writer.finish();
//!
//! let mut reader = BitReader::new(&bytes);
//! let value = <(bool, u16, Option<String>)>::decode(&mut reader).unwrap();
//! assert_eq!(value, (true, 300, Some("hi".to_string())));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod array;
mod bits;
mod changeset;
mod codec;
mod delta;
mod encode_cache;
mod error;
mod handshake;
mod history;
mod id;
mod mask;
mod object;
mod receive;
mod replicate;
pub mod schema;
mod send;
mod sender;
#[cfg(not(feature = "serde"))]
mod serde_disabled;
mod shared;
mod snapshot;
mod tombstones;
mod wire;

pub use array::{FastArray, ItemMut};
pub use bits::{BitReader, BitWriter, MAX_DEPTH, zigzag_decode, zigzag_encode};
pub use changeset::Changeset;
pub use codec::BitCodec;
pub use codec::encodings::{FixedBits, Quantize, Quantizer, VarInt};
#[cfg(feature = "serde")]
pub use codec::{serde_decode, serde_encode};
pub use delta::{DeltaStats, Oversized};
pub use error::{DecodeError, EncodeError, SendError};
pub use handshake::SchemaMismatch;
pub use history::HISTORY_LEN;
pub use id::{ReplicationId, ReplicationKey};
pub use mask::FieldMask;
pub use object::{ArrayField, Object, ObjectMut, Replicated};
pub use receive::{ApplyReport, Callbacks};
pub use replicate::Replicate;
pub use send::SendState;

// Lets the derive's generated code (which names `::fastarray::__private`)
// compile inside this crate's own tests.
#[cfg(test)]
extern crate self as fastarray;

/// What `#[derive(Replicate)]` expands to refers to; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bits::{BitReader, BitWriter};
    pub use crate::codec::BitCodec;
    pub use crate::codec::encodings::{
        FixedBits, Quantize, Quantizer, VarInt, bits_type_hash, decode_bits, decode_varint,
        encode_bits, encode_quantized, encode_varint, varint_type_hash,
    };
    pub use crate::error::{DecodeError, EncodeError};
    pub use crate::mask::FieldMask;
    pub use crate::object::{ArrayField, Object};
    pub use crate::replicate::Replicate;
    pub use crate::schema;
    #[cfg(not(feature = "serde"))]
    pub use crate::serde_disabled::{serde_decode, serde_encode};
    #[cfg(feature = "serde")]
    pub use crate::{serde_decode, serde_encode};
    pub use ::core::default::Default;
    pub use ::core::option::Option::{self, None, Some};
    pub use ::core::result::Result::{self, Err, Ok};
}
