//! How deeply derived values may nest ([`MAX_DEPTH`]), and the guards the
//! derive's code takes on a reader or writer for each level.

use core::ops::{Deref, DerefMut};

use super::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError};

/// How deeply values of `#[derive(Replicate)]` types may nest in one value:
/// 128 levels, the item itself counting as the first. A struct none of whose
/// fields can reach derived code (numbers, strings, quantized floats,
/// collections of those) does not count: it cannot be on a cycle of
/// recursion.
///
/// A recursive type (`struct Chain { next: Option<Box<Chain>> }`, or
/// `struct Node { kids: Vec<Node> }`) takes as little as one bit per level
/// on the wire, so without a bound a short message could make the decoder
/// recurse until the thread's stack overflows, which aborts the process.
/// Past this depth a [`BitReader`] refuses the value with
/// [`DecodeError::TooDeep`](crate::DecodeError::TooDeep), and a [`BitWriter`] refuses to write it with
/// [`EncodeError::TooDeep`](crate::EncodeError::TooDeep), so a sender never writes what a receiver
/// refuses. 128 is serde_json's recursion limit: far more than game state
/// nests, and few enough that decoding (and dropping) the deepest value
/// accepted fits a small thread stack.
pub const MAX_DEPTH: u32 = 128;

impl<'a> BitWriter<'a> {
    /// Enters one more level of derived value: what `#[derive(Replicate)]`
    /// calls at the start of `encode` and `encode_fields`, writing through
    /// the returned guard, which leaves the level when dropped (on every
    /// path, errors included). Refuses a level past [`MAX_DEPTH`].
    ///
    /// `counts` is `false` for a type none of whose fields can reach
    /// derived code ([`BitCodec::NESTS`](crate::BitCodec::NESTS)): it
    /// cannot be on a cycle of recursion, so its level is not counted, and
    /// the check and the count cost nothing once inlined. The reader's
    /// [`nest`](BitReader::nest) is given the same, so a sender still
    /// refuses exactly what a receiver would.
    #[doc(hidden)]
    #[inline]
    pub fn nest(&mut self, counts: bool) -> Result<NestedWriter<'_, 'a>, EncodeError> {
        if counts {
            if self.depth >= MAX_DEPTH {
                return Err(EncodeError::TooDeep { limit: MAX_DEPTH });
            }
            self.depth += 1;
        }
        Ok(NestedWriter {
            writer: self,
            counted: counts,
        })
    }
}

impl<'a> BitReader<'a> {
    /// Enters one more level of derived value: what `#[derive(Replicate)]`
    /// calls at the start of `decode` and `decode_fields`, reading through
    /// the returned guard, which leaves the level when dropped (on every
    /// path, errors included). Refuses a level past [`MAX_DEPTH`]. See
    /// [`BitWriter::nest`] for `counts`.
    #[doc(hidden)]
    #[inline]
    pub fn nest(&mut self, counts: bool) -> Result<NestedReader<'_, 'a>, DecodeError> {
        if counts {
            if self.depth >= MAX_DEPTH {
                return Err(DecodeError::TooDeep {
                    bit_offset: self.bit_offset(),
                    limit: MAX_DEPTH,
                });
            }
            self.depth += 1;
        }
        Ok(NestedReader {
            reader: self,
            counted: counts,
        })
    }
}

/// A [`BitWriter`] one derived value deeper, from [`BitWriter::nest`].
#[doc(hidden)]
pub struct NestedWriter<'r, 'a> {
    pub(super) writer: &'r mut BitWriter<'a>,
    /// Whether the level was counted.
    counted: bool,
}

impl<'a> Deref for NestedWriter<'_, 'a> {
    type Target = BitWriter<'a>;

    #[inline]
    fn deref(&self) -> &BitWriter<'a> {
        self.writer
    }
}

impl<'a> DerefMut for NestedWriter<'_, 'a> {
    #[inline]
    fn deref_mut(&mut self) -> &mut BitWriter<'a> {
        self.writer
    }
}

impl Drop for NestedWriter<'_, '_> {
    #[inline]
    fn drop(&mut self) {
        if self.counted {
            self.writer.depth -= 1;
        }
    }
}

/// A [`BitReader`] one derived value deeper, from [`BitReader::nest`].
#[doc(hidden)]
pub struct NestedReader<'r, 'a> {
    pub(super) reader: &'r mut BitReader<'a>,
    /// Whether the level was counted.
    counted: bool,
}

impl<'a> Deref for NestedReader<'_, 'a> {
    type Target = BitReader<'a>;

    #[inline]
    fn deref(&self) -> &BitReader<'a> {
        self.reader
    }
}

impl<'a> DerefMut for NestedReader<'_, 'a> {
    #[inline]
    fn deref_mut(&mut self) -> &mut BitReader<'a> {
        self.reader
    }
}

impl Drop for NestedReader<'_, '_> {
    #[inline]
    fn drop(&mut self) {
        if self.counted {
            self.reader.depth -= 1;
        }
    }
}
