//! [`FastArray`]: items stored contiguously, found by id, with change
//! capture through a mutation guard.

use core::cmp::Ordering as Order;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU64, Ordering};

use hashbrown::HashMap;

use crate::changeset::Changeset;
use crate::history::History;
use crate::id::{ReplicationId, ReplicationKey};
use crate::receive::MirrorState;
use crate::replicate::Replicate;
use crate::sender::Sender;

/// A collection of replicated items, each with a [`ReplicationId`] that
/// never changes and a [`ReplicationKey`] bumped when it really changes.
///
/// Items live contiguously in a `Vec` (iteration is a slice walk); an id →
/// position map finds them by id. Mutate freely during a frame — [`push`],
/// [`remove`], [`get_mut`], [`retain`], [`swap`], [`sort_by`] — then call
/// [`commit`] once per tick. Commit works out, in time proportional to the
/// items touched this frame (not to [`len`]), which items were added,
/// removed and changed, with a mask of the replicated fields that changed.
///
/// There is no `mark_dirty` to forget: [`get_mut`] returns an [`ItemMut`]
/// guard that keeps a copy of the item the first time it is written in a
/// frame, and commit compares against that copy. A write that leaves every
/// replicated field equal is not a change and bumps no key. Order is not
/// replicated: [`swap`], [`sort_by`] and the slot moves done by [`remove`]
/// never count as changes.
///
/// ```
/// use fastarray_core::{FastArray, FieldMask};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Agent { hp: u8, ammo: u16 }
///
/// let mut agents = FastArray::new();
/// let a = agents.push(Agent { hp: 10, ammo: 50 });
/// let b = agents.push(Agent { hp: 20, ammo: 0 });
/// assert_eq!(agents.commit().added(), [a, b]);
///
/// agents.get_mut(a).unwrap().ammo -= 1; // recorded by the guard
/// agents.get_mut(b).unwrap().hp = 20;   // same value: not a change
/// agents.sort_by(|x, y| x.hp.cmp(&y.hp)); // reordering: not a change
/// let changes = agents.commit();
/// assert_eq!(changes.changed(), [(a, FieldMask::single(1))]);
/// assert!(changes.added().is_empty() && changes.removed().is_empty());
/// ```
///
/// [`push`]: FastArray::push
/// [`remove`]: FastArray::remove
/// [`get_mut`]: FastArray::get_mut
/// [`retain`]: FastArray::retain
/// [`swap`]: FastArray::swap
/// [`sort_by`]: FastArray::sort_by
/// [`commit`]: FastArray::commit
/// [`len`]: FastArray::len
pub struct FastArray<T> {
    /// Which array this is: a number no other array created in this
    /// process has, a clone included. With `frame` and `cloned_from`, it
    /// tells an array inside an item that was replaced wholesale from one
    /// that was edited.
    origin: u64,
    /// For a clone: the origin and frame of the array it was cloned from.
    cloned_from: Option<(u64, u64)>,
    pub(crate) slots: Vec<Slot<T>>,
    pub(crate) index: HashMap<ReplicationId, usize>,
    next_id: u64,
    array_key: ReplicationKey,
    pub(crate) frame: u64,
    work: FrameWork<T>,
    /// Sending side: the history ring and the writer's caches, from the
    /// first commit or write on.
    sender: Option<Box<Sender>>,
    /// Receiving side: newest frame applied and tombstones, from the first
    /// message applied on.
    pub(crate) mirror: Option<Box<MirrorState>>,
}

#[derive(Clone)]
pub(crate) struct Slot<T> {
    pub(crate) id: ReplicationId,
    pub(crate) key: ReplicationKey,
    /// Server only: the frame that added the item or last bumped its key.
    pub(crate) changed: u64,
    state: SlotState,
    /// Mirror only: per replicated field, the frame of the newest value
    /// applied to it (a delta entry or snapshot). `None` on a server.
    pub(crate) field_frames: Option<Box<[u64]>>,
    pub(crate) value: T,
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
    touched: Vec<(ReplicationId, T)>,
}

