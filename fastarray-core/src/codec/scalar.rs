//! `BitCodec` for bools, integers, floats and chars.

use super::BitCodec;
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError};
use crate::schema;

impl BitCodec for bool {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("bool", &[]);
    const NESTS: bool = false;
    const FIXED_BITS: Option<u64> = Some(1);

    #[inline]
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_bool(*self);
        Ok(())
    }

    #[inline]
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        reader.read_bool()
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

macro_rules! fixed_width_int {
    ($($ty:ty => $unsigned:ty),* $(,)?) => {$(
        impl BitCodec for $ty {
            const MIN_BITS: u64 = <$ty>::BITS as u64;
            const TYPE_HASH: u64 = schema::named(stringify!($ty), &[]);
            const NESTS: bool = false;
            const FIXED_BITS: Option<u64> = Some(<$ty>::BITS as u64);

            #[inline]
            fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
                writer.write_bits(*self as $unsigned as u64, <$ty>::BITS);
                Ok(())
            }

            #[inline]
            fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
                Ok(reader.read_bits(<$ty>::BITS)? as $unsigned as $ty)
            }

            #[inline]
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}

fixed_width_int!(
    u8 => u8, u16 => u16, u32 => u32, u64 => u64,
    i8 => u8, i16 => u16, i32 => u32, i64 => u64,
);

macro_rules! wide_int {
    ($($ty:ty),*) => {$(
        impl BitCodec for $ty {
            const MIN_BITS: u64 = 128;
            const TYPE_HASH: u64 = schema::named(stringify!($ty), &[]);
            const NESTS: bool = false;
            const FIXED_BITS: Option<u64> = Some(128);

            #[inline]
            fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
                let bits = *self as u128;
                writer.write_bits(bits as u64, 64);
                writer.write_bits((bits >> 64) as u64, 64);
                Ok(())
            }

            #[inline]
            fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
                let low = u128::from(reader.read_bits(64)?);
                let high = u128::from(reader.read_bits(64)?);
                Ok((high << 64 | low) as $ty)
            }

            #[inline]
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}

wide_int!(u128, i128);

impl BitCodec for usize {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("usize", &[]);
    const NESTS: bool = false;

    #[inline]
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint(*self as u64);
        Ok(())
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let bit_offset = reader.bit_offset();
        let value = reader.read_varint()?;
        usize::try_from(value).map_err(|_| DecodeError::VarintOutOfRange {
            bit_offset,
            target: "usize",
        })
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl BitCodec for isize {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("isize", &[]);
    const NESTS: bool = false;

    #[inline]
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint_signed(*self as i64);
        Ok(())
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let bit_offset = reader.bit_offset();
        let value = reader.read_varint_signed()?;
        isize::try_from(value).map_err(|_| DecodeError::VarintOutOfRange {
            bit_offset,
            target: "isize",
        })
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl BitCodec for f32 {
    const MIN_BITS: u64 = 32;
    const TYPE_HASH: u64 = schema::named("f32", &[]);
    const NESTS: bool = false;
    const FIXED_BITS: Option<u64> = Some(32);

    #[inline]
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_bits(u64::from(self.to_bits()), 32);
        Ok(())
    }

    #[inline]
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        Ok(f32::from_bits(reader.read_bits(32)? as u32))
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

impl BitCodec for f64 {
    const MIN_BITS: u64 = 64;
    const TYPE_HASH: u64 = schema::named("f64", &[]);
    const NESTS: bool = false;
    const FIXED_BITS: Option<u64> = Some(64);

    #[inline]
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_bits(self.to_bits(), 64);
        Ok(())
    }

    #[inline]
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        Ok(f64::from_bits(reader.read_bits(64)?))
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

impl BitCodec for char {
    const MIN_BITS: u64 = 21;
    const TYPE_HASH: u64 = schema::named("char", &[]);
    const NESTS: bool = false;

    #[inline]
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_bits(u64::from(u32::from(*self)), 21);
        Ok(())
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let bit_offset = reader.bit_offset();
        let value = reader.read_bits(21)? as u32;
        char::from_u32(value).ok_or(DecodeError::InvalidChar { bit_offset, value })
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}
