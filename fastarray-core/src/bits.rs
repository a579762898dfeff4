//! Bit-level writer and reader: little-endian bit order (least significant
//! bit first), bit counting, and the varint codes used on the wire.
//!
//! The writer gathers bits in a 64-bit accumulator and the reader takes them
//! from a 64-bit window; an earlier version went through `bitstream-io`,
//! whose per-call cost made encoding 18× slower than `bitcode` for the same
//! data (see `BENCHMARKS.md`). The bits on the wire are the same.
//!
//! # Variable-length integers
//!
//! Ids, gaps between ids and counts are almost always small, so the wire
//! uses the Elias codes rather than LEB128 (which spends 8 bits on any value
//! below 128):
//!
//! | value `v` | [`write_varint`](BitWriter::write_varint) (Elias-delta of `v+1`) | [`write_gamma`](BitWriter::write_gamma) (Elias-gamma of `v+1`) | LEB128 |
//! |---|---|---|---|
//! | 0 | 1 | 1 | 8 |
//! | 1–2 | 4 | 3 | 8 |
//! | 3–6 | 5 | 5 | 8 |
//! | 7–14 | 8 | 7 | 8 |
//! | 63–126 | 11 | 13 | 8 |
//! | 1 000 | 16 | 19 | 16 |
//! | 10 000 | 20 | 27 | 16 |
//! | `u64::MAX` | 77 | 129 | 80 |
//!
//! `varint` (Elias-delta) is never worse than LEB128 below 4 096 and is the
//! general-purpose choice; `gamma` saves one bit on the values 1 and 2 and is
//! meant for counts that are nearly always tiny. Both codes have exactly one
//! encoding per value, so there is no overlong form to reject beyond a prefix
//! longer than any `u64` needs, which the reader reports as
//! [`DecodeError::VarintOverlong`].
//!
//! Signed varints use zig-zag mapping first (`0, -1, 1, -2, …` → `0, 1, 2, 3, …`).

use core::ops::{Deref, DerefMut};

use crate::error::{DecodeError, EncodeError};

/// How deeply values of `#[derive(Replicate)]` types may nest in one value:
/// 128 levels, the item itself counting as the first.
///
/// A recursive type (`struct Chain { next: Option<Box<Chain>> }`, or
/// `struct Node { kids: Vec<Node> }`) takes as little as one bit per level
/// on the wire, so without a bound a short message could make the decoder
/// recurse until the thread's stack overflows, which aborts the process.
/// Past this depth a [`BitReader`] refuses the value with
/// [`DecodeError::TooDeep`], and a [`BitWriter`] refuses to write it with
/// [`EncodeError::TooDeep`], so a sender never writes what a receiver
/// refuses. 128 is serde_json's recursion limit: far more than game state
/// nests, and few enough that decoding (and dropping) the deepest value
/// accepted fits a small thread stack.
pub const MAX_DEPTH: u32 = 128;

/// Writes bits, least significant bit first, appending to a caller's `Vec<u8>`.
///
/// Bits gather in a 64-bit accumulator that is flushed to the vector eight
/// bytes at a time; the last partial byte is zero-padded when the writer is
/// [finished](BitWriter::finish) or dropped. Several encoders can share one
/// writer, so several arrays can share one packet without byte alignment
/// between them.
///
/// Derived types count how deeply their values nest on the writer and
/// refuse to write past [`MAX_DEPTH`] levels ([`EncodeError::TooDeep`]).
///
/// ```
/// use fastarray_core::{BitReader, BitWriter};
///
/// let mut bytes = Vec::new();
/// let mut w = BitWriter::new(&mut bytes);
/// w.write_bool(true);
/// w.write_bits(5, 3);
/// w.write_varint(1000);
/// assert_eq!(w.bits_written(), 1 + 3 + 16);
/// w.finish();
///
/// let mut r = BitReader::new(&bytes);
/// assert_eq!(r.read_bool(), Ok(true));
/// assert_eq!(r.read_bits(3), Ok(5));
/// assert_eq!(r.read_varint(), Ok(1000));
/// ```
pub struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Bits not yet flushed, least significant first.
    acc: u64,
    /// How many bits of `acc` are in use (always < 64).
    used: u32,
    bits: u64,
    /// Derived values being written, one inside the other.
    depth: u32,
}

