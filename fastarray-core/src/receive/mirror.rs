//! [`Mirror`]: what a receiving array remembers of the stream it follows —
//! the newest frame applied, the tombstones of removed ids, the snapshot it
//! started from — and the rules that follow: which messages are stale.

use super::tombstones::Tombstones;
use crate::id::ReplicationId;
use crate::wire::WINDOW;

/// The receiving side's memory of the stream.
#[derive(Clone, Debug, Default)]
pub(crate) struct Mirror {
    /// The newest frame of a delta or snapshot applied.
    newest: Option<u64>,
    /// Removed ids, for a window of frames.
    tombstones: Tombstones,
    /// Whether this mirror is a replicated object's: item `#0` alone,
    /// never removed.
    object: bool,
    /// The frame of the snapshot this mirror was loaded from: it holds
    /// everything up to it, so older messages have nothing to add (and
    /// their adds could bring back items removed before it).
    floor: Option<u64>,
}

impl Mirror {
    /// A mirror loaded from a snapshot of `frame`: messages of that frame or
    /// older are ignored whole, like stale ones.
    pub(crate) fn from_snapshot(frame: u64) -> Self {
        Self {
            newest: Some(frame),
            floor: Some(frame),
            ..Self::default()
        }
    }

    /// A replicated object's mirror: a message that removes an item or
    /// names one other than `#0` is refused.
    pub(crate) fn object() -> Self {
        Self {
            object: true,
            ..Self::default()
        }
    }

    /// This mirror, as a replicated object's (see [`object`](Self::object)).
    pub(crate) fn into_object(self) -> Self {
        Self {
            object: true,
            ..self
        }
    }

    /// The newest frame applied.
    pub(crate) fn newest(&self) -> Option<u64> {
        self.newest
    }

    /// Whether this is a replicated object's mirror.
    pub(crate) fn is_object(&self) -> bool {
        self.object
    }

    /// Whether a message of `frame` is ignored whole: a window older than
    /// the newest applied (its sender counted it as lost), or no newer than
    /// the snapshot this mirror started from.
    pub(crate) fn is_stale(&self, frame: u64) -> bool {
        self.newest
            .is_some_and(|newest| frame.saturating_add(WINDOW) <= newest)
            || self.floor.is_some_and(|floor| frame <= floor)
    }

    /// Takes in a message of `frame`; returns whether it is the newest yet.
    pub(crate) fn advance(&mut self, frame: u64) -> bool {
        let advanced = self.newest.is_none_or(|newest| frame > newest);
        if advanced {
            self.newest = Some(frame);
        }
        advanced
    }

    /// Records the removal of `id` at `frame`.
    pub(crate) fn tombstone(&mut self, id: ReplicationId, frame: u64) {
        self.tombstones.insert(id, frame);
    }

    /// Whether an entry of `frame` for `id` is dropped unread: `id` was
    /// removed recently, or left the scope at `frame` or later (the entry
    /// was written before it left).
    pub(crate) fn drops_entry(&self, id: ReplicationId, frame: u64) -> bool {
        self.tombstones.contains(id) || self.tombstones.exit(id).is_some_and(|exit| frame <= exit)
    }

    /// Makes room for `count` exits about to be recorded.
    pub(crate) fn reserve_exits(&mut self, count: usize) {
        self.tombstones.reserve_exits(count);
    }

    /// Records that `id` left the scope at `frame`.
    pub(crate) fn record_exit(&mut self, id: ReplicationId, frame: u64) {
        self.tombstones.insert_exit(id, frame);
    }

    /// `id` comes back after leaving the scope: returns the frame of its
    /// exit (0 if none is kept), up to which entries belong to its earlier
    /// stay.
    pub(crate) fn take_exit(&mut self, id: ReplicationId) -> u64 {
        self.tombstones.take_exit(id).unwrap_or(0)
    }

    /// Lets tombstones a window older than `newest` go.
    pub(crate) fn expire(&mut self, newest: u64) {
        self.tombstones.expire(newest);
    }
}
