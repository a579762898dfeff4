//! A frame's pre-images: the value each item held before its first write
//! through a guard, which commit diffs the item against. Their buffers
//! outlive the frame, so the next frame's pre-image of an item that owns
//! heap data (a `String`, a `Vec`) is a copy into memory that is already
//! there ([`Replicate::capture_into`]), not an allocation and a free.
//!
//! Commit goes one step further: it notes in each buffer which fields of
//! its item it found changed. Those are all the buffer lacks of the item's
//! committed value, so an item written again next frame through the same
//! buffer (a loop over the same items in the same order, the dense case)
//! copies only them ([`Replicate::capture_fields_into`]): its strings are
//! not copied every frame, only when they change.

use core::iter::Zip;
use core::slice;

use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::Replicate;

/// One pre-image: a value whose heap is reused from frame to frame, and
/// the item whose committed value it nearly is, if it is one.
#[derive(Clone)]
pub(crate) struct Buffer<T> {
    value: Option<T>,
    /// The item whose pre-image `value` was at the last commit, and the
    /// fields that commit found changed: in every other field `value` is
    /// the item's committed value (as [`Replicate::diff`] compares). Set
    /// by [`PreImages::drain`], and only there. Every value of an item
    /// between a commit and its first write in the next frame is that
    /// committed value (items change only through guards, which capture
    /// first), so copying those fields makes the buffer its pre-image.
    holds: Option<(ReplicationId, FieldMask)>,
}

impl<T> Buffer<T> {
    const EMPTY: Self = Self {
        value: None,
        holds: None,
    };
}

/// Makes the pre-image of item `id`, `value`, into `buffer`: the fields
/// the last commit found changed if the buffer was this item's then
/// ([`Replicate::capture_fields_into`]), else its replicated fields copied
/// into the buffer's if the type can ([`Replicate::capture_into`]), else
/// the type's own pre-image ([`Replicate::pre_image`]) or a clone.
pub(crate) fn capture<T: Replicate + Clone>(id: ReplicationId, value: &T, buffer: &mut Buffer<T>) {
    let holds = buffer.holds.take();
    if let Some(old) = &mut buffer.value {
        let changed = match holds {
            Some((held, changed)) if held == id => Some(changed),
            _ => None,
        };
        if changed.is_some_and(|changed| value.capture_fields_into(old, changed)) {
            return;
        }
        if value.capture_into(old) {
            return;
        }
    }
    buffer.value = Some(value.pre_image().unwrap_or_else(|| value.clone()));
}

/// Derive plumbing for [`Replicate::capture_into`]: in
/// `(&&CloneField(&self.f)).capture_field(&mut into.f)`, method lookup
/// tries [`ByClone`] first (its receiver is one reference closer), which
/// applies when the field's type is `Clone`, and falls back to
/// [`NotClone`], which copies nothing and returns `false`.
#[doc(hidden)]
pub struct CloneField<'a, T>(pub &'a T);

/// See [`CloneField`]: copies the field with `Clone::clone_from`.
#[doc(hidden)]
pub trait ByClone<T> {
    /// Copies the field into `into`; returns `true`.
    fn capture_field(&self, into: &mut T) -> bool;
}

impl<T: Clone> ByClone<T> for &CloneField<'_, T> {
    #[inline]
    fn capture_field(&self, into: &mut T) -> bool {
        into.clone_from(self.0);
        true
    }
}

/// See [`CloneField`]: a field whose type is not `Clone`.
#[doc(hidden)]
pub trait NotClone<T> {
    /// Copies nothing; returns `false`.
    fn capture_field(&self, into: &mut T) -> bool;
}

impl<T> NotClone<T> for CloneField<'_, T> {
    #[inline]
    fn capture_field(&self, _: &mut T) -> bool {
        false
    }
}