impl<'a> BitWriter<'a> {
    /// A writer that appends to `out` (existing bytes are kept).
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Self {
            out,
            acc: 0,
            used: 0,
            bits: 0,
            depth: 0,
        }
    }

    /// Enters one more level of derived value: what `#[derive(Replicate)]`
    /// calls at the start of `encode` and `encode_fields`, writing through
    /// the returned guard, which leaves the level when dropped (on every
    /// path, errors included). Refuses a level past [`MAX_DEPTH`].
    #[doc(hidden)]
    pub fn nest(&mut self) -> Result<NestedWriter<'_, 'a>, EncodeError> {
        if self.depth >= MAX_DEPTH {
            return Err(EncodeError::TooDeep { limit: MAX_DEPTH });
        }
        self.depth += 1;
        Ok(NestedWriter { writer: self })
    }

    /// Bits written so far by this writer.
    #[inline]
    pub fn bits_written(&self) -> u64 {
        self.bits
    }

    /// Writes one bit.
    #[inline]
    pub fn write_bool(&mut self, bit: bool) {
        self.write_bits(u64::from(bit), 1);
    }

    /// Writes the low `count` bits of `value` (`count` ≤ 64). Higher bits of
    /// `value` are ignored; use [`write_bits_checked`](Self::write_bits_checked)
    /// when they must be zero.
    #[inline]
    pub fn write_bits(&mut self, value: u64, count: u32) {
        debug_assert!(count <= 64);
        if count == 0 {
            return;
        }
        let value = if count >= 64 {
            value
        } else {
            value & ((1u64 << count) - 1)
        };
        self.bits += u64::from(count);
        self.acc |= value << self.used;
        let free = 64 - self.used;
        if count < free {
            self.used += count;
        } else {
            self.out.extend_from_slice(&self.acc.to_le_bytes());
            // The bits of `value` that did not fit.
            self.acc = value.checked_shr(free).unwrap_or(0);
            self.used = count - free;
        }
    }
    /// Writes `value` in `count` bits, or reports that it does not fit.
    pub fn write_bits_checked(&mut self, value: u64, count: u32) -> Result<(), EncodeError> {
        if count < 64 && value >> count != 0 {
            return Err(EncodeError::ValueOutOfRange {
                value: i128::from(value),
                bits: count,
            });
        }
        self.write_bits(value, count);
        Ok(())
    }

    /// Writes `value` as an Elias-delta code of `value + 1` (see the module docs).
    pub fn write_varint(&mut self, value: u64) {
        let x = u128::from(value) + 1;
        let n = 128 - x.leading_zeros(); // 1..=65 significant bits
        let len_bits = 32 - n.leading_zeros(); // 1..=7 bits to write `n`
        self.write_bits(0, len_bits - 1);
        self.write_bool(true);
        self.write_bits(u64::from(n), len_bits - 1);
        self.write_wide_low_bits(x, n - 1);
    }

    /// Writes `value` as an Elias-gamma code of `value + 1` (see the module docs).
    pub fn write_gamma(&mut self, value: u64) {
        if value < 1 << 31 {
            // The whole code fits in one word: `n − 1` zeros, the leading
            // one, then the `n − 1` bits below it.
            let x = value + 1;
            let n = 64 - x.leading_zeros();
            let low = x & ((1 << (n - 1)) - 1);
            self.write_bits(1 << (n - 1) | low << n, 2 * n - 1);
            return;
        }
        let x = u128::from(value) + 1;
        let n = 128 - x.leading_zeros(); // 1..=65
        self.write_zeros(n - 1);
        self.write_bool(true);
        self.write_wide_low_bits(x, n - 1);
    }

    /// Writes a signed value as a zig-zag mapped [varint](Self::write_varint).
    pub fn write_varint_signed(&mut self, value: i64) {
        self.write_varint(zigzag_encode(value));
    }

    /// Writes whole bytes (8 bits each, no alignment needed).
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.write_bits(u64::from_le_bytes(word), 64);
        }
        for &byte in chunks.remainder() {
            self.write_bits(u64::from(byte), 8);
        }
    }

    /// Pads the last byte with zero bits and returns the number of bits
    /// written (padding excluded). Dropping the writer pads the same way.
    pub fn finish(mut self) -> u64 {
        self.flush();
        self.bits
    }

    /// Writes out the accumulator's bits, the last byte zero-padded.
    fn flush(&mut self) {
        let bytes = self.used.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
        self.acc = 0;
        self.used = 0;
    }

    fn write_zeros(&mut self, mut count: u32) {
        while count > 0 {
            let step = count.min(64);
            self.write_bits(0, step);
            count -= step;
        }
    }

    fn write_wide_low_bits(&mut self, x: u128, count: u32) {
        // `count` is at most 64; the bit above it is the implicit leading one.
        let low = if count == 64 {
            x as u64
        } else {
            (x as u64) & ((1u64 << count) - 1)
        };
        self.write_bits(low, count);
    }
}

