//! The mirror's tombstones: ids removed recently, so that a late copy of
//! an item's add cannot bring it back.
//!
//! Ids are never reused and an item's add is always written before its
//! removal, so a tombstone only has to outlive the add's packets: once the
//! newest frame applied is [`WINDOW`] past the removal, every message that
//! could carry the add is ignored as stale, and the tombstone can go.
//!
//! A removal may reach the mirror before the add it follows (packets
//! reorder), so ids the mirror never held are tombstoned too. A message
//! can name many such ids in few bits (consecutive ids cost one bit each),
//! so tombstones are kept in blocks of 64 consecutive ids, one bit each:
//! a block costs 24 bytes of map entry, and a message needs at least 6 bits
//! to open a new block (two ids 64 apart), so what a message can leave
//! behind stays a small multiple of its size. Expired blocks are swept
//! lazily, once the newest frame has moved half a window since the last
//! sweep, so no message pays for the whole set.

use hashbrown::HashMap;

use crate::id::ReplicationId;
use crate::wire::WINDOW;

/// Recently removed ids, with the frame of their latest removal (per block),
/// and ids that recently left the client's scope, with the frame of their
/// exit (per id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tombstones {
    /// Per block of 64 ids (`id >> 6`): which ids are tombstoned, and the
    /// newest frame at which one of them was removed.
    blocks: HashMap<u64, Block>,
    /// Per id that left the scope: the frame of its newest exit. An id
    /// comes back after its exit, so this is exact per id: an add of a
    /// later frame brings the item back, one of that frame or before is a
    /// late copy from before it left.
    exits: HashMap<ReplicationId, u64>,
    /// The newest frame at the last sweep.
    swept: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    ids: u64,
    frame: u64,
}

impl Tombstones {
    /// Whether `id` was removed (and its tombstone not yet swept).
    pub(crate) fn contains(&self, id: ReplicationId) -> bool {
        let raw = id.to_raw();
        self.blocks
            .get(&(raw >> 6))
            .is_some_and(|block| block.ids >> (raw & 63) & 1 == 1)
    }

    /// Records that `id` was removed at `frame`. A block lives as long as
    /// its newest removal needs: longer for the others is harmless, since
    /// an id never comes back.
    pub(crate) fn insert(&mut self, id: ReplicationId, frame: u64) {
        let raw = id.to_raw();
        let block = self
            .blocks
            .entry(raw >> 6)
            .or_insert(Block { ids: 0, frame });
        block.ids |= 1 << (raw & 63);
        block.frame = block.frame.max(frame);
    }

    /// The frame of the newest exit of `id` still kept.
    pub(crate) fn exit(&self, id: ReplicationId) -> Option<u64> {
        self.exits.get(&id).copied()
    }

    /// Makes room for `count` more exits at once (growing the map step by
    /// step would allocate about twice what it keeps).
    pub(crate) fn reserve_exits(&mut self, count: usize) {
        self.exits.reserve(count);
    }

    /// Records that `id` left the scope at `frame`.
    pub(crate) fn insert_exit(&mut self, id: ReplicationId, frame: u64) {
        let exit = self.exits.entry(id).or_insert(frame);
        *exit = (*exit).max(frame);
    }

    /// Forgets the exit of `id`, which came back: returns its frame.
    pub(crate) fn take_exit(&mut self, id: ReplicationId) -> Option<u64> {
        self.exits.remove(&id)
    }

    /// Drops the blocks whose every removal is a window older than
    /// `newest`, and such exits, at most once per half window of frames.
    pub(crate) fn expire(&mut self, newest: u64) {
        if newest < self.swept.saturating_add(WINDOW / 2) {
            return;
        }
        self.swept = newest;
        self.blocks
            .retain(|_, block| block.frame.saturating_add(WINDOW) > newest);
        if self.blocks.capacity() > 4 * self.blocks.len().max(16) {
            self.blocks.shrink_to(2 * self.blocks.len());
        }
        self.exits
            .retain(|_, &mut frame| frame.saturating_add(WINDOW) > newest);
        if self.exits.capacity() > 4 * self.exits.len().max(16) {
            self.exits.shrink_to(2 * self.exits.len());
        }
    }

    /// Blocks kept (for tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn blocks(&self) -> usize {
        self.blocks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tombstones_last_a_window_and_share_blocks() {
        let mut t = Tombstones::default();
        for raw in [0u64, 1, 63, 64, 1000] {
            t.insert(ReplicationId::from_raw(raw), 10);
        }
        assert_eq!(t.blocks(), 3);
        for raw in [0u64, 1, 63, 64, 1000] {
            assert!(t.contains(ReplicationId::from_raw(raw)));
        }
        assert!(!t.contains(ReplicationId::from_raw(2)));
        assert!(!t.contains(ReplicationId::from_raw(65)));
        // A later removal in the same block keeps the whole block.
        t.insert(ReplicationId::from_raw(2), 40);
        t.expire(10 + WINDOW);
        assert!(t.contains(ReplicationId::from_raw(0)));
        assert!(!t.contains(ReplicationId::from_raw(64)));
        t.expire(40 + 2 * WINDOW);
        assert_eq!(t.blocks(), 0);
    }

    #[test]
    fn the_sweep_waits_half_a_window() {
        let mut t = Tombstones::default();
        t.insert(ReplicationId::from_raw(7), 1);
        t.expire(WINDOW / 2 + 10);
        assert!(t.contains(ReplicationId::from_raw(7)));
        t.insert(ReplicationId::from_raw(700), 1);
        // Expired, but the last sweep was less than half a window ago.
        t.expire(WINDOW + 1);
        assert!(t.contains(ReplicationId::from_raw(700)));
        t.expire(WINDOW + 10);
        assert_eq!(t.blocks(), 0);
    }
}
