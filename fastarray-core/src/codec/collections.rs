//! `BitCodec` for strings, vectors, options, arrays, tuples and boxes.

use super::BitCodec;
use crate::bits::{BitReader, BitWriter, prealloc};
use crate::error::{DecodeError, EncodeError};
use crate::schema;

impl BitCodec for String {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("String", &[]);
    const NESTS: bool = false;

    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint(self.len() as u64);
        writer.write_bytes(self.as_bytes());
        Ok(())
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let claimed = reader.read_varint()?;
        let len = reader.check_len(claimed, 8)?;
        let bit_offset = reader.bit_offset();
        let mut bytes = Vec::new();
        reader.read_bytes_into(len, &mut bytes)?;
        String::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8 { bit_offset })
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        same_bytes(self.as_bytes(), other.as_bytes())
    }
}

/// Whether `a` and `b` hold the same bytes. A commit's diff compares every
/// string field of every item written, and most are short names that did
/// not change: up to 16 bytes are compared in line, a word or two at a
/// time (two overlapping loads cover every byte), with no call to the C
/// library's `memcmp`, which `==` makes.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    /// The first and the last `N` bytes of `bytes` (`N` ≤ its length ≤ 2N).
    fn ends<const N: usize>(bytes: &[u8]) -> Option<(&[u8; N], &[u8; N])> {
        Some((bytes.first_chunk::<N>()?, bytes.last_chunk::<N>()?))
    }
    let len = a.len();
    if len != b.len() {
        return false;
    }
    match len {
        0 => true,
        // The first, middle and last byte: every byte, at this length.
        1..=3 => a[0] == b[0] && a[len / 2] == b[len / 2] && a[len - 1] == b[len - 1],
        4..=8 => ends::<4>(a) == ends::<4>(b),
        9..=16 => ends::<8>(a) == ends::<8>(b),
        _ => a == b,
    }
}

impl<T: BitCodec> BitCodec for Vec<T> {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("Vec", &[T::TYPE_HASH]);
    const NESTS: bool = T::NESTS;

    /// # Errors
    /// A non-empty vector of an element type that can encode to zero bits
    /// (`()`, `[T; 0]`, a struct with no replicated field) is refused: its
    /// length could not be checked against the input when decoding.
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        write_len(writer, self.len(), T::MIN_BITS)?;
        self.iter().try_for_each(|item| item.encode(writer))
    }

    /// # Errors
    /// Besides the element's errors: a length the remaining input cannot
    /// hold, or any length but zero for elements that encode to zero bits
    /// ([`DecodeError::LengthTooLarge`]): no sender writes one, and it
    /// would let a few bits claim a large collection.
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let len = read_len(reader, T::MIN_BITS)?;
        let mut items = Vec::with_capacity(prealloc::<T>(len));
        for _ in 0..len {
            items.push(T::decode(reader)?);
        }
        Ok(items)
    }

    fn same(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.same(b))
    }
}

/// Writes the length of a collection whose elements take at least
/// `min_bits_each` bits; a non-empty collection of elements that can take
/// zero bits is refused (its decoder could not bound its length).
pub(super) fn write_len(
    writer: &mut BitWriter<'_>,
    len: usize,
    min_bits_each: u64,
) -> Result<(), EncodeError> {
    if min_bits_each == 0 && len > 0 {
        return Err(EncodeError::Custom {
            message: "collection elements that encode to zero bits cannot be replicated",
        });
    }
    writer.write_varint(len as u64);
    Ok(())
}

/// Reads a length written by [`write_len`], checked against the input
/// before anything is allocated: the elements it claims, at
/// `min_bits_each` bits each, must fit in the bits that remain.
pub(super) fn read_len(
    reader: &mut BitReader<'_>,
    min_bits_each: u64,
) -> Result<usize, DecodeError> {
    let claimed = reader.read_varint()?;
    if min_bits_each == 0 && claimed > 0 {
        return Err(DecodeError::LengthTooLarge {
            bit_offset: reader.bit_offset(),
            claimed,
            remaining_bits: reader.remaining_bits(),
        });
    }
    reader.check_len(claimed, min_bits_each)
}

impl<T: BitCodec> BitCodec for Option<T> {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("Option", &[T::TYPE_HASH]);
    const NESTS: bool = T::NESTS;

    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_bool(self.is_some());
        match self {
            Some(value) => value.encode(writer),
            None => Ok(()),
        }
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        if reader.read_bool()? {
            T::decode(reader).map(Some)
        } else {
            Ok(None)
        }
    }

    fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.same(b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl<T: BitCodec, const N: usize> BitCodec for [T; N] {
    const MIN_BITS: u64 = T::MIN_BITS.saturating_mul(N as u64);
    const TYPE_HASH: u64 = schema::named("array", &[T::TYPE_HASH, N as u64]);
    const NESTS: bool = T::NESTS;
    const FIXED_BITS: Option<u64> = match T::FIXED_BITS {
        Some(bits) => bits.checked_mul(N as u64),
        None => None,
    };

    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        self.iter().try_for_each(|item| item.encode(writer))
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        try_array(|| T::decode(reader))
    }

    fn same(&self, other: &Self) -> bool {
        self.iter().zip(other).all(|(a, b)| a.same(b))
    }
}