impl Drop for BitWriter<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A [`BitWriter`] one derived value deeper, from [`BitWriter::nest`].
#[doc(hidden)]
pub struct NestedWriter<'r, 'a> {
    writer: &'r mut BitWriter<'a>,
}

impl<'a> Deref for NestedWriter<'_, 'a> {
    type Target = BitWriter<'a>;

    fn deref(&self) -> &BitWriter<'a> {
        self.writer
    }
}

impl<'a> DerefMut for NestedWriter<'_, 'a> {
    fn deref_mut(&mut self) -> &mut BitWriter<'a> {
        self.writer
    }
}

impl Drop for NestedWriter<'_, '_> {
    fn drop(&mut self) {
        self.writer.depth -= 1;
    }
}

/// Reads bits written by [`BitWriter`], counting them, never reading past
/// the end of its input and never panicking.
///
/// # Nesting depth
///
/// Derived types count how deeply their values nest on the reader: a value
/// more than [`MAX_DEPTH`] (128) derived values deep, the outermost
/// counting as the first, is refused with [`DecodeError::TooDeep`] before
/// the level past the limit is read. This bounds the recursion (and the
/// stack) a message of a recursive type can cause, whatever its size.
pub struct BitReader<'a> {
    bytes: &'a [u8],
    total: u64,
    pos: u64,
    /// Derived values being read, one inside the other.
    depth: u32,
}

