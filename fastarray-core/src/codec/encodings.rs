//! The encodings a field attribute can choose instead of the type's own
//! [`BitCodec`](super::BitCodec): integers in a declared number of bits
//! (`#[replicate(bits = N)]`), variable-length integers
//! (`#[replicate(varint)]`) and quantized floats
//! (`#[replicate(quantize(min = A, max = B, bits = N))]`).
//!
//! The derive calls these through `__private_0_1`; they are public so that
//! hand-written codecs can use the same encodings.

use super::collections::try_array;
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

/// A float quantization: values are clamped into `[min, max]` and sent as
/// one of the `2^bits` evenly spaced values there (`SendPropFloat` with a
/// low value, a high value and a bit count). The receiver gets the
/// quantized value; the most it differs from the sender's value (once
/// clamped) is [`max_error`](Self::max_error) = (max − min) / (2^bits − 1) / 2.
/// `NaN` is sent as `min`.
///
/// What the receiver gets quantizes back to the step it was sent as, as an
/// `f64` and as an `f32`, so a mirror's value re-encodes to the server's
/// bits: that is what [`Replicate::wire_eq`](crate::Replicate::wire_eq)
/// compares.
///
/// ```
/// use fastarray_core::Quantizer;
///
/// const Q: Quantizer = Quantizer::new(-100.0, 100.0, 12);
/// let sent = Q.dequantize(Q.quantize(12.3456));
/// assert!((sent - 12.3456).abs() <= Q.max_error());
/// assert_eq!(Q.dequantize(Q.quantize(1e9)), 100.0); // clamped
/// assert_eq!(Q.quantize(12.3456), Q.quantize(12.3456 + Q.max_error() / 10.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantizer {
    min: f64,
    max: f64,
    bits: u32,
}

impl Quantizer {
    /// A quantization of `[min, max]` (finite, `min < max`) in `bits` bits
    /// (1..=32).
    ///
    /// # Panics
    /// On a bad range or bit count; in a `const` this is a compile error.
    pub const fn new(min: f64, max: f64, bits: u32) -> Self {
        assert!(
            min.is_finite() && max.is_finite() && min < max,
            "quantize needs finite min < max"
        );
        assert!(bits >= 1 && bits <= 32, "quantize needs 1..=32 bits");
        Self { min, max, bits }
    }

    /// Bits per value.
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// The largest difference between a value in `[min, max]` and what the
    /// receiver gets: half a step.
    pub fn max_error(&self) -> f64 {
        (self.max - self.min) / self.steps() / 2.0
    }

    fn steps(&self) -> f64 {
        ((1u64 << self.bits) - 1) as f64
    }

    /// The step index of `value` (clamped; `NaN` is step 0).
    pub fn quantize(&self, value: f64) -> u64 {
        let clamped = value.clamp(self.min, self.max);
        let step = ((clamped - self.min) / (self.max - self.min) * self.steps()).round();
        // `as` saturates, and maps NaN to 0.
        step as u64
    }

    /// The value of step index `step`. It quantizes back to `step`
    /// whenever an `f64` does (`tests/wire_eq.rs` searches for
    /// counter-examples).
    pub fn dequantize(&self, step: u64) -> f64 {
        let t = step as f64 / self.steps();
        if t >= 1.0 {
            self.max
        } else {
            self.min + (self.max - self.min) * t
        }
    }

    /// The value of step index `step` as an `f32` that quantizes back to
    /// `step`: the nearest one to [`dequantize`](Self::dequantize)'s, or a
    /// neighbour when rounding to `f32` crossed into another step (the
    /// range's ends need not be `f32` values, and a fine quantization's
    /// steps are narrower than the `f32`s around them).
    pub(crate) fn dequantize_f32(&self, step: u64) -> f32 {
        let value = self.dequantize(step) as f32;
        settle(value, step, |v| self.quantize(f64::from(v)))
    }

    /// The schema hash of this quantization of a type with hash `type_hash`.
    pub const fn type_hash(&self, type_hash: u64) -> u64 {
        schema::named(
            "quantize",
            &[
                type_hash,
                self.min.to_bits(),
                self.max.to_bits(),
                self.bits as u64,
            ],
        )
    }
}

/// How many neighbouring `f32`s [`settle`] tries: one is enough wherever
/// a sender's value can land in the step (`tests/wire_eq.rs` searches for
/// counter-examples); the rest is margin.
const SETTLE_TRIES: u32 = 4;

/// `value`, or the nearest `f32` to it that quantizes to `step`: a value
/// on the wrong side of a step boundary moves one `f32` at a time toward
/// the step (quantizing is monotonic). If none within [`SETTLE_TRIES`]
/// does (a step no `f32` reaches), `value` as it was.
fn settle(value: f32, step: u64, quantize: impl Fn(f32) -> u64) -> f32 {
    let mut candidate = value;
    for _ in 0..SETTLE_TRIES {
        let got = quantize(candidate);
        if got == step {
            return candidate;
        }
        candidate = next_f32(candidate, got < step);
    }
    value
}

