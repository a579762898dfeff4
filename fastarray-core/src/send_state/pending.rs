//! Pending work: what a connection still has to write, per item, and since
//! which frame it has been due.

use core::hash::BuildHasher;

use crate::id::ReplicationId;
use crate::id_map::IdHash;
use crate::mask::FieldMask;

/// Work for one id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Send the whole item. `structural` when the client may not have the
    /// item, or holds another shape of it (another enum variant): then no
    /// partial change may follow until a whole value is acknowledged.
    Add {
        /// Whether the whole value is needed for its shape.
        structural: bool,
    },
    /// Send these fields.
    Fields(FieldMask),
    /// Tell the client the item is gone.
    Remove,
    /// Tell the client the item left its scope: it still exists, and
    /// comes back whole if it enters again.
    Exit,
}

impl Work {
    /// Whether the work tells the client to drop the item (a removal or a
    /// scope exit).
    pub(crate) fn drops(self) -> bool {
        matches!(self, Work::Remove | Work::Exit)
    }

    /// The work that does both `self` and `other`.
    pub(crate) fn merge(self, other: Work) -> Work {
        match (self, other) {
            (Work::Remove, _) | (_, Work::Remove) => Work::Remove,
            // Leaving scope drops what was due for the item: it is sent
            // whole if it comes back.
            (Work::Exit, _) | (_, Work::Exit) => Work::Exit,
            (Work::Add { structural: a }, Work::Add { structural: b }) => {
                Work::Add { structural: a || b }
            }
            (add @ Work::Add { .. }, Work::Fields(_))
            | (Work::Fields(_), add @ Work::Add { .. }) => add,
            (Work::Fields(a), Work::Fields(b)) => Work::Fields(a | b),
        }
    }
}

/// Unsent work for one id and the frame it first became due (for budgets:
/// oldest first).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub(crate) work: Work,
    pub(crate) since: u64,
}

/// Unsent work per id, kept in the order it first became due: in the
/// usual write (one frame merged, its ids ascending) that is already the
/// order of the message, so sorting it costs one pass.
///
/// The ids are found through a table of their positions in `entries`, 4
/// bytes a slot, probed linearly and at most half full: a connection's
/// pending work is built anew each tick, long after its last, so at a
/// thousand connections every line of its table is a cache miss. The
/// table is a few lines, read all at once before a catch-up
/// ([`warm`](Self::warm)); a hash map's 16-byte buckets were a miss per
/// id queued (`PendingMap::queue` took 5% of `mmo 1000`'s samples, three
/// quarters of them on storing the bucket).
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingMap {
    /// Per slot, the position in `entries` plus one of the id filed there
    /// (0: none). Empty, or a power of two at least twice `entries`.
    slots: Vec<u32>,
    /// The work, in the order it first became due (until a removal).
    entries: Vec<(ReplicationId, Pending)>,
}

/// The fewest slots a table that holds anything has.
const MIN_SLOTS: usize = 64;

/// Slots in a 64-byte cache line.
const SLOTS_PER_LINE: usize = 16;

impl PendingMap {
    /// Ids with work.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no id has work.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `id` has work.
    #[inline]
    pub(crate) fn contains(&self, id: ReplicationId) -> bool {
        self.find(id).is_some()
    }

