//! [`IdMap`]: the sender's maps keyed by [`ReplicationId`], hashed so that
//! neighbouring ids share cache lines.
//!
//! An array deals ids out in order, and the sender touches neighbouring
//! ids together: a frame's adds are consecutive new ids, and a tick's
//! changes are walked in id order. A general hash scatters them, so a
//! connection whose map no longer fits in the cache pays a miss for every
//! one (16 connections recording a churn tick's 100 adds and 100 removals
//! spent half their time there). [`IdHash`] keeps each aligned run of
//! [`RUN`] ids in consecutive buckets (two cache lines of 16-byte entries)
//! and scatters the runs, so a frame's adds land a few to a cache line;
//! the id's own low bits pick the tag that hashbrown filters a group of
//! buckets with, so neighbours in a group do not share one.
//!
//! Runs are short because they cluster: runs placed at random overlap, and
//! a lookup walks past a neighbour's run. With runs of 256, a map of
//! consecutive ids at hashbrown's highest load took 3.2 times as long per
//! hit and 3.6 per miss as the seeded hash, in the cache. With runs of 8,
//! hits take 8% to 20% longer than with the seeded hash, misses from half
//! as long (at the highest load) to 30% longer (ids 4 096 apart): the
//! price in the cache of the misses saved outside it.
//!
//! Only ids the array dealt out are hashed this way (the sender's maps): a
//! mirror's maps hold ids read off the wire, which a hostile peer could
//! choose to collide, and keep hashbrown's seeded hash.

use core::hash::{BuildHasher, Hasher};

use hashbrown::hash_table::OccupiedEntry;
use hashbrown::{HashMap, HashTable};

use crate::id::ReplicationId;

/// A map keyed by ids the array dealt out (see the module docs).
pub(crate) type IdMap<V> = HashMap<ReplicationId, V, IdHash>;

/// Builds [`IdHasher`]s: see the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdHash;

impl BuildHasher for IdHash {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

/// The hash of one id: [`spread`] of its raw value.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, raw: u64) {
        self.0 = spread(self.0 ^ raw);
    }

    /// Not called for an id (its `Hash` writes one `u64`); folds any other
    /// bytes in, so the hasher stays correct whatever it is given.
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = spread(self.0.rotate_left(8) ^ u64::from(byte));
        }
    }
}

/// A table keyed by ids the array dealt out, hashed as an [`IdMap`], whose
/// entries can be found again by the place they were put in: a caller that
/// keeps an entry's place (a record keeps it for the acknowledgement that
/// comes a round trip later) reads that one bucket, with no hashing and
/// no read of the table's control bytes (two cache lines fewer a lookup,
/// for a table far bigger than the caches). A place is a hint, checked
/// against the id: once the entry is gone or the table has grown, the id
/// is looked up as usual.
#[derive(Clone, Debug)]
pub(crate) struct IdTable<V> {
    table: HashTable<(ReplicationId, V)>,
}

impl<V> Default for IdTable<V> {
    fn default() -> Self {
        Self {
            table: HashTable::new(),
        }
    }
}

/// Where an [`IdTable`] put an entry (a hint: see there).
pub(crate) type Place = u32;

/// The hash an [`IdTable`] files `id` under.
#[inline]
fn hash_of(id: ReplicationId) -> u64 {
    IdHash.hash_one(id)
}

impl<V> IdTable<V> {
    /// Entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether it has no entry.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The value of `id`.
    #[inline]
    pub(crate) fn get(&self, id: ReplicationId) -> Option<&V> {
        let (_, value) = self.table.find(hash_of(id), |&(key, _)| key == id)?;
        Some(value)
    }

