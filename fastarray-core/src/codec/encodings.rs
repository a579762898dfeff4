//! The integer encodings a field attribute can choose instead of the
//! type's own [`BitCodec`](super::BitCodec): integers in a declared number
//! of bits (`#[replicate(bits = N)]`) and variable-length integers
//! (`#[replicate(varint)]`). Quantized floats are in `quantize`, quantized
//! rotations in `rotation`.
//!
//! The derive calls these through `__private_0_1`; they are public so that
//! hand-written codecs can use the same encodings.

use crate::bits::{BitReader, BitWriter, zigzag_decode, zigzag_encode};
use crate::error::{DecodeError, EncodeError};
use crate::schema;

/// An integer that can be written in a declared number of bits
/// (`#[replicate(bits = N)]`, like Source's `SendPropInt` with `nBits`).
///
/// A value that does not fit is an [`EncodeError::ValueOutOfRange`], never
/// silently truncated. Signed values are two's complement in `N` bits
/// (`bits = 4` holds −8..=7).
///
/// ```
/// use fastarray_core::FixedBits;
///
/// assert_eq!(200u8.to_bits(8), Ok(200));
/// assert!(300u16.to_bits(8).is_err());
/// assert_eq!((-3i8).to_bits(3).map(|raw| i8::from_bits(raw, 3)), Ok(-3));
/// assert!((-5i8).to_bits(3).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`#[replicate(bits = N)]` needs a fixed-width integer type, not `{Self}`",
    label = "not an integer of a fixed width"
)]
pub trait FixedBits: Copy + PartialEq {
    /// The type's width in bits: the largest `N` it accepts.
    const WIDTH: u32;
    /// The type's name, for errors.
    const NAME: &'static str;

    /// The value as `bits` raw bits, or an error if it does not fit.
    fn to_bits(self, bits: u32) -> Result<u64, EncodeError>;

    /// The value of `bits` raw bits (sign-extended for signed types).
    fn from_bits(raw: u64, bits: u32) -> Self;
}

macro_rules! fixed_bits_unsigned {
    ($($ty:ty),*) => {$(
        impl FixedBits for $ty {
            const WIDTH: u32 = <$ty>::BITS;
            const NAME: &'static str = stringify!($ty);

            #[inline]
            fn to_bits(self, bits: u32) -> Result<u64, EncodeError> {
                let value = self as u64;
                if bits < 64 && value >> bits != 0 {
                    return Err(EncodeError::ValueOutOfRange { value: i128::from(self), bits });
                }
                Ok(value)
            }

            #[inline]
            fn from_bits(raw: u64, _bits: u32) -> Self {
                raw as $ty
            }
        }
    )*};
}

macro_rules! fixed_bits_signed {
    ($($ty:ty),*) => {$(
        impl FixedBits for $ty {
            const WIDTH: u32 = <$ty>::BITS;
            const NAME: &'static str = stringify!($ty);

            #[inline]
            fn to_bits(self, bits: u32) -> Result<u64, EncodeError> {
                let value = self as i64;
                if bits < 64 {
                    let half = 1i64 << (bits - 1);
                    if value < -half || value >= half {
                        return Err(EncodeError::ValueOutOfRange { value: i128::from(self), bits });
                    }
                    return Ok(value as u64 & ((1u64 << bits) - 1));
                }
                Ok(value as u64)
            }

            #[inline]
            fn from_bits(raw: u64, bits: u32) -> Self {
                let shift = 64 - bits;
                (((raw << shift) as i64) >> shift) as $ty
            }
        }
    )*};
}

fixed_bits_unsigned!(u8, u16, u32, u64);
fixed_bits_signed!(i8, i16, i32, i64);

/// Writes `value` in `bits` bits (1..=64, at most the type's width).
pub fn encode_bits<T: FixedBits>(
    value: &T,
    bits: u32,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    writer.write_bits(value.to_bits(bits)?, bits);
    Ok(())
}

