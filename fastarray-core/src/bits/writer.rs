//! [`BitWriter`]: bits out, least significant first, through a 64-bit
//! accumulator.

use super::zigzag_encode;
use crate::error::EncodeError;

/// Writes bits, least significant bit first, appending to a caller's `Vec<u8>`.
///
/// Bits gather in a 64-bit accumulator that is flushed to the vector eight
/// bytes at a time; the last partial byte is zero-padded when the writer is
/// [finished](BitWriter::finish) or dropped. Several encoders can share one
/// writer, so several arrays can share one packet without byte alignment
/// between them.
///
/// Derived types count how deeply their values nest on the writer and
/// refuse to write past [`MAX_DEPTH`](super::MAX_DEPTH) levels ([`EncodeError::TooDeep`]).
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
    pub(super) depth: u32,
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

    /// A writer that appends to `out`, at this writer's nesting depth: for
    /// a codec that encodes parts of a value on the side (to sort them)
    /// and copies them in, so the depth bound still counts every level.
    pub(crate) fn beside<'b>(&self, out: &'b mut Vec<u8>) -> BitWriter<'b> {
        let mut writer = BitWriter::new(out);
        writer.depth = self.depth;
        writer
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
        // `count` is 1..=64 here: one shift keeps its low bits.
        let value = value & (u64::MAX >> (64 - count));
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
    #[inline]
    pub fn write_varint(&mut self, value: u64) {
        match varint_word(value) {
            Some((word, bits)) => self.write_bits(word, bits),
            None => self.write_varint_wide(value),
        }
    }

    /// [`write_varint`](Self::write_varint) for any value, field by field.
    pub(super) fn write_varint_wide(&mut self, value: u64) {
        let x = u128::from(value) + 1;
        let n = 128 - x.leading_zeros(); // 1..=65 significant bits
        let len_bits = 32 - n.leading_zeros(); // 1..=7 bits to write `n`
        self.write_bits(0, len_bits - 1);
        self.write_bool(true);
        self.write_bits(u64::from(n), len_bits - 1);
        self.write_wide_low_bits(x, n - 1);
    }

    /// Writes `value` as an Elias-gamma code of `value + 1` (see the module docs).
    #[inline]
    pub fn write_gamma(&mut self, value: u64) {
        match gamma_word(value) {
            Some((word, bits)) => self.write_bits(word, bits),
            None => self.write_gamma_wide(value),
        }
    }

    /// [`write_gamma`](Self::write_gamma) of a value of 2^31 or more: out
    /// of line, so that the common case inlines small.
    fn write_gamma_wide(&mut self, value: u64) {
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
    #[inline]
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.write_bits(u64::from_le_bytes(word), 64);
        }
        // The last few bytes as one word (a short string's bytes are all
        // of them), gathered byte by byte: a copy of a length known only
        // here is a call to `memmove`, which cost more than the bytes.
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let word = (rest.iter().rev()).fold(0, |word, &byte| word << 8 | u64::from(byte));
            self.write_bits(word, 8 * rest.len() as u32);
        }
    }

    /// Pads the last byte with zero bits and returns the number of bits
    /// written (padding excluded). Dropping the writer pads the same way.
    pub fn finish(mut self) -> u64 {
        self.flush();
        self.bits
    }

    /// Takes what was written, if it is under 64 bits, as a word (least
    /// significant bit first) and its length, leaving the writer empty and
    /// its vector untouched: a small encoding then costs no byte copy.
    /// `None`, with nothing taken, if 64 bits or more were written.
    pub(crate) fn take_word(&mut self) -> Option<(u64, u64)> {
        if self.bits >= 64 {
            return None;
        }
        let word = (self.acc, self.bits);
        self.acc = 0;
        self.used = 0;
        self.bits = 0;
        Some(word)
    }

    /// Takes back every bit written after the first `bits` of this writer
    /// (`bits` ≤ [`bits_written`](Self::bits_written)): the writer goes on
    /// as if they had never been written, the bytes flushed for them cut
    /// from its vector and the bits before them in their last byte kept in
    /// the accumulator. For a section written straight into a packet that
    /// turns out to say nothing.
    pub(crate) fn truncate(&mut self, bits: u64) {
        assert!(
            bits <= self.bits,
            "truncating to {bits} of {} bits",
            self.bits
        );
        // Bits already in the vector: whole bytes (the accumulator flushes
        // 8 bytes at a time, or to a byte boundary in `write_bits_from`).
        let flushed = self.bits - u64::from(self.used);
        if bits >= flushed {
            let keep = (bits - flushed) as u32;
            self.acc &= (1u64 << keep) - 1;
            self.used = keep;
        } else {
            let start = self.out.len() - (flushed / 8) as usize;
            let byte = start + (bits / 8) as usize;
            let keep = (bits % 8) as u32;
            self.acc = u64::from(self.out[byte]) & ((1u64 << keep) - 1);
            self.used = keep;
            self.out.truncate(byte);
        }
        self.bits = bits;
    }

    /// Whether the next bit starts a byte.
    pub(crate) fn is_byte_aligned(&self) -> bool {
        self.used % 8 == 0
    }

    /// Appends the first `bits` bits of `bytes`, which were written from
    /// the first bit of a byte as this writer writes them (an encoding
    /// kept to be copied); bits past the end of `bytes` are written as
    /// zeros. On a byte boundary the whole bytes go in one copy (a frame's
    /// shared message into a fresh packet), else a word at a time.
    pub(crate) fn write_bits_from(&mut self, bytes: &[u8], bits: u64) {
        let whole = usize::try_from(bits / 8)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let (head, rest) = bytes.split_at(whole);
        if self.is_byte_aligned() {
            self.flush();
            self.out.extend_from_slice(head);
            self.bits += 8 * whole as u64;
        } else {
            self.write_bytes(head);
        }
        let mut left = bits - 8 * whole as u64;
        if let Some(&byte) = rest.first() {
            // `bytes` goes on: fewer than 8 bits are left, in this byte.
            self.write_bits(u64::from(byte), left as u32);
            left = 0;
        }
        while left > 0 {
            let step = left.min(64);
            self.write_bits(0, step as u32);
            left -= step;
        }
    }

    /// Writes out the accumulator's bits, the last byte zero-padded.
    fn flush(&mut self) {
        if self.used == 0 {
            return;
        }
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

/// The bits [`BitWriter::write_varint`] writes for `value`, as a word to
/// write whole and its length, if `value` is below 2^31 (then the code
/// fits in 42 bits): `len_bits − 1` zeros, a one, the `len_bits − 1` bits
/// of `n` below its leading one, then the `n − 1` bits of `x = value + 1`
/// below its.
#[inline(always)]
pub(crate) fn varint_word(value: u64) -> Option<(u64, u32)> {
    if value == 0 {
        // The gap between consecutive ids, which a dense frame's body
        // writes for every entry: a lone one.
        return Some((1, 1));
    }
    if value >= 1 << 31 {
        return None;
    }
    let x = value + 1;
    let n = 64 - x.leading_zeros(); // 1..=32
    let len_bits = 32 - n.leading_zeros(); // 1..=6
    let n_low = u64::from(n) & ((1 << (len_bits - 1)) - 1);
    let x_low = x & ((1 << (n - 1)) - 1);
    let word = 1 << (len_bits - 1) | n_low << len_bits | x_low << (2 * len_bits - 1);
    Some((word, 2 * len_bits - 1 + n - 1))
}

/// The bits [`BitWriter::write_gamma`] writes for `value`, as a word and
/// its length, if `value` is below 2^31 (then the code fits in 63 bits):
/// `n − 1` zeros, the leading one of `x = value + 1`, then its `n − 1`
/// bits below it.
#[inline(always)]
pub(crate) fn gamma_word(value: u64) -> Option<(u64, u32)> {
    if value >= 1 << 31 {
        return None;
    }
    let x = value + 1;
    let n = 64 - x.leading_zeros();
    let low = x & ((1 << (n - 1)) - 1);
    Some((1 << (n - 1) | low << n, 2 * n - 1))
}

impl Drop for BitWriter<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::BitWriter;

    /// The bytes of `bits` written one by one from bit 0, after `prefix`.
    fn written(prefix: &[u8], bits: &[bool]) -> Vec<u8> {
        let mut out = prefix.to_vec();
        let mut w = BitWriter::new(&mut out);
        for &bit in bits {
            w.write_bool(bit);
        }
        w.finish();
        out
    }

    #[test]
    fn truncating_is_never_having_written_the_rest() {
        let prefix = [0xA5, 0x3C];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut bits = Vec::new();
        for _ in 0..300 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bits.push(state & 1 == 1);
        }
        // Kept lengths on and around byte and word boundaries, and past
        // them; taken-back tails that stay in the accumulator, cross one
        // flush or several, and one after a byte-aligned bulk copy.
        for keep in [0, 1, 7, 8, 9, 63, 64, 65, 100, 127, 128, 129, 200] {
            for extra in [0, 1, 5, 8, 56, 63, 64, 65, 99] {
                let total = keep + extra;
                for aligned_copy in [false, true] {
                    let mut out = prefix.to_vec();
                    let mut w = BitWriter::new(&mut out);
                    if aligned_copy {
                        let head = written(&[], &bits[..keep]);
                        w.write_bits_from(&head, keep as u64);
                    } else {
                        for &bit in &bits[..keep] {
                            w.write_bool(bit);
                        }
                    }
                    for &bit in &bits[keep..total] {
                        w.write_bool(!bit);
                    }
                    w.truncate(keep as u64);
                    assert_eq!(w.bits_written(), keep as u64);
                    // Writing on after the cut lands where the cut was.
                    for &bit in &bits[keep..] {
                        w.write_bool(bit);
                    }
                    assert_eq!(w.finish(), bits.len() as u64);
                    assert_eq!(out, written(&prefix, &bits), "keep {keep}, extra {extra}");
                }
            }
        }
    }
}
