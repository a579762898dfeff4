//! The frame a delta describes: in short form (15 low bits) once the
//! client acknowledged a recent frame, else whole.

use super::WINDOW;
use crate::bits::{BitReader, BitWriter, varint_bits};
use crate::error::DecodeError;

/// Width of a frame written in short form: the low bits of the frame,
/// read relative to the newest frame the mirror applied.
///
/// The width sets how late a packet may arrive and still be told apart from
/// a new one: 2^15 − 64 = 32 704 frames, 9 minutes at 60 Hz and 2 minutes
/// 16 seconds at 240 Hz. That covers TCP's conservative maximum segment
/// lifetime (2 minutes, RFC 9293) at any tick rate up to 240 Hz.
const SHORT_FRAME_BITS: u32 = 15;

/// The sender uses the short form only while the frame is less than
/// [`WINDOW`] ahead of a frame the client acknowledged. The mirror has
/// applied that frame or a newer one, so a short frame is at most
/// `WINDOW - 1` ahead of the mirror's newest frame; the mirror reads it as
/// the frame with those low bits in `[newest - 2^15 + WINDOW, newest + WINDOW)`.
/// Only a packet delayed in the network by more than 32 704 frames could be
/// misread.
const SHORT_FRAME_REACH: u64 = WINDOW;
/// Whether [`write_frame`] uses the short form for `frame`, given the
/// newest frame the client acknowledged.
pub(crate) fn short_frame(frame: u64, acked: Option<u64>) -> bool {
    acked.is_some_and(|acked| frame >= acked && frame - acked < SHORT_FRAME_REACH)
}

/// Writes the frame a delta describes: `0` + 15 low bits when the client is
/// known to have seen a frame less than [`WINDOW`] older, else `1` + varint.
pub(crate) fn write_frame(writer: &mut BitWriter<'_>, frame: u64, acked: Option<u64>) {
    if short_frame(frame, acked) {
        writer.write_bool(false);
        writer.write_bits(frame, SHORT_FRAME_BITS);
    } else {
        writer.write_bool(true);
        writer.write_varint(frame);
    }
}

/// Bits [`write_frame`] uses.
pub(crate) fn frame_bits(frame: u64, acked: Option<u64>) -> u64 {
    if short_frame(frame, acked) {
        1 + u64::from(SHORT_FRAME_BITS)
    } else {
        1 + varint_bits(frame)
    }
}

/// The largest frame a message may name: far beyond any real sender
/// (2^64 commits), and low enough that a mirror's arithmetic on frames
/// (`newest + WINDOW`) never overflows, whatever a hostile packet says.
pub(crate) const MAX_FRAME: u64 = u64::MAX - 2 * WINDOW;

/// Reads a frame written in long form (a varint), refusing one above
/// [`MAX_FRAME`].
pub(crate) fn read_long_frame(reader: &mut BitReader<'_>) -> Result<u64, DecodeError> {
    let bit_offset = reader.bit_offset();
    let frame = reader.read_varint()?;
    if frame > MAX_FRAME {
        return Err(DecodeError::VarintOutOfRange {
            bit_offset,
            target: "frame",
        });
    }
    Ok(frame)
}

/// A frame as written, before a mirror resolves a short one: reading past
/// a message (one whose contents will be dropped) needs no reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameField {
    /// The low 15 bits, at this bit offset.
    Short { low: u64, bit_offset: u64 },
    /// The whole frame.
    Long(u64),
}

impl FrameField {
    /// Reads a frame written by [`write_frame`], without resolving it.
    pub(crate) fn read(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let bit_offset = reader.bit_offset();
        if reader.read_bool()? {
            return read_long_frame(reader).map(Self::Long);
        }
        let low = reader.read_bits(SHORT_FRAME_BITS)?;
        Ok(Self::Short { low, bit_offset })
    }

    /// The frame, a short one resolved against `newest`, the newest frame
    /// the mirror applied.
    pub(crate) fn resolve(self, newest: Option<u64>) -> Result<u64, DecodeError> {
        let (low, bit_offset) = match self {
            Self::Long(frame) => return Ok(frame),
            Self::Short { low, bit_offset } => (low, bit_offset),
        };
        let newest = newest.ok_or(DecodeError::FrameWithoutReference { bit_offset })?;
        // The latest frame with these low bits that is before `newest + WINDOW`.
        let top = newest.min(MAX_FRAME) + WINDOW - 1;
        let behind = top.wrapping_sub(low) & ((1 << SHORT_FRAME_BITS) - 1);
        top.checked_sub(behind)
            .ok_or(DecodeError::FrameWithoutReference { bit_offset })
    }
}

/// Reads a frame written by [`write_frame`], resolving the short form
/// against `newest`, the newest frame the mirror applied.
#[cfg(test)]
pub(crate) fn read_frame(
    reader: &mut BitReader<'_>,
    newest: Option<u64>,
) -> Result<u64, DecodeError> {
    FrameField::read(reader)?.resolve(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_frames_resolve_around_the_newest_frame() {
        for (frame, acked, newest) in [
            (70_000u64, 69_990u64, 69_995u64),
            (65_540, 65_530, 65_535),
            (10, 5, 40), // a late packet, behind the newest frame
            (100, 90, 90),
            (153, 90, 90),  // as far ahead of the newest frame as allowed
            (1, 1, 32_704), // 32 703 frames late: the latest still told apart
        ] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            write_frame(&mut w, frame, Some(acked));
            assert_eq!(w.bits_written(), 16);
            assert_eq!(w.bits_written(), frame_bits(frame, Some(acked)));
            w.finish();
            assert_eq!(
                read_frame(&mut BitReader::new(&out), Some(newest)),
                Ok(frame)
            );
            assert_eq!(
                read_frame(&mut BitReader::new(&out), None),
                Err(DecodeError::FrameWithoutReference { bit_offset: 0 })
            );
        }
        // Nothing acknowledged yet, or acknowledged long ago: the full frame.
        for acked in [None, Some(3)] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            write_frame(&mut w, 1 << 20, acked);
            assert_eq!(w.bits_written(), frame_bits(1 << 20, acked));
            w.finish();
            assert_eq!(read_frame(&mut BitReader::new(&out), None), Ok(1 << 20));
        }
    }
}
