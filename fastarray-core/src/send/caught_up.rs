//! The message of a frame shared by caught-up connections.
//!
//! A connection that wrote everything up to the last frame, whose client
//! knows every item (all adds acknowledged) and has nothing to repair, gets
//! the same message as every other such connection: the frame's removals,
//! adds and changed fields. The first of them writes its own as usual (a
//! lone connection pays nothing for sharing); the second writes it and the
//! bits are kept here; the others copy them and record the packet in
//! O(adds + removals), sharing one list of the changed fields instead of
//! one record entry and view update per changed item.

use super::pending::Work;
use super::retirement::{RecordEntry, SharedChanges};
use super::state::SendState;
use super::stats::DeltaStats;
use crate::bits::{BitReader, BitWriter, copy_bits};
use crate::mask::FieldMask;

/// One frame's shared message and what taking it means for a connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedMessage {
    /// The frame this message is for (0: none yet; frames start at 1).
    frame: u64,
    /// The last frame a caught-up connection wrote a message for.
    seen: u64,
    /// The message's bits, from the first bit of the byte.
    pub(crate) bytes: Vec<u8>,
    /// Bits of the message.
    bits: u64,
    /// The entries that change what a client may hold (adds, whole values,
    /// removals): recorded per connection as usual.
    entries: Vec<RecordEntry>,
    /// The changed fields of items the client knows: one list for every
    /// connection's record.
    changed: Option<SharedChanges>,
    /// What writing it counts.
    stats: DeltaStats,
}

impl SharedMessage {
    /// Whether frame `frame`'s message is kept.
    pub(crate) fn holds(&self, frame: u64) -> bool {
        self.frame == frame
    }

    /// A caught-up connection writes its message for `frame`: returns
    /// whether it is the second this frame, which keeps its bits for the
    /// others.
    pub(crate) fn second_of(&mut self, frame: u64) -> bool {
        let second = self.seen == frame;
        self.seen = frame;
        second
    }

    /// Keeps the message of `frame` just written (its bits in `bytes`) to
    /// a caught-up connection whose record is `entries`, for the other
    /// caught-up connections this frame.
    pub(crate) fn keep(&mut self, frame: u64, entries: &[RecordEntry], stats: DeltaStats) {
        self.frame = frame;
        self.bits = stats.bits;
        self.entries.clear();
        let mut changed = Vec::new();
        for entry in entries {
            match entry.work {
                Work::Fields(mask) => changed.push((entry.id, mask)),
                _ => self.entries.push(*entry),
            }
        }
        self.changed = (!changed.is_empty()).then(|| changed.into());
        self.stats = DeltaStats {
            shared: true,
            ..stats
        };
    }

    /// Copies the kept message into `writer` for a caught-up connection,
    /// and records it as packet `packet`: O(adds + removals) for the
    /// connection, whatever the number of changed items.
    pub(crate) fn write(
        &self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        all_fields: FieldMask,
    ) -> DeltaStats {
        copy_bits(&mut BitReader::new(&self.bytes), writer, self.bits);
        let mut entries = conn.entry_buffer();
        entries.extend_from_slice(&self.entries);
        conn.record_shared(
            packet,
            self.frame,
            entries,
            self.changed.clone(),
            all_fields,
        );
        self.stats
    }
}