impl<'a> BitReader<'a> {
    /// A reader over all bits of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            total: 8 * bytes.len() as u64,
            pos: 0,
            depth: 0,
        }
    }

    /// A reader over the bits of `bytes` from bit `start` on (the offset
    /// it reports counts from `start`).
    pub(crate) fn at(bytes: &'a [u8], start: u64) -> Self {
        let skip = usize::try_from(start / 8)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let mut reader = Self::new(&bytes[skip..]);
        // Fewer than 8 bits, inside the input unless it ended before `start`.
        let _ = reader.read_bits((start % 8) as u32);
        reader
    }

    /// Enters one more level of derived value: what `#[derive(Replicate)]`
    /// calls at the start of `decode` and `decode_fields`, reading through
    /// the returned guard, which leaves the level when dropped (on every
    /// path, errors included). Refuses a level past [`MAX_DEPTH`].
    #[doc(hidden)]
    pub fn nest(&mut self) -> Result<NestedReader<'_, 'a>, DecodeError> {
        if self.depth >= MAX_DEPTH {
            return Err(DecodeError::TooDeep {
                bit_offset: self.pos,
                limit: MAX_DEPTH,
            });
        }
        self.depth += 1;
        Ok(NestedReader { reader: self })
    }

    /// Bits consumed so far.
    #[inline]
    pub fn bit_offset(&self) -> u64 {
        self.pos
    }

    /// Bits left in the input.
    #[inline]
    pub fn remaining_bits(&self) -> u64 {
        self.total - self.pos
    }

    #[inline]
    fn need(&self, count: u32) -> Result<(), DecodeError> {
        if self.remaining_bits() < u64::from(count) {
            Err(DecodeError::UnexpectedEnd {
                bit_offset: self.pos,
                wanted: count,
            })
        } else {
            Ok(())
        }
    }

    /// Reads one bit.
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        self.read_bits(1).map(|bit| bit == 1)
    }

    /// Reads `count` bits (≤ 64) as an unsigned number.
    #[inline]
    pub fn read_bits(&mut self, count: u32) -> Result<u64, DecodeError> {
        if count == 0 {
            return Ok(0);
        }
        if count > 64 {
            return Err(DecodeError::UnexpectedEnd {
                bit_offset: self.pos,
                wanted: count,
            });
        }
        self.need(count)?;
        let byte = (self.pos / 8) as usize;
        let shift = (self.pos % 8) as u32;
        // Up to 9 bytes hold the bits: a 16-byte window, zero past the end.
        let mut window = [0u8; 16];
        let available = (self.bytes.len() - byte).min(16);
        window[..available].copy_from_slice(&self.bytes[byte..byte + available]);
        let mut low = [0u8; 8];
        let mut high = [0u8; 8];
        low.copy_from_slice(&window[..8]);
        high.copy_from_slice(&window[8..]);
        let (low, high) = (u64::from_le_bytes(low), u64::from_le_bytes(high));
        let value = if shift == 0 {
            low
        } else {
            (low >> shift) | (high << (64 - shift))
        };
        self.pos += u64::from(count);
        Ok(if count == 64 {
            value
        } else {
            value & ((1u64 << count) - 1)
        })
    }

    /// Reads a value written by [`BitWriter::write_varint`].
    pub fn read_varint(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut zeros = 0u32;
        while !self.read_bool()? {
            zeros += 1;
            if zeros > 6 {
                return Err(DecodeError::VarintOverlong { bit_offset: start });
            }
        }
        let n = (1u32 << zeros) | self.read_bits(zeros)? as u32;
        if n > 65 {
            return Err(DecodeError::VarintOverlong { bit_offset: start });
        }
        self.finish_elias(start, n)
    }

    /// Reads a value written by [`BitWriter::write_gamma`].
    pub fn read_gamma(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut zeros = 0u32;
        while !self.read_bool()? {
            zeros += 1;
            if zeros > 64 {
                return Err(DecodeError::VarintOverlong { bit_offset: start });
            }
        }
        self.finish_elias(start, zeros + 1)
    }

    /// Reads the `n - 1` low bits of an Elias code whose value has `n`
    /// significant bits, and returns that value minus one.
    fn finish_elias(&mut self, start: u64, n: u32) -> Result<u64, DecodeError> {
        let low = self.read_bits(n - 1)?;
        if n == 65 {
            // x = 2^64 + low; only x = 2^64 (value u64::MAX) fits.
            return if low == 0 {
                Ok(u64::MAX)
            } else {
                Err(DecodeError::VarintOutOfRange {
                    bit_offset: start,
                    target: "u64",
                })
            };
        }
        Ok(((1u64 << (n - 1)) | low) - 1)
    }

    /// Reads a value written by [`BitWriter::write_varint_signed`].
    pub fn read_varint_signed(&mut self) -> Result<i64, DecodeError> {
        self.read_varint().map(zigzag_decode)
    }

    /// Reads `len` whole bytes into `out` (which is cleared first).
    pub fn read_bytes_into(&mut self, len: usize, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let bits = (len as u64).saturating_mul(8);
        if bits > self.remaining_bits() {
            return Err(DecodeError::LengthTooLarge {
                bit_offset: self.pos,
                claimed: len as u64,
                remaining_bits: self.remaining_bits(),
            });
        }
        out.clear();
        out.reserve_exact(len);
        if self.pos % 8 == 0 {
            let start = (self.pos / 8) as usize;
            out.extend_from_slice(&self.bytes[start..start + len]);
            self.pos += bits;
            return Ok(());
        }
        for _ in 0..len {
            out.push(self.read_bits(8)? as u8);
        }
        Ok(())
    }

    /// Checks that a claimed element count could fit in the remaining input,
    /// given that every element takes at least `min_bits_each` bits (a zero
    /// minimum is treated as one bit, so a count is always bounded by the input).
    /// Call it before allocating for `claimed` elements.
    pub fn check_len(&self, claimed: u64, min_bits_each: u64) -> Result<usize, DecodeError> {
        let remaining = self.remaining_bits();
        let fits = claimed
            .checked_mul(min_bits_each.max(1))
            .is_some_and(|needed| needed <= remaining);
        match usize::try_from(claimed) {
            Ok(len) if fits => Ok(len),
            _ => Err(DecodeError::LengthTooLarge {
                bit_offset: self.pos,
                claimed,
                remaining_bits: remaining,
            }),
        }
    }

    /// Checks that what is left of the input is only zero padding to the
    /// next byte boundary (as [`BitWriter::finish`] writes it).
    pub fn expect_end(&mut self) -> Result<(), DecodeError> {
        let end = self.pos;
        let remaining = self.remaining_bits();
        if remaining >= 8 || self.read_bits(remaining as u32)? != 0 {
            return Err(DecodeError::TrailingData {
                bit_offset: end,
                remaining_bits: remaining,
            });
        }
        Ok(())
    }
}

