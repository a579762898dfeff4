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

use core::fmt;

use serde::de::value::U32Deserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::ser::{self, Serialize};

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

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

/// The serde error type of [`Encoder`]: an [`EncodeError`] (kept private so
/// that `EncodeError` does not implement serde's traits publicly).
#[derive(Debug)]
struct SerError(EncodeError);

impl SerError {
    fn refuse(message: impl Into<String>) -> Self {
        Self(EncodeError::Serde(message.into()))
    }
}

impl fmt::Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self::refuse(message.to_string())
    }
}

struct Encoder<'w, 'b> {
    writer: &'w mut BitWriter<'b>,
}

impl Encoder<'_, '_> {
    fn write_len(&mut self, len: usize) {
        self.writer.write_varint(len as u64);
    }

    fn write_variant(&mut self, index: u32) {
        self.writer.write_varint(u64::from(index));
    }

    fn write_bytes(&mut self, bytes: &[u8]) {
        self.write_len(bytes.len());
        self.writer.write_bytes(bytes);
    }
}

/// A sequence or map being written: counts the elements against the length
/// written up front and refuses elements that encode to zero bits.
struct Counted<'a, 'w, 'b> {
    encoder: &'a mut Encoder<'w, 'b>,
    /// "sequence" or "map", for errors.
    kind: &'static str,
    declared: usize,
    written: usize,
    /// Bit count at the start of the current element (the key, for a map).
    element_start: u64,
}

impl Counted<'_, '_, '_> {
    fn start_element(&mut self) {
        self.element_start = self.encoder.writer.bits_written();
    }

    fn end_element(&mut self) -> Result<(), SerError> {
        if self.encoder.writer.bits_written() == self.element_start {
            return Err(SerError::refuse(format!(
                "a {} element encoded to zero bits: the length of a collection of \
                 zero-bit values (`()`, unit or empty structs) cannot be checked on decode",
                self.kind
            )));
        }
        self.written += 1;
        Ok(())
    }

    fn end(self) -> Result<(), SerError> {
        if self.written != self.declared {
            return Err(SerError::refuse(format!(
                "a {} announced {} element(s) but serialized {}",
                self.kind, self.declared, self.written
            )));
        }
        Ok(())
    }
}

fn unknown_length(kind: &str) -> SerError {
    SerError::refuse(format!(
        "a {kind} of unknown length cannot be encoded: the format writes the length first"
    ))
}

macro_rules! serialize_int {
    ($($method:ident: $ty:ty as $unsigned:ty),* $(,)?) => {$(
        fn $method(self, value: $ty) -> Result<(), SerError> {
            self.writer.write_bits(value as $unsigned as u64, <$ty>::BITS);
            Ok(())
        }
    )*};
}

impl<'a, 'w, 'b> ser::Serializer for &'a mut Encoder<'w, 'b> {
    type Ok = ();
    type Error = SerError;
    type SerializeSeq = Counted<'a, 'w, 'b>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Counted<'a, 'w, 'b>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_bool(self, value: bool) -> Result<(), SerError> {
        self.writer.write_bool(value);
        Ok(())
    }

    serialize_int!(
        serialize_u8: u8 as u8,
        serialize_u16: u16 as u16,
        serialize_u32: u32 as u32,
        serialize_u64: u64 as u64,
        serialize_i8: i8 as u8,
        serialize_i16: i16 as u16,
        serialize_i32: i32 as u32,
        serialize_i64: i64 as u64,
    );

    fn serialize_u128(self, value: u128) -> Result<(), SerError> {
        self.writer.write_bits(value as u64, 64);
        self.writer.write_bits((value >> 64) as u64, 64);
        Ok(())
    }

    fn serialize_i128(self, value: i128) -> Result<(), SerError> {
        self.serialize_u128(value as u128)
    }

    fn serialize_f32(self, value: f32) -> Result<(), SerError> {
        self.writer.write_bits(u64::from(value.to_bits()), 32);
        Ok(())
    }

    fn serialize_f64(self, value: f64) -> Result<(), SerError> {
        self.writer.write_bits(value.to_bits(), 64);
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), SerError> {
        self.writer.write_bits(u64::from(u32::from(value)), 21);
        Ok(())
    }

