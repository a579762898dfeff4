//! Bit I/O: the writer and reader, little-endian bit order (least significant
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

mod depth;
mod reader;
#[cfg(test)]
mod tests;
mod varint;
mod writer;

pub use depth::MAX_DEPTH;
pub use reader::BitReader;
pub(crate) use reader::prealloc;
pub(crate) use varint::{gamma_bits, varint_bits};
pub use varint::{zigzag_decode, zigzag_encode};
pub use writer::BitWriter;
pub(crate) use writer::{gamma_word, varint_word};

/// Copies the next `bits` bits of `reader` to `writer`. The caller knows
/// they are there (they were written by this crate); missing bits are
/// written as zeros.
pub(crate) fn copy_bits(reader: &mut BitReader<'_>, writer: &mut BitWriter<'_>, bits: u64) {
    // A reader on a byte boundary: its input from there is a slice that
    // starts with these bits.
    if let Some(bytes) = reader.take_aligned(bits) {
        writer.write_bits_from(bytes, bits);
        return;
    }
    let mut left = bits;
    while left > 0 {
        let step = left.min(64) as u32;
        writer.write_bits(reader.read_bits(step).unwrap_or(0), step);
        left -= u64::from(step);
    }
}
