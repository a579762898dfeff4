//! A frame's pre-images: the value each item held before its first write
//! through a guard, which commit diffs the item against. Their buffers
//! outlive the frame, so the next frame's pre-image of an item that owns
//! heap data (a `String`, a `Vec`) is a copy into memory that is already
//! there ([`Replicate::capture_into`]), not an allocation and a free.
//!
//! Commit goes one step further: having found which fields of an item
//! changed, it copies those into the item's buffer
//! ([`Replicate::capture_fields_into`]), which then holds the item's
//! committed value. An item written again next frame through the same
//! buffer (a loop over the same items in the same order, the dense case)
//! needs no copy at all: its strings are not copied every frame, only
//! when they change.

use core::iter::Zip;
use core::slice;

use crate::id::ReplicationId;
use crate::replicate::Replicate;

/// One pre-image: a value whose heap is reused from frame to frame, and
/// the item whose committed value it is, if it is one.
#[derive(Clone)]
pub(crate) struct Buffer<T> {
    value: Option<T>,
    /// The item whose value at the last commit `value` is (as
    /// [`Replicate::diff`] compares): set by [`PreImages::drain`] when
    /// commit brought the buffer up to the item's value, and only then.
    /// Every value of an item between a commit and its first write in the
    /// next frame is that committed value (items change only through
    /// guards, which capture first), so such a buffer is already the
    /// item's pre-image.
    holds: Option<ReplicationId>,
}

impl<T> Buffer<T> {
    const EMPTY: Self = Self {
        value: None,
        holds: None,
    };
}

/// Makes the pre-image of item `id`, `value`, into `buffer`: nothing if the
/// buffer already holds it, else its replicated fields copied into the
/// buffer's if the type can ([`Replicate::capture_into`]), else the type's
/// own pre-image ([`Replicate::pre_image`]) or a clone.
pub(crate) fn capture<T: Replicate + Clone>(id: ReplicationId, value: &T, buffer: &mut Buffer<T>) {
    if buffer.holds == Some(id) && buffer.value.is_some() {
        return;
    }
    buffer.holds = None;
    if let Some(old) = &mut buffer.value {
        if value.capture_into(old) {
            return;
        }
    }
    buffer.value = Some(value.pre_image().unwrap_or_else(|| value.clone()));
}

/// Makes `before`, the value item `id` held, its pre-image, moved in (for
/// a write that replaces the value, so the type need not be `Clone`):
/// nothing if the buffer already holds it.
pub(crate) fn keep<T>(id: ReplicationId, before: T, buffer: &mut Buffer<T>) {
    if buffer.holds == Some(id) && buffer.value.is_some() {
        return;
    }
    buffer.holds = None;
    buffer.value = Some(before);
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
    /// `visit`, which may bring it up to the item's committed value and
    /// then returns `true` (see [`Buffer::holds`]); then starts the next
    /// frame, keeping these pre-images' buffers for reuse.
    ///
    /// In line, always: its loop is the commit's over the items written
    /// through guards, and its visit the diff of each. Left to itself the
    /// compiler once made it a function of its own with the commit inlined
    /// into it, for the same instructions (callgrind) and a dense commit
    /// and write 8% slower (ab, 6 pairs of `encode 100 dense`).
    #[inline(always)]
    pub(crate) fn drain(&mut self, mut visit: impl FnMut(ReplicationId, &mut T) -> bool) {
        let mut written = 0;
        for (cell, buffer) in self.cells.iter().zip(&mut self.buffers) {
            let committed = match (cell.written, &mut buffer.value) {
                (true, Some(before)) => visit(cell.id, before),
                _ => false,
            };
            buffer.holds = committed.then_some(cell.id);
            written += usize::from(cell.written);
        }
        // Lent cells left unwritten give their place to the written ones'
        // buffers (when every cell was written, they are in place).
        if written < self.cells.len() {
            self.keep_written();
        }
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
            false
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
    fn a_drain_keeps_the_buffers_of_written_cells_past_unwritten_ones() {
        let mut images = PreImages::default();
        copy(&"nine".to_string(), images.record(id(9)));
        for (cell, buffer) in images.lend([4, 5].into_iter().map(id)) {
            if cell.id == id(5) {
                cell.mark_written();
                copy(&"five".to_string(), buffer);
            }
        }
        assert_eq!(seen(&mut images), [(9, "nine".into()), (5, "five".into())]);
        // Cell 4, lent and never written, gives its place to cell 5's
        // buffer: the next frame reuses both written buffers.
        let kept: Vec<_> = images.buffers.iter().map(|b| b.value.clone()).collect();
        assert_eq!(kept, [Some("nine".into()), Some("five".into())]);
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
        // Commit brought items 0 and 2 up to date, not item 1.
        images.drain(|id, before| {
            before.push('!');
            id.to_raw() != 1
        });
        let holds = |images: &PreImages<String>| -> Vec<Option<u64>> {
            let held = images
                .buffers
                .iter()
                .map(|b| b.holds.map(ReplicationId::to_raw));
            held.collect()
        };
        assert_eq!(holds(&images), [Some(0), None, Some(2)]);
        // Lent again in the same order: each cell meets its own buffer.
        let lent: Vec<_> = images
            .lend([0, 1, 2].into_iter().map(id))
            .map(|(cell, buffer)| (cell.id.to_raw(), buffer.holds.map(ReplicationId::to_raw)))
            .collect();
        assert_eq!(lent, [(0, Some(0)), (1, None), (2, Some(2))]);
        // Nothing was written: the next commit keeps no buffer, so none
        // can claim an item whose value it no longer follows.
        assert_eq!(seen(&mut images), []);
        assert!(images.buffers.is_empty());
    }
}
