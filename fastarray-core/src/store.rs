//! An array's item storage: items in a `Vec` found by id through a map;
//! the change-recording guard (`item_mut`) and commit (`commit`), which
//! turns a frame's work into a changeset in O(items touched).

use core::cmp::Ordering as Order;
use core::sync::atomic::{AtomicU64, Ordering};

use hashbrown::HashMap;

use crate::id::{ReplicationId, ReplicationKey};
use crate::inner_array::Lineage;
use crate::mask::FieldMask;
use crate::pre_image::{self, Lent, PreImages};
use crate::replicate::{Replicate, zip_arrays};
use crate::send_state::Holdings;

mod commit;
mod field_frames;
mod item_mut;
#[cfg(feature = "serde")]
pub(crate) mod saved;

use field_frames::FieldFrames;
pub(crate) use field_frames::take_newer;
pub use item_mut::ItemMut;

/// The items of one array, with what this frame did to them.
pub(crate) struct Store<T> {
    /// Which array this is: a number no other array created in this
    /// process has, a clone included (see [`Lineage`]).
    origin: u64,
    /// For a clone: the origin and frame of the array it was cloned from.
    cloned_from: Option<(u64, u64)>,
    slots: Vec<Slot<T>>,
    index: HashMap<ReplicationId, usize>,
    next_id: u64,
    array_key: ReplicationKey,
    frame: u64,
    work: FrameWork<T>,
    /// Mirror only: the frame of the newest value applied to each field
    /// of each slot's item (behind a pointer, allocated by the first item
    /// a mirror receives: a server, and an array inside an item, carry 8
    /// bytes for it).
    field_frames: Option<Box<FieldFrames>>,
}

/// One item and what the array keeps of it.
#[derive(Clone)]
pub(crate) struct Slot<T> {
    pub(crate) id: ReplicationId,
    pub(crate) key: ReplicationKey,
    /// A frame the slot remembers, whose meaning is the array's role's and
    /// is read only through the role's accessor: on a server the frame
    /// that added the item or last bumped its key ([`Slot::key_frame`]);
    /// on a mirror, for an item that left the scope and came back, the
    /// frame of that exit ([`Slot::returned_after`]), else 0. One word
    /// serves both: a slot is 24 bytes (`WIRE.md`, "Limits").
    frame_mark: u64,
    state: SlotState,
    pub(crate) value: T,
}

impl<T> Slot<T> {
    /// Mirror: the frame of the exit the item came back after, if it left
    /// the scope and came back (entries up to it are read past).
    pub(crate) fn returned_after(&self) -> Option<u64> {
        (self.frame_mark > 0).then_some(self.frame_mark)
    }

    /// Server: the frame that added the item or last bumped its key.
    pub(crate) fn key_frame(&self) -> u64 {
        self.frame_mark
    }

    /// Whether the item was neither added nor written this frame (its
    /// first write has to record a pre-image).
    pub(crate) fn is_clean(&self) -> bool {
        self.state == SlotState::Clean
    }
}

/// The last item [`Store::locate`] found, from which it guesses where the
/// next one is: as many slots further as its id is.
#[derive(Clone, Copy, Default)]
pub(crate) struct Near {
    id: u64,
    pos: usize,
}

impl Near {
    /// Where item `id` is in `slots` (indexed by `index`): see
    /// [`Store::locate`].
    #[inline]
    fn find<T>(
        &mut self,
        slots: &[Slot<T>],
        index: &HashMap<ReplicationId, usize>,
        id: ReplicationId,
    ) -> Option<usize> {
        let guess = self
            .pos
            .wrapping_add(id.to_raw().wrapping_sub(self.id) as usize);
        let pos = match slots.get(guess) {
            Some(slot) if slot.id == id => guess,
            _ => *index.get(&id)?,
        };
        *self = Near {
            id: id.to_raw(),
            pos,
        };
        Some(pos)
    }
}

/// What this frame has done to a slot so far.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    /// Not touched since the last commit.
    Clean,
    /// Pushed since the last commit (no pre-image needed).
    Added,
    /// Written through a guard; its pre-image is in `FrameWork::touched`.
    Touched,
}

/// This frame's uncommitted work: what `commit` has to look at.
#[derive(Clone)]
struct FrameWork<T> {
    added: Vec<ReplicationId>,
    removed: Vec<ReplicationId>,
    /// The items written through guards, before their first write.
    touched: PreImages<T>,
}

impl<T> Default for FrameWork<T> {
    fn default() -> Self {
        Self {
            added: Vec::new(),
            removed: Vec::new(),
            touched: PreImages::default(),
        }
    }
}

