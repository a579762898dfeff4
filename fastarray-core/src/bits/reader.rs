//! [`BitReader`]: bits in, as [`BitWriter`](super::BitWriter) wrote them,
//! never past the end and never panicking.

use super::zigzag_decode;
use crate::error::DecodeError;

/// Reads bits written by [`BitWriter`](super::BitWriter), counting them, never reading past
/// the end of its input and never panicking.
///
/// # Nesting depth
///
/// Derived types count how deeply their values nest on the reader: a value
/// more than [`MAX_DEPTH`](super::MAX_DEPTH) (128) derived values deep, the outermost
/// counting as the first, is refused with [`DecodeError::TooDeep`] before
/// the level past the limit is read. This bounds the recursion (and the
/// stack) a message of a recursive type can cause, whatever its size.
///
/// # Reading a word at a time
///
/// The reader holds the next bits of its input in a word, `window`, so
/// that a short read (an id's gap, a flag, a 16-bit field) shifts bits out
/// of a register instead of locating and loading its bytes again: a delta's
/// entry is a handful of reads, and the word is loaded about once per
/// entry. The word never holds bits past the end of the input (`held` ≤
/// the bits left), so a read it satisfies needs no other bounds check.
pub struct BitReader<'a> {
    bytes: &'a [u8],
    total: u64,
    /// The offset of the first bit past the window: the reader is at
    /// `end − held` (a read moves only `window` and `held`).
    end: u64,
    /// The input's next bits, the next one lowest: its low `held` bits
    /// (the rest are zero).
    window: u64,
    /// How many bits `window` holds: at most 64, and at most the bits left.
    held: u32,
    /// Derived values being read, one inside the other.
    pub(super) depth: u32,
}

