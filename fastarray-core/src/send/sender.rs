//! The sending side of an array: the history ring every connection reads,
//! and what writing deltas keeps from write to write (this frame's
//! encodings, the shared message of caught-up connections, buffers).
//!
//! A `FastArray` keeps it behind one box, made at its first commit or
//! write, so an array that only receives (a mirror, or the arrays inside
//! the items a mirror decodes) carries one pointer of it.

use super::caught_up::SharedMessage;
use super::encode_cache::EncodeCache;
use super::interest::Interest;
use super::plan::PlanBuffers;
use crate::history::History;

/// What an array keeps for writing deltas.
#[derive(Debug, Default)]
pub(crate) struct Sender {
    /// The changesets of the last commits, shared by every connection.
    pub(crate) history: History,
    /// This frame's encodings, shared by every connection.
    pub(crate) encoded: EncodeCache,
    /// The array deltas of the items of the message being written.
    pub(crate) scratch: Vec<u8>,
    /// The lists a plan reuses.
    pub(crate) buffers: PlanBuffers,
    /// This frame's message for caught-up connections, once one wrote it.
    pub(crate) shared: SharedMessage,
    /// The connections with a scope, and who sees which item.
    pub(crate) interest: Interest,
}

impl Sender {
    /// A copy for a cloned array: the history and the frame's caches; the
    /// buffers start empty, and no connection has a scope on the copy.
    pub(crate) fn for_clone(&self) -> Self {
        Self {
            history: self.history.clone(),
            encoded: self.encoded.clone(),
            scratch: Vec::new(),
            buffers: PlanBuffers::default(),
            shared: self.shared.clone(),
            interest: Interest::default(),
        }
    }
}
