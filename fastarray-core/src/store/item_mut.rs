//! [`ItemMut`]: the change-recording guard over one item, which makes the
//! item's pre-image at its first write of a frame.

use core::fmt;
use core::ops::{Deref, DerefMut};

use super::{Slot, SlotState};
use crate::id::ReplicationId;
use crate::pre_image::{self, Buffer, Cell, PreImages};
use crate::replicate::Replicate;

/// Write access to one item of a [`FastArray`](crate::FastArray), from
/// [`FastArray::get_mut`](crate::FastArray::get_mut) or
/// [`FastArray::iter_mut`](crate::FastArray::iter_mut).
///
/// The first mutable access in a frame makes the item's pre-image (a copy
/// of its current value, or nothing if the buffer it meets already holds
/// it; see [`FastArray::get_mut`](crate::FastArray::get_mut)), so the next
/// [`commit`](crate::FastArray::commit) can tell which fields changed.
pub struct ItemMut<'a, T> {
    slot: &'a mut Slot<T>,
    /// Where the first write puts the pre-image.
    record: Record<'a, T>,
}

/// Where a guard puts the pre-image of its item's first write this frame.
enum Record<'a, T> {
    /// Appended to the frame's list ([`Store::get_mut`]: one guard at
    /// a time).
    Push(&'a mut PreImages<T>),
    /// Into a cell of that list, and its buffer, lent to this guard alone
    /// ([`Store::lend`]: many guards at once).
    Cell(&'a mut Cell, &'a mut Buffer<T>),
    /// Nowhere: the item was already added or written this frame.
    Done,
}

impl<'a, T> ItemMut<'a, T> {
    /// A guard over `slot` from [`Store::get_mut`](super::Store::get_mut):
    /// its first write appends the pre-image to the frame's `list`.
    pub(crate) fn pushing(slot: &'a mut Slot<T>, list: &'a mut PreImages<T>) -> Self {
        Self {
            slot,
            record: Record::Push(list),
        }
    }

    /// A guard over `slot` from [`Store::lend`]: `cell` is the slot's
    /// pre-image cell if it was not written yet this frame.
    pub(crate) fn lent(
        slot: &'a mut Slot<T>,
        cell: Option<(&'a mut Cell, &'a mut Buffer<T>)>,
    ) -> Self {
        debug_assert_eq!(cell.is_some(), slot.state == SlotState::Clean);
        let record = match cell {
            Some((cell, buffer)) => Record::Cell(cell, buffer),
            None => Record::Done,
        };
        Self { slot, record }
    }

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

/// Guards are only made for `Clone` items (`get_mut`, `iter_mut`): the
/// pre-image is a copy.
impl<T: Replicate + Clone> DerefMut for ItemMut<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        if self.slot.state == SlotState::Clean {
            match &mut self.record {
                Record::Push(touched) => {
                    let buffer = touched.record(self.slot.id);
                    pre_image::capture(self.slot.id, &self.slot.value, buffer);
                }
                Record::Cell(cell, buffer) => {
                    pre_image::capture(self.slot.id, &self.slot.value, buffer);
                    cell.mark_written();
                }
                // A clean slot always comes with somewhere to record.
                Record::Done => debug_assert!(false, "clean slot without a record"),
            }
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