    fn serialize_str(self, value: &str) -> Result<(), SerError> {
        self.write_bytes(value.as_bytes());
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), SerError> {
        self.write_bytes(value);
        Ok(())
    }

    fn serialize_none(self) -> Result<(), SerError> {
        self.writer.write_bool(false);
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), SerError> {
        self.writer.write_bool(true);
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), SerError> {
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), SerError> {
        Ok(())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
    ) -> Result<(), SerError> {
        self.write_variant(variant_index);
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        self.write_variant(variant_index);
        value.serialize(self)
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, SerError> {
        let declared = len.ok_or_else(|| unknown_length("sequence"))?;
        self.write_len(declared);
        Ok(Counted {
            encoder: self,
            kind: "sequence",
            declared,
            written: 0,
            element_start: 0,
        })
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self, SerError> {
        Ok(self)
    }

    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, SerError> {
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, SerError> {
        self.write_variant(variant_index);
        Ok(self)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, SerError> {
        let declared = len.ok_or_else(|| unknown_length("map"))?;
        self.write_len(declared);
        Ok(Counted {
            encoder: self,
            kind: "map",
            declared,
            written: 0,
            element_start: 0,
        })
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, SerError> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        variant_index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, SerError> {
        self.write_variant(variant_index);
        Ok(self)
    }
}

impl ser::SerializeSeq for Counted<'_, '_, '_> {
    type Ok = ();
    type Error = SerError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        self.start_element();
        value.serialize(&mut *self.encoder)?;
        self.end_element()
    }

    fn end(self) -> Result<(), SerError> {
        Counted::end(self)
    }
}

impl ser::SerializeMap for Counted<'_, '_, '_> {
    type Ok = ();
    type Error = SerError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), SerError> {
        self.start_element();
        key.serialize(&mut *self.encoder)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        value.serialize(&mut *self.encoder)?;
        self.end_element()
    }

    fn end(self) -> Result<(), SerError> {
        Counted::end(self)
    }
}

/// Tuples, structs and their variants: the fields in order, nothing else.
macro_rules! serialize_fields {
    ($($trait:ident :: $method:ident ($($key:ident)?)),* $(,)?) => {$(
        impl ser::$trait for &mut Encoder<'_, '_> {
            type Ok = ();
            type Error = SerError;

            fn $method<T: Serialize + ?Sized>(
                &mut self,
                $($key: &'static str,)?
                value: &T,
            ) -> Result<(), SerError> {
                value.serialize(&mut **self)
            }

            fn end(self) -> Result<(), SerError> {
                Ok(())
            }
        }
    )*};
}

serialize_fields!(
    SerializeTuple::serialize_element(),
    SerializeTupleStruct::serialize_field(),
    SerializeTupleVariant::serialize_field(),
);

/// A field that `skip_serializing_if` leaves out: the decoder would read the
/// next field in its place, so it is refused.
fn skipped_field(key: &'static str) -> SerError {
    SerError::refuse(format!(
        "field `{key}` was skipped (`skip_serializing_if`): the format has no field names, \
         so every field must be written"
    ))
}

impl ser::SerializeStruct for &mut Encoder<'_, '_> {
    type Ok = ();
    type Error = SerError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        value.serialize(&mut **self)
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), SerError> {
        Err(skipped_field(key))
    }

    fn end(self) -> Result<(), SerError> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Encoder<'_, '_> {
    type Ok = ();
    type Error = SerError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        value.serialize(&mut **self)
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), SerError> {
        Err(skipped_field(key))
    }

    fn end(self) -> Result<(), SerError> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------

/// The serde error type of [`Decoder`].
#[derive(Debug)]
enum DeError {
    /// A located error.
    Decode(DecodeError),
    /// An error a `Deserialize` impl raised through `de::Error::custom` (or
    /// `invalid_type`, `missing_field`, …), which does not know where it is;
    /// the deserialize method it returns through turns it into a located
    /// [`DecodeError::Serde`].
    Custom(String),
}

impl DeError {
    fn located(self, bit_offset: u64) -> Self {
        match self {
            Self::Custom(message) => Self::Decode(DecodeError::Serde {
                bit_offset,
                message,
            }),
            located => located,
        }
    }
}

impl From<DecodeError> for DeError {
    fn from(error: DecodeError) -> Self {
        Self::Decode(error)
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Decode(error) => fmt::Display::fmt(error, f),
            Self::Custom(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self::Custom(message.to_string())
    }
}

struct Decoder<'r, 'b> {
    reader: &'r mut BitReader<'b>,
    /// Nesting levels open above the value being read.
    depth: u32,
}

impl Decoder<'_, '_> {
    /// A located [`DecodeError::Serde`] at the current position.
    fn error(&self, message: impl Into<String>) -> DeError {
        DeError::Decode(DecodeError::Serde {
            bit_offset: self.reader.bit_offset(),
            message: message.into(),
        })
    }

    /// Runs `read`, locating the errors it raises at the bit where it started.
    fn located<R>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<R, DeError>,
    ) -> Result<R, DeError> {
        let start = self.reader.bit_offset();
        read(self).map_err(|error| error.located(start))
    }

    /// [`located`](Self::located), one nesting level deeper.
    fn nested<R>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Result<R, DeError>,
    ) -> Result<R, DeError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(format!("nesting too deep: more than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let result = self.located(read);
        self.depth -= 1;
        result
    }

    /// Reads a sequence or map length, checked against the input (every
    /// element or entry takes at least one bit, which the encoder enforces).
    fn read_len(&mut self) -> Result<usize, DeError> {
        let claimed = self.reader.read_varint()?;
        Ok(self.reader.check_len(claimed, 1)?)
    }

    /// Reads a length-prefixed byte string; returns it with the bit offset of
    /// its first byte.
    fn read_bytes(&mut self) -> Result<(Vec<u8>, u64), DeError> {
        let claimed = self.reader.read_varint()?;
        let len = self.reader.check_len(claimed, 8)?;
        let bit_offset = self.reader.bit_offset();
        let mut bytes = Vec::new();
        self.reader.read_bytes_into(len, &mut bytes)?;
        Ok((bytes, bit_offset))
    }

    fn read_string(&mut self) -> Result<String, DeError> {
        let (bytes, bit_offset) = self.read_bytes()?;
        String::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8 { bit_offset }.into())
    }

    fn read_u128(&mut self) -> Result<u128, DeError> {
        let low = u128::from(self.reader.read_bits(64)?);
        let high = u128::from(self.reader.read_bits(64)?);
        Ok(high << 64 | low)
    }

    /// Hands `len` elements to `visitor` and checks that it read them all.
    fn visit_elements<'de, V: Visitor<'de>>(
        &mut self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let mut access = Elements {
            decoder: self,
            remaining: len,
        };
        let value = visitor.visit_seq(&mut access)?;
        unread(access.remaining, len)?;
        Ok(value)
    }

    /// The error for a format feature this decoder cannot provide.
    fn not_self_describing(&self, what: &str) -> DeError {
        self.error(format!(
            "the bit format is not self-describing: {what} is not supported \
             (untagged, internally or adjacently tagged enums, `#[serde(flatten)]` and \
             dynamically typed values need it)"
        ))
    }
}

/// Errs if a visitor left elements of a sequence or map unread: the rest of
/// the input would be read out of step.
fn unread(remaining: usize, len: usize) -> Result<(), DeError> {
    if remaining == 0 {
        Ok(())
    } else {
        Err(DeError::Custom(format!(
            "the Deserialize impl read {} of {len} element(s)",
            len - remaining
        )))
    }
}

macro_rules! deserialize_int {
    ($($method:ident => $visit:ident: $ty:ty as $unsigned:ty),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            self.located(|decoder| {
                let value = decoder.reader.read_bits(<$ty>::BITS)? as $unsigned as $ty;
                visitor.$visit(value)
            })
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Decoder<'_, '_> {
    type Error = DeError;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, DeError> {
        Err(self.not_self_describing("`deserialize_any`"))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, DeError> {
        Err(self.not_self_describing("`deserialize_ignored_any`"))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, DeError> {
        Err(self.not_self_describing("`deserialize_identifier` (field and variant names)"))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let value = decoder.reader.read_bool()?;
            visitor.visit_bool(value)
        })
    }

    deserialize_int!(
        deserialize_u8 => visit_u8: u8 as u8,
        deserialize_u16 => visit_u16: u16 as u16,
        deserialize_u32 => visit_u32: u32 as u32,
        deserialize_u64 => visit_u64: u64 as u64,
        deserialize_i8 => visit_i8: i8 as u8,
        deserialize_i16 => visit_i16: i16 as u16,
        deserialize_i32 => visit_i32: i32 as u32,
        deserialize_i64 => visit_i64: i64 as u64,
    );

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let value = decoder.read_u128()?;
            visitor.visit_u128(value)
        })
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let value = decoder.read_u128()? as i128;
            visitor.visit_i128(value)
        })
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let value = f32::from_bits(decoder.reader.read_bits(32)? as u32);
            visitor.visit_f32(value)
        })
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let value = f64::from_bits(decoder.reader.read_bits(64)?);
            visitor.visit_f64(value)
        })
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let bit_offset = decoder.reader.bit_offset();
            let value = decoder.reader.read_bits(21)? as u32;
            let value =
                char::from_u32(value).ok_or(DecodeError::InvalidChar { bit_offset, value })?;
            visitor.visit_char(value)
        })
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let value = decoder.read_string()?;
            visitor.visit_str(&value)
        })
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let value = decoder.read_string()?;
            visitor.visit_string(value)
        })
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let (value, _) = decoder.read_bytes()?;
            visitor.visit_bytes(&value)
        })
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            let (value, _) = decoder.read_bytes()?;
            visitor.visit_byte_buf(value)
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|decoder| {
            if decoder.reader.read_bool()? {
                decoder.nested(|decoder| visitor.visit_some(decoder))
            } else {
                visitor.visit_none()
            }
        })
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.located(|_| visitor.visit_unit())
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.located(|_| visitor.visit_unit())
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.nested(|decoder| visitor.visit_newtype_struct(decoder))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.nested(|decoder| {
            let len = decoder.read_len()?;
            decoder.visit_elements(len, visitor)
        })
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.nested(|decoder| decoder.visit_elements(len, visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.nested(|decoder| decoder.visit_elements(len, visitor))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.nested(|decoder| {
            let len = decoder.read_len()?;
            let mut access = Entries {
                decoder,
                remaining: len,
            };
            let value = visitor.visit_map(&mut access)?;
            unread(access.remaining, len)?;
            Ok(value)
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.nested(|decoder| decoder.visit_elements(fields.len(), visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.nested(|decoder| visitor.visit_enum(decoder))
    }
}

/// The elements of a sequence, tuple or struct.
struct Elements<'a, 'r, 'b> {
    decoder: &'a mut Decoder<'r, 'b>,
    remaining: usize,
}

impl<'de> SeqAccess<'de> for Elements<'_, '_, '_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        seed.deserialize(&mut *self.decoder).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining.min(MAX_SIZE_HINT))
    }
}

/// The entries of a map.
struct Entries<'a, 'r, 'b> {
    decoder: &'a mut Decoder<'r, 'b>,
    remaining: usize,
}

impl<'de> MapAccess<'de> for Entries<'_, '_, '_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        seed.deserialize(&mut *self.decoder).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        seed.deserialize(&mut *self.decoder)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining.min(MAX_SIZE_HINT))
    }
}

impl<'de> EnumAccess<'de> for &mut Decoder<'_, '_> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        let bit_offset = self.reader.bit_offset();
        let index = self.reader.read_varint()?;
        let index = u32::try_from(index).map_err(|_| DecodeError::VarintOutOfRange {
            bit_offset,
            target: "u32",
        })?;
        let index: U32Deserializer<DeError> = index.into_deserializer();
        // An unknown index is a custom error, located by `deserialize_enum`
        // at the start of the index.
        let value = seed.deserialize(index)?;
        Ok((value, self))
    }
}

impl<'de> VariantAccess<'de> for &mut Decoder<'_, '_> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, DeError> {
        self.visit_elements(len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.visit_elements(fields.len(), visitor)
    }
}
