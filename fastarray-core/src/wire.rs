//! Message headers shared by every message kind (see `WIRE.md`).
//!
//! A message starts with its kind:
//!
//! | bits | kind |
//! |---|---|
//! | `0` | empty delta: nothing changed (the whole message is this 1 bit) |
//! | `1 0` | delta |
//! | `1 1` | full snapshot |

use crate::bits::{BitReader, BitWriter, gamma_bits, varint_bits};
use crate::error::DecodeError;
use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// Frames a mirror accepts behind the newest frame it has applied: a delta
/// whose frame is `WINDOW` or more behind is stale and ignored, and the sender
/// counts a packet as lost once it is `WINDOW` frames old. Equal to the
/// history ring's length.
pub(crate) const WINDOW: u64 = crate::history::HISTORY_LEN as u64;

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

/// Writes an id of an ascending list as the gap after the previous one
/// (`next` is the previous id plus one, or zero before the first).
pub(crate) fn write_id(writer: &mut BitWriter<'_>, id: ReplicationId, next: &mut u64) {
    writer.write_varint(id.to_raw() - *next);
    *next = id.to_raw() + 1;
}

/// Reads an id written by [`write_id`].
pub(crate) fn read_id(
    reader: &mut BitReader<'_>,
    next: &mut u64,
) -> Result<ReplicationId, DecodeError> {
    let bit_offset = reader.bit_offset();
    let raw = next
        .checked_add(reader.read_varint()?)
        .ok_or(DecodeError::IdOverflow { bit_offset })?;
    *next = raw
        .checked_add(1)
        .ok_or(DecodeError::IdOverflow { bit_offset })?;
    Ok(ReplicationId::from_raw(raw))
}

/// Bits of one field handle for a type with `field_count` fields: ⌈log2⌉.
fn handle_bits(field_count: u32) -> u32 {
    if field_count <= 1 {
        0
    } else {
        32 - (field_count - 1).leading_zeros()
    }
}

/// The two ways of writing a set of changed fields, as (mask, handles) sizes.
fn field_set_costs(mask: FieldMask, field_count: u32) -> (u64, u64) {
    let as_mask = u64::from(field_count);
    let count = u64::from(mask.len());
    let as_handles =
        gamma_bits(count.saturating_sub(1)) + count * u64::from(handle_bits(field_count));
    (as_mask, as_handles)
}

/// Bits [`write_field_set`] uses.
#[cfg(test)]
pub(crate) fn field_set_bits(mask: FieldMask, field_count: u32) -> u64 {
    let (as_mask, as_handles) = field_set_costs(mask, field_count);
    1 + as_mask.min(as_handles)
}

/// Writes a non-empty set of changed fields in the cheaper of two forms,
/// chosen by one selector bit: `0` + the mask (`field_count` bits), or
/// `1` + count − 1 (Elias-gamma) + one ⌈log2 field_count⌉-bit index per
/// field, ascending. Ties go to the mask.
pub(crate) fn write_field_set(writer: &mut BitWriter<'_>, mask: FieldMask, field_count: u32) {
    let (as_mask, as_handles) = field_set_costs(mask, field_count);
    if as_mask <= as_handles {
        writer.write_bool(false);
        writer.write_bits(mask.bits(), field_count);
    } else {
        writer.write_bool(true);
        writer.write_gamma(u64::from(mask.len()) - 1);
        let bits = handle_bits(field_count);
        for index in mask.iter() {
            writer.write_bits(u64::from(index), bits);
        }
    }
}

/// Reads a field set written by [`write_field_set`], refusing empty sets,
/// fields the type does not have, and the costlier of the two forms.
pub(crate) fn read_field_set(
    reader: &mut BitReader<'_>,
    field_count: u32,
) -> Result<FieldMask, DecodeError> {
    let bit_offset = reader.bit_offset();
    let invalid = DecodeError::InvalidFieldSet {
        bit_offset,
        field_count,
    };
    let handles = reader.read_bool()?;
    let mask = if handles {
        let count = reader.read_gamma()?.saturating_add(1);
        if count > u64::from(field_count) {
            return Err(invalid);
        }
        let bits = handle_bits(field_count);
        let mut mask = FieldMask::EMPTY;
        let mut previous: Option<u64> = None;
        for _ in 0..count {
            let index = reader.read_bits(bits)?;
            if index >= u64::from(field_count) || previous.is_some_and(|p| index <= p) {
                return Err(invalid);
            }
            previous = Some(index);
            mask = mask.with(index as u32);
        }
        mask
    } else {
        let mask = FieldMask::from_bits(reader.read_bits(field_count)?);
        if !FieldMask::all(field_count).covers(mask) {
            return Err(invalid);
        }
        mask
    };
    let (as_mask, as_handles) = field_set_costs(mask, field_count);
    if mask.is_empty() || handles != (as_handles < as_mask) {
        return Err(invalid);
    }
    Ok(mask)
}

