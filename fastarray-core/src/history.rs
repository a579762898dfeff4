//! The shared history ring: the changesets of the last [`HISTORY_LEN`]
//! commits, written once per frame for every connection.

use std::collections::VecDeque;

use crate::changeset::Changeset;
use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// How many frames of changesets an array keeps. A connection whose next
/// frame to send has fallen out of the ring resynchronises by comparing what
/// the client holds against the array instead.
pub const HISTORY_LEN: usize = 64;

/// The last [`HISTORY_LEN`] changesets, oldest first, with consecutive frames.
#[derive(Clone, Debug, Default)]
pub(crate) struct History {
    slots: VecDeque<Changeset>,
    /// The frame of the newest commit that changed anything (0 before).
    last_change: u64,
}

impl History {
    /// A changeset to fill for `frame`: the oldest slot's buffers are reused
    /// once the ring is full.
    pub(crate) fn next_slot(&mut self, frame: u64) -> Changeset {
        let mut slot = if self.slots.len() == HISTORY_LEN {
            self.slots.pop_front().unwrap_or_default()
        } else {
            Changeset::default()
        };
        slot.reset(frame);
        slot
    }

    /// Appends the changeset of the newest frame.
    pub(crate) fn push(&mut self, changes: Changeset) {
        debug_assert!(
            self.slots
                .back()
                .is_none_or(|last| last.frame + 1 == changes.frame)
        );
        if !changes.is_empty() {
            self.last_change = changes.frame;
        }
        self.slots.push_back(changes);
    }

    /// The frame of the newest commit that added, removed or changed
    /// anything (0 if none did): a connection that has merged it holds
    /// every change, whatever empty commits came after.
    pub(crate) fn last_change(&self) -> u64 {
        self.last_change
    }

    /// The newest changeset, if any commit happened.
    pub(crate) fn newest(&self) -> Option<&Changeset> {
        self.slots.back()
    }

    /// The newest changeset, to complete at its commit.
    pub(crate) fn newest_mut(&mut self) -> Option<&mut Changeset> {
        self.slots.back_mut()
    }

    /// The oldest frame still held.
    pub(crate) fn oldest_frame(&self) -> Option<u64> {
        self.slots.front().map(|c| c.frame)
    }

    /// The changeset of frame `frame`, if the ring holds it.
    pub(crate) fn at(&self, frame: u64) -> Option<&Changeset> {
        self.since(frame)?.next()
    }

    /// The fields of item `id` that frames `after + 1 .. before` changed,
    /// or `None` if the ring no longer holds frame `after + 1`.
    pub(crate) fn changed_between(
        &self,
        id: ReplicationId,
        after: u64,
        before: u64,
    ) -> Option<FieldMask> {
        let mut fields = FieldMask::EMPTY;
        for changes in self.since(after + 1)? {
            if changes.frame >= before {
                break;
            }
            // A commit's changes are sorted by id.
            if let Ok(at) = changes.changed.binary_search_by_key(&id, |&(id, _)| id) {
                fields |= changes.changed[at].1;
            }
        }
        Some(fields)
    }

    /// The changesets of frames `from..` (all of them if `from` is older than
    /// the ring), or `None` if frame `from` has already left the ring.
    pub(crate) fn since(&self, from: u64) -> Option<impl Iterator<Item = &Changeset>> {
        let oldest = match self.oldest_frame() {
            Some(oldest) => oldest,
            None => return Some(self.slots.range(0..0)),
        };
        if from < oldest {
            return None;
        }
        let skip = usize::try_from(from - oldest).unwrap_or(usize::MAX);
        Some(self.slots.range(skip.min(self.slots.len())..))
    }
}
