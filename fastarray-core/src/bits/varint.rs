//! The sizes of the Elias codes [`BitWriter`](super::BitWriter) writes, and
//! the zig-zag mapping of signed integers.

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

/// Bits of [`BitWriter::write_varint`](super::BitWriter::write_varint) for `value`.
pub(crate) fn varint_bits(value: u64) -> u64 {
    let n = u64::from(128 - (u128::from(value) + 1).leading_zeros());
    let len_bits = u64::from(64 - n.leading_zeros());
    2 * len_bits - 1 + n - 1
}

/// Bits of [`BitWriter::write_gamma`](super::BitWriter::write_gamma) for `value`.
pub(crate) fn gamma_bits(value: u64) -> u64 {
    let n = u64::from(128 - (u128::from(value) + 1).leading_zeros());
    2 * n - 1
}