impl<T> Default for FrameWork<T> {
    fn default() -> Self {
        Self {
            added: Vec::new(),
            removed: Vec::new(),
            touched: Vec::new(),
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
/// that array (see `check_lineage`).
impl<T: Clone> Clone for FastArray<T> {
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
            sender: self.sender.as_ref().map(|s| Box::new(s.for_clone())),
            mirror: self.mirror.clone(),
        }
    }
}

impl<T> Default for FastArray<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FastArray<T> {
    /// An empty array.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty array with room for `capacity` items.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            origin: next_origin(),
            cloned_from: None,
            slots: Vec::with_capacity(capacity),
            index: HashMap::with_capacity(capacity),
            next_id: 0,
            array_key: ReplicationKey::default(),
            frame: 0,
            work: FrameWork::default(),
            sender: None,
            mirror: None,
        }
    }

    /// Number of items.
    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no items.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Adds an item at the end and returns its new id.
    ///
    /// # Panics
    /// After 2⁶⁴ pushes to one array, because ids are never reused.
    pub fn push(&mut self, value: T) -> ReplicationId {
        let id = ReplicationId::from_raw(self.next_id);
        self.next_id = self
            .next_id
            .checked_add(1)
            .expect("replication ids exhausted: 2^64 items pushed to one array");
        self.insert_slot(id, ReplicationKey::default(), SlotState::Added, value);
        self.work.added.push(id);
        id
    }

    /// The item with this id.
    #[inline]
    pub fn get(&self, id: ReplicationId) -> Option<&T> {
        self.index.get(&id).map(|&pos| &self.slots[pos].value)
    }

    /// Whether an item has this id.
    #[inline]
    pub fn contains(&self, id: ReplicationId) -> bool {
        self.index.contains_key(&id)
    }

    /// The item's version: bumped by each commit that found it changed.
    pub fn key(&self, id: ReplicationId) -> Option<ReplicationKey> {
        self.index.get(&id).map(|&pos| self.slots[pos].key)
    }

    /// The array's version: bumped by each commit that found any add,
    /// remove or change.
    pub fn array_key(&self) -> ReplicationKey {
        self.array_key
    }

    /// Number of commits so far (the frame the last [`commit`](Self::commit) ended).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The changeset of the last commit (empty before the first).
    pub fn last_changeset(&self) -> &Changeset {
        static NONE: Changeset = Changeset::EMPTY;
        self.history().and_then(History::newest).unwrap_or(&NONE)
    }

    /// Whether anything was pushed, removed or written through a guard
    /// since the last commit (writes that restored equal values included).
    pub fn has_uncommitted_work(&self) -> bool {
        !(self.work.added.is_empty()
            && self.work.removed.is_empty()
            && self.work.touched.is_empty())
    }

    /// Removes the item and returns it. O(1): the last item moves into its
    /// place, like [`Vec::swap_remove`] (positions are not replicated; use
    /// [`retain`](Self::retain) to remove while keeping the order).
    pub fn remove(&mut self, id: ReplicationId) -> Option<T> {
        let slot = self.take_slot(id)?;
        if slot.state != SlotState::Added {
            self.work.removed.push(id);
        }
        Some(slot.value)
    }

    /// Keeps the items for which `keep(id, &item)` is true, in order, and
    /// removes the rest. O(len).
    pub fn retain(&mut self, mut keep: impl FnMut(ReplicationId, &T) -> bool) {
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
            self.reindex();
        }
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.retain(|_, _| false);
    }

    /// Exchanges the positions of two items. Returns `false` (and does
    /// nothing) if either id is absent. Never a change.
    pub fn swap(&mut self, a: ReplicationId, b: ReplicationId) -> bool {
        let (Some(&pa), Some(&pb)) = (self.index.get(&a), self.index.get(&b)) else {
            return false;
        };
        self.slots.swap(pa, pb);
        self.index.insert(a, pb);
        self.index.insert(b, pa);
        true
    }

    /// Sorts the items with a comparator (stable). Never a change.
    pub fn sort_by(&mut self, mut compare: impl FnMut(&T, &T) -> Order) {
        self.slots.sort_by(|x, y| compare(&x.value, &y.value));
        self.reindex();
    }

    /// The items in their current order, with their ids.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (ReplicationId, &T)> + '_ {
        self.slots.iter().map(|slot| (slot.id, &slot.value))
    }

    /// The ids in the items' current order.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = ReplicationId> + '_ {
        self.slots.iter().map(|slot| slot.id)
    }

    /// The item with this id, behind a guard that records its pre-image the
    /// first time it is written this frame (reads through the guard cost
    /// nothing). [`commit`](Self::commit) compares against that pre-image.
    ///
    /// For an item type with `#[replicate(array)]` fields the pre-image is
    /// the plain fields only ([`Replicate::pre_image`]): the arrays inside
    /// track their own changes, and this array's commit commits them.
    /// Edit those arrays in place: an array replaced by another one (a new
    /// `FastArray`, another item's, an old copy) would restart its frames
    /// and ids while every mirror keeps the old array's, so
    /// [`commit`](Self::commit) refuses it with a panic. An edited clone of
    /// the array written back in the same frame is an edit.
    pub fn get_mut(&mut self, id: ReplicationId) -> Option<ItemMut<'_, T>>
    where
        T: Replicate + Clone,
    {
        self.get_mut_with(id, |value| {
            value.pre_image().unwrap_or_else(|| value.clone())
        })
    }

    /// [`get_mut`](Self::get_mut) with the pre-image made by `capture`.
    pub(crate) fn get_mut_with(
        &mut self,
        id: ReplicationId,
        capture: fn(&T) -> T,
    ) -> Option<ItemMut<'_, T>> {
        let pos = *self.index.get(&id)?;
        Some(ItemMut {
            slot: &mut self.slots[pos],
            touched: &mut self.work.touched,
            capture,
        })
    }

    /// Ends the frame: works out what was added, removed and changed since
    /// the last commit, bumps the keys of items that really changed, and
    /// returns the changeset. Costs O(items touched this frame).
    ///
    /// Items with `#[replicate(array)]` fields have those arrays committed
    /// too, when the item was added or written through a guard this frame
    /// (the only ways to reach them): an item whose arrays changed is listed
    /// in [`Changeset::arrays_changed`] and its key is bumped.
    ///
    /// # Panics
    /// If an `#[replicate(array)]` field of an item written through a guard
    /// this frame was replaced by another `FastArray` (see
    /// [`get_mut`](Self::get_mut)): mirrors could not follow it.
    pub fn commit(&mut self) -> &Changeset
    where
        T: Replicate,
    {
        self.frame += 1;
        let frame = self.frame;
        let mut changes = self.sender().history.next_slot(frame);
        for id in self.work.added.drain(..) {
            if let Some(&pos) = self.index.get(&id) {
                let slot = &mut self.slots[pos];
                slot.state = SlotState::Clean;
                slot.changed = frame;
                commit_arrays(&mut slot.value);
                changes.added.push(id);
            }
        }
        for (id, before) in self.work.touched.drain(..) {
            if let Some(&pos) = self.index.get(&id) {
                let slot = &mut self.slots[pos];
                slot.state = SlotState::Clean;
                if T::ARRAY_FIELDS > 0 {
                    check_lineage(id, &slot.value, &before);
                }
                let mask = slot.value.diff(&before);
                let arrays = commit_arrays(&mut slot.value);
                if !mask.is_empty() || arrays {
                    slot.key = slot.key.next();
                    slot.changed = frame;
                }
                if !mask.is_empty() {
                    changes.changed.push((id, mask));
                }
                if arrays {
                    changes.arrays_changed.push(id);
                }
            }
        }
        changes.removed.append(&mut self.work.removed);
        // Pushes happen in id order, so `added` is already sorted.
        changes.removed.sort_unstable();
        changes.changed.sort_unstable_by_key(|&(id, _)| id);
        changes.arrays_changed.sort_unstable();
        if !changes.is_empty() {
            self.array_key = self.array_key.next();
        }
        self.sender().history.push(changes);
        self.last_changeset()
    }

    /// Puts a new item with a server-assigned id into a mirror, its fields
    /// applied at `frame`. Mirrors do not record changes of their own.
    pub(crate) fn insert_replicated(&mut self, id: ReplicationId, frame: u64, value: T)
    where
        T: Replicate,
    {
        debug_assert!(!self.index.contains_key(&id));
        self.next_id = self.next_id.max(id.to_raw().saturating_add(1));
        self.insert_slot(id, ReplicationKey::default(), SlotState::Clean, value);
        if let Some(slot) = self.slots.last_mut() {
            slot.field_frames = Some(vec![frame; T::FIELD_COUNT as usize].into_boxed_slice());
        }
    }

    /// Removes an item from a mirror without recording a change.
    pub(crate) fn remove_replicated(&mut self, id: ReplicationId) -> Option<T> {
        self.take_slot(id).map(|slot| slot.value)
    }

    /// Takes an item's slot out; the last slot moves into its place.
    fn take_slot(&mut self, id: ReplicationId) -> Option<Slot<T>> {
        let pos = self.index.remove(&id)?;
        let slot = self.slots.swap_remove(pos);
        if let Some(moved) = self.slots.get(pos) {
            self.index.insert(moved.id, pos);
        }
        Some(slot)
    }

    /// The slot of an item, for the delta writer and the mirror.
    pub(crate) fn slot_mut(&mut self, id: ReplicationId) -> Option<&mut Slot<T>> {
        let pos = *self.index.get(&id)?;
        self.slots.get_mut(pos)
    }

    fn insert_slot(&mut self, id: ReplicationId, key: ReplicationKey, state: SlotState, value: T) {
        self.index.insert(id, self.slots.len());
        self.slots.push(Slot {
            id,
            key,
            changed: 0,
            state,
            field_frames: None,
            value,
        });
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

/// Equal when both hold the same ids with equal items, in any order.
impl<T: PartialEq> PartialEq for FastArray<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(id, item)| other.get(id) == Some(item))
    }
}