/// A [`BitReader`] one derived value deeper, from [`BitReader::nest`].
#[doc(hidden)]
pub struct NestedReader<'r, 'a> {
    reader: &'r mut BitReader<'a>,
}

impl<'a> Deref for NestedReader<'_, 'a> {
    type Target = BitReader<'a>;

    fn deref(&self) -> &BitReader<'a> {
        self.reader
    }
}

impl<'a> DerefMut for NestedReader<'_, 'a> {
    fn deref_mut(&mut self) -> &mut BitReader<'a> {
        self.reader
    }
}

impl Drop for NestedReader<'_, '_> {
    fn drop(&mut self) {
        self.reader.depth -= 1;
    }
}

/// Copies the next `bits` bits of `reader` to `writer`. The caller knows
/// they are there (they were written by this crate); missing bits are
/// written as zeros.
pub(crate) fn copy_bits(reader: &mut BitReader<'_>, writer: &mut BitWriter<'_>, bits: u64) {
    let mut left = bits;
    while left > 0 {
        let step = left.min(64) as u32;
        writer.write_bits(reader.read_bits(step).unwrap_or(0), step);
        left -= u64::from(step);
    }
}

/// How many elements to reserve up front for a collection of `len`
/// elements read from the wire (`len` already checked against the input):
/// at most 64 KiB worth, so a short input that names a type with large
/// elements cannot make the decoder reserve gigabytes before decoding a single
/// one. Beyond that the collection grows as elements actually decode.
pub(crate) fn prealloc<T>(len: usize) -> usize {
    const LIMIT_BYTES: usize = 64 * 1024;
    len.min(LIMIT_BYTES / core::mem::size_of::<T>().max(1))
}