/// Reads a value written by [`encode_bits`].
pub fn decode_bits<T: FixedBits>(bits: u32, reader: &mut BitReader<'_>) -> Result<T, DecodeError> {
    Ok(T::from_bits(reader.read_bits(bits)?, bits))
}

/// The schema hash of a `bits = N` field of type `T`.
pub const fn bits_type_hash(type_hash: u64, bits: u32) -> u64 {
    schema::named("bits", &[type_hash, bits as u64])
}

/// An integer that can be written as a [varint](BitWriter::write_varint)
/// (`#[replicate(varint)]`): small magnitudes take few bits; signed values
/// are zig-zag mapped first, so −1 costs as little as 1.
///
/// ```
/// use fastarray_core::VarInt;
///
/// assert_eq!((-1i32).to_varint(), 1);
/// assert_eq!(i32::from_varint(1), Some(-1));
/// assert_eq!(u8::from_varint(256), None);
/// ```
#[diagnostic::on_unimplemented(
    message = "`#[replicate(varint)]` needs an integer type, not `{Self}`",
    label = "not an integer"
)]
pub trait VarInt: Copy + PartialEq {
    /// The type's name, for errors.
    const NAME: &'static str;

    /// The unsigned value the varint carries.
    fn to_varint(self) -> u64;

    /// The value a varint carries, if it fits this type.
    fn from_varint(value: u64) -> Option<Self>;
}

macro_rules! varint_unsigned {
    ($($ty:ty),*) => {$(
        impl VarInt for $ty {
            const NAME: &'static str = stringify!($ty);

            #[inline]
            fn to_varint(self) -> u64 {
                self as u64
            }

            #[inline]
            fn from_varint(value: u64) -> Option<Self> {
                <$ty>::try_from(value).ok()
            }
        }
    )*};
}

macro_rules! varint_signed {
    ($($ty:ty),*) => {$(
        impl VarInt for $ty {
            const NAME: &'static str = stringify!($ty);

            #[inline]
            fn to_varint(self) -> u64 {
                zigzag_encode(self as i64)
            }

            #[inline]
            fn from_varint(value: u64) -> Option<Self> {
                <$ty>::try_from(zigzag_decode(value)).ok()
            }
        }
    )*};
}

varint_unsigned!(u8, u16, u32, u64, usize);
varint_signed!(i8, i16, i32, i64, isize);

/// Writes `value` as a varint.
pub fn encode_varint<T: VarInt>(value: &T, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
    writer.write_varint(value.to_varint());
    Ok(())
}

/// Reads a value written by [`encode_varint`], refusing values that do not
/// fit the type.
pub fn decode_varint<T: VarInt>(reader: &mut BitReader<'_>) -> Result<T, DecodeError> {
    let bit_offset = reader.bit_offset();
    let value = reader.read_varint()?;
    T::from_varint(value).ok_or(DecodeError::VarintOutOfRange {
        bit_offset,
        target: T::NAME,
    })
}

/// The schema hash of a `varint` field of type `T`.
pub const fn varint_type_hash(type_hash: u64) -> u64 {
    schema::named("varint", &[type_hash])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_bits_sign_extend() {
        for bits in 1..=8u32 {
            let half = 1i16 << (bits - 1);
            for v in -half..half {
                let v = v as i8;
                let raw = v.to_bits(bits).unwrap();
                assert!(raw < 1 << bits);
                assert_eq!(i8::from_bits(raw, bits), v, "{v} in {bits} bits");
            }
            // Just outside the range, on either side, does not fit.
            if bits < 8 {
                assert!((half as i8).to_bits(bits).is_err(), "{half} in {bits} bits");
                assert!(
                    ((-half - 1) as i8).to_bits(bits).is_err(),
                    "{} in {bits} bits",
                    -half - 1
                );
            }
        }
        assert!(128u16.to_bits(7).is_err() && 127u16.to_bits(7).is_ok());
        assert_eq!(
            i64::MIN.to_bits(64).map(|r| i64::from_bits(r, 64)),
            Ok(i64::MIN)
        );
    }
}
