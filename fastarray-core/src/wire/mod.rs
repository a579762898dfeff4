//! Message formats (see `WIRE.md`): the kind every message starts with,
//! the window of frames a mirror accepts, and, in the submodules, the
//! frame, the set of changed fields, the lists of ids and which removals
//! are scope exits.
//!
//! A message starts with its kind:
//!
//! | bits | kind |
//! |---|---|
//! | `0` | empty delta: nothing changed (the whole message is this 1 bit) |
//! | `1 0` | delta |
//! | `1 1 1` | delta some of whose removals are scope exits |
//! | `1 1 0` | full snapshot |

pub(crate) mod exits;
pub(crate) mod field_set;
pub(crate) mod frame;
pub(crate) mod id_list;

use crate::bits::{BitReader, BitWriter};
use crate::error::DecodeError;

/// Frames a mirror accepts behind the newest frame it has applied: a delta
/// whose frame is `WINDOW` or more behind is stale and ignored, and the sender
/// counts a packet as lost once it is `WINDOW` frames old. Equal to the
/// history ring's length.
pub(crate) const WINDOW: u64 = crate::history::HISTORY_LEN as u64;

/// The kind of a message, from its first one or two bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MessageKind {
    /// Nothing to apply.
    Empty,
    /// Changes since what the receiver holds.
    Delta,
    /// Changes since what the receiver holds, some of the removals being
    /// scope exits (a flag per removal follows the list).
    DeltaWithExits,
    /// The whole array.
    Snapshot,
}

impl MessageKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Empty => "empty delta",
            Self::Delta => "delta",
            Self::DeltaWithExits => "delta with scope exits",
            Self::Snapshot => "snapshot",
        }
    }

    pub(crate) fn write(self, writer: &mut BitWriter<'_>) {
        match self {
            Self::Empty => writer.write_bool(false),
            Self::Delta => writer.write_bits(0b01, 2),
            Self::DeltaWithExits => writer.write_bits(0b111, 3),
            Self::Snapshot => writer.write_bits(0b011, 3),
        }
    }

    pub(crate) fn read(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        if !reader.read_bool()? {
            return Ok(Self::Empty);
        }
        if !reader.read_bool()? {
            return Ok(Self::Delta);
        }
        Ok(if reader.read_bool()? {
            Self::DeltaWithExits
        } else {
            Self::Snapshot
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
    fn kinds_round_trip_in_their_documented_bits() {
        for (kind, bits) in [
            (MessageKind::Empty, 1),
            (MessageKind::Delta, 2),
            (MessageKind::DeltaWithExits, 3),
            (MessageKind::Snapshot, 3),
        ] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            kind.write(&mut w);
            assert_eq!(w.finish(), bits);
            assert_eq!(MessageKind::read(&mut BitReader::new(&out)), Ok(kind));
        }
    }
}