/// Maps a signed integer to an unsigned one so small magnitudes stay small:
/// `0, -1, 1, -2, 2` → `0, 1, 2, 3, 4`.
#[inline]
pub const fn zigzag_encode(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Inverse of [`zigzag_encode`].
#[inline]
pub const fn zigzag_decode(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_bits(v: u64) -> u64 {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write_varint(v);
        w.bits_written()
    }

    #[test]
    fn varint_sizes_match_the_table() {
        let expect = [
            (0, 1),
            (1, 4),
            (2, 4),
            (3, 5),
            (6, 5),
            (7, 8),
            (14, 8),
            (63, 11),
            (126, 11),
            (1000, 16),
            (10_000, 20),
            (u64::MAX, 77),
        ];
        for (v, bits) in expect {
            assert_eq!(varint_bits(v), bits, "varint({v})");
        }
    }

    #[test]
    fn gamma_sizes_match_the_table() {
        for (v, bits) in [
            (0u64, 1u64),
            (1, 3),
            (2, 3),
            (3, 5),
            (1000, 19),
            (u64::MAX, 129),
        ] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            w.write_gamma(v);
            assert_eq!(w.bits_written(), bits, "gamma({v})");
        }
    }

    #[test]
    fn extreme_varints_round_trip() {
        for v in [
            0,
            1,
            2,
            127,
            128,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            w.write_varint(v);
            w.write_gamma(v);
            w.write_varint_signed(v as i64);
            w.finish();
            let mut r = BitReader::new(&out);
            assert_eq!(r.read_varint(), Ok(v));
            assert_eq!(r.read_gamma(), Ok(v));
            assert_eq!(r.read_varint_signed(), Ok(v as i64));
            assert_eq!(r.expect_end(), Ok(()));
        }
    }

    #[test]
    fn overlong_prefixes_are_rejected() {
        // Seven zero bits cannot start an Elias-delta code of a u64.
        let mut r = BitReader::new(&[0x00, 0xff]);
        assert_eq!(
            r.read_varint(),
            Err(DecodeError::VarintOverlong { bit_offset: 0 })
        );
        // 64 zeros may still start the code of u64::MAX: the input ended.
        let mut r = BitReader::new(&[0u8; 8]);
        assert!(matches!(
            r.read_gamma(),
            Err(DecodeError::UnexpectedEnd { .. })
        ));
        // 65 zeros cannot start an Elias-gamma code of a u64.
        let bytes = [0u8; 9];
        let mut r = BitReader::new(&bytes);
        assert_eq!(
            r.read_gamma(),
            Err(DecodeError::VarintOverlong { bit_offset: 0 })
        );
    }

    #[test]
    fn varint_just_past_u64_is_out_of_range() {
        // Elias-gamma of 2^64 + 1: 64 zeros, a one, then 64 bits equal to 1.
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write_bits(0, 64);
        w.write_bool(true);
        w.write_bits(1, 64);
        w.finish();
        assert_eq!(
            BitReader::new(&out).read_gamma(),
            Err(DecodeError::VarintOutOfRange {
                bit_offset: 0,
                target: "u64"
            })
        );
    }

    #[test]
    fn checked_bits_refuse_values_that_do_not_fit() {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        assert_eq!(w.write_bits_checked(7, 3), Ok(()));
        assert_eq!(
            w.write_bits_checked(8, 3),
            Err(EncodeError::ValueOutOfRange { value: 8, bits: 3 })
        );
        assert_eq!(w.bits_written(), 3);
    }

    #[test]
    fn reads_past_the_end_fail_without_consuming() {
        let mut r = BitReader::new(&[0xab]);
        assert_eq!(r.read_bits(4), Ok(0xb));
        assert_eq!(
            r.read_bits(5),
            Err(DecodeError::UnexpectedEnd {
                bit_offset: 4,
                wanted: 5
            })
        );
        assert_eq!(r.read_bits(4), Ok(0xa));
        assert_eq!(r.remaining_bits(), 0);
    }

    #[test]
    fn unaligned_bytes_round_trip() {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write_bool(true);
        w.write_bytes(b"hey");
        assert_eq!(w.finish(), 25);
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_bool(), Ok(true));
        let mut s = Vec::new();
        r.read_bytes_into(3, &mut s).unwrap();
        assert_eq!(s, b"hey");
        assert_eq!(r.expect_end(), Ok(()));
    }

    #[test]
    fn nesting_stops_at_the_limit_and_unwinds_on_every_path() {
        fn enter(reader: &mut BitReader<'_>, levels: u32) -> Result<(), DecodeError> {
            let mut nested = reader.nest()?;
            if levels > 1 {
                enter(&mut nested, levels - 1)?;
            }
            Ok(())
        }
        let mut r = BitReader::new(&[0xff]);
        assert_eq!(r.read_bits(3), Ok(7));
        assert_eq!(enter(&mut r, MAX_DEPTH), Ok(()));
        assert_eq!(r.depth, 0);
        assert_eq!(
            enter(&mut r, MAX_DEPTH + 1),
            Err(DecodeError::TooDeep {
                bit_offset: 3,
                limit: MAX_DEPTH
            })
        );
        assert_eq!(r.depth, 0, "left on the error path too");

        fn write(writer: &mut BitWriter<'_>, levels: u32) -> Result<(), EncodeError> {
            let mut nested = writer.nest()?;
            nested.write_bool(true);
            if levels > 1 {
                write(&mut nested, levels - 1)?;
            }
            Ok(())
        }
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        assert_eq!(write(&mut w, MAX_DEPTH), Ok(()));
        assert_eq!(
            write(&mut w, MAX_DEPTH + 1),
            Err(EncodeError::TooDeep { limit: MAX_DEPTH })
        );
        assert_eq!(w.depth, 0);
        assert_eq!(w.bits_written(), 2 * u64::from(MAX_DEPTH));
    }

    #[test]
    fn zigzag_orders_by_magnitude() {
        let mapped: Vec<u64> = [0i64, -1, 1, -2, 2, i64::MIN, i64::MAX]
            .iter()
            .map(|&v| zigzag_encode(v))
            .collect();
        assert_eq!(mapped, [0, 1, 2, 3, 4, u64::MAX, u64::MAX - 1]);
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(zigzag_decode(zigzag_encode(v)), v);
        }
    }
}
