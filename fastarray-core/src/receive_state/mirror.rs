//! [`Mirror`]: what a receiving array remembers of the stream it follows —
//! the newest frame applied, the tombstones of removed ids, the snapshot it
//! started from — and the rules that follow: which messages are stale.

use hashbrown::HashMap;

use super::early::{EarlyChange, EarlyChanges};
use super::tombstones::Tombstones;
use crate::id::ReplicationId;
use crate::limits::MirrorLimits;
use crate::wire::WINDOW;

/// The receiving side's memory of the stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    /// For a stream that names items by handles: what each handle names
    /// (see [`Handle`]).
    handles: HashMap<u64, Handle>,
    /// What the game lets a message make of this mirror.
    limits: MirrorLimits,
    /// Changed fields of items whose adds have not arrived.
    early: EarlyChanges,
}

/// What a handle names, as far as this mirror knows. A handle names one
/// item at a time, from the frame the sender took it in (its *start*); the
/// sender gives it a new item only once this mirror applied the old one's
/// removal, and in a later frame than any message naming the old one.
/// So an entry of frame `f` names the handle's item if `f` is at or after
/// its start and after the last removal applied; otherwise an earlier
/// item, now gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    /// The item it names (none once removed, or before its whole entry
    /// arrived).
    item: Option<ReplicationId>,
    /// The frame the sender took it in for that item.
    start: u64,
    /// The frame of the newest removal applied to it (0: none).
    removed: u64,
}

/// What a handle names in an entry or removal of some frame.
pub(crate) enum Named {
    /// This item.
    Item(ReplicationId),
    /// An item already removed here: the entry is read past.
    Gone,
    /// An item this mirror was not given (its whole entry is late, or
    /// lost).
    Unknown,
}

/// What a handle names in a whole entry of some frame.
pub(crate) enum NamedWhole {
    /// The handle's current item (the entry's own id is the one used).
    Current,
    /// A new item: the handle names it from then on.
    New,
    /// An item already removed here: the entry is read past.
    Gone,
}

impl Mirror {
    /// A mirror loaded from a snapshot of `frame`, under `limits`:
    /// messages of that frame or older are ignored whole, like stale ones.
    pub(crate) fn from_snapshot(frame: u64, limits: MirrorLimits) -> Self {
        Self {
            newest: Some(frame),
            floor: Some(frame),
            limits,
            ..Self::default()
        }
    }

    /// The limits messages are checked against.
    pub(crate) fn limits(&self) -> MirrorLimits {
        self.limits
    }

    /// Sets the limits messages are checked against.
    pub(crate) fn set_limits(&mut self, limits: MirrorLimits) {
        self.limits = limits;
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

    /// What `handle` names in a partial entry or a removal of `frame`.
    pub(crate) fn named(&self, handle: u64, frame: u64) -> Named {
        match self.handles.get(&handle) {
            None => Named::Unknown,
            Some(h) if frame <= h.removed || frame < h.start => Named::Gone,
            Some(h) => h.item.map_or(Named::Unknown, Named::Item),
        }
    }

    /// What `handle` names in a whole entry of `frame`, sent for an item
    /// the sender gave the handle in frame `start`.
    pub(crate) fn named_whole(&self, handle: u64, frame: u64, start: u64) -> NamedWhole {
        match self.handles.get(&handle) {
            None => NamedWhole::New,
            Some(h) if frame <= h.removed || start < h.start => NamedWhole::Gone,
            Some(h) if start == h.start && h.item.is_some() => NamedWhole::Current,
            Some(h) if start == h.start => NamedWhole::Gone,
            Some(_) => NamedWhole::New,
        }
    }

    /// `handle` names `id`, given it in frame `start` (a whole entry said
    /// so).
    pub(crate) fn bind(&mut self, handle: u64, id: ReplicationId, start: u64) {
        let h = self.handles.entry(handle).or_insert(Handle {
            item: None,
            start: 0,
            removed: 0,
        });
        h.item = Some(id);
        h.start = start;
    }

    /// A removal of `frame` named `handle`: its item is gone (whether this
    /// mirror had it or not), and entries up to that frame are read past.
    pub(crate) fn vacate(&mut self, handle: u64, frame: u64) {
        let h = self.handles.entry(handle).or_insert(Handle {
            item: None,
            start: 0,
            removed: 0,
        });
        h.item = None;
        h.removed = h.removed.max(frame);
    }

    /// Records the removal of `id` at `frame`.
    pub(crate) fn tombstone(&mut self, id: ReplicationId, frame: u64) {
        self.tombstones.insert(id, frame);
        self.early.forget(id);
    }

    /// Changes waiting for their items' adds.
    pub(crate) fn early_len(&self) -> usize {
        self.early.len()
    }

    /// Makes room for the changes of `count` more items that wait for
    /// their adds.
    pub(crate) fn reserve_early(&mut self, count: usize) {
        self.early.reserve(count);
    }

    /// Keeps `change` of `id`, which this mirror does not hold, until its
    /// add arrives.
    pub(crate) fn keep_early(&mut self, id: ReplicationId, change: EarlyChange) {
        self.early.keep(id, change);
    }

    /// The changes of `id` that came before its add, just applied, oldest
    /// first.
    pub(crate) fn take_early(&mut self, id: ReplicationId) -> Option<Vec<EarlyChange>> {
        match self.early.len() {
            0 => None,
            _ => self.early.take(id),
        }
    }

    /// Whether an entry of `frame` for `id` is dropped unread, as one of
    /// an earlier stay of the item: `id` was removed recently, or left the
    /// scope at `frame` or later (the entry was written before it left),
    /// as kept here or, once the item came back, on its slot
    /// (`returned_after`, the exit it came back after, if it holds it).
    #[inline]
    pub(crate) fn drops_entry(
        &self,
        id: ReplicationId,
        frame: u64,
        returned_after: Option<u64>,
    ) -> bool {
        self.tombstones.contains(id)
            || self.tombstones.exit(id).is_some_and(|exit| frame <= exit)
            || returned_after.is_some_and(|exit| frame <= exit)
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
        self.early.expire(newest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A change waiting for its item goes with the item's removal, and
    /// with the window of frames after its own.
    #[test]
    fn a_removal_or_the_window_drops_a_waiting_change() {
        let change = |frame| EarlyChange {
            frame,
            fields: crate::mask::FieldMask::from_bits(1),
            at: 0,
            bits: Default::default(),
        };
        let (a, b) = (ReplicationId::from_raw(4), ReplicationId::from_raw(5));
        let mut mirror = Mirror::default();
        mirror.keep_early(a, change(10));
        mirror.keep_early(b, change(10));
        mirror.tombstone(a, 11);
        assert_eq!(mirror.early_len(), 1);
        assert!(mirror.take_early(a).is_none());
        mirror.expire(10 + WINDOW);
        assert_eq!(mirror.early_len(), 0);
    }

    /// The sizes `WIRE.md` states for handles.
    #[test]
    fn documented_sizes_hold() {
        assert_eq!(core::mem::size_of::<(u64, Handle)>(), 40);
        assert_eq!(
            core::mem::size_of::<(u32, u64)>(),
            16,
            "a handle given back"
        );
    }
}