/// An array of `N` values made by `next`, or the first error it returns.
///
/// A plain loop over `Option`s rather than `core::array::from_fn`: that
/// one calls its closure out of line for every element, which cost a
/// mirror's decode of a quantized `[f32; 3]` a tenth of its time. The
/// values then leave their `Option`s through `from_fn`, whose closure is
/// trivial enough to inline: `[Option<T>; N]::map` is a call to
/// `try_map`, whose result, stored in pieces, the caller loaded whole
/// (perf put a third of a mirror's apply on that load, a store-forwarding
/// stall).
#[inline]
pub(crate) fn try_array<T, E, const N: usize>(
    mut next: impl FnMut() -> Result<T, E>,
) -> Result<[T; N], E> {
    let mut items: [Option<T>; N] = [const { None }; N];
    for item in &mut items {
        *item = Some(next()?);
    }
    Ok(filled(items))
}

/// The values of `items`, every one of which is `Some` (a loop filled
/// each or returned): see [`try_array`].
#[inline(always)]
pub(crate) fn filled<T, const N: usize>(mut items: [Option<T>; N]) -> [T; N] {
    core::array::from_fn(|i| {
        items[i]
            .take()
            .unwrap_or_else(|| unreachable!("array element decoded"))
    })
}

impl<T: BitCodec> BitCodec for Box<T> {
    const MIN_BITS: u64 = T::MIN_BITS;
    const TYPE_HASH: u64 = T::TYPE_HASH;
    const NESTS: bool = T::NESTS;
    const FIXED_BITS: Option<u64> = T::FIXED_BITS;

    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        (**self).encode(writer)
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        T::decode(reader).map(Box::new)
    }

    fn same(&self, other: &Self) -> bool {
        (**self).same(other)
    }
}

impl BitCodec for () {
    const MIN_BITS: u64 = 0;
    const TYPE_HASH: u64 = schema::named("()", &[]);
    const NESTS: bool = false;
    const FIXED_BITS: Option<u64> = Some(0);

    fn encode(&self, _writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        Ok(())
    }

    fn decode(_reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        Ok(())
    }

    fn same(&self, _other: &Self) -> bool {
        true
    }
}

/// The bits of values made of parts of these fixed widths, if every part
/// has one.
const fn fixed_sum(parts: &[Option<u64>]) -> Option<u64> {
    let mut sum = 0u64;
    let mut i = 0;
    while i < parts.len() {
        match parts[i] {
            Some(bits) => match sum.checked_add(bits) {
                Some(next) => sum = next,
                None => return None,
            },
            None => return None,
        }
        i += 1;
    }
    Some(sum)
}

macro_rules! tuple {
    ($($name:ident $index:tt),+) => {
        impl<$($name: BitCodec),+> BitCodec for ($($name,)+) {
            const MIN_BITS: u64 = 0u64 $(.saturating_add($name::MIN_BITS))+;
            const TYPE_HASH: u64 = schema::named("tuple", &[$($name::TYPE_HASH),+]);
            const NESTS: bool = false $(|| $name::NESTS)+;
            const FIXED_BITS: Option<u64> = fixed_sum(&[$($name::FIXED_BITS),+]);

            fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
                $(self.$index.encode(writer)?;)+
                Ok(())
            }

            fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
                Ok(($($name::decode(reader)?,)+))
            }

            fn same(&self, other: &Self) -> bool {
                true $(&& self.$index.same(&other.$index))+
            }
        }
    };
}

tuple!(A 0);
tuple!(A 0, B 1);
tuple!(A 0, B 1, C 2);
tuple!(A 0, B 1, C 2, D 3);

#[cfg(test)]
mod tests {
    use super::same_bytes;

    /// Every length up to past the in-line cases, with one byte changed at
    /// each place in turn (and a length apart): `same_bytes` says what
    /// `==` says.
    #[test]
    fn bytes_compare_as_equality_does_at_every_length_and_place() {
        for len in 0..=40usize {
            let a: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert!(same_bytes(&a, &a.clone()), "equal, {len} bytes");
            for at in 0..len {
                for flip in [1u8, 0x80] {
                    let mut b = a.clone();
                    b[at] ^= flip;
                    assert!(!same_bytes(&a, &b), "{len} bytes, byte {at} differs");
                    assert!(!same_bytes(&b, &a), "{len} bytes, byte {at} differs");
                }
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same_bytes(&a, &longer), "{len} bytes against one more");
        }
    }
}