/// The kind of a message, from its first one or two bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MessageKind {
    /// Nothing to apply.
    Empty,
    /// Changes since what the receiver holds.
    Delta,
    /// The whole array.
    Snapshot,
}

impl MessageKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Empty => "empty delta",
            Self::Delta => "delta",
            Self::Snapshot => "snapshot",
        }
    }

    pub(crate) fn write(self, writer: &mut BitWriter<'_>) {
        match self {
            Self::Empty => writer.write_bool(false),
            Self::Delta => writer.write_bits(0b01, 2),
            Self::Snapshot => writer.write_bits(0b11, 2),
        }
    }

    pub(crate) fn read(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        if !reader.read_bool()? {
            return Ok(Self::Empty);
        }
        Ok(if reader.read_bool()? {
            Self::Snapshot
        } else {
            Self::Delta
        })
    }

    /// Reads a kind and fails unless it is `expected`.
    pub(crate) fn expect(reader: &mut BitReader<'_>, expected: Self) -> Result<(), DecodeError> {
        let bit_offset = reader.bit_offset();
        let found = Self::read(reader)?;
        if found == expected {
            Ok(())
        } else {
            Err(DecodeError::UnexpectedMessageKind {
                bit_offset,
                expected: expected.name(),
                found: found.name(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_round_trip_in_the_cheaper_form() {
        for field_count in [1u32, 2, 5, 8, 13, 64] {
            let all = FieldMask::all(field_count).bits();
            let masks = [
                1u64,
                all,
                all & 0x5555_5555_5555_5555,
                1 << (field_count - 1),
                all & 0b1001,
            ];
            for bits in masks.into_iter().filter(|&m| m != 0) {
                let mask = FieldMask::from_bits(bits);
                let mut out = Vec::new();
                let mut w = BitWriter::new(&mut out);
                write_field_set(&mut w, mask, field_count);
                let written = w.bits_written();
                assert_eq!(written, field_set_bits(mask, field_count));
                w.finish();
                let mut r = BitReader::new(&out);
                assert_eq!(read_field_set(&mut r, field_count), Ok(mask));
                assert_eq!(r.bit_offset(), written);
            }
        }
        // One field of five: selector + gamma(0) + 3-bit handle = 5 bits, not 1 + 5.
        assert_eq!(field_set_bits(FieldMask::single(3), 5), 5);
        // Every field of five: the mask is cheaper.
        assert_eq!(field_set_bits(FieldMask::all(5), 5), 6);
    }

    #[test]
    fn non_canonical_field_sets_are_refused() {
        let cases: [&dyn Fn(&mut BitWriter<'_>); 4] = [
            // Empty mask.
            &|w| {
                w.write_bool(false);
                w.write_bits(0, 5);
            },
            // Field 6 of 5.
            &|w| {
                w.write_bool(false);
                w.write_bits(1 << 5, 6);
            },
            // One field as a mask, when handles are cheaper.
            &|w| {
                w.write_bool(false);
                w.write_bits(0b100, 5);
            },
            // Handles out of order.
            &|w| {
                w.write_bool(true);
                w.write_gamma(1);
                w.write_bits(3, 3);
                w.write_bits(1, 3);
            },
        ];
        for (n, case) in cases.iter().enumerate() {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            case(&mut w);
            w.finish();
            assert!(
                matches!(
                    read_field_set(&mut BitReader::new(&out), 5),
                    Err(DecodeError::InvalidFieldSet { .. })
                ),
                "case {n}"
            );
        }
    }

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

    #[test]
    fn kinds_round_trip_in_their_documented_bits() {
        for (kind, bits) in [
            (MessageKind::Empty, 1),
            (MessageKind::Delta, 2),
            (MessageKind::Snapshot, 2),
        ] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            kind.write(&mut w);
            assert_eq!(w.finish(), bits);
            assert_eq!(MessageKind::read(&mut BitReader::new(&out)), Ok(kind));
        }
    }
}
