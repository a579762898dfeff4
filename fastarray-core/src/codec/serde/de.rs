//! Decoding: a serde `Deserializer` over the bit reader, bounded by the
//! input.

use core::fmt;

use serde::de::value::U32Deserializer;
use serde::de::{
    self, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, VariantAccess,
    Visitor,
};

use super::{MAX_DEPTH, MAX_SIZE_HINT};
use crate::bits::BitReader;
use crate::error::DecodeError;

/// The serde error type of [`Decoder`].
#[derive(Debug)]
pub(super) enum DeError {
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

pub(super) struct Decoder<'r, 'b> {
    pub(super) reader: &'r mut BitReader<'b>,
    /// Nesting levels open above the value being read.
    pub(super) depth: u32,
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