/// The next `f32` above (`up`) or below a finite `value`.
fn next_f32(value: f32, up: bool) -> f32 {
    if value == 0.0 {
        let tiny = f32::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let bits = value.to_bits();
    // Away from zero is one more in the magnitude's bits.
    let away = (value > 0.0) == up;
    f32::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// A float, or a fixed group of floats, that can be quantized
/// (`#[replicate(quantize(...))]` on `f32`, `f64`, `[f32; N]`, tuples of
/// floats). Every float of the group uses the same [`Quantizer`].
#[diagnostic::on_unimplemented(
    message = "`#[replicate(quantize(...))]` needs `f32`, `f64`, or an array or tuple of them, not `{Self}`",
    label = "cannot be quantized"
)]
pub trait Quantize: Sized {
    /// How many floats the value holds.
    const FLOATS: u32;
    /// The schema hash of the unquantized type.
    const TYPE_HASH: u64;

    /// Writes every float as its step index.
    fn write_quantized(&self, quantizer: &Quantizer, writer: &mut BitWriter<'_>);

    /// Reads the quantized values.
    fn read_quantized(
        quantizer: &Quantizer,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError>;

    /// Whether both quantize to the same steps: the change test, so jitter
    /// below the resolution is not a change.
    fn same_quantized(&self, other: &Self, quantizer: &Quantizer) -> bool;
}

impl Quantize for f32 {
    const FLOATS: u32 = 1;
    const TYPE_HASH: u64 = schema::named("f32", &[]);

    fn write_quantized(&self, quantizer: &Quantizer, writer: &mut BitWriter<'_>) {
        writer.write_bits(quantizer.quantize(f64::from(*self)), quantizer.bits);
    }

    fn read_quantized(
        quantizer: &Quantizer,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError> {
        Ok(quantizer.dequantize_f32(reader.read_bits(quantizer.bits)?))
    }

    fn same_quantized(&self, other: &Self, quantizer: &Quantizer) -> bool {
        // Most values a commit compares did not change at all.
        self.to_bits() == other.to_bits()
            || quantizer.quantize(f64::from(*self)) == quantizer.quantize(f64::from(*other))
    }
}

impl Quantize for f64 {
    const FLOATS: u32 = 1;
    const TYPE_HASH: u64 = schema::named("f64", &[]);

    fn write_quantized(&self, quantizer: &Quantizer, writer: &mut BitWriter<'_>) {
        writer.write_bits(quantizer.quantize(*self), quantizer.bits);
    }

    fn read_quantized(
        quantizer: &Quantizer,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError> {
        Ok(quantizer.dequantize(reader.read_bits(quantizer.bits)?))
    }

    fn same_quantized(&self, other: &Self, quantizer: &Quantizer) -> bool {
        self.to_bits() == other.to_bits() || quantizer.quantize(*self) == quantizer.quantize(*other)
    }
}

impl<T: Quantize, const N: usize> Quantize for [T; N] {
    const FLOATS: u32 = T::FLOATS * N as u32;
    const TYPE_HASH: u64 = schema::named("array", &[T::TYPE_HASH, N as u64]);

    fn write_quantized(&self, quantizer: &Quantizer, writer: &mut BitWriter<'_>) {
        self.iter()
            .for_each(|v| v.write_quantized(quantizer, writer));
    }

    fn read_quantized(
        quantizer: &Quantizer,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError> {
        try_array(|| T::read_quantized(quantizer, reader))
    }

    fn same_quantized(&self, other: &Self, quantizer: &Quantizer) -> bool {
        self.iter()
            .zip(other)
            .all(|(a, b)| a.same_quantized(b, quantizer))
    }
}

macro_rules! quantize_tuple {
    ($($name:ident $index:tt),+) => {
        impl<$($name: Quantize),+> Quantize for ($($name,)+) {
            const FLOATS: u32 = 0 $(+ $name::FLOATS)+;
            const TYPE_HASH: u64 = schema::named("tuple", &[$($name::TYPE_HASH),+]);

            fn write_quantized(&self, quantizer: &Quantizer, writer: &mut BitWriter<'_>) {
                $(self.$index.write_quantized(quantizer, writer);)+
            }

            fn read_quantized(quantizer: &Quantizer, reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
                Ok(($($name::read_quantized(quantizer, reader)?,)+))
            }

            fn same_quantized(&self, other: &Self, quantizer: &Quantizer) -> bool {
                true $(&& self.$index.same_quantized(&other.$index, quantizer))+
            }
        }
    };
}

quantize_tuple!(A 0, B 1);
quantize_tuple!(A 0, B 1, C 2);
quantize_tuple!(A 0, B 1, C 2, D 3);

/// Writes a quantized value (the `Result` keeps every field encoder alike).
pub fn encode_quantized<T: Quantize>(
    value: &T,
    quantizer: &Quantizer,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    value.write_quantized(quantizer, writer);
    Ok(())
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

    #[test]
    fn quantizer_endpoints_are_exact() {
        let q = Quantizer::new(-2.0, 6.0, 3);
        assert_eq!(q.quantize(-2.0), 0);
        assert_eq!(q.quantize(6.0), 7);
        assert_eq!(q.dequantize(0), -2.0);
        assert_eq!(q.dequantize(7), 6.0);
        assert_eq!(q.quantize(f64::NAN), 0);
        assert_eq!(q.quantize(f64::INFINITY), 7);
        assert_eq!(q.max_error(), 8.0 / 7.0 / 2.0);
    }
}
