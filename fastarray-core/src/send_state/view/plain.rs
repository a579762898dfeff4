//! [`Plain`]: the items a client knows at rest, a bit each.
//!
//! Most of what a connection keeps per item says nothing: the client knows
//! the item, no record in flight carries it, it is in no scope. An entry of
//! the view's map for each such item costs 16 bytes and a bucket, and a
//! caught-up connection's map of every item no longer fits in the caches
//! once a server has a few of them: each removal the connection records
//! pays a miss on its item's entry, each add one on the bucket it lands in
//! (16 connections recording a churn tick spent half their time there).
//! Kept as bits in blocks of 64 consecutive ids instead, the same items
//! take about 64 times less room (the array deals ids out in order, so the
//! items alive at once share blocks), and a server's connections keep
//! theirs in cache.

use std::collections::VecDeque;

use crate::id::ReplicationId;
use crate::id_map::IdMap;

/// Ids per block: the bits of a `u64`.
const BLOCK_BITS: u32 = 6;

/// A set of ids, as bits in blocks of 64 consecutive ids.
///
/// The blocks from the lowest to the highest that hold an id are a run of
/// words (`window`), found by subtraction: the array deals ids out in
/// order, so the items alive at once fill most of them, adds land at its
/// end and the oldest items' removals empty its start, which then goes;
/// an id just below its start makes it grow down, as long as it stays
/// dense.
/// An old item that outlives its neighbours would keep the start far
/// behind, with words of nothing between: once the run is more than half
/// empty its start moves up, and the blocks it passes that still hold ids
/// go to `stragglers`, a map of blocks by number.
#[derive(Clone, Debug, Default)]
pub(super) struct Plain {
    /// The words of blocks `base`, `base + 1`, ...
    window: VecDeque<u64>,
    /// The block number of `window`'s first word.
    base: u64,
    /// Words of `window` that are not 0.
    filled: u32,
    /// Blocks below `base` that hold ids, by their number (hashed as ids
    /// are); boxed, as most sets never have one.
    stragglers: Option<Box<IdMap<u64>>>,
    /// Ids held.
    len: u32,
}

/// The block of `id` and its bit in it.
#[inline]
fn place(id: ReplicationId) -> (u64, u64) {
    let raw = id.to_raw();
    (raw >> BLOCK_BITS, 1 << (raw & ((1 << BLOCK_BITS) - 1)))
}

impl Plain {
    /// Ids held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// The place in `window` of block `block`, if it has one.
    #[inline]
    fn slot(&self, block: u64) -> Option<usize> {
        let slot = usize::try_from(block.checked_sub(self.base)?).ok()?;
        (slot < self.window.len()).then_some(slot)
    }

    /// Whether `id` is held.
    #[inline]
    pub(super) fn contains(&self, id: ReplicationId) -> bool {
        if self.len == 0 {
            // A connection by handles, or one with nothing at rest.
            return false;
        }
        let (block, bit) = place(id);
        let bits = match self.slot(block) {
            Some(slot) => self.window[slot],
            None => self
                .stragglers
                .as_ref()
                .and_then(|stragglers| stragglers.get(&ReplicationId::from_raw(block)))
                .copied()
                .unwrap_or(0),
        };
        bits & bit != 0
    }

    /// Adds `id`; returns whether it was not held.
    #[inline]
    pub(super) fn insert(&mut self, id: ReplicationId) -> bool {
        let (block, bit) = place(id);
        if self.window.is_empty() && block >= self.base {
            self.base = block;
        }
        let bits = match self.slot(block) {
            Some(slot) => &mut self.window[slot],
            None if block >= self.base => {
                // Past the end: the window grows to it (a few words, for
                // ids dealt out in order).
                let grow = block - self.base - self.window.len() as u64;
                if grow > 4 * u64::from(self.filled) + 64 {
                    // Far past it: what the window holds goes to the
                    // stragglers, and it starts again here.
                    self.spill(self.window.len());
                    self.base = block;
                }
                let new_len = usize::try_from(block - self.base + 1).unwrap_or(usize::MAX);
                self.window.resize(new_len, 0);
                self.window.back_mut().expect("just grown")
            }
            // Just before it: the window grows down to it.
            None if self.grow_down(block) => &mut self.window[0],
            None => self
                .stragglers
                .get_or_insert_with(Box::default)
                .entry(ReplicationId::from_raw(block))
                .or_insert(0),
        };
        let new = *bits & bit == 0;
        if new {
            let was_empty = *bits == 0;
            *bits |= bit;
            self.len += 1;
            if was_empty && block >= self.base {
                self.filled += 1;
            }
        }
        new
    }