impl<T: fmt::Debug> fmt::Debug for FastArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Write access to one item of a [`FastArray`], from [`FastArray::get_mut`].
///
/// The first mutable access in a frame copies the item's current value, so
/// the next [`commit`](FastArray::commit) can tell which fields changed.
pub struct ItemMut<'a, T> {
    slot: &'a mut Slot<T>,
    touched: &'a mut Vec<(ReplicationId, T)>,
    /// Makes the pre-image.
    capture: fn(&T) -> T,
}

impl<T> ItemMut<'_, T> {
    /// The item's id.
    pub fn id(&self) -> ReplicationId {
        self.slot.id
    }
}

impl<T> Deref for ItemMut<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.slot.value
    }
}

impl<T> DerefMut for ItemMut<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        if self.slot.state == SlotState::Clean {
            self.touched
                .push((self.slot.id, (self.capture)(&self.slot.value)));
            self.slot.state = SlotState::Touched;
        }
        &mut self.slot.value
    }
}

impl<T: fmt::Debug> fmt::Debug for ItemMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ItemMut")
            .field(&self.slot.id)
            .field(&self.slot.value)
            .finish()
    }
}

/// Panics if an `#[replicate(array)]` field of item `id` is not the array
/// its pre-image `before` was taken from (or an older copy of it): a
/// replaced array restarts its frames and ids while every mirror keeps the
/// old one's, so it could only diverge silently.
fn check_lineage<T: Replicate>(id: ReplicationId, value: &T, before: &T) {
    let mut was = Vec::with_capacity(T::ARRAY_FIELDS as usize);
    before.for_each_array(&mut |array| was.push(array.lineage()));
    let mut field = 0;
    value.for_each_array(&mut |array| {
        let now = array.lineage();
        if let Some(was) = was.get(field)
            && !now.continues(was)
        {
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

/// An array's identity and frame, to tell an edit from a replacement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Lineage {
    origin: u64,
    frame: u64,
    cloned_from: Option<(u64, u64)>,
}

impl Lineage {
    /// Whether an array with this lineage can stand where the array of
    /// `was` stood at its last commit: it is that array (committed since,
    /// or not), or a clone of it taken at that frame and not committed
    /// since (an edited copy written back).
    fn continues(&self, was: &Lineage) -> bool {
        let same = self.origin == was.origin && self.frame >= was.frame;
        let copy = self.cloned_from == Some((was.origin, was.frame)) && self.frame == was.frame;
        same || copy
    }
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

impl<T> FastArray<T> {
    /// The sending side, made on first use.
    pub(crate) fn sender(&mut self) -> &mut Sender {
        self.sender.get_or_insert_with(Box::default)
    }

    /// The sending side, taken out for a write (see [`put_sender`](Self::put_sender)).
    pub(crate) fn sender_box(&mut self) -> Box<Sender> {
        self.sender.take().unwrap_or_default()
    }

    /// Puts back what [`sender_box`](Self::sender_box) took.
    pub(crate) fn put_sender(&mut self, sender: Box<Sender>) {
        self.sender = Some(sender);
    }

    /// The history ring, if anything was ever committed.
    pub(crate) fn history(&self) -> Option<&History> {
        self.sender.as_deref().map(|sender| &sender.history)
    }

    /// Which array this is (see `origin`).
    pub(crate) fn lineage(&self) -> Lineage {
        Lineage {
            origin: self.origin,
            frame: self.frame,
            cloned_from: self.cloned_from,
        }
    }

    /// An empty array with this one's identity and frame: the pre-image of
    /// an array inside an item, which commit checks the array against.
    pub(crate) fn empty_like(&self) -> Self {
        Self {
            origin: self.origin,
            frame: self.frame,
            ..Self::new()
        }
    }
}

impl<T: Replicate> FastArray<T> {
    /// The schema hash of the item type: a `#[replicate(array)]` field's
    /// part in its owner's schema hash.
    pub const ELEMENT_SCHEMA_HASH: u64 = T::SCHEMA_HASH;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-item overhead stated in `WIRE.md`.
    #[test]
    fn documented_slot_size_holds() {
        assert_eq!(core::mem::size_of::<Slot<()>>(), 40);
        // Carried by every item with array fields, once per field.
        assert_eq!(core::mem::size_of::<FastArray<()>>(), 208);
        assert_eq!(core::mem::size_of::<(ReplicationId, usize)>(), 16);
    }
}
