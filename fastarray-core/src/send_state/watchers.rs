//! [`Watchers`]: per item in some scope, the slots of the connections that
//! see it. It holds an entry per (connection, item) pair, so it is kept
//! small and close together: a lone watcher sits in the item's map entry
//! (16 bytes with its id); two or more sit in a chain of 16-byte blocks
//! of three, so that handing a change to an item's ten watchers reads four
//! blocks, not ten scattered nodes.
//!
//! Why three: at 1 000 connections seeing ~1 000 of 100 000 items each
//! (ten watchers an item), blocks of seven (32 bytes) route a commit's
//! changes about 1.3 times as fast as blocks of three (measured side by
//! side), and blocks of seven about 2.2 times as fast as the 8-byte linked
//! nodes before them (measured side by side earlier; blocks of three
//! against the linked nodes were not, and would be about 1.7 times by
//! those two ratios); but at
//! 256 connections (2.5 watchers an item) blocks of seven cost 8 bytes
//! more per (connection, item) than the 91 of blocks of three or of the
//! linked nodes (`BENCHMARKS.md`, "Interest management", whose limit is
//! 100).

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;

use super::LOOKAHEAD;
use crate::id::ReplicationId;

/// The end of a chain, or no block.
const NONE: u32 = u32::MAX;

/// Slots per block.
const PER_BLOCK: usize = 3;

/// Up to [`PER_BLOCK`] watchers of one item, and the next block of the
/// same item (or of the free list). Aligned so that a block never spans
/// two cache lines.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct Block {
    slots: [u32; PER_BLOCK],
    next: u32,
}

impl Block {
    const EMPTY: Self = Self {
        slots: [NONE; PER_BLOCK],
        next: NONE,
    };
}

/// An item's watchers: `len` of them; the lone one in `at` if `len` is 1,
/// else in the chain of blocks that starts at block `at`: the newest
/// block first, holding the newest [`newest_count`] watchers, then full
/// blocks. Adding is O(1) however many watch the item (a crowd around
/// one boss); removing looks for the watcher along the chain.
#[derive(Clone, Copy, Debug)]
struct Head {
    len: u32,
    at: u32,
}

/// Per item, the slots that see it.
#[derive(Debug)]
pub(crate) struct Watchers {
    heads: HashMap<ReplicationId, Head>,
    /// The blocks of items with two watchers or more; freed blocks are
    /// chained from `free`.
    blocks: Vec<Block>,
    free: u32,
}

impl Default for Watchers {
    fn default() -> Self {
        Self {
            heads: HashMap::new(),
            blocks: Vec::new(),
            free: NONE,
        }
    }
}

impl Watchers {
    /// How many items some connection sees.
    pub(crate) fn len(&self) -> usize {
        self.heads.len()
    }

    /// Whether no item is watched.
    pub(crate) fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// `slot` sees `id` (once more, if it did already: callers add a pair
    /// once).
    pub(crate) fn add(&mut self, id: ReplicationId, slot: u32) {
        let head = match self.heads.entry(id) {
            Entry::Vacant(entry) => {
                entry.insert(Head { len: 1, at: slot });
                return;
            }
            Entry::Occupied(entry) => entry.into_mut(),
        };
        let len = head.len as usize;
        if len == 1 {
            let block = take_block(&mut self.blocks, &mut self.free);
            self.blocks[block as usize].slots[..2].copy_from_slice(&[head.at, slot]);
            *head = Head { len: 2, at: block };
        } else if len % PER_BLOCK == 0 {
            // The newest block is full: a new one goes first.
            let block = take_block(&mut self.blocks, &mut self.free);
            self.blocks[block as usize].slots[0] = slot;
            self.blocks[block as usize].next = head.at;
            head.at = block;
            head.len += 1;
        } else {
            self.blocks[head.at as usize].slots[len % PER_BLOCK] = slot;
            head.len += 1;
        }
    }