    /// Takes out `id`; returns whether it was held.
    #[inline]
    pub(super) fn remove(&mut self, id: ReplicationId) -> bool {
        if self.len == 0 {
            return false;
        }
        let (block, bit) = place(id);
        match self.slot(block) {
            Some(slot) => {
                let bits = &mut self.window[slot];
                if *bits & bit == 0 {
                    return false;
                }
                *bits &= !bit;
                if *bits == 0 {
                    self.filled -= 1;
                    self.trim();
                }
            }
            None => {
                let key = ReplicationId::from_raw(block);
                let Some(stragglers) = self.stragglers.as_deref_mut() else {
                    return false;
                };
                let Some(bits) = stragglers.get_mut(&key) else {
                    return false;
                };
                if *bits & bit == 0 {
                    return false;
                }
                *bits &= !bit;
                if *bits == 0 {
                    stragglers.remove(&key);
                    let (blocks, capacity) = (stragglers.len(), stragglers.capacity());
                    if blocks == 0 {
                        self.stragglers = None;
                    } else if capacity > 8 * blocks.max(16) {
                        stragglers.shrink_to(2 * blocks);
                    }
                }
            }
        }
        self.len -= 1;
        true
    }

    /// Grows the window down to `block`, below its start, if it stays as
    /// dense as [`trim`](Self::trim) keeps it (ids taken out of order, a
    /// set of removals in flight say, land on both sides of it); returns
    /// whether it did. The stragglers it reaches come back into it.
    fn grow_down(&mut self, block: u64) -> bool {
        if self.window.is_empty() || block >= self.base {
            return false;
        }
        let grow = self.base - block;
        let len = self.window.len() as u64 + grow;
        if len > 2 * (u64::from(self.filled) + 1) + 64 {
            return false;
        }
        self.window.reserve(grow as usize);
        for _ in 0..grow {
            self.window.push_front(0);
        }
        let start = core::mem::replace(&mut self.base, block);
        if let Some(stragglers) = self.stragglers.as_deref_mut() {
            for (slot, number) in (block..start).enumerate() {
                if let Some(bits) = stragglers.remove(&ReplicationId::from_raw(number)) {
                    self.window[slot] = bits;
                    self.filled += 1;
                }
            }
            if stragglers.is_empty() {
                self.stragglers = None;
            }
        }
        true
    }

    /// Drops the window's empty words at its ends, and moves its start up
    /// while it is more than half empty (see [`Plain`]).
    fn trim(&mut self) {
        while self.window.back() == Some(&0) {
            self.window.pop_back();
        }
        self.drop_empty_start();
        let filled = self.filled as usize;
        if self.window.len() > 2 * filled + 64 {
            // Past the stragglers that keep the start behind, to where the
            // rest is at least half full.
            let mut spill = 0;
            let mut left = filled;
            while self.window.len() - spill > 2 * left + 32 {
                if self.window[spill] != 0 {
                    left -= 1;
                }
                spill += 1;
            }
            self.spill(spill);
        }
        if self.window.capacity() > 4 * self.window.len().max(16) {
            self.window.shrink_to(2 * self.window.len());
        }
    }

    /// Moves the window's first `count` words to the stragglers, and its
    /// start past them.
    fn spill(&mut self, count: usize) {
        for bits in self.window.drain(..count) {
            if bits != 0 {
                let stragglers = self.stragglers.get_or_insert_with(Box::default);
                stragglers.insert(ReplicationId::from_raw(self.base), bits);
                self.filled -= 1;
            }
            self.base += 1;
        }
        self.drop_empty_start();
    }

    /// Drops the window's empty words at its start, moving the start up.
    fn drop_empty_start(&mut self) {
        while self.window.front() == Some(&0) {
            self.window.pop_front();
            self.base += 1;
        }
    }