/// A number no array created before had.
fn next_origin() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A copy with an identity of its own, which remembers where it came from:
/// written back in place of its source in the same frame, it is an edit of
/// that array (see [`Lineage::continues`]).
impl<T: Clone> Clone for Store<T> {
    fn clone(&self) -> Self {
        Self {
            origin: next_origin(),
            cloned_from: Some((self.origin, self.frame)),
            slots: self.slots.clone(),
            index: self.index.clone(),
            next_id: self.next_id,
            array_key: self.array_key,
            frame: self.frame,
            work: self.work.clone(),
            field_frames: self.field_frames.clone(),
        }
    }
}

impl<T> Store<T> {
    /// No items, with room for `capacity`.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            origin: next_origin(),
            cloned_from: None,
            slots: Vec::with_capacity(capacity),
            index: HashMap::with_capacity(capacity),
            next_id: 0,
            array_key: ReplicationKey::default(),
            frame: 0,
            work: FrameWork::default(),
            field_frames: None,
        }
    }

    /// No items, with this store's identity and frame: the pre-image of an
    /// array inside an item, which commit checks the array against.
    pub(crate) fn empty_like(&self) -> Self {
        Self {
            origin: self.origin,
            frame: self.frame,
            ..Self::with_capacity(0)
        }
    }

    /// Which array this is: no other array created in this process, a
    /// clone included, has the same origin.
    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }

    /// Which array this is and its frame.
    pub(crate) fn lineage(&self) -> Lineage {
        Lineage::new(self.origin, self.frame, self.cloned_from)
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn frame(&self) -> u64 {
        self.frame
    }

    /// Sets the frame of a store decoded from a snapshot.
    pub(crate) fn set_frame(&mut self, frame: u64) {
        self.frame = frame;
    }

    pub(crate) fn array_key(&self) -> ReplicationKey {
        self.array_key
    }

    /// Where item `id` is.
    #[inline]
    pub(crate) fn position(&self, id: ReplicationId) -> Option<usize> {
        self.index.get(&id).copied()
    }

    /// The slot at position `pos`.
    #[inline]
    pub(crate) fn slot(&self, pos: usize) -> &Slot<T> {
        &self.slots[pos]
    }

    /// Where item `id` is, trying first where `near` guesses it is
    /// before the map: a message names items in id order, and a mirror's
    /// slots are mostly in id order too, so walking a message's entries
    /// the guess is usually right and costs no hashing.
    #[inline]
    pub(crate) fn locate(&self, id: ReplicationId, near: &mut Near) -> Option<usize> {
        near.find(&self.slots, &self.index, id)
    }

    /// The slot at position `pos`, mutably (for the mirror).
    #[inline]
    pub(crate) fn slot_at_mut(&mut self, pos: usize) -> &mut Slot<T> {
        &mut self.slots[pos]
    }

    /// Mirror: the slot at position `pos` and the frames of its fields'
    /// newest values, to apply an entry to.
    #[inline]
    pub(crate) fn slot_and_frames_mut(&mut self, pos: usize) -> (&mut Slot<T>, &mut [u64]) {
        let frames = self
            .field_frames
            .as_deref_mut()
            .map(|frames| frames.at_mut(pos));
        (&mut self.slots[pos], frames.unwrap_or_default())
    }

    /// Mirror: the frames of the newest values applied to the fields of
    /// the item at position `pos` (none on a server).
    pub(crate) fn field_frames(&self, pos: usize) -> &[u64] {
        self.field_frames
            .as_deref()
            .map(|frames| frames.at(pos))
            .unwrap_or_default()
    }

    /// The item at position `pos`, to write through without recording a
    /// change (the writer, for the arrays inside it).
    pub(crate) fn value_mut(&mut self, pos: usize) -> &mut T {
        &mut self.slots[pos].value
    }

    /// Every slot, in the items' order.
    pub(crate) fn slots(&self) -> &[Slot<T>] {
        &self.slots
    }

    #[inline]
    pub(crate) fn get(&self, id: ReplicationId) -> Option<&T> {
        self.index.get(&id).map(|&pos| &self.slots[pos].value)
    }

    /// Whether anything was pushed, removed or written through a guard
    /// since the last commit. Cells lent to guards that were not written
    /// do not count (after commit, `touched` is empty and this is O(1)).
    pub(crate) fn has_uncommitted_work(&self) -> bool {
        !(self.work.added.is_empty() && self.work.removed.is_empty() && !self.work.touched.any())
    }

    /// Whether this store never had an item of its own (no id was ever
    /// assigned or received).
    pub(crate) fn never_held_items(&self) -> bool {
        self.next_id == 0
    }

    /// Adds an item with the next id.
    pub(crate) fn push(&mut self, value: T) -> ReplicationId {
        let id = ReplicationId::from_raw(self.next_id);
        self.next_id = self
            .next_id
            .checked_add(1)
            .expect("replication ids exhausted: 2^64 items pushed to one array");
        self.insert_slot(id, SlotState::Added, value);
        self.work.added.push(id);
        id
    }

    /// Adds an item with id `id`, which another array gave it (a relay's
    /// server): recorded as an add, as [`push`](Self::push) does, and no
    /// later push takes `id` or an id below it. `id` must not be held.
    pub(crate) fn push_given(&mut self, id: ReplicationId, value: T) {
        debug_assert!(!self.index.contains_key(&id));
        self.next_id = self.next_id.max(id.to_raw().saturating_add(1));
        self.insert_slot(id, SlotState::Added, value);
        self.work.added.push(id);
    }

    /// Adds an item with id `id`, which another shard gave it: recorded as
    /// an add, as [`push`](Self::push) does, with no change to the ids
    /// pushes take (`id` is of another shard's range, or was this one's
    /// already). `id` must not be held.
    pub(crate) fn push_adopted(&mut self, id: ReplicationId, value: T) {
        debug_assert!(!self.index.contains_key(&id));
        self.insert_slot(id, SlotState::Added, value);
        self.work.added.push(id);
    }

    /// The id the next push takes.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    /// A relay's next id follows its server's: no push takes an id below
    /// `next_id`.
    pub(crate) fn raise_next_id(&mut self, next_id: u64) {
        self.next_id = self.next_id.max(next_id);
    }

    pub(crate) fn remove(&mut self, id: ReplicationId) -> Option<T> {
        let slot = self.take_slot(id)?;
        if slot.state != SlotState::Added {
            self.work.removed.push(id);
        }
        Some(slot.value)
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(ReplicationId, &T) -> bool) {
        let removed = &mut self.work.removed;
        let before = self.slots.len();
        self.slots.retain(|slot| {
            let kept = keep(slot.id, &slot.value);
            if !kept && slot.state != SlotState::Added {
                removed.push(slot.id);
            }
            kept
        });
        if self.slots.len() != before {
            self.reorder_frames();
            self.reindex();
        }
    }

    pub(crate) fn swap(&mut self, a: ReplicationId, b: ReplicationId) -> bool {
        let (Some(&pa), Some(&pb)) = (self.index.get(&a), self.index.get(&b)) else {
            return false;
        };
        self.slots.swap(pa, pb);
        if let Some(frames) = &mut self.field_frames {
            frames.swap(pa, pb);
        }
        self.index.insert(a, pb);
        self.index.insert(b, pa);
        true
    }

    pub(crate) fn sort_by(&mut self, mut compare: impl FnMut(&T, &T) -> Order) {
        self.slots.sort_by(|x, y| compare(&x.value, &y.value));
        self.reorder_frames();
        self.reindex();
    }

    /// The item with this id behind a guard whose first write records a
    /// pre-image.
    pub(crate) fn get_mut(&mut self, id: ReplicationId) -> Option<ItemMut<'_, T>> {
        let pos = *self.index.get(&id)?;
        Some(ItemMut::pushing(
            &mut self.slots[pos],
            &mut self.work.touched,
        ))
    }

    /// Every slot, mutably and in order, with one pre-image cell per slot
    /// not yet written this frame (in the same order): what the array's
    /// `IterMut` hands to its guards, which can all
    /// be alive at once because each owns its slot and its cell. Costs
    /// O(len) and no allocation once the pre-images have grown to the
    /// array's size (see [`PreImages::lend`]).
    pub(crate) fn lend(&mut self) -> (&mut [Slot<T>], Lent<'_, T>) {
        let clean = self
            .slots
            .iter()
            .filter(|slot| slot.state == SlotState::Clean)
            .map(|slot| slot.id);
        let cells = self.work.touched.lend(clean);
        (&mut self.slots, cells)
    }

    /// Puts a new item with a server-assigned id into a mirror, its fields
    /// `carried` applied at `frame` (the others, withheld by a detail level,
    /// hold their `Default` as of no frame). Mirrors do not record changes of their own.
    pub(crate) fn insert_replicated(
        &mut self,
        id: ReplicationId,
        frame: u64,
        value: T,
        carried: FieldMask,
    ) where
        T: Replicate,
    {
        debug_assert!(!self.index.contains_key(&id));
        self.next_id = self.next_id.max(id.to_raw().saturating_add(1));
        self.insert_slot(id, SlotState::Clean, value);
        let slots = self.slots.capacity();
        let frames = self.field_frames.get_or_insert_with(Box::default);
        frames.push(T::FIELD_COUNT as usize, frame, carried, slots);
    }

    /// Mirror: the frame of the exit item `id` came back after, if it
    /// left the scope and came back (entries up to it are read past).
    pub(crate) fn returned_after(&self, id: ReplicationId) -> Option<u64> {
        self.slots[*self.index.get(&id)?].returned_after()
    }

    /// Mirror: records that item `id` came back after an exit at `exit`.
    pub(crate) fn set_returned_after(&mut self, id: ReplicationId, exit: u64) {
        if let Some(&pos) = self.index.get(&id) {
            self.slots[pos].frame_mark = exit;
        }
    }

    /// Mirror: the frame of the newest value applied to any field of item
    /// `id` (0 if none is recorded).
    pub(crate) fn newest_field_frame(&self, id: ReplicationId) -> u64 {
        self.index
            .get(&id)
            .and_then(|&pos| self.field_frames.as_ref()?.at(pos).iter().copied().max())
            .unwrap_or(0)
    }

    /// Mirror: whether a scope exit of item `id` written at `frame` applies:
    /// it is not older than a value the mirror holds of the item, nor than
    /// the item's return (an older one is a late copy from before the item
    /// came back). The one rule, for the apply and for the limits' count.
    pub(crate) fn exit_applies(&self, id: ReplicationId, frame: u64) -> bool {
        self.newest_field_frame(id) <= frame
            && self.returned_after(id).is_none_or(|back| back < frame)
    }

    /// Removes an item from a mirror without recording a change.
    pub(crate) fn remove_replicated(&mut self, id: ReplicationId) -> Option<T> {
        self.take_slot(id).map(|slot| slot.value)
    }

    /// Takes an item's slot out; the last slot moves into its place.
    fn take_slot(&mut self, id: ReplicationId) -> Option<Slot<T>> {
        let pos = self.index.remove(&id)?;
        let slot = self.slots.swap_remove(pos);
        if let Some(frames) = &mut self.field_frames {
            frames.swap_remove(pos);
        }
        if let Some(moved) = self.slots.get(pos) {
            self.index.insert(moved.id, pos);
        }
        Some(slot)
    }

    fn insert_slot(&mut self, id: ReplicationId, state: SlotState, value: T) {
        self.index.insert(id, self.slots.len());
        self.slots.push(Slot {
            id,
            key: ReplicationKey::default(),
            frame_mark: 0,
            state,
            value,
        });
    }

    /// Moves the field frames after the slots were reordered or thinned
    /// out, while the index still gives each item's old position.
    fn reorder_frames(&mut self) {
        if let Some(frames) = &mut self.field_frames {
            let index = &self.index;
            frames.reorder(
                self.slots
                    .iter()
                    .filter_map(|slot| index.get(&slot.id).copied()),
            );
        }
    }

    fn reindex(&mut self) {
        self.index.clear();
        self.index.extend(
            self.slots
                .iter()
                .enumerate()
                .map(|(pos, slot)| (slot.id, pos)),
        );
    }
}

