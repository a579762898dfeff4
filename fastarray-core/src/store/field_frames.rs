//! A mirror's field frames: for each item, per replicated field, the frame
//! of the newest value applied to it, so that a duplicate or late entry
//! changes nothing. They are a column beside the store's slots (the same
//! order, `stride` frames per slot) rather than a heap block per slot: an
//! entry's frames are then found from its position without a pointer to
//! follow, the slots stay small for the server (which keeps none), and a
//! mirror spends 8 bytes per field and no allocation per item.

use crate::mask::FieldMask;

/// The field frames of a store's slots, moved with them.
#[derive(Clone, Debug, Default)]
pub(crate) struct FieldFrames {
    /// Frames per slot: the item type's field count (set by the first
    /// [`push`](Self::push); a server's store keeps no column at all).
    stride: usize,
    /// `stride` frames per slot, in slot order.
    frames: Vec<u64>,
}

impl FieldFrames {
    /// Appends the frames of the slot pushed last: `fields` of them, each
    /// `frame` (the item arrived whole) if `carried` names it, else 0 (a
    /// detail level withheld it: the item holds its `Default`, and any
    /// value sent later is newer). The column keeps room for as many slots
    /// as the slots have (`slots`): it grows with them, once for a snapshot
    /// that reserved its items, rather than by doublings of its own.
    pub(crate) fn push(&mut self, fields: usize, frame: u64, carried: FieldMask, slots: usize) {
        debug_assert!(self.stride == 0 || self.stride == fields);
        self.stride = fields;
        let room = fields.saturating_mul(slots);
        if self.frames.capacity() < room {
            self.frames.reserve_exact(room - self.frames.len());
        }
        if carried.covers(FieldMask::all(fields as u32)) {
            self.frames.extend(core::iter::repeat_n(frame, fields));
        } else {
            self.frames.extend(
                (0..fields as u32).map(|field| if carried.contains(field) { frame } else { 0 }),
            );
        }
    }

    /// The frames of the slot at `pos`.
    pub(crate) fn at(&self, pos: usize) -> &[u64] {
        self.frames
            .get(pos * self.stride..(pos + 1) * self.stride)
            .unwrap_or_default()
    }

    /// The frames of the slot at `pos`, to update.
    pub(crate) fn at_mut(&mut self, pos: usize) -> &mut [u64] {
        let stride = self.stride;
        self.frames
            .get_mut(pos * stride..(pos + 1) * stride)
            .unwrap_or_default()
    }

    /// Follows `Vec::swap_remove(pos)` of the slots: the last slot's frames
    /// move to `pos`.
    pub(crate) fn swap_remove(&mut self, pos: usize) {
        let stride = self.stride;
        let Some(last) = self.frames.len().checked_sub(stride) else {
            return;
        };
        if pos * stride < last {
            self.frames.copy_within(last.., pos * stride);
        }
        self.frames.truncate(last);
    }

    /// Follows `slice::swap(a, b)` of the slots.
    pub(crate) fn swap(&mut self, a: usize, b: usize) {
        for field in 0..self.stride {
            self.frames
                .swap(a * self.stride + field, b * self.stride + field);
        }
    }

    /// Follows a reordering of the slots: the slot now at position `i` was
    /// at `was[i]` (slots left out are gone).
    pub(crate) fn reorder(&mut self, was: impl Iterator<Item = usize>) {
        let stride = self.stride;
        let mut frames = Vec::with_capacity(self.frames.len());
        for pos in was {
            frames.extend_from_slice(&self.frames[pos * stride..(pos + 1) * stride]);
        }
        self.frames = frames;
    }
}

/// Which of the fields `sent` in a message of `frame` are newer than the
/// values the item holds (whose frames are `frames`): those take the
/// values, and date from `frame` now.
#[inline]
pub(crate) fn take_newer(frames: &mut [u64], sent: FieldMask, frame: u64) -> FieldMask {
    let mut newer = FieldMask::EMPTY;
    for field in sent.iter() {
        let at = &mut frames[field as usize];
        if *at < frame {
            *at = frame;
            newer = newer.with(field);
        }
    }
    newer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(frames: &FieldFrames, slots: usize) -> Vec<Vec<u64>> {
        (0..slots).map(|pos| frames.at(pos).to_vec()).collect()
    }

    #[test]
    fn frames_follow_their_slots_through_every_move() {
        let mut frames = FieldFrames::default();
        for frame in 1..=4 {
            frames.push(2, frame, FieldMask::all(2), 4);
        }
        frames.at_mut(1)[1] = 9;
        assert_eq!(rows(&frames, 4), [[1, 1], [2, 9], [3, 3], [4, 4]]);
        frames.swap_remove(0);
        assert_eq!(rows(&frames, 3), [[4, 4], [2, 9], [3, 3]]);
        frames.swap_remove(2);
        assert_eq!(rows(&frames, 2), [[4, 4], [2, 9]]);
        frames.swap(0, 1);
        assert_eq!(rows(&frames, 2), [[2, 9], [4, 4]]);
        frames.push(2, 5, FieldMask::all(2), 4);
        frames.reorder([2, 0].into_iter());
        assert_eq!(rows(&frames, 2), [[5, 5], [2, 9]]);
        frames.swap_remove(1);
        frames.swap_remove(0);
        assert!(frames.frames.is_empty());
    }

    #[test]
    fn a_withheld_field_dates_from_no_frame() {
        let mut frames = FieldFrames::default();
        frames.push(3, 7, FieldMask::from_bits(0b101), 1);
        assert_eq!(rows(&frames, 1), [[7, 0, 7]]);
    }
}
