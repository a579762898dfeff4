//! A [serde](https://serde.rs) bridge: [`serde_encode`] writes any
//! `Serialize` value to the bit stream and [`serde_decode`] reads it back,
//! for data that is not (or cannot be) a [`BitCodec`](super::BitCodec) type.
//!
//! The format is compact and **not self-describing**: no type tags, no field
//! names, no padding. Wherever a type has a native [`BitCodec`](super::BitCodec)
//! encoding, the serde encoding of the same value is bit-for-bit identical to
//! it, except for `usize`/`isize` (see the table).
//!
//! (This module is private: users read the docs of [`serde_encode`] and
//! [`serde_decode`], which repeat the table and the limits. Keep them in step.)
//!
//! | serde data model (Rust types) | encoding |
//! |---|---|
//! | `bool` | 1 bit |
//! | `u8`…`u64`, `i8`…`i64` | natural width, two's complement |
//! | `u128`, `i128` | 128 bits, low 64 bits first |
//! | `usize`, `isize` | 64 bits: serde hands them over as `u64`/`i64` (the native codec writes a varint) |
//! | `f32`, `f64` | raw IEEE-754 bits |
//! | `char` | 21 bits, validated on decode |
//! | `str`, `String`, bytes | [varint](crate::BitWriter::write_varint) byte length, then the bytes; UTF-8 validated on decode |
//! | `Option<T>` | 1 bit, then the value if present |
//! | `()`, unit struct, `PhantomData` | 0 bits |
//! | newtype struct | the inner value |
//! | seq (`Vec`, `VecDeque`, sets, …) | varint length, then the elements |
//! | map (`HashMap`, `BTreeMap`, …) | varint length, then key, value, key, value, … |
//! | tuple, `[T; N]`, tuple struct, struct | the fields in order: no length, no names |
//! | enum variant | varint variant index, then the content as above (nothing for a unit variant) |
//!
//! # What cannot be encoded
//!
//! Because nothing on the wire says what comes next, the decoder must be told
//! by the type, so these are refused with [`EncodeError::Serde`] or
//! [`DecodeError::Serde`]:
//!
//! * anything that needs `deserialize_any`: `#[serde(untagged)]`,
//!   internally tagged (`tag = "…"`) and adjacently tagged enums,
//!   `#[serde(flatten)]`, dynamically typed values;
//! * a sequence or map whose length is not known before its first element
//!   (`serialize_seq(None)`), or whose element count differs from the length
//!   it announced;
//! * a field left out by `#[serde(skip_serializing_if = "…")]` (the decoder
//!   would read the next field in its place);
//! * a sequence element or map entry that encodes to zero bits (a `()` or an
//!   empty struct): its count could not be checked against the input on decode.
//!
//! # Decoding untrusted input
//!
//! [`serde_decode`] never panics on any input (a `Deserialize` impl of your
//! own can still panic) and bounds what it allocates by the input size:
//!
//! * every claimed length is checked against the bits that remain before
//!   anything is allocated for it (a byte string needs 8 bits per byte, a
//!   sequence element or map entry at least one bit);
//! * the size hint handed to serde is capped at 4 096 elements, so a
//!   hand-written visitor that reserves its size hint cannot be made to
//!   reserve more;
//! * nesting is limited to 128 levels (each `Some`, newtype struct, sequence,
//!   map, tuple, struct and enum value opens one), so a recursive type cannot
//!   be made to overflow the stack.
//!
//! Errors a `Deserialize` impl raises (an unknown variant index, a value out of
//! its range, a missing element) are [`DecodeError::Serde`] with the bit
//! offset of the start of the value that was rejected.

mod de;
mod ser;

use serde::Serialize;
use serde::de::DeserializeOwned;

use self::de::{DeError, Decoder};
use self::ser::{Encoder, SerError};
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError};

/// Deepest nesting [`serde_decode`] accepts.
const MAX_DEPTH: u32 = 128;

/// Largest size hint handed to a `SeqAccess`/`MapAccess` visitor.
const MAX_SIZE_HINT: usize = 4096;

