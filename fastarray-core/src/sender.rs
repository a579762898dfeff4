//! The sending side of an array: the history ring every connection reads,
//! and the caches of writing deltas (this frame's encodings, the shared
//! message of caught-up connections, scratch buffers).
//!
//! A `FastArray` keeps it behind one box, made at its first commit or
//! write, so an array that only receives (a mirror, or the arrays inside
//! the items a mirror decodes) carries one pointer of it.

use crate::delta::{Candidate, Planned};
use crate::encode_cache::EncodeCache;
use crate::history::History;
use crate::shared::SharedMessage;

/// What an array keeps for writing deltas.
#[derive(Debug, Default)]
pub(crate) struct Sender {
    /// The changesets of the last commits, shared by every connection.
    pub(crate) history: History,
    /// This frame's encodings, shared by every connection.
    pub(crate) encoded: EncodeCache,
    /// The array deltas of the items of the message being written.
    pub(crate) nested_scratch: Vec<u8>,
    /// The list of the items of the last message written, reused by the
    /// next (dropped once it is over 4 times larger than the work due).
    pub(crate) planned: Vec<Planned>,
    /// The items with work due of the last message written, reused by the
    /// next likewise.
    pub(crate) candidates: Vec<Candidate>,
    /// This frame's message for caught-up connections, once one wrote it.
    pub(crate) shared: SharedMessage,
}

impl Sender {
    /// A copy for a cloned array: the history and the frame's caches; the
    /// scratch buffers start empty.
    pub(crate) fn for_clone(&self) -> Self {
        Self {
            history: self.history.clone(),
            encoded: self.encoded.clone(),
            nested_scratch: Vec::new(),
            planned: Vec::new(),
            candidates: Vec::new(),
            shared: self.shared.clone(),
        }
    }
}