impl<'a> BitReader<'a> {
    /// A reader over all bits of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            total: 8 * bytes.len() as u64,
            end: 0,
            window: 0,
            held: 0,
            depth: 0,
        }
    }

    /// A reader over the first `bits` bits of `bytes` (all of them if
    /// there are fewer): for a message whose length is known in bits, so
    /// that reading into the zero padding of its last byte is reported as
    /// the end of the input.
    #[cfg_attr(not(feature = "bitstream-io"), allow(dead_code))]
    pub(crate) fn with_len(bytes: &'a [u8], bits: u64) -> Self {
        let mut reader = Self::new(bytes);
        reader.total = reader.total.min(bits);
        reader
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

    /// The whole bytes that hold the input's bits `start..end` (clamped to
    /// the input): for a copy of part of a message, read again later from
    /// bit `start % 8` of the copy.
    pub(crate) fn bytes_between(&self, start: u64, end: u64) -> &'a [u8] {
        let end = end.min(self.total);
        let first = usize::try_from(start.min(end) / 8).unwrap_or(usize::MAX);
        let last = usize::try_from(end.div_ceil(8)).unwrap_or(usize::MAX);
        self.bytes.get(first..last).unwrap_or_default()
    }

    /// Moves to bit `at` of the input (its end, if it is shorter), forward
    /// or back.
    #[inline]
    pub(crate) fn seek(&mut self, at: u64) {
        self.end = at.min(self.total);
        self.window = 0;
        self.held = 0;
    }

    /// Bits consumed so far.
    #[inline]
    pub fn bit_offset(&self) -> u64 {
        self.end - u64::from(self.held)
    }

    /// Moves past the next `bits` bits if they are there and start on a
    /// byte boundary, returning the input from their first byte (for a
    /// copy that takes whole bytes at once).
    pub(crate) fn take_aligned(&mut self, bits: u64) -> Option<&'a [u8]> {
        if self.bit_offset() % 8 != 0 || self.remaining_bits() < bits {
            return None;
        }
        let bytes = self
            .bytes
            .get(usize::try_from(self.bit_offset() / 8).ok()?..)?;
        self.skip(bits);
        Some(bytes)
    }

    /// Runs `read` with this reader ending at most `bits` bits from where
    /// it is (sooner, if its input does), then gives it back its end;
    /// returns `read`'s result, and whether the input was cut short.
    pub(crate) fn within<R>(&mut self, bits: u64, read: impl FnOnce(&mut Self) -> R) -> (R, bool) {
        let total = self.total;
        let pos = self.bit_offset();
        let end = pos.saturating_add(bits);
        let cut = end < total;
        if cut {
            self.total = end;
            // The window keeps only bits before the new end.
            self.held = u64::from(self.held).min(end - pos) as u32;
            self.window = mask_low(self.window, self.held);
            self.end = pos + u64::from(self.held);
        }
        let result = read(self);
        self.total = total;
        (result, cut)
    }

    /// Moves past the next `bits` bits if the input holds that many, and
    /// says whether it did (a reader that could not stays where it was):
    /// for values whose bits need no reading to be known good.
    ///
    /// ```
    /// use fastarray_core::BitReader;
    ///
    /// let mut reader = BitReader::new(&[0xab, 0xcd]);
    /// assert!(reader.skip_bits(12));
    /// assert!(!reader.skip_bits(5));
    /// assert_eq!(reader.read_bits(4).unwrap(), 0xc);
    /// ```
    #[inline]
    pub fn skip_bits(&mut self, bits: u64) -> bool {
        if bits <= u64::from(self.held) {
            // At most 64: the window holds them.
            self.consume(bits as u32);
            true
        } else if bits <= self.remaining_bits() {
            self.skip(bits);
            true
        } else {
            false
        }
    }

    /// Bits left in the input.
    #[inline]
    pub fn remaining_bits(&self) -> u64 {
        self.total - self.bit_offset()
    }

    /// Reads one bit.
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        self.read_bits(1).map(|bit| bit == 1)
    }

    /// Reads `count` bits (≤ 64) as an unsigned number.
    #[inline]
    pub fn read_bits(&mut self, count: u32) -> Result<u64, DecodeError> {
        if count > self.held {
            self.refill(count)?;
        }
        let value = mask_low(self.window, count);
        self.consume(count);
        Ok(value)
    }

    /// Loads the window from the reader's offset for a read of `count`
    /// bits that it does not hold, refusing the read if the input has
    /// fewer left. Out of line: most reads take bits the window holds
    /// (a delta's entry is read with about one refill).
    #[inline(never)]
    fn refill(&mut self, count: u32) -> Result<(), DecodeError> {
        let pos = self.bit_offset();
        let left = self.total - pos;
        if count > 64 || left < u64::from(count) {
            return Err(DecodeError::UnexpectedEnd {
                bit_offset: pos,
                wanted: count,
            });
        }
        let byte = (pos / 8) as usize;
        let shift = (pos % 8) as u32;
        // Up to 9 bytes hold the next 64 bits. Away from the end of the
        // input, loaded directly: the word at `byte`, and the bits of the
        // byte after it that the shift leaves room for (none when it is 0).
        let word = match self.bytes.get(byte..).and_then(<[u8]>::first_chunk::<9>) {
            Some(nine) => {
                let (low, high) = nine.split_at(8);
                let low = u64::from_le_bytes(low.try_into().unwrap_or_default());
                (low >> shift) | (u64::from(high[0]) << 1 << (63 - shift))
            }
            None => self.tail_word(byte, shift),
        };
        self.held = left.min(64) as u32;
        self.window = mask_low(word, self.held);
        self.end = pos + u64::from(self.held);
        Ok(())
    }

    /// The bits from bit `shift` of byte `byte` on, near the end of the
    /// input (fewer than 9 bytes left there): zero past it.
    #[cold]
    fn tail_word(&self, byte: usize, shift: u32) -> u64 {
        let tail = self.bytes.get(byte..).unwrap_or_default();
        let word = tail
            .iter()
            .take(8)
            .rev()
            .fold(0u64, |word, &b| word << 8 | u64::from(b));
        word >> shift
    }

    /// Moves past `count` bits the window holds.
    #[inline]
    fn consume(&mut self, count: u32) {
        debug_assert!(count <= self.held);
        self.window = self.window.checked_shr(count).unwrap_or(0);
        self.held -= count;
    }

    /// Moves past `bits` bits the caller has checked are there, reading
    /// none of them through the window.
    fn skip(&mut self, bits: u64) {
        self.end = self.bit_offset() + bits;
        self.window = 0;
        self.held = 0;
    }

    /// The next 64 bits, if the input has that many left: the window the
    /// Elias codes are read from in one go.
    #[inline]
    pub(super) fn peek_word(&mut self) -> Option<u64> {
        if self.held < 64 {
            if self.remaining_bits() < 64 {
                return None;
            }
            self.refill(64).ok()?;
        }
        Some(self.window)
    }

    /// Reads a value written by [`BitWriter::write_varint`](super::BitWriter::write_varint).
    #[inline]
    pub fn read_varint(&mut self) -> Result<u64, DecodeError> {
        // The whole code from the window as it is, or else from a full one
        // (the writer's one-word case, values below 2^31, always fits).
        match self.varint_in_window() {
            Some(value) => Ok(value),
            None => self.read_code_refilled(Self::varint_in_window, Self::read_varint_bitwise),
        }
    }

    /// An Elias code the window does not hold all of: read from a full
    /// window (`in_window`) if the input has 64 bits left and the code
    /// fits, else bit by bit (`bitwise`). Out of line: most codes are read
    /// from the window as it is.
    #[inline(never)]
    fn read_code_refilled(
        &mut self,
        in_window: impl FnOnce(&mut Self) -> Option<u64>,
        bitwise: impl FnOnce(&mut Self) -> Result<u64, DecodeError>,
    ) -> Result<u64, DecodeError> {
        if self.peek_word().is_some()
            && let Some(value) = in_window(self)
        {
            return Ok(value);
        }
        bitwise(self)
    }

    /// Reads a varint if the window holds all of its code: `z` zeros, a
    /// one, the `z` low bits of `n`, then the `n − 1` low bits of the
    /// value plus one.
    #[inline]
    fn varint_in_window(&mut self) -> Option<u64> {
        let word = self.window;
        let zeros = word.trailing_zeros();
        if zeros > 5 {
            return None;
        }
        let n = (1u64 << zeros) | mask_low(word >> (zeros + 1), zeros);
        let head = 2 * zeros + 1;
        let total = u64::from(head) + n - 1;
        // Bits past `held` are zeros the input may not have.
        if total > u64::from(self.held) {
            return None;
        }
        let low = mask_low(word >> head, (n - 1) as u32);
        self.consume(total as u32);
        Some(((1u64 << (n - 1)) | low) - 1)
    }

    /// [`read_varint`](Self::read_varint) bit by bit: near the end of the
    /// input, for a code longer than a word, and for malformed input
    /// (whose error it reports).
    pub(super) fn read_varint_bitwise(&mut self) -> Result<u64, DecodeError> {
        let start = self.bit_offset();
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

    /// Reads a value written by [`BitWriter::write_gamma`](super::BitWriter::write_gamma).
    #[inline]
    pub fn read_gamma(&mut self) -> Result<u64, DecodeError> {
        // The whole code from the window as it is, or else from a full
        // one: `z` zeros, a one, then the `z` low bits of the value plus one.
        match self.gamma_in_window() {
            Some(value) => Ok(value),
            None => self.read_code_refilled(Self::gamma_in_window, Self::read_gamma_bitwise),
        }
    }

    /// Reads an Elias-gamma code if the window holds all of it.
    #[inline]
    fn gamma_in_window(&mut self) -> Option<u64> {
        let zeros = self.window.trailing_zeros();
        // Bits past `held` are zeros the input may not have; a code that
        // fits the window has fewer than 32 zeros.
        if 2 * zeros + 1 > self.held {
            return None;
        }
        let low = mask_low(self.window >> (zeros + 1), zeros);
        self.consume(2 * zeros + 1);
        Some(((1u64 << zeros) | low) - 1)
    }

    /// [`read_gamma`](Self::read_gamma) bit by bit: near the end of the
    /// input, for a code longer than a word, and for malformed input
    /// (whose error it reports).
    pub(super) fn read_gamma_bitwise(&mut self) -> Result<u64, DecodeError> {
        let start = self.bit_offset();
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

    /// Reads a value written by [`BitWriter::write_varint_signed`](super::BitWriter::write_varint_signed).
    pub fn read_varint_signed(&mut self) -> Result<i64, DecodeError> {
        self.read_varint().map(zigzag_decode)
    }

    /// Reads `len` whole bytes into `out` (which is cleared first).
    pub fn read_bytes_into(&mut self, len: usize, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let bits = (len as u64).saturating_mul(8);
        if bits > self.remaining_bits() {
            return Err(DecodeError::LengthTooLarge {
                bit_offset: self.bit_offset(),
                claimed: len as u64,
                remaining_bits: self.remaining_bits(),
            });
        }
        out.clear();
        out.reserve_exact(len);
        if self.bit_offset() % 8 == 0 {
            let start = (self.bit_offset() / 8) as usize;
            out.extend_from_slice(&self.bytes[start..start + len]);
            self.skip(bits);
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
                bit_offset: self.bit_offset(),
                claimed,
                remaining_bits: remaining,
            }),
        }
    }

    /// Checks that what is left of the input is only zero padding to the
    /// next byte boundary (as [`BitWriter::finish`](super::BitWriter::finish) writes it).
    pub fn expect_end(&mut self) -> Result<(), DecodeError> {
        let end = self.bit_offset();
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

/// How many elements to reserve up front for a collection of `len`
/// elements read from the wire (`len` already checked against the input):
/// at most 256 KiB worth, so a short input that names a type with large
/// elements cannot make the decoder reserve gigabytes before decoding a single
/// one. Beyond that the collection grows as elements actually decode. (A
/// mirror's entries take about 100 bytes each for a small item type: the
/// limit holds a tick's thousands of changes without copying them to grow.)
pub(crate) fn prealloc<T>(len: usize) -> usize {
    const LIMIT_BYTES: usize = 256 * 1024;
    len.min(LIMIT_BYTES / core::mem::size_of::<T>().max(1))
}

/// The low `count` bits of `value` (`count` in 0..=64).
#[inline]
fn mask_low(value: u64, count: u32) -> u64 {
    value & 1u64.checked_shl(count).map_or(u64::MAX, |bit| bit - 1)
}
