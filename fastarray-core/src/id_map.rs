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

use hashbrown::HashMap;

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