/// The pre-images of one frame, in the order they were recorded or lent.
pub(crate) struct PreImages<T> {
    /// One per item a guard recorded or was lent a cell for: its id and
    /// whether it was written (a lent cell may never be).
    cells: Vec<Cell>,
    /// The pre-image of `cells[i]` is in `buffers[i]`; past `cells.len()`,
    /// buffers of the last frame's pre-images, kept for reuse.
    buffers: Vec<Buffer<T>>,
}

/// One item's place in a frame's pre-images.
#[derive(Clone, Copy)]
pub(crate) struct Cell {
    id: ReplicationId,
    written: bool,
}

/// Cells lent to guards that can all be alive at once, each with its
/// buffer ([`PreImages::lend`]).
pub(crate) type Lent<'a, T> = Zip<slice::IterMut<'a, Cell>, slice::IterMut<'a, Buffer<T>>>;

impl<T> Default for PreImages<T> {
    fn default() -> Self {
        Self {
            cells: Vec::new(),
            buffers: Vec::new(),
        }
    }
}

/// The frame's pre-images; the spare buffers are not copied.
impl<T: Clone> Clone for PreImages<T> {
    fn clone(&self) -> Self {
        Self {
            cells: self.cells.clone(),
            buffers: self.buffers[..self.cells.len()].to_vec(),
        }
    }
}

impl<T> PreImages<T> {
    /// Whether a pre-image was recorded this frame (lent cells never
    /// written do not count).
    pub(crate) fn any(&self) -> bool {
        self.cells.iter().any(|cell| cell.written)
    }

    /// Records a pre-image for item `id`: returns its buffer, which may
    /// hold an earlier pre-image to reuse, or already the item's (see
    /// [`capture`]).
    pub(crate) fn record(&mut self, id: ReplicationId) -> &mut Buffer<T> {
        let at = self.cells.len();
        self.cells.push(Cell { id, written: true });
        if at == self.buffers.len() {
            self.buffers.push(Buffer::EMPTY);
        }
        &mut self.buffers[at]
    }

    /// A cell, with its buffer, for each of `ids`, in order, to be lent to
    /// guards that may all be alive at once. Cells of an earlier call that
    /// were never written are dropped first. Costs O(cells) and, once the
    /// lists have grown to the array's size, no allocation.
    pub(crate) fn lend(&mut self, ids: impl Iterator<Item = ReplicationId>) -> Lent<'_, T> {
        let start = self.keep_written();
        self.cells.extend(ids.map(|id| Cell { id, written: false }));
        let end = self.cells.len();
        if self.buffers.len() < end {
            self.buffers.resize_with(end, || Buffer::EMPTY);
        }
        self.cells[start..]
            .iter_mut()
            .zip(&mut self.buffers[start..end])
    }

    /// Each pre-image of the frame, in order, with its item's id, to
    /// `visit`, which returns the fields it found changed (`None` if the
    /// item is gone: see [`Buffer::holds`]); then starts the next frame,
    /// keeping these pre-images' buffers for reuse.
    pub(crate) fn drain(&mut self, mut visit: impl FnMut(ReplicationId, &T) -> Option<FieldMask>) {
        for (cell, buffer) in self.cells.iter().zip(&mut self.buffers) {
            buffer.holds = match (cell.written, &buffer.value) {
                (true, Some(before)) => visit(cell.id, before).map(|changed| (cell.id, changed)),
                _ => None,
            };
        }
        let written = self.keep_written();
        self.cells.clear();
        // As many spare buffers as this frame used: what the next frame
        // of the same kind needs, and no more.
        self.buffers.truncate(written);
    }

    /// Moves the written cells, with their buffers, before the others,
    /// keeping their order, and drops the others' cells (not their
    /// buffers); returns how many are left.
    fn keep_written(&mut self) -> usize {
        let mut kept = 0;
        for index in 0..self.cells.len() {
            if self.cells[index].written {
                if kept != index {
                    self.cells.swap(kept, index);
                    self.buffers.swap(kept, index);
                }
                kept += 1;
            }
        }
        self.cells.truncate(kept);
        kept
    }
}