    /// `slot` no longer sees `id`.
    pub(crate) fn remove(&mut self, id: ReplicationId, slot: u32) {
        let Some(head) = self.heads.get_mut(&id) else {
            return;
        };
        if head.len == 1 {
            if head.at == slot {
                self.heads.remove(&id);
            }
            return;
        }
        // Find `slot`'s block and place.
        let mut count = newest_count(head.len);
        let mut block = head.at;
        let place = loop {
            let here = &self.blocks[block as usize];
            if let Some(place) = here.slots[..count].iter().position(|&s| s == slot) {
                break place;
            }
            block = here.next;
            if block == NONE {
                return;
            }
            count = PER_BLOCK;
        };
        // The newest watcher takes the removed one's place.
        let newest = newest_count(head.len) - 1;
        let moved = self.blocks[head.at as usize].slots[newest];
        self.blocks[block as usize].slots[place] = moved;
        self.blocks[head.at as usize].slots[newest] = NONE;
        head.len -= 1;
        if head.len == 1 {
            let lone = self.blocks[head.at as usize].slots[0];
            give_block(&mut self.blocks, &mut self.free, head.at);
            head.at = lone;
        } else if newest == 0 {
            // The newest block emptied: the next one is the newest now.
            let emptied = head.at;
            head.at = self.blocks[emptied as usize].next;
            give_block(&mut self.blocks, &mut self.free, emptied);
        }
    }

    /// Reads the lists of a run of `ids` (the first [`LOOKAHEAD`] of
    /// them) and does nothing with them, so that the calls on them that
    /// follow find them in the cache (see [`read_chains`]).
    pub(crate) fn warm(&self, ids: impl IntoIterator<Item = ReplicationId>) {
        read_chains(&self.blocks, &self.heads_of(ids));
    }

    /// The heads of the lists of the first [`LOOKAHEAD`] of `ids`.
    fn heads_of(&self, ids: impl IntoIterator<Item = ReplicationId>) -> [Option<Head>; LOOKAHEAD] {
        let mut heads = [None; LOOKAHEAD];
        for (head, id) in heads.iter_mut().zip(ids) {
            *head = self.heads.get(&id).copied();
        }
        heads
    }

    /// Calls `each` with every item of `run` (the first [`LOOKAHEAD`] of
    /// it), its place in the run, and each slot that sees it, in order:
    /// [`for_each`](Self::for_each) of a run, whose lists are read first,
    /// side by side (see [`read_chains`]), and whose heads are looked up
    /// once.
    pub(crate) fn for_each_of_run<X: Copy>(
        &self,
        run: &[(ReplicationId, X)],
        mut each: impl FnMut(usize, ReplicationId, X, u32),
    ) {
        let heads = self.heads_of(run.iter().map(|&(id, _)| id));
        read_chains(&self.blocks, &heads);
        for (at, (&head, &(id, x))) in heads.iter().zip(run).enumerate() {
            if let Some(head) = head {
                self.walk(head, |slot| each(at, id, x, slot));
            }
        }
    }

    /// Calls `each` with the slots that see `id`.
    pub(crate) fn for_each(&self, id: ReplicationId, each: impl FnMut(u32)) {
        if let Some(&head) = self.heads.get(&id) {
            self.walk(head, each);
        }
    }

    /// Forgets `id` (it is gone), calling `each` with the slots that saw it.
    pub(crate) fn take(&mut self, id: ReplicationId, each: impl FnMut(u32)) {
        let Some(head) = self.heads.remove(&id) else {
            return;
        };
        self.walk(head, each);
        if head.len > 1 {
            let mut block = head.at;
            while block != NONE {
                let next = self.blocks[block as usize].next;
                give_block(&mut self.blocks, &mut self.free, block);
                block = next;
            }
        }
    }

    /// Calls `each` with the slots of `head`'s list.
    fn walk(&self, head: Head, mut each: impl FnMut(u32)) {
        if head.len == 1 {
            each(head.at);
            return;
        }
        let mut count = newest_count(head.len);
        let mut block = head.at;
        while block != NONE {
            let here = &self.blocks[block as usize];
            for &slot in &here.slots[..count] {
                each(slot);
            }
            block = here.next;
            count = PER_BLOCK;
        }
    }

    /// Forgets every watch of the slots in `gone` (their connections are
    /// gone), and gives back the room they held: the lists are built
    /// anew, O(watches).
    pub(crate) fn forget_slots(&mut self, gone: &[u32]) {
        let mut kept = Vec::new();
        for (&id, &head) in &self.heads {
            self.walk(head, |slot| {
                if !gone.contains(&slot) {
                    kept.push((id, slot));
                }
            });
        }
        *self = Self::default();
        for (id, slot) in kept {
            self.add(id, slot);
        }
    }
}