    /// The work of every id, oldest first.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &(ReplicationId, Pending)> {
        self.entries.iter()
    }

    /// The work of every id, oldest first, as a slice.
    pub(crate) fn as_slice(&self) -> &[(ReplicationId, Pending)] {
        &self.entries
    }

    /// Reads the table, a cache line at a time, and does nothing with it:
    /// called before about `expected` ids are queued one by one, so that
    /// their misses overlap rather than come one per id. Not if the table
    /// has more lines than that (kept from a burst, as a first full sync
    /// leaves it until the next write clears it): reading it would cost
    /// more than the misses it saves.
    #[inline]
    pub(crate) fn warm(&self, expected: usize) {
        if self.slots.len() > SLOTS_PER_LINE * expected {
            return;
        }
        for line in self.slots.chunks(SLOTS_PER_LINE) {
            core::hint::black_box(line[0]);
        }
    }

    /// Where `id` is filed: its slot and its position in `entries`, or,
    /// if it has no work, the free slot that ends its probe. The table
    /// must have slots.
    #[inline]
    fn probe(&self, id: ReplicationId) -> (usize, Option<usize>) {
        let mask = self.slots.len() - 1;
        let mut slot = home(id, mask);
        loop {
            match self.slots[slot] {
                0 => return (slot, None),
                filed if self.entries[filed as usize - 1].0 == id => {
                    return (slot, Some(filed as usize - 1));
                }
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// The slot and position of `id`, if it has work.
    #[inline]
    fn find(&self, id: ReplicationId) -> Option<(usize, usize)> {
        if self.slots.is_empty() {
            return None;
        }
        let (slot, pos) = self.probe(id);
        Some((slot, pos?))
    }

    /// Adds work for `id`, merged with any already due.
    pub(crate) fn queue(&mut self, id: ReplicationId, work: Work, since: u64) {
        // Room for one more, so that the probe's free slot can take it.
        let next = self.entries.len() + 1;
        if 2 * next > self.slots.len() {
            self.rebuild((2 * next).next_power_of_two().max(MIN_SLOTS));
        }
        match self.probe(id) {
            (_, Some(pos)) => {
                let pending = &mut self.entries[pos].1;
                pending.work = pending.work.merge(work);
                pending.since = pending.since.min(since);
            }
            (free, None) => {
                self.slots[free] = next as u32;
                self.entries.push((id, Pending { work, since }));
            }
        }
    }

    /// A table of `slots` slots filing every entry.
    fn rebuild(&mut self, slots: usize) {
        self.slots.clear();
        self.slots.resize(slots, 0);
        for pos in 0..self.entries.len() {
            let (free, _) = self.probe(self.entries[pos].0);
            self.slots[free] = pos as u32 + 1;
        }
    }

    /// Makes the work of `id`, if it has any, due since `since` at the
    /// latest.
    pub(crate) fn hasten(&mut self, id: ReplicationId, since: u64) {
        if let Some((_, pos)) = self.find(id) {
            let pending = &mut self.entries[pos].1;
            pending.since = pending.since.min(since);
        }
    }

    /// Drops the work of `id` (the last entry takes its place).
    pub(crate) fn remove(&mut self, id: &ReplicationId) -> Option<Pending> {
        let (slot, pos) = self.find(*id)?;
        self.unfile(slot);
        let last = self.entries.len() - 1;
        if pos < last {
            // The last entry moves to `pos`: its slot follows.
            let (moved, _) = self.probe(self.entries[last].0);
            self.slots[moved] = pos as u32 + 1;
        }
        Some(self.entries.swap_remove(pos).1)
    }

    /// Empties slot `hole`, moving back the entries after it that probed
    /// past it, so that every filed id is still found from its home.
    fn unfile(&mut self, mut hole: usize) {
        let mask = self.slots.len() - 1;
        self.slots[hole] = 0;
        let mut slot = hole;
        loop {
            slot = (slot + 1) & mask;
            let filed = self.slots[slot];
            if filed == 0 {
                return;
            }
            let home = home(self.entries[filed as usize - 1].0, mask);
            // Whether `home` lies cyclically in (hole, slot]: then the id
            // is still found with the hole left empty.
            let stays = if hole <= slot {
                hole < home && home <= slot
            } else {
                hole < home || home <= slot
            };
            if !stays {
                self.slots[hole] = filed;
                self.slots[slot] = 0;
                hole = slot;
            }
        }
    }

    /// Forgets all work. The table's size follows what recent writes
    /// needed, so clearing it stays proportional to the work, not to a
    /// past burst (a first full sync).
    #[inline]
    pub(crate) fn clear(&mut self) {
        let used = self.entries.len();
        let oversized = self.slots.len() > 4 * (2 * used).max(MIN_SLOTS);
        if used == 0 && !oversized {
            // Nothing to clear nor to give back (a caught-up connection's
            // every write).
            return;
        }
        self.entries.clear();
        if oversized {
            let slots = (2 * used).next_power_of_two().max(MIN_SLOTS);
            self.slots = vec![0; slots];
            self.entries.shrink_to(2 * used);
        } else {
            self.slots.fill(0);
        }
    }
}

/// The slot of a table of `mask + 1` slots where probing for `id` starts:
/// hashed as the sender's maps are (neighbouring ids, neighbouring slots).
#[inline]
fn home(id: ReplicationId, mask: usize) -> usize {
    IdHash.hash_one(id) as usize & mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The map against a list kept by brute force, through every
    /// operation: the same entries in the same order, each id found.
    #[test]
    fn the_map_is_a_list_with_its_ids_found() {
        let mut rng = ChaCha8Rng::seed_from_u64(32);
        for round in 0..40 {
            let mut map = PendingMap::default();
            let mut list: Vec<(ReplicationId, Pending)> = Vec::new();
            // Few ids over a small range, so that they collide; or
            // consecutive runs, as a frame's adds are.
            let range = [40u64, 300, 5_000][round % 3];
            for _ in 0..2_000 {
                let id = ReplicationId::from_raw(rng.random_range(0..range));
                let since = rng.random_range(0..100);
                let at = list.iter().position(|&(other, _)| other == id);
                match rng.random_range(0..10) {
                    0..5 => {
                        let work = Work::Fields(FieldMask::EMPTY.with(rng.random_range(0..8)));
                        map.queue(id, work, since);
                        match at {
                            Some(at) => {
                                let pending = &mut list[at].1;
                                pending.work = pending.work.merge(work);
                                pending.since = pending.since.min(since);
                            }
                            None => list.push((id, Pending { work, since })),
                        }
                    }
                    5 => {
                        map.hasten(id, since);
                        if let Some(at) = at {
                            list[at].1.since = list[at].1.since.min(since);
                        }
                    }
                    6..9 => {
                        let removed = map.remove(&id).map(|p| (p.work, p.since));
                        let expected = at.map(|at| list.swap_remove(at).1);
                        assert_eq!(removed, expected.map(|p| (p.work, p.since)));
                    }
                    _ if rng.random_range(0..20) == 0 => {
                        map.clear();
                        list.clear();
                    }
                    _ => {}
                }
                let got: Vec<_> = map.iter().map(|&(id, p)| (id, p.work, p.since)).collect();
                let want: Vec<_> = list.iter().map(|&(id, p)| (id, p.work, p.since)).collect();
                assert_eq!(got, want);
                assert!(map.slots.is_empty() || map.slots.len() >= 2 * map.len());
                for (pos, &(id, _)) in list.iter().enumerate() {
                    assert_eq!(map.find(id).map(|(_, at)| at), Some(pos), "{id:?}");
                }
            }
        }
    }

    /// After a burst (a first full sync), the next write's clearing gives
    /// the table back down to what that write needed.
    #[test]
    fn a_burst_is_given_back() {
        let mut map = PendingMap::default();
        for n in 0..10_000 {
            map.queue(ReplicationId::from_raw(n), Work::Remove, 1);
        }
        assert!(map.slots.len() >= 20_000);
        map.clear();
        assert!(map.is_empty());
        assert!(map.slots.len() >= 20_000, "the burst's write needed it");
        map.queue(ReplicationId::from_raw(7), Work::Remove, 2);
        map.clear();
        assert_eq!(map.slots.len(), MIN_SLOTS);
        map.queue(ReplicationId::from_raw(7), Work::Remove, 3);
        assert_eq!(map.len(), 1);
        assert!(map.find(ReplicationId::from_raw(7)).is_some());
    }
}