    /// The ids held, in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        let window = (self.base..).zip(self.window.iter().copied());
        let stragglers = self
            .stragglers
            .iter()
            .flat_map(|stragglers| stragglers.iter());
        let stragglers = stragglers.map(|(&block, &bits)| (block.to_raw(), bits));
        window.chain(stragglers).flat_map(|(block, bits)| {
            let base = block << BLOCK_BITS;
            (0..1u64 << BLOCK_BITS)
                .filter(move |&i| bits & (1 << i) != 0)
                .map(move |i| ReplicationId::from_raw(base | i))
        })
    }

    /// Words and blocks kept: the window's words, and the stragglers'.
    #[cfg(test)]
    pub(super) fn blocks(&self) -> (usize, usize) {
        let stragglers = self.stragglers.as_ref().map_or(0, |s| s.len());
        (self.window.len(), stragglers)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    fn id(raw: u64) -> ReplicationId {
        ReplicationId::from_raw(raw)
    }

    /// The blocks holding ids: as many as the model's, and a window not
    /// far longer than those it holds.
    fn check_blocks(plain: &Plain, model: &BTreeSet<u64>) -> Result<(), TestCaseError> {
        let blocks: BTreeSet<u64> = model.iter().map(|raw| raw >> BLOCK_BITS).collect();
        let (words, stragglers) = plain.blocks();
        let filled = plain.window.iter().filter(|&&bits| bits != 0).count();
        prop_assert_eq!(filled, plain.filled as usize);
        prop_assert_eq!(filled + stragglers, blocks.len());
        prop_assert!(
            words <= 5 * filled + 66,
            "{} words for {} blocks",
            words,
            filled
        );
        let mut stragglers = plain.stragglers.iter().flat_map(|s| s.keys());
        prop_assert!(stragglers.all(|block| block.to_raw() < plain.base));
        Ok(())
    }

    proptest! {
        /// The set says what a `BTreeSet` of the same ids says, through
        /// inserts and removals of ids near and far apart (the top of the
        /// range included), and keeps its window dense.
        #[test]
        fn plain_is_a_set_of_ids(ops in prop::collection::vec(
            (any::<bool>(), prop_oneof![
                4 => 0..3_000u64,
                1 => 100_000..101_000u64,
                1 => (u64::MAX - 200)..=u64::MAX,
                1 => any::<u64>(),
            ]),
            0..400,
        )) {
            let (mut plain, mut model) = (Plain::default(), BTreeSet::new());
            for (insert, raw) in ops {
                if insert {
                    prop_assert_eq!(plain.insert(id(raw)), model.insert(raw));
                } else {
                    prop_assert_eq!(plain.remove(id(raw)), model.remove(&raw));
                }
                prop_assert_eq!(plain.len(), model.len());
                prop_assert_eq!(plain.contains(id(raw)), model.contains(&raw));
                check_blocks(&plain, &model)?;
            }
            let held: BTreeSet<u64> = plain.iter().map(ReplicationId::to_raw).collect();
            prop_assert_eq!(&held, &model);
        }
    }

    /// Consecutive ids share blocks: 10 000 of them take 157 words.
    #[test]
    fn consecutive_ids_share_blocks() {
        let mut plain = Plain::default();
        for raw in 1_000..11_000 {
            assert!(plain.insert(id(raw)));
        }
        assert_eq!(plain.blocks(), (157, 0));
        for raw in 1_000..10_990 {
            assert!(plain.remove(id(raw)));
        }
        assert_eq!((plain.len(), plain.blocks()), (10, (1, 0)));
    }

    /// A churning set (1% of 10 000 ids replaced by new ones each tick)
    /// that keeps a few of its first ids for good stays as small as its
    /// ids: the old ones become stragglers, the window follows the rest.
    #[test]
    fn survivors_do_not_hold_the_window_back() {
        let mut plain = Plain::default();
        let mut live: VecDeque<u64> = (0..10_000).collect();
        live.iter().for_each(|&raw| {
            plain.insert(id(raw));
        });
        let mut next = 10_000;
        for _ in 0..3_000 {
            // The oldest go, but for every 1 000th id.
            for _ in 0..100 {
                let raw = live.pop_front().expect("live");
                if raw % 1_000 == 0 && raw < 10_000 {
                    live.push_back(raw);
                } else {
                    assert!(plain.remove(id(raw)));
                }
                assert!(plain.insert(id(next)));
                live.push_back(next);
                next += 1;
            }
        }
        let model: BTreeSet<u64> = live.iter().copied().collect();
        check_blocks(&plain, &model).expect("dense");
        let (words, stragglers) = plain.blocks();
        assert!(
            words < 200 && stragglers <= 10,
            "{words} words, {stragglers} stragglers"
        );
        assert_eq!(plain.iter().count(), live.len());
    }
}
