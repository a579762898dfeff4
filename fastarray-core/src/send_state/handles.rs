//! Handles: the small numbers a connection with a scope names its items by
//! on the wire, instead of their ids. A client in a world of 100 000 items
//! that sees 1 000 of them then pays for ids among 1 000, not among
//! 100 000 (about 12 bits an entry fewer at 1%; see `WIRE.md`).
//!
//! A handle is taken when an item is first written for the connection and
//! given back when the client is known to have dropped the item (its
//! removal or exit acknowledged). It is taken again only in a later frame
//! than any message that named the item by it: the mirror tells a late
//! message about the handle's earlier item by its frame.

use std::collections::VecDeque;

/// The handles of one connection: the next never used, the ones given
/// back, oldest first, each with the newest frame written when it was, and
/// the frame each was last taken in (its low 32 bits).
#[derive(Clone, Debug, Default)]
pub(crate) struct Handles {
    next: u32,
    free: VecDeque<(u32, u64)>,
    starts: Vec<u32>,
}

impl Handles {
    /// A handle for an item first written in a message of `frame`: the
    /// oldest one given back before that frame, else a new one.
    pub(crate) fn take(&mut self, frame: u64) -> u32 {
        let handle = match self.free.front() {
            Some(&(handle, after)) if after < frame => {
                self.free.pop_front();
                handle
            }
            _ => {
                let handle = self.next;
                // Four billion handles in use at once cannot fit in memory:
                // every one of them is a view entry.
                self.next = self.next.checked_add(1).expect("fewer than 2^32 handles");
                self.starts.push(0);
                handle
            }
        };
        self.starts[handle as usize] = frame as u32;
        handle
    }

    /// How many frames before `frame` `handle` was taken: what a whole
    /// entry tells the mirror, so that it tells this item's messages from
    /// those of the handle's earlier items.
    pub(crate) fn age(&self, handle: u32, frame: u64) -> u64 {
        let start = self
            .starts
            .get(handle as usize)
            .copied()
            .unwrap_or(frame as u32);
        u64::from((frame as u32).wrapping_sub(start))
    }

    /// Gives back a handle no message named (its item left before any
    /// write carried it): it is free at once, first in line.
    pub(crate) fn give_back_unused(&mut self, handle: u32) {
        self.free.push_front((handle, 0));
    }

    /// Gives `handle` back: no message of frame `after` or older names it
    /// any more. `after` never decreases from call to call (it is the
    /// connection's newest frame written), so the list stays in order.
    pub(crate) fn give_back(&mut self, handle: u32, after: u64) {
        debug_assert!(self.free.back().is_none_or(|&(_, last)| last <= after));
        self.free.push_back((handle, after));
        if self.free.capacity() > 4 * self.free.len().max(64) {
            self.free.shrink_to(2 * self.free.len());
        }
    }

    /// Handles in use or waiting to be reused: the range they come from.
    #[cfg(test)]
    pub(crate) fn span(&self) -> u32 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Handles stay dense: one given back is reused, but never in the
    /// frame it was given back in (a message of that frame may name the
    /// old item), and the oldest given back goes first.
    #[test]
    fn a_handle_is_reused_only_in_a_later_frame() {
        let mut handles = Handles::default();
        assert_eq!(
            (handles.take(1), handles.take(1), handles.take(1)),
            (0, 1, 2)
        );
        handles.give_back(1, 5);
        handles.give_back(0, 6);
        assert_eq!(handles.take(5), 3, "handle 1 may still be named at frame 5");
        assert_eq!(handles.take(6), 1);
        assert_eq!(handles.take(6), 4, "handle 0 may still be named at frame 6");
        assert_eq!(handles.take(7), 0);
        assert_eq!(handles.span(), 5);
        assert_eq!((handles.age(0, 9), handles.age(4, 9)), (2, 3));
    }
}
