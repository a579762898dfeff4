//! Encoding: a serde `Serializer` over the bit writer.

use core::fmt;

use serde::ser::{self, Serialize};

use crate::bits::BitWriter;
use crate::error::EncodeError;

/// The serde error type of [`Encoder`]: an [`EncodeError`] (kept private so
/// that `EncodeError` does not implement serde's traits publicly).
#[derive(Debug)]
pub(super) struct SerError(pub(super) EncodeError);

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

pub(super) struct Encoder<'w, 'b> {
    pub(super) writer: &'w mut BitWriter<'b>,
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
pub(super) struct Counted<'a, 'w, 'b> {
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
