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

use crate::delta::DeltaStats;
use crate::send::{RecordEntry, SharedChanges};

/// One frame's shared message and what taking it means for a connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedMessage {
    /// The frame this message is for (0: none yet; frames start at 1).
    pub(crate) frame: u64,
    /// The last frame a caught-up connection wrote a message for.
    pub(crate) seen: u64,
    /// The message's bits, from the first bit of the byte.
    pub(crate) bytes: Vec<u8>,
    /// Bits of the message.
    pub(crate) bits: u64,
    /// The entries that change what a client may hold (adds, whole values,
    /// removals): recorded per connection as usual.
    pub(crate) entries: Vec<RecordEntry>,
    /// The changed fields of items the client knows: one list for every
    /// connection's record.
    pub(crate) changed: Option<SharedChanges>,
    /// What writing it counts.
    pub(crate) stats: DeltaStats,
}