    /// The value of `id`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: ReplicationId) -> Option<&mut V> {
        let (_, value) = self.table.find_mut(hash_of(id), |&(key, _)| key == id)?;
        Some(value)
    }

    /// The value of `id`, read at `place` if it is still there.
    #[inline]
    pub(crate) fn get_at(&self, id: ReplicationId, place: Place) -> Option<&V> {
        match self.table.get_bucket(place as usize) {
            Some((key, value)) if *key == id => Some(value),
            _ => self.get(id),
        }
    }

    /// The value of `id`, to change, read at `place` if it is still there.
    #[inline]
    pub(crate) fn get_at_mut(&mut self, id: ReplicationId, place: Place) -> Option<&mut V> {
        self.entry_at(id, place)
            .map(|entry| &mut entry.into_mut().1)
    }

    /// The entry of `id`, taken at `place` if it is still there, else
    /// looked up.
    #[inline]
    fn entry_at(
        &mut self,
        id: ReplicationId,
        place: Place,
    ) -> Option<OccupiedEntry<'_, (ReplicationId, V)>> {
        let table = match self.table.get_bucket_entry(place as usize) {
            Ok(entry) if entry.get().0 == id => return Some(entry),
            Ok(entry) => entry.into_table(),
            Err(absent) => absent.into_table(),
        };
        table.find_entry(hash_of(id), |&(key, _)| key == id).ok()
    }

    /// The value of `id`, made by `make` if it has none, and its place.
    #[inline]
    pub(crate) fn or_insert_with(
        &mut self,
        id: ReplicationId,
        make: impl FnOnce() -> V,
    ) -> (Place, &mut V) {
        let entry = self
            .table
            .entry(hash_of(id), |&(key, _)| key == id, |&(key, _)| hash_of(key))
            .or_insert_with(|| (id, make()));
        // Tables index their buckets in `usize`; an id table of 2^32
        // buckets would hold 64 GiB of entries before its place wrapped,
        // and a wrapped place is a hint that fails its check.
        let place = entry.bucket_index() as Place;
        (place, &mut entry.into_mut().1)
    }

    /// Takes out the value of `id`.
    pub(crate) fn remove(&mut self, id: ReplicationId) -> Option<V> {
        let entry = self.table.find_entry(hash_of(id), |&(key, _)| key == id);
        entry.ok().map(|entry| entry.remove().0.1)
    }

    /// Takes out the value of `id`, found at `place` if it is still there.
    pub(crate) fn remove_at(&mut self, id: ReplicationId, place: Place) -> Option<V> {
        self.entry_at(id, place).map(|entry| entry.remove().0.1)
    }

    /// Keeps the entries for which `keep` says so.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(ReplicationId, &mut V) -> bool) {
        self.table.retain(|(id, value)| keep(*id, value));
    }

    /// Gives back room beyond twice its entries, once it holds more than
    /// four times the room they need (after a burst, or once most entries
    /// went elsewhere): a table far bigger than its entries is read a
    /// cache line per lookup all the same. It keeps room for 256 entries
    /// whatever it holds (and leaves a table with room for 512 or fewer
    /// as it is), so that a table whose entries come and go each tick is
    /// not grown again each tick.
    pub(crate) fn shrink(&mut self) {
        /// Half the entries a table keeps room for, at least (a
        /// caught-up connection's records of a churning tick: a few
        /// hundred adds and removals in flight).
        const FLOOR: usize = 128;
        let len = self.table.len().max(FLOOR);
        if self.table.capacity() > 4 * len {
            self.table.shrink_to(2 * len, |&(key, _)| hash_of(key));
        }
    }

    /// Every entry, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (ReplicationId, &V)> + '_ {
        self.table.iter().map(|(id, value)| (*id, value))
    }
}

/// Ids per run (see the module docs).
const RUN: u64 = 1 << RUN_BITS;
const RUN_BITS: u32 = 3;

