//! Changes that came before their item: a frame's shared message goes to
//! every caught-up connection, those whose client has an add still in
//! flight included, so it may carry changed fields of an item the mirror
//! does not hold yet (a shared delta, `WIRE.md`). They wait here, as the
//! bits they came in, until the item's add arrives; then each field takes
//! the value if it is newer than the add's, as any change would.
//!
//! What waits is bounded: a change waits at most a window of frames (its
//! add is then stale, and the sender resends the item whole with its
//! current value), a removal of the item drops its changes, and a mirror
//! keeps no more waiting changes than its array may hold items.

use std::sync::Arc;

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;

use crate::bits::BitReader;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::wire::WINDOW;

/// The part of a checked message that holds its kept entries' changed
/// fields, copied whole bytes at a time: a decoded message outlives the
/// bytes it was read from (a connection decodes every section of a packet
/// before applying any), and the fields are read from here a second time,
/// straight into the items, rather than kept as decoded patches. Changes
/// that wait for their items' adds keep it after the apply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldBits {
    bytes: Vec<u8>,
    /// The message's bit that the copy's first bit is.
    base: u64,
}

impl FieldBits {
    /// The bytes holding the message's bits from `start` to `end`, read by
    /// `reader`.
    pub(crate) fn copy(reader: &BitReader<'_>, start: u64, end: u64) -> Self {
        Self {
            bytes: reader.bytes_between(start, end).to_vec(),
            base: start - start % 8,
        }
    }

    /// A reader of the copy, and the message's bit its first bit is.
    pub(crate) fn reader(&self) -> (BitReader<'_>, u64) {
        (BitReader::new(&self.bytes), self.base)
    }
}

/// One change waiting for its item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EarlyChange {
    /// The frame of its message.
    pub(crate) frame: u64,
    /// The fields it carries.
    pub(crate) fields: FieldMask,
    /// The message's bit they start at.
    pub(crate) at: u64,
    /// The message's changed fields.
    pub(crate) bits: Arc<FieldBits>,
}

/// The changes waiting for one item: nearly always one (an item changed
/// in the frames its add is in flight), kept in the map's slot.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Waiting {
    One(EarlyChange),
    Many(Vec<EarlyChange>),
}

impl Waiting {
    fn len(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Many(changes) => changes.len(),
        }
    }

    fn push(&mut self, change: EarlyChange) {
        match self {
            Self::One(first) => *self = Self::Many(vec![first.clone(), change]),
            Self::Many(changes) => changes.push(change),
        }
    }

    fn into_vec(self) -> Vec<EarlyChange> {
        match self {
            Self::One(change) => vec![change],
            Self::Many(changes) => changes,
        }
    }

    /// Keeps the changes `keep` says, returning how many are left and
    /// the oldest frame among them.
    fn retain(&mut self, keep: impl Fn(&EarlyChange) -> bool) -> (usize, Option<u64>) {
        match self {
            Self::One(change) if keep(change) => (1, Some(change.frame)),
            Self::One(_) => (0, None),
            Self::Many(changes) => {
                changes.retain(keep);
                let oldest = changes.iter().map(|change| change.frame).min();
                (changes.len(), oldest)
            }
        }
    }
}

/// The changes waiting for their items, per item.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct EarlyChanges {
    changes: HashMap<ReplicationId, Waiting>,
    /// Changes kept, over every item.
    count: usize,
    /// The oldest frame of a change kept (`u64::MAX` if none was since
    /// the last sweep).
    oldest: u64,
}

impl EarlyChanges {
    /// Changes kept.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Makes room for `count` more items' changes.
    pub(crate) fn reserve(&mut self, count: usize) {
        self.changes.reserve(count);
    }

    /// Keeps `change` of item `id` until its add arrives.
    pub(crate) fn keep(&mut self, id: ReplicationId, change: EarlyChange) {
        if self.count == 0 {
            self.oldest = u64::MAX;
        }
        self.oldest = self.oldest.min(change.frame);
        self.count += 1;
        match self.changes.entry(id) {
            Entry::Occupied(mut waiting) => waiting.get_mut().push(change),
            Entry::Vacant(slot) => {
                slot.insert(Waiting::One(change));
            }
        }
    }

    /// The changes of `id`, its add having arrived, oldest first.
    pub(crate) fn take(&mut self, id: ReplicationId) -> Option<Vec<EarlyChange>> {
        let waiting = self.changes.remove(&id)?;
        self.count -= waiting.len();
        let mut changes = waiting.into_vec();
        changes.sort_by_key(|change| change.frame);
        Some(changes)
    }

    /// Drops the changes of `id`, removed.
    pub(crate) fn forget(&mut self, id: ReplicationId) {
        if self.count == 0 {
            return;
        }
        if let Some(changes) = self.changes.remove(&id) {
            self.count -= changes.len();
        }
    }

    /// Drops the changes a window older than `newest`, the newest frame
    /// applied: their item's add, if it comes, is ignored as stale, and
    /// the sender resends the item whole.
    pub(crate) fn expire(&mut self, newest: u64) {
        if self.count == 0 || self.oldest.saturating_add(WINDOW) > newest {
            return;
        }
        let (mut count, mut oldest) = (0, u64::MAX);
        self.changes.retain(|_, waiting| {
            let (left, first) =
                waiting.retain(|change| change.frame.saturating_add(WINDOW) > newest);
            count += left;
            oldest = oldest.min(first.unwrap_or(u64::MAX));
            left > 0
        });
        (self.count, self.oldest) = (count, oldest);
        if self.changes.capacity() > 4 * self.changes.len().max(16) {
            self.changes.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(frame: u64) -> EarlyChange {
        EarlyChange {
            frame,
            fields: FieldMask::from_bits(1),
            at: 0,
            bits: Arc::default(),
        }
    }

    /// The sizes `WIRE.md` states.
    #[test]
    fn documented_sizes_hold() {
        assert_eq!(core::mem::size_of::<EarlyChange>(), 32);
        assert_eq!(core::mem::size_of::<(ReplicationId, Waiting)>(), 40);
    }

    /// Changes come back oldest first, and go with their item's removal or
    /// a window after their frame.
    #[test]
    fn changes_wait_a_window_at_most() {
        let (a, b) = (ReplicationId::from_raw(1), ReplicationId::from_raw(2));
        let mut early = EarlyChanges::default();
        early.keep(a, change(12));
        early.keep(a, change(10));
        early.keep(b, change(11));
        assert_eq!(early.len(), 3);
        let frames: Vec<u64> = early.take(a).unwrap().iter().map(|c| c.frame).collect();
        assert_eq!(frames, [10, 12]);
        assert_eq!(early.len(), 1);
        assert!(early.take(a).is_none());
        early.expire(11 + WINDOW - 1);
        assert_eq!(early.len(), 1, "frame 11 is still within the window");
        early.expire(11 + WINDOW);
        assert_eq!(early.len(), 0);
        assert!(early.take(b).is_none());
        early.keep(b, change(100));
        early.forget(b);
        assert_eq!(early.len(), 0);
        assert!(early.take(b).is_none());
    }
}
