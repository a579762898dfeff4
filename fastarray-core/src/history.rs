//! The shared history ring: the changesets of the last [`HISTORY_LEN`]
//! commits, written once per frame for every connection.

use std::collections::VecDeque;

use crate::changeset::Changeset;
use crate::dense_order::DenseOrder;
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
    /// What [`sort_changes`](Self::sort_changes) reuses.
    dense: DenseOrder,
    spare: Vec<(ReplicationId, FieldMask)>,
}

impl History {
    /// Puts a frame's changed items in id order, each id once if `distinct`
    /// says so. A game that walks its own list of entities writes them out
    /// of order; the ids, dealt out in order, lie close together, and are
    /// then ordered by a map of them ([`DenseOrder`]), not compared.
    pub(crate) fn sort_changes(
        &mut self,
        changed: &mut Vec<(ReplicationId, FieldMask)>,
        distinct: bool,
    ) {
        let id = |&(id, _): &(ReplicationId, FieldMask)| id.to_raw();
        self.dense.sort(changed, &mut self.spare, id, distinct);
    }

    /// Puts `list`, one entry per change of the frame just committed in
    /// the order its commit found them, in the order the history keeps
    /// those changes, if [`sort_changes`](Self::sort_changes) put them in
    /// it by the map of their ids (moving each entry once through
    /// `spare`); `false`, leaving `list`, if it compared them. What the
    /// commit made per change then follows the changes with no second
    /// sort. The caller checks the entries against the changes.
    pub(crate) fn order_as_changes<E: Copy>(&self, list: &mut Vec<E>, spare: &mut Vec<E>) -> bool {
        self.dense.reorder(list, spare)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A frame's changes come out in id order with their fields,
        /// whether their ids lie close together (ordered by a map of them,
        /// its buffers reused from frame to frame) or far apart, and an id
        /// listed twice (a moved item that also changed) is kept twice.
        #[test]
        fn changes_are_sorted_by_id_with_their_fields(
            frames in proptest::collection::vec(
                (
                    proptest::collection::hash_set(0u64..400, 1..120),
                    proptest::prop_oneof![proptest::strategy::Just(1u64), 2u64..300],
                    proptest::prelude::any::<bool>(),
                ),
                1..5,
            ),
        ) {
            let mut history = History::default();
            for (ids, stride, twice) in frames {
                // In the hash set's order (not the ids'), each id once, but
                // the first listed again at the end if `twice`.
                let mut changed: Vec<(ReplicationId, FieldMask)> = (ids.iter().enumerate())
                    .map(|(at, &id)| (ReplicationId::from_raw(id * stride), FieldMask::from_bits(1 << (at % 8))))
                    .collect();
                if twice {
                    changed.push((changed[0].0, FieldMask::from_bits(1 << 9)));
                }
                let mut expected = changed.clone();
                expected.sort_by_key(|&(id, mask)| (id, mask.bits()));
                history.sort_changes(&mut changed, !twice);
                proptest::prop_assert!(changed.is_sorted_by_key(|&(id, _)| id));
                // Equal ids may come in either order.
                let mut sorted = changed.clone();
                sorted.sort_by_key(|&(id, mask)| (id, mask.bits()));
                proptest::prop_assert_eq!(&sorted, &expected);
            }
        }
    }
}