/// The hash of raw id `raw`: its run (`raw >> RUN_BITS`) mixed by a
/// multiplication, whose high bits are folded down (a product's low bits
/// depend only on the factors' low bits), plus its place in the run, so
/// the run's ids take consecutive buckets from a scattered start; and its
/// low 7 bits folded into the top 7, hashbrown's tag.
#[inline]
fn spread(raw: u64) -> u64 {
    const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
    let mixed = (raw >> RUN_BITS).wrapping_mul(GOLDEN);
    let mixed = mixed ^ (mixed >> 29);
    mixed.wrapping_add(raw & (RUN - 1)) ^ ((raw & 0x7F) << 57)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A place finds its entry while it is there; a wrong or stale one
    /// (another id's, a removed entry's, one from before the table grew)
    /// falls back to the lookup, never to another id's value.
    #[test]
    fn places_are_hints_checked_against_the_id() {
        let id = ReplicationId::from_raw;
        let mut table = IdTable::default();
        let places: Vec<Place> = (0..20u64)
            .map(|n| {
                let (place, value) = table.or_insert_with(id(n), || n * 10);
                assert_eq!(*value, n * 10);
                place
            })
            .collect();
        for n in 0..20u64 {
            let place = places[n as usize];
            assert_eq!(table.get_at(id(n), place), Some(&(n * 10)));
            // Another id's place, and no place at all.
            let other = places[(n as usize + 1) % 20];
            assert_eq!(table.get_at(id(n), other), Some(&(n * 10)));
            assert_eq!(table.get_at(id(n), Place::MAX), Some(&(n * 10)));
        }
        // The same id again keeps its place and value.
        assert_eq!(table.or_insert_with(id(3), || 0), (places[3], &mut 30));
        *table.get_at_mut(id(4), places[4]).expect("held") += 1;
        assert_eq!(table.get(id(4)), Some(&41));
        // Removed, then another id put where it was.
        assert_eq!(table.remove_at(id(5), places[6]), Some(50), "by the lookup");
        assert_eq!(table.remove_at(id(5), places[5]), None);
        assert_eq!(table.get_at(id(5), places[5]), None);
        assert_eq!(table.get_at_mut(id(5), places[5]), None);
        let (again, _) = table.or_insert_with(id(1_000), || 7);
        assert_eq!(table.get_at(id(5), again), None);
        // Grown far past its first buckets: old places still find their
        // ids, by the bucket or by the lookup.
        for n in 100..5_000u64 {
            table.or_insert_with(id(n), || n);
        }
        for n in (0..20u64).filter(|&n| n != 5) {
            let expected = if n == 4 { 41 } else { n * 10 };
            assert_eq!(table.get_at(id(n), places[n as usize]), Some(&expected));
        }
        assert_eq!(table.remove_at(id(7), places[7]), Some(70), "at its place");
        assert_eq!(table.get(id(7)), None);
        assert_eq!(table.remove(id(8)), Some(80));
        table.retain(|id, _| id.to_raw() < 20);
        assert_eq!(table.len(), 17);
        assert_eq!(table.iter().count(), 17);
        assert!(!table.is_empty());
    }

    fn hash(raw: u64) -> u64 {
        IdHash.hash_one(ReplicationId::from_raw(raw))
    }

    /// Consecutive ids take consecutive buckets (the low bits count up
    /// within a run), with different tags.
    #[test]
    fn neighbours_take_neighbouring_buckets_with_different_tags() {
        for start in [0u64, RUN, 1 << 20, 77 * RUN] {
            for i in 0..RUN - 1 {
                let (a, b) = (hash(start + i), hash(start + i + 1));
                assert_eq!(b.wrapping_sub(a) & 0xFFFF, 1, "{start} + {i}");
                assert_ne!(a >> 57, b >> 57, "{start} + {i}");
            }
        }
    }

    /// Ids a power of two apart (every 256th, 1024th, ... item kept) do not
    /// share buckets in a small table: the runs' starts are scattered.
    #[test]
    fn strided_ids_spread_over_a_small_table() {
        for stride in [64u64, 256, 1024, 1 << 16, 1 << 32] {
            let mut buckets = [0u32; 64];
            for i in 0..64 {
                buckets[(hash(i * stride) & 63) as usize] += 1;
            }
            let worst = buckets.iter().max().copied().unwrap_or(0);
            assert!(
                worst <= 8,
                "stride {stride}: {worst} ids in one of 64 buckets"
            );
        }
    }
}
