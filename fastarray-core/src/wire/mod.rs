//! Message formats (see `WIRE.md`): the kind every message starts with,
//! the window of frames a mirror accepts, and, in the submodules, the
//! frame, the set of changed fields, the lists of ids, which removals
//! are scope exits, and the whole value of a type with a default baseline.
//!
//! A message starts with its kind:
//!
//! | bits | kind |
//! |---|---|
//! | `0` | empty delta: nothing changed (the whole message is this 1 bit) |
//! | `1 0` | delta |
//! | `1 1 0` | full snapshot |
//! | `1 1 1 0 0` | delta some of whose removals are scope exits |
//! | `1 1 1 0 1` | shared delta: a delta whose changes may come before their items' adds |
//! | `1 1 1 1 0` | delta by handles |
//! | `1 1 1 1 1` | delta by handles with scope exits |

pub(crate) mod baseline;
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

/// The kind of a message, from its first one to five bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MessageKind {
    /// Nothing to apply.
    Empty,
    /// Changes since what the receiver holds.
    Delta,
    /// A frame's shared message: a [`Delta`](Self::Delta) whose changed
    /// fields may reach the receiver before the add of their item (one
    /// connection's add still in flight), and then wait for it.
    SharedDelta,
    /// Changes since what the receiver holds, some of the removals being
    /// scope exits (a flag per removal follows the list).
    DeltaWithExits,
    /// Changes for a connection that names items by its own handles: each
    /// whole entry carries the item's id after its flag.
    HandleDelta,
    /// A [`HandleDelta`](Self::HandleDelta) whose removals carry exit
    /// flags.
    HandleDeltaWithExits,
    /// The whole array.
    Snapshot,
}

impl MessageKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Empty => "empty delta",
            Self::Delta => "delta",
            Self::SharedDelta => "shared delta",
            Self::DeltaWithExits => "delta with scope exits",
            Self::HandleDelta => "delta by handles",
            Self::HandleDeltaWithExits => "delta by handles with scope exits",
            Self::Snapshot => "snapshot",
        }
    }

    /// The kind of a delta: with exit flags or not, naming items by
    /// handles or by ids.
    pub(crate) fn delta(exits: bool, handles: bool) -> Self {
        match (exits, handles) {
            (false, false) => Self::Delta,
            (true, false) => Self::DeltaWithExits,
            (false, true) => Self::HandleDelta,
            (true, true) => Self::HandleDeltaWithExits,
        }
    }

    /// Bits the kind takes.
    pub(crate) fn bits(self) -> u64 {
        match self {
            Self::Empty => 1,
            Self::Delta => 2,
            Self::Snapshot => 3,
            Self::DeltaWithExits
            | Self::SharedDelta
            | Self::HandleDelta
            | Self::HandleDeltaWithExits => 5,
        }
    }

    pub(crate) fn write(self, writer: &mut BitWriter<'_>) {
        match self {
            Self::Empty => writer.write_bool(false),
            Self::Delta => writer.write_bits(0b01, 2),
            Self::Snapshot => writer.write_bits(0b011, 3),
            Self::DeltaWithExits => writer.write_bits(0b0_0111, 5),
            Self::SharedDelta => writer.write_bits(0b1_0111, 5),
            Self::HandleDelta => writer.write_bits(0b0_1111, 5),
            Self::HandleDeltaWithExits => writer.write_bits(0b1_1111, 5),
        }
    }

    pub(crate) fn read(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        if !reader.read_bool()? {
            return Ok(Self::Empty);
        }
        if !reader.read_bool()? {
            return Ok(Self::Delta);
        }
        if !reader.read_bool()? {
            return Ok(Self::Snapshot);
        }
        if !reader.read_bool()? {
            return Ok(if reader.read_bool()? {
                Self::SharedDelta
            } else {
                Self::DeltaWithExits
            });
        }
        Ok(if reader.read_bool()? {
            Self::HandleDeltaWithExits
        } else {
            Self::HandleDelta
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
            (MessageKind::DeltaWithExits, 5),
            (MessageKind::Snapshot, 3),
            (MessageKind::SharedDelta, 5),
            (MessageKind::HandleDelta, 5),
            (MessageKind::HandleDeltaWithExits, 5),
        ] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            kind.write(&mut w);
            assert_eq!(w.finish(), bits);
            assert_eq!(kind.bits(), bits);
            assert_eq!(MessageKind::read(&mut BitReader::new(&out)), Ok(kind));
        }
    }
}