impl Cell {
    /// Marks the cell written: its buffer holds the item's pre-image.
    pub(crate) fn mark_written(&mut self) {
        self.written = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`capture`] does, for a type that is not `Replicate`.
    fn copy(value: &String, buffer: &mut Buffer<String>) {
        buffer.holds = None;
        match &mut buffer.value {
            Some(old) => old.clone_from(value),
            None => buffer.value = Some(value.clone()),
        }
    }

    fn id(n: u64) -> ReplicationId {
        ReplicationId::from_raw(n)
    }

    fn seen(images: &mut PreImages<String>) -> Vec<(u64, String)> {
        let mut seen = Vec::new();
        images.drain(|id, before| {
            seen.push((id.to_raw(), before.clone()));
            None
        });
        seen
    }

    #[test]
    fn lent_cells_never_written_are_dropped_and_the_order_kept() {
        let mut images = PreImages::default();
        copy(&"nine".to_string(), images.record(id(9)));
        for (n, (cell, buffer)) in images.lend([1, 2, 3].into_iter().map(id)).enumerate() {
            if n != 1 {
                cell.mark_written();
                copy(&format!("v{n}"), buffer);
            }
        }
        assert!(images.any());
        // A second loop drops the first one's unwritten cell.
        assert_eq!(images.lend([4].into_iter().map(id)).len(), 1);
        assert_eq!(
            seen(&mut images),
            [(9, "nine".into()), (1, "v0".into()), (3, "v2".into())]
        );
        assert!(!images.any());
    }

    #[test]
    fn buffers_are_reused_and_hold_no_more_than_one_frame_used() {
        let mut images = PreImages::default();
        for n in 0..3 {
            copy(&"x".repeat(100), images.record(id(n)));
        }
        seen(&mut images);
        assert_eq!(images.buffers.len(), 3);
        let before = images.buffers[0].value.as_ref().unwrap().as_ptr();
        copy(&"short".to_string(), images.record(id(5)));
        assert_eq!(images.buffers[0].value.as_ref().unwrap().as_ptr(), before);
        assert_eq!(seen(&mut images), [(5, "short".into())]);
        assert_eq!(images.buffers.len(), 1);
    }

    #[test]
    fn a_buffer_holds_its_item_only_from_a_commit_that_said_so_to_its_next_write() {
        let mut images = PreImages::default();
        for n in 0..3 {
            copy(&format!("v{n}"), images.record(id(n)));
        }
        // Commit found items 0 and 2 (field 0 of item 2 changed), not
        // item 1.
        images.drain(|id, _| match id.to_raw() {
            0 => Some(FieldMask::EMPTY),
            2 => Some(FieldMask::single(0)),
            _ => None,
        });
        let holds = |images: &PreImages<String>| -> Vec<Option<(u64, FieldMask)>> {
            let held = images
                .buffers
                .iter()
                .map(|b| b.holds.map(|(id, f)| (id.to_raw(), f)));
            held.collect()
        };
        let changed = FieldMask::single(0);
        assert_eq!(
            holds(&images),
            [Some((0, FieldMask::EMPTY)), None, Some((2, changed))]
        );
        // Lent again in the same order: each cell meets its own buffer.
        let lent: Vec<_> = images
            .lend([0, 1, 2].into_iter().map(id))
            .map(|(cell, buffer)| (cell.id.to_raw(), buffer.holds.map(|(id, _)| id.to_raw())))
            .collect();
        assert_eq!(lent, [(0, Some(0)), (1, None), (2, Some(2))]);
        // Nothing was written: the next commit keeps no buffer, so none
        // can claim an item whose value it no longer follows.
        assert_eq!(seen(&mut images), []);
        assert!(images.buffers.is_empty());
        // A buffer taken for another item forgets the one it held.
        copy(&"a".to_string(), images.record(id(7)));
        images.drain(|_, _| Some(FieldMask::EMPTY));
        copy(&"b".to_string(), images.record(id(8)));
        assert_eq!(holds(&images), [None]);
    }
}