impl<T: Replicate> Store<T> {
    /// Writes `value` over the item with this id (held), as a follower
    /// takes an item its source sent whole, with no guard, so `T` need not
    /// be `Clone`: the value it held becomes its pre-image (or, for a type
    /// with `#[replicate(array)]` fields, [`Replicate::pre_image`]). Its
    /// arrays are not replaced (that would restart their frames and ids
    /// under every connection) but take what `value`'s hold
    /// ([`InnerArray::take_follow`](crate::InnerArray::take_follow)).
    /// Nothing if the item is not held.
    pub(crate) fn replace(&mut self, id: ReplicationId, mut value: T) {
        let Some(&pos) = self.index.get(&id) else {
            return;
        };
        let slot = &mut self.slots[pos];
        let before = (slot.state == SlotState::Clean).then(|| slot.value.pre_image());
        zip_arrays(&mut slot.value, &mut value, &mut |mine, copy| {
            mine.take_follow(copy);
            mine.swap_with(copy);
        });
        let old = core::mem::replace(&mut slot.value, value);
        if let Some(pre_image) = before {
            slot.state = SlotState::Touched;
            let buffer = self.work.touched.record(id);
            pre_image::keep(id, pre_image.unwrap_or(old), buffer);
        }
    }
}

/// What a connection compares against when it resynchronises.
impl<T> Holdings for Store<T> {
    fn each_key(&self, visit: &mut dyn FnMut(ReplicationId, ReplicationKey, u64)) {
        for slot in &self.slots {
            visit(slot.id, slot.key, slot.key_frame());
        }
    }

    fn holds(&self, id: ReplicationId) -> bool {
        self.index.contains_key(&id)
    }

    fn key_of(&self, id: ReplicationId) -> Option<(ReplicationKey, u64)> {
        let slot = &self.slots[*self.index.get(&id)?];
        Some((slot.key, slot.key_frame()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-item overhead stated in `WIRE.md`.
    #[test]
    fn documented_slot_size_holds() {
        assert_eq!(core::mem::size_of::<Slot<()>>(), 24);
        assert_eq!(core::mem::size_of::<(ReplicationId, usize)>(), 16);
    }
}