/// Reads the blocks of the lists that start at `heads` and does nothing
/// with them, so that walks of those lists that follow find them in the
/// cache. A list is a chain of blocks, each block's place read from the
/// one before: the chains are walked side by side, a block of each at a
/// time, so that the misses of each step overlap instead of taking turns.
/// A commit routes each change to some ten watchers at 1 000 connections
/// (four blocks, far apart in a large world): reading them so made
/// `mmo 1000`'s commit 2.3 times as fast as reading each list as it was
/// walked (ab, 4 pairs).
fn read_chains(blocks: &[Block], heads: &[Option<Head>]) {
    let (mut at, mut len, mut steps) = ([NONE; LOOKAHEAD], 0, 0);
    for head in heads.iter().flatten().filter(|head| head.len > 1) {
        at[len] = head.at;
        len += 1;
        steps = steps.max((head.len as usize).div_ceil(PER_BLOCK));
    }
    for _ in 0..steps {
        for block in &mut at[..len] {
            if let Some(here) = blocks.get(*block as usize) {
                *block = core::hint::black_box(here).next;
            }
        }
    }
}

/// How many watchers the newest block of a list of `len` (two or more)
/// holds: the others fill their blocks.
fn newest_count(len: u32) -> usize {
    (len as usize - 1) % PER_BLOCK + 1
}

/// A cleared block, from the free list of `blocks` if it has one.
fn take_block(blocks: &mut Vec<Block>, free: &mut u32) -> u32 {
    match *free {
        NONE => {
            blocks.push(Block::EMPTY);
            u32::try_from(blocks.len() - 1).expect("fewer than 2^32 watcher blocks")
        }
        block => {
            *free = blocks[block as usize].next;
            blocks[block as usize] = Block::EMPTY;
            block
        }
    }
}

