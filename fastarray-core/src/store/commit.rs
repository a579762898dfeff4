//! Commit: the frame's work (adds, removals, the pre-images of the items
//! written) turned into a changeset in O(items touched), the keys of the
//! items that really changed bumped, and the arrays inside items committed.

use super::{Near, SlotState, Store};
use crate::changeset::Changeset;
use crate::history::History;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::{Replicate, audience};

impl<T: Replicate> Store<T> {
    /// Ends the frame: works out what was added, removed and changed since
    /// the last commit, bumps the keys of items that really changed, commits
    /// the arrays inside the items added or touched, and pushes the
    /// changeset into `history`. A change of `#[replicate(initial_only)]`
    /// fields alone is no change (they go only with whole values); items
    /// `moved` (ascending) changed owner, which counts as a change of their
    /// audience fields (`Replicate::OWNER_ONLY` and `SKIP_OWNER`): every
    /// connection is sent those of them it may now see. Each item whose
    /// fields changed is shown to `changed` (its id, value and the fields
    /// sent) as it is found, in the order of the writes, while it is in
    /// cache: the writer writes the frame's shared entries there
    /// (`send::frame_body`).
    ///
    /// # Panics
    /// If an array inside an item written through a guard was replaced by
    /// another `FastArray` (see [`check_lineage`]).
    pub(crate) fn commit(
        &mut self,
        history: &mut History,
        moved: &[ReplicationId],
        mut changed: impl FnMut(ReplicationId, &T, FieldMask),
    ) {
        self.frame += 1;
        let frame = self.frame;
        let mut changes = history.next_slot(frame);
        for id in self.work.added.drain(..) {
            if let Some(&pos) = self.index.get(&id) {
                let slot = &mut self.slots[pos];
                slot.state = SlotState::Clean;
                slot.frame_mark = frame;
                commit_arrays(&mut slot.value);
                changes.added.push(id);
            } else {
                changes.vanished.push(id);
            }
        }
        // Pushes ascend. An item adopted from another shard need not, and
        // one pushed, handed off and adopted back in a frame is listed twice.
        if !changes.added.is_sorted_by(|a, b| a < b) {
            changes.added.sort_unstable();
            changes.added.dedup();
            changes.vanished.sort_unstable();
            changes.vanished.dedup();
        }
        let (index, slots) = (&self.index, &mut self.slots);
        // Pre-images come in the order of the writes: often the items'.
        let mut near = Near::default();
        self.work.touched.drain(|id, before| {
            let Some(pos) = near.find(slots, index, id) else {
                return false;
            };
            let slot = &mut slots[pos];
            if slot.frame_mark == frame {
                // Added this frame, after a removal of the same id (a
                // handoff taken back): an add, not a change.
                return false;
            }
            slot.state = SlotState::Clean;
            if T::ARRAY_FIELDS > 0 {
                check_lineage(id, &slot.value, before);
            }
            let mask = slot.value.diff(before);
            let sent = mask.without(T::INITIAL_ONLY);
            if !T::INITIAL_ONLY.is_empty() && mask.intersects(T::INITIAL_ONLY) {
                changes.initial.push((id, mask & T::INITIAL_ONLY));
            }
            let arrays = commit_arrays(&mut slot.value);
            if !sent.is_empty() || arrays {
                slot.key = slot.key.next();
                slot.frame_mark = frame;
            }
            if !sent.is_empty() {
                changes.changed.push((id, sent));
                changed(id, &slot.value, sent);
            }
            if arrays {
                changes.arrays_changed.push(id);
            }
            // The pre-image becomes the committed value: the fields that
            // changed are all it lacks.
            slot.value.capture_fields_into(before, mask)
        });
        changes.removed.append(&mut self.work.removed);
        // Pushes happen in id order, so `added` is already sorted.
        changes.removed.sort_unstable();
        let moving = audience::<T>(None).moving();
        let marks = !moving.is_empty() && !moved.is_empty();
        if marks {
            self.mark_moved(moved, moving, &mut changes);
        }
        // Written in id order (a loop over the items) they are sorted
        // already: checking is a third of what the sort takes to find out.
        // Otherwise (a game that walks its own list of entities) the ids,
        // dealt out in order, lie close together: ordered by a map of
        // them, unless a moved item may be listed twice.
        if !changes.changed.is_sorted_by_key(|&(id, _)| id) {
            history.sort_changes(&mut changes.changed, !marks);
        }
        if marks {
            // A moved item that also changed is one entry.
            changes.changed.dedup_by(|later, first| {
                let same = later.0 == first.0;
                if same {
                    first.1 |= later.1;
                }
                same
            });
        }
        changes.arrays_changed.sort_unstable();
        changes.initial.sort_unstable_by_key(|&(id, _)| id);

        changes.moved.extend_from_slice(moved);
        if !changes.is_empty() {
            self.array_key = self.array_key.next();
        }
        history.push(changes);
    }

    /// Items `moved` changed owner this frame (`changes`): each one not
    /// added this frame is a change of its audience fields (`moving`), its
    /// key bumped. Apart from `commit`, which it would otherwise slow for
    /// every type.
    #[inline(never)]
    fn mark_moved(&mut self, moved: &[ReplicationId], moving: FieldMask, changes: &mut Changeset) {
        for &id in moved {
            // An add goes whole anyway.
            if changes.added.binary_search(&id).is_ok() {
                continue;
            }
            let Some(&pos) = self.index.get(&id) else {
                continue;
            };
            let slot = &mut self.slots[pos];
            if slot.frame_mark != self.frame {
                slot.key = slot.key.next();
                slot.frame_mark = self.frame;
            }
            changes.changed.push((id, moving));
        }
    }

    /// The number of items before this frame's changes (`changes`, the
    /// newest changeset): what a caught-up client holds.
    pub(crate) fn live_before(&self, changes: Option<&Changeset>) -> usize {
        match changes {
            Some(changes) if changes.frame == self.frame => {
                self.slots.len() + changes.removed.len() - changes.added.len()
            }
            _ => self.slots.len(),
        }
    }
}

/// Panics if an `#[replicate(array)]` field of item `id` is not the array
/// its pre-image `before` was taken from (or an edited copy of it): a
/// replaced array restarts its frames and ids while every mirror keeps the
/// old one's, so it could only diverge silently.
fn check_lineage<T: Replicate>(id: ReplicationId, value: &T, before: &T) {
    let mut was = Vec::with_capacity(T::ARRAY_FIELDS as usize);
    before.for_each_array(&mut |array| was.push(array.lineage()));
    let mut field = 0;
    value.for_each_array(&mut |array| {
        let now = array.lineage();
        if was.get(field).is_some_and(|was| !now.continues(was)) {
            panic!(
                "item {id} of a FastArray<{}>: its array field #{field} was replaced by another FastArray \
                 since the last commit; mirrors keep the old array's frames and ids, so they would diverge. \
                 Edit the array in place instead (clear() it and push the new items).",
                T::TYPE_NAME
            );
        }
        field += 1;
    });
}

/// Commits the `#[replicate(array)]` fields of an item; returns whether
/// any of them changed.
fn commit_arrays<T: Replicate>(value: &mut T) -> bool {
    let mut changed = false;
    if T::ARRAY_FIELDS > 0 {
        value.for_each_array_mut(&mut |array| changed |= array.commit_changes());
    }
    changed
}
