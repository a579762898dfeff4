//! The iterators of a [`FastArray`](crate::FastArray): [`Iter`] (ids and
//! items), [`Ids`] and [`IterMut`] (ids and change-recording guards).
//!
//! They are named types rather than `impl Iterator`: a named type without
//! a destructor lets the borrow checker end the array's borrow at the
//! iterator's last use, so `if let Some(id) = array.ids().next() {
//! array.get_mut(id) … }` compiles (an opaque iterator might run a
//! destructor at the end of the block, which keeps the array borrowed).

use core::iter::FusedIterator;
use core::slice;

use crate::id::ReplicationId;
use crate::pre_image::Lent;
use crate::store::{ItemMut, Slot};

/// The items of a [`FastArray`](crate::FastArray) with their ids, in the
/// items' order: [`FastArray::iter`](crate::FastArray::iter).
#[derive(Clone)]
pub struct Iter<'a, T> {
    slots: slice::Iter<'a, Slot<T>>,
}

impl<'a, T> Iter<'a, T> {
    pub(crate) fn new(slots: &'a [Slot<T>]) -> Self {
        Self {
            slots: slots.iter(),
        }
    }
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = (ReplicationId, &'a T);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.slots.next().map(|slot| (slot.id, &slot.value))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl<T> DoubleEndedIterator for Iter<'_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.slots.next_back().map(|slot| (slot.id, &slot.value))
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}
impl<T> FusedIterator for Iter<'_, T> {}

/// The ids of a [`FastArray`](crate::FastArray), in the items' order:
/// [`FastArray::ids`](crate::FastArray::ids).
#[derive(Clone)]
pub struct Ids<'a, T> {
    slots: slice::Iter<'a, Slot<T>>,
}

impl<'a, T> Ids<'a, T> {
    pub(crate) fn new(slots: &'a [Slot<T>]) -> Self {
        Self {
            slots: slots.iter(),
        }
    }
}

impl<T> Iterator for Ids<'_, T> {
    type Item = ReplicationId;

    #[inline]
    fn next(&mut self) -> Option<ReplicationId> {
        self.slots.next().map(|slot| slot.id)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl<T> DoubleEndedIterator for Ids<'_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<ReplicationId> {
        self.slots.next_back().map(|slot| slot.id)
    }
}

impl<T> ExactSizeIterator for Ids<'_, T> {}
impl<T> FusedIterator for Ids<'_, T> {}

/// The items of a [`FastArray`](crate::FastArray) with their ids, each
/// behind an [`ItemMut`] guard that records its change like
/// [`FastArray::get_mut`](crate::FastArray::get_mut)'s:
/// [`FastArray::iter_mut`](crate::FastArray::iter_mut).
///
/// The guards may all be alive at once: each holds its own item and its
/// own place for the item's pre-image, lent by the array when the iterator
/// was made.
pub struct IterMut<'a, T> {
    slots: slice::IterMut<'a, Slot<T>>,
    /// One pre-image cell per slot not yet written this frame, in order.
    cells: Lent<'a, T>,
}

impl<'a, T> IterMut<'a, T> {
    /// Guards over `slots`, the clean ones recording into `cells` (one
    /// each, in order).
    pub(crate) fn new(slots: &'a mut [Slot<T>], cells: Lent<'a, T>) -> Self {
        Self {
            slots: slots.iter_mut(),
            cells,
        }
    }
}

impl<'a, T> Iterator for IterMut<'a, T> {
    type Item = (ReplicationId, ItemMut<'a, T>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let slot = self.slots.next()?;
        let cell = if slot.is_clean() {
            self.cells.next()
        } else {
            None
        };
        let id = slot.id;
        Some((id, ItemMut::lent(slot, cell)))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl<T> DoubleEndedIterator for IterMut<'_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        let slot = self.slots.next_back()?;
        // The cells follow the clean slots' order, so the last cell left is
        // the last clean slot's.
        let cell = if slot.is_clean() {
            self.cells.next_back()
        } else {
            None
        };
        let id = slot.id;
        Some((id, ItemMut::lent(slot, cell)))
    }
}

impl<T> ExactSizeIterator for IterMut<'_, T> {}
impl<T> FusedIterator for IterMut<'_, T> {}