/// Writes any `Serialize` value to the bit stream.
///
/// The format is compact and not self-describing (no type tags, no field
/// names), and where a type has a native [`BitCodec`](crate::BitCodec) it
/// writes the same bits, except for `usize`/`isize`:
///
/// | serde data model (Rust types) | encoding |
/// |---|---|
/// | `bool` | 1 bit |
/// | `u8`…`u64`, `i8`…`i64` | natural width, two's complement |
/// | `u128`, `i128` | 128 bits, low 64 bits first |
/// | `usize`, `isize` | 64 bits: serde hands them over as `u64`/`i64` (the native codec writes a varint) |
/// | `f32`, `f64` | raw IEEE-754 bits |
/// | `char` | 21 bits, validated on decode |
/// | `str`, `String`, bytes | [varint](crate::BitWriter::write_varint) byte length, then the bytes; UTF-8 validated on decode |
/// | `Option<T>` | 1 bit, then the value if present |
/// | `()`, unit struct, `PhantomData` | 0 bits |
/// | newtype struct | the inner value |
/// | seq (`Vec`, `VecDeque`, sets, …) | varint length, then the elements |
/// | map (`HashMap`, `BTreeMap`, …) | varint length, then key, value, key, value, … |
/// | tuple, `[T; N]`, tuple struct, struct | the fields in order: no length, no names |
/// | enum variant | varint variant index, then the content as above (nothing for a unit variant) |
///
/// # Errors
/// [`EncodeError::Serde`] if the value's `Serialize` impl fails or uses
/// something the format cannot encode:
///
/// * a sequence or map whose length is not known before its first element
///   (`serialize_seq(None)`, `#[serde(flatten)]`), or whose element count
///   differs from the length it announced;
/// * a field left out by `#[serde(skip_serializing_if = "…")]`;
/// * a sequence element or map entry that encodes to zero bits (a `()` or an
///   empty struct): its count could not be checked against the input on decode.
///
/// Untagged, internally and adjacently tagged enums encode, but
/// [`serde_decode`] cannot read them back. The bits written before a failure
/// stay in the writer: discard its output.
///
/// # Example
///
/// ```
/// use fastarray_core::{BitReader, BitWriter, serde_decode, serde_encode};
///
/// #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Chat {
///     from: u16,
///     text: String,
///     reply_to: Option<u32>,
/// }
///
/// let chat = Chat { from: 7, text: "gg".into(), reply_to: None };
/// let mut bytes = Vec::new();
/// let mut writer = BitWriter::new(&mut bytes);
/// serde_encode(&chat, &mut writer).unwrap();
/// // 16 bits, varint(2) = 4 bits + 2 bytes, 1 bit for `None`.
/// assert_eq!(writer.finish(), 16 + 4 + 16 + 1);
///
/// let mut reader = BitReader::new(&bytes);
/// assert_eq!(serde_decode::<Chat>(&mut reader), Ok(chat));
/// ```
pub fn serde_encode<T: Serialize + ?Sized>(
    value: &T,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    value
        .serialize(&mut Encoder { writer })
        .map_err(|SerError(error)| error)
}

/// Reads a value written by [`serde_encode`].
///
/// Built for untrusted input: it never panics (unless a `Deserialize` impl of
/// your own does), checks every claimed length against the bits that remain
/// before allocating for it, hands serde size hints of at most 4 096
/// elements, and refuses nesting deeper than 128 levels (each `Some`, newtype
/// struct, sequence, map, tuple, struct and enum value opens one).
///
/// # Errors
/// The [`DecodeError`] a native codec would give for the same fault (input
/// too short, a length larger than the input, an invalid `char` or UTF-8,
/// an overlong varint), or [`DecodeError::Serde`] for a type the format cannot
/// decode (`deserialize_any`), nesting deeper than 128 levels, or an error
/// raised by a `Deserialize` impl. On error the reader is left somewhere
/// inside the value.
///
/// # Example
///
/// ```
/// use std::collections::BTreeMap;
///
/// use fastarray_core::{BitReader, BitWriter, DecodeError, serde_decode, serde_encode};
///
/// #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// enum Order {
///     Hold,
///     MoveTo { x: i32, y: i32 },
///     Stock(BTreeMap<String, u8>),
/// }
///
/// let orders = vec![
///     Order::MoveTo { x: -3, y: 12 },
///     Order::Stock(BTreeMap::from([("ammo".to_string(), 30)])),
///     Order::Hold,
/// ];
/// let mut bytes = Vec::new();
/// let mut writer = BitWriter::new(&mut bytes);
/// serde_encode(&orders, &mut writer).unwrap();
/// let written = writer.finish();
///
/// let mut reader = BitReader::new(&bytes);
/// assert_eq!(serde_decode::<Vec<Order>>(&mut reader), Ok(orders));
/// assert_eq!(reader.bit_offset(), written);
///
/// // A cut-off message is an error, not a panic.
/// let mut reader = BitReader::new(&bytes[..bytes.len() / 2]);
/// assert!(matches!(
///     serde_decode::<Vec<Order>>(&mut reader),
///     Err(DecodeError::UnexpectedEnd { .. })
/// ));
/// ```
pub fn serde_decode<T: DeserializeOwned>(reader: &mut BitReader<'_>) -> Result<T, DecodeError> {
    let start = reader.bit_offset();
    T::deserialize(&mut Decoder { reader, depth: 0 }).map_err(|error| match error {
        DeError::Decode(error) => error,
        // Every deserialize method locates the errors raised inside it, so
        // this is only a fallback.
        DeError::Custom(message) => DecodeError::Serde {
            bit_offset: start,
            message,
        },
    })
}