/// Puts `block` on the free list of `blocks`.
fn give_block(blocks: &mut [Block], free: &mut u32, block: u32) {
    blocks[block as usize] = Block {
        next: *free,
        ..Block::EMPTY
    };
    *free = block;
}
#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    fn slots(watchers: &Watchers, id: u64) -> Vec<u32> {
        let mut out = Vec::new();
        watchers.for_each(ReplicationId::from_raw(id), |slot| out.push(slot));
        out.sort_unstable();
        out
    }

    /// Blocks in use: all but the free list's.
    fn used_blocks(watchers: &Watchers) -> usize {
        let mut free = 0;
        let mut at = watchers.free;
        while at != NONE {
            free += 1;
            at = watchers.blocks[at as usize].next;
        }
        watchers.blocks.len() - free
    }

    #[test]
    fn lists_follow_adds_and_removes_in_any_order() {
        let mut watchers = Watchers::default();
        let id = ReplicationId::from_raw;
        for slot in [3, 1, 4, 5, 9, 2, 6, 8, 7] {
            watchers.add(id(7), slot);
        }
        watchers.add(id(8), 1);
        assert_eq!(slots(&watchers, 7), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(used_blocks(&watchers), 9_usize.div_ceil(PER_BLOCK));
        watchers.remove(id(7), 4); // inside a full block
        watchers.remove(id(7), 7); // the last one
        watchers.remove(id(7), 3); // the first one
        watchers.remove(id(7), 10); // not there
        assert_eq!(slots(&watchers, 7), [1, 2, 5, 6, 8, 9]);
        // Six left: the emptied block is freed.
        assert_eq!(used_blocks(&watchers), 6_usize.div_ceil(PER_BLOCK));
        // Freed blocks are reused.
        let blocks = watchers.blocks.len();
        watchers.add(id(8), 2);
        assert_eq!(watchers.blocks.len(), blocks);
        assert_eq!(slots(&watchers, 8), [1, 2]);
        let mut taken = Vec::new();
        watchers.take(id(7), |slot| taken.push(slot));
        taken.sort_unstable();
        assert_eq!(taken, [1, 2, 5, 6, 8, 9]);
        assert!(slots(&watchers, 7).is_empty());
        assert_eq!(used_blocks(&watchers), 1, "a taken item's blocks are freed");
        watchers.remove(id(8), 1);
        assert_eq!(slots(&watchers, 8), [2]);
        assert_eq!(used_blocks(&watchers), 0, "a lone watcher needs no block");
        watchers.remove(id(8), 2);
        assert!(watchers.is_empty());
    }

    /// A run's walk calls the same pairs, in the same order, as
    /// `for_each` item by item: lone watchers, long chains, items nobody
    /// watches, and a run longer than the lists read ahead.
    #[test]
    fn a_runs_walk_is_each_items_walk_in_order() {
        let mut watchers = Watchers::default();
        let id = ReplicationId::from_raw;
        for n in 0..40u64 {
            // 0 to 12 watchers: none, a lone one, part and full blocks.
            for slot in 0..(n * 7 % 13) as u32 {
                watchers.add(id(n), slot + n as u32);
            }
        }
        let run: Vec<(ReplicationId, u64)> = (0..LOOKAHEAD as u64 + 5)
            .map(|n| (id(n * 3 % 41), n))
            .collect();
        for run in run.chunks(LOOKAHEAD) {
            let mut walked = Vec::new();
            watchers.for_each_of_run(run, |at, id, x, slot| walked.push((at, id, x, slot)));
            let mut each = Vec::new();
            for (at, &(id, x)) in run.iter().enumerate() {
                watchers.for_each(id, |slot| each.push((at, id, x, slot)));
            }
            assert!(walked.len() > run.len(), "some items have several watchers");
            assert_eq!(walked, each);
        }
    }

    #[test]
    fn forgetting_slots_keeps_the_others_and_gives_back_room() {
        let mut watchers = Watchers::default();
        for id in 0..1_000 {
            for slot in 0..(id % 4) + 1 {
                watchers.add(ReplicationId::from_raw(id), slot as u32);
            }
        }
        watchers.forget_slots(&[0, 2]);
        for id in 0..1_000u64 {
            let expected: Vec<u32> = (0..(id % 4) as u32 + 1).filter(|s| s % 2 == 1).collect();
            assert_eq!(slots(&watchers, id), expected, "item {id}");
        }
        assert_eq!(
            watchers.blocks.len(),
            250,
            "one block per item with slots 1 and 3"
        );
        watchers.forget_slots(&[1, 3]);
        assert!(watchers.is_empty());
        assert_eq!(watchers.heads.capacity(), 0);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(u64, u32),
        Remove(u64, u32),
        Take(u64),
        Forget(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few items and slots, so that lists grow past several blocks and
        // shrink back.
        prop_oneof![
            8 => (0..4u64, 0..24u32).prop_map(|(id, slot)| Op::Add(id, slot)),
            6 => (0..4u64, 0..24u32).prop_map(|(id, slot)| Op::Remove(id, slot)),
            1 => (0..4u64).prop_map(Op::Take),
            1 => (0..24u32).prop_map(Op::Forget),
        ]
    }

    proptest! {
        /// Every list holds what a set per item would, and the blocks in
        /// use are exactly what the lists need.
        #[test]
        fn lists_match_a_set_per_item(ops in prop::collection::vec(op(), 1..400)) {
            let mut watchers = Watchers::default();
            let mut model: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
            for op in ops {
                match op {
                    // Callers add a pair once.
                    Op::Add(id, slot) => {
                        if model.entry(id).or_default().insert(slot) {
                            watchers.add(ReplicationId::from_raw(id), slot);
                        }
                    }
                    Op::Remove(id, slot) => {
                        model.entry(id).or_default().remove(&slot);
                        watchers.remove(ReplicationId::from_raw(id), slot);
                    }
                    Op::Take(id) => {
                        let mut taken = Vec::new();
                        watchers.take(ReplicationId::from_raw(id), |slot| taken.push(slot));
                        taken.sort_unstable();
                        let expected: Vec<u32> =
                            model.remove(&id).unwrap_or_default().into_iter().collect();
                        prop_assert_eq!(taken, expected);
                    }
                    Op::Forget(slot) => {
                        watchers.forget_slots(&[slot]);
                        for set in model.values_mut() {
                            set.remove(&slot);
                        }
                    }
                }
                let mut needed = 0;
                for id in 0..4 {
                    let expected: Vec<u32> =
                        model.get(&id).into_iter().flatten().copied().collect();
                    if expected.len() > 1 {
                        needed += expected.len().div_ceil(PER_BLOCK);
                    }
                    prop_assert_eq!(slots(&watchers, id), expected, "item {}", id);
                }
                prop_assert_eq!(used_blocks(&watchers), needed);
                prop_assert_eq!(watchers.is_empty(), model.values().all(BTreeSet::is_empty));
            }
        }
    }
}
