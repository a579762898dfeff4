//! What a relay keeps of the servers it follows, below `Replicate` (it
//! knows nothing of the items' type): where it stands in each server's
//! feed (a [`Follow`] per shard), and which shard holds each item that
//! changed shards, so that a relay merging several shards into one world
//! applies what each says of an item in the order the item moved, however
//! the feeds interleave.
//!
//! The rules. An item's *holder* is the shard whose feed may change it: the
//! shard of its id's range, until a handoff. Each handoff raises the item's
//! *tenure* (0 for an item that never moved), which a handoff and an
//! adoption carry, so what the relay hears of an item is ordered by it:
//! - an adoption at a tenure above the one the relay holds takes the item
//!   for the adopting shard: a change of the item the relay holds (or an
//!   add, if it holds none), never a removal and an add; one at a tenure
//!   not above is stale and dropped;
//! - a handoff by the holder keeps the item, *pending*, until a shard
//!   adopts it. One whose adoption does not come within [`PENDING_FRAMES`]
//!   frames of the shard it went to (of the shard it left, if the relay
//!   does not follow that one: the item left the relay's world) is
//!   *dropped*: removed by the relay's own decision;
//! - a change, move or removal is applied if its shard holds the item, and
//!   dropped as stale if another shard took it over; an item that never
//!   moved is checked strictly, as in a relay of one server (a change of
//!   an item the relay does not hold is an error);
//! - a removed item that had moved, and one the relay dropped (also when
//!   a snapshot does not hold it), leaves a tombstone for
//!   [`TOMBSTONE_COMMITS`] of the relay's commits, so what its former
//!   holders say of it late is dropped, not an error;
//! - an item the relay removed comes back only [`REUSE_COMMITS`] commits
//!   after its removal: a client's mirror refuses an add of an id it
//!   holds a tombstone of, and its tombstones last a window of frames. A
//!   shard's word that brings one back sooner is put off: the relay asks
//!   that shard for a snapshot once the time has passed. Its connections
//!   are written such a removal as a scope exit, which a mirror keeps by
//!   id and frame, so that it takes the id again when the item comes back.

use std::collections::{HashMap, VecDeque};

use super::follow::{FeedStats, Follow};
use crate::error::DecodeError;
use crate::id::ReplicationId;
use crate::shard::ShardId;

/// Frames of the shard an item was handed to that the relay waits for its
/// adoption before removing the item.
pub(crate) const PENDING_FRAMES: u32 = 64;

/// Commits of the relay a tombstone of a moved item lasts.
pub(crate) const TOMBSTONE_COMMITS: u64 = 1024;

/// Commits of the relay after an item's removal before it adds the item
/// again: twice the window a client's mirror keeps tombstones for.
pub(crate) const REUSE_COMMITS: u64 = 2 * crate::wire::WINDOW;

/// The servers a relay follows, and the items that changed shards.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sources {
    /// Each shard's feed, in the order the relay joined them.
    follows: Vec<(ShardId, Follow)>,
    /// The items whose holder is not their id's shard, or that moved.
    records: HashMap<ReplicationId, Record>,
    /// Tombstones by the commit that made them, oldest first.
    gone: VecDeque<(u64, ReplicationId)>,
    /// Items pending, waiting for their adoption.
    pending: Vec<ReplicationId>,
    /// Shards to ask for a snapshot at a commit, for items put off.
    resyncs: Vec<(u64, ShardId)>,
    /// The relay's commits so far.
    commits: u64,
    handoffs: u64,
    superseded: u64,
    /// Whether the relay is a replicated object's: its feeds may only
    /// change item `#0`.
    pub(crate) object: bool,
    /// What the game lets a feed message make of the relay.
    pub(crate) limits: crate::limits::MirrorLimits,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    holder: ShardId,
    count: u32,
    state: State,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Held,
    /// Handed off, its adoption to come within `left` frames of shard
    /// `clock`.
    Pending {
        clock: ShardId,
        left: u32,
    },
    /// Removed at the relay's commit `at`.
    Gone {
        at: u64,
    },
}

/// What to do with what a feed says of an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Apply it.
    Apply,
    /// It is stale: another shard took the item over since.
    Skip,
}

/// What to do with an item a shard says it holds (an add, an adoption, a
/// snapshot's item).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The relay does not hold it: add it.
    Add,
    /// The relay holds it for another shard, or pending: the claiming shard
    /// takes it over, as a change.
    Take,
    /// The relay holds it for this shard already.
    Keep,
    /// Stale: the item moved on since.
    Skip,
    /// The relay removed the item too recently to add it again: put off.
    Defer,
}

impl Sources {
    /// The feed of shard `shard`, once the relay joined it.
    pub(crate) fn follow(&self, shard: ShardId) -> Option<&Follow> {
        (self.follows.iter())
            .find(|(of, _)| *of == shard)
            .map(|(_, follow)| follow)
    }

    /// The feed of shard `shard`, followed from now on.
    pub(crate) fn follow_mut(&mut self, shard: ShardId) -> &mut Follow {
        let at = match self.follows.iter().position(|(of, _)| *of == shard) {
            Some(at) => at,
            None => {
                self.follows.push((shard, Follow::default()));
                self.follows.len() - 1
            }
        };
        &mut self.follows[at].1
    }

    /// The feed of shard `shard`, if the relay follows it.
    pub(crate) fn followed_mut(&mut self, shard: ShardId) -> Option<&mut Follow> {
        (self.follows.iter_mut())
            .find(|(of, _)| *of == shard)
            .map(|(_, follow)| follow)
    }

    /// The feeds followed.
    pub(crate) fn follows(&self) -> impl Iterator<Item = (ShardId, &Follow)> {
        self.follows.iter().map(|(shard, follow)| (*shard, follow))
    }

    /// Whether the relay cannot go on from frames: it joined no feed, or
    /// one it follows needs a snapshot.
    pub(crate) fn needs_snapshot(&self) -> bool {
        self.follows.is_empty() || self.follows.iter().any(|(_, f)| f.needs_snapshot())
    }

    /// Whether frames of some feed wait past a gap.
    pub(crate) fn has_gap(&self) -> bool {
        self.follows.iter().any(|(_, f)| f.has_gap())
    }

    /// The counts of every feed, and of the handoffs.
    pub(crate) fn stats(&self) -> FeedStats {
        let merged = FeedStats {
            handoffs: self.handoffs,
            superseded: self.superseded,
            ..FeedStats::default()
        };
        (self.follows.iter()).fold(merged, |sum, (_, f)| sum.add(f.stats()))
    }

    /// Whether `shard`'s word on item `id` counts: it holds the item (for a
    /// change, a move or a removal). `held`: whether the relay holds it.
    pub(crate) fn holds(
        &self,
        shard: ShardId,
        id: ReplicationId,
        held: bool,
    ) -> Result<Verdict, DecodeError> {
        match self.records.get(&id) {
            Some(record) if record.holder == shard && record.state == State::Held && held => {
                Ok(Verdict::Apply)
            }
            Some(_) => Ok(Verdict::Skip),
            None if held && ShardId::of(id) == shard => Ok(Verdict::Apply),
            None => Err(DecodeError::UnknownItem { id }),
        }
    }

    /// What to do with item `id`, which `shard` says it holds at tenure
    /// `count`.
    pub(crate) fn claim(&self, shard: ShardId, id: ReplicationId, count: u32, held: bool) -> Claim {
        match self.records.get(&id) {
            None if !held => Claim::Add,
            None if ShardId::of(id) == shard && count == 0 => Claim::Keep,
            None if count > 0 => Claim::Take,
            None => Claim::Skip,
            Some(record) if count > record.count => match (held, record.state) {
                (true, _) => Claim::Take,
                (false, State::Gone { at }) if self.commits < at + REUSE_COMMITS => Claim::Defer,
                (false, _) => Claim::Add,
            },
            Some(record)
                if count == record.count
                    && record.holder == shard
                    && record.state == State::Held
                    && held =>
            {
                Claim::Keep
            }
            Some(_) => Claim::Skip,
        }
    }

    /// Whether `shard`'s handoff of item `id` at tenure `count` counts.
    pub(crate) fn releases(
        &self,
        shard: ShardId,
        id: ReplicationId,
        count: u32,
        held: bool,
    ) -> Verdict {
        let counts = match self.records.get(&id) {
            None => held && ShardId::of(id) == shard,
            // A handoff from below the tenure the relay holds the item
            // at is of an earlier stay on that shard.
            Some(record) => {
                let holder = record.holder == shard && record.state == State::Held;
                held && (holder && count >= record.count || count > record.count)
            }
        };
        if counts {
            Verdict::Apply
        } else {
            Verdict::Skip
        }
    }

    /// Whether item `id` is held for shard `shard` (not pending).
    pub(crate) fn is_holder(&self, shard: ShardId, id: ReplicationId) -> bool {
        match self.records.get(&id) {
            Some(record) => record.holder == shard && record.state == State::Held,
            None => ShardId::of(id) == shard,
        }
    }

    /// Whether the relay's removal of item `id` is to be written as an exit
    /// (a client's mirror then takes the id again, should it come back): a
    /// tombstone of it is kept.
    pub(crate) fn returns(&self, id: ReplicationId) -> bool {
        !self.records.is_empty()
            && matches!(
                self.records.get(&id),
                Some(Record {
                    state: State::Gone { .. },
                    ..
                })
            )
    }

    /// Something a feed said was dropped as stale.
    pub(crate) fn skipped(&mut self) {
        self.superseded += 1;
    }

    /// Item `id` was removed by its holder.
    pub(crate) fn removed(&mut self, id: ReplicationId) {
        if let Some(record) = self.records.get_mut(&id) {
            record.state = State::Gone { at: self.commits };
            self.gone.push_back((self.commits, id));
        }
        self.pending.retain(|&pending| pending != id);
    }

    /// The relay removed item `id`, of `shard`, on its own: a tombstone is
    /// kept whether or not the item had moved, since it may come back.
    pub(crate) fn dropped(&mut self, shard: ShardId, id: ReplicationId) {
        let record = self.records.entry(id).or_insert(Record {
            holder: shard,
            count: 0,
            state: State::Held,
        });
        record.state = State::Gone { at: self.commits };
        self.gone.push_back((self.commits, id));
        self.pending.retain(|&pending| pending != id);
    }

    /// `shard` handed item `id` off to shard `to` at tenure `count`: the
    /// relay keeps it, pending.
    pub(crate) fn released(&mut self, shard: ShardId, id: ReplicationId, count: u32, to: ShardId) {
        let clock = if self.follow(to).is_some() { to } else { shard };
        self.pending.push(id);
        let state = State::Pending {
            clock,
            left: PENDING_FRAMES,
        };
        let record = Record {
            holder: shard,
            count,
            state,
        };
        self.records.insert(id, record);
    }

    /// `shard`'s word that brings item `id` back came too soon after the
    /// relay removed it: the relay asks `shard` for a snapshot once it may
    /// add it again.
    pub(crate) fn deferred(&mut self, shard: ShardId, id: ReplicationId) {
        if let Some(Record {
            state: State::Gone { at },
            ..
        }) = self.records.get(&id)
        {
            let due = at + REUSE_COMMITS;
            if !self.resyncs.contains(&(due, shard)) {
                self.resyncs.push((due, shard));
            }
        }
    }

    /// `shard` holds item `id` at tenure `count` (it added it, adopted it,
    /// or its snapshot holds it). `took`: it took the item over from
    /// another shard, which the relay's connections see as a change.
    pub(crate) fn claimed(&mut self, shard: ShardId, id: ReplicationId, count: u32, took: bool) {
        if count == 0 && ShardId::of(id) == shard {
            self.records.remove(&id);
        } else {
            let record = Record {
                holder: shard,
                count,
                state: State::Held,
            };
            self.records.insert(id, record);
        }
        self.pending.retain(|&pending| pending != id);
        if took {
            self.handoffs += 1;
        }
    }

    /// A frame or snapshot of `shard` was applied, before the relay
    /// commits it: the items pending on `shard`'s frames whose adoption
    /// did not come in time are dropped and returned, for the relay to
    /// remove in that commit.
    pub(crate) fn expire(&mut self, shard: ShardId) -> Vec<ReplicationId> {
        let mut expired = Vec::new();
        for &id in &self.pending {
            let Some(record) = self.records.get_mut(&id) else {
                continue;
            };
            if let State::Pending { clock, left } = &mut record.state
                && *clock == shard
            {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    expired.push(id);
                }
            }
        }
        for &id in &expired {
            self.dropped(shard, id);
        }
        expired
    }

    /// The relay committed: tombstones older than [`TOMBSTONE_COMMITS`]
    /// go.
    pub(crate) fn committed(&mut self) {
        self.commits += 1;
        let commits = self.commits;
        let due: Vec<ShardId> = (self.resyncs.iter())
            .filter(|&&(at, _)| at <= commits)
            .map(|&(_, shard)| shard)
            .collect();
        self.resyncs.retain(|&(at, _)| at > commits);
        for shard in due {
            if let Some(follow) = self.followed_mut(shard) {
                follow.lose();
            }
        }
        while let Some(&(at, id)) = self.gone.front() {
            if at + TOMBSTONE_COMMITS > self.commits {
                break;
            }
            self.gone.pop_front();
            if self.records.get(&id).map(|r| r.state) == Some(State::Gone { at }) {
                self.records.remove(&id);
            }
        }
    }

    /// Whether any item changed shards (the rules above have anything to
    /// say beyond a relay of one server's).
    #[cfg(test)]
    pub(crate) fn has_records(&self) -> bool {
        !self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ShardId = ShardId::new(0);
    const B: ShardId = ShardId::new(1);

    fn a_item() -> ReplicationId {
        A.first_id()
    }

    fn following_both() -> Sources {
        let mut sources = Sources::default();
        sources.follow_mut(A).joined(1, 0);
        sources.follow_mut(B).joined(2, 0);
        sources
    }

    #[test]
    fn a_handoff_seen_first_keeps_the_item_pending_until_the_adoption() {
        let mut sources = following_both();
        let x = a_item();
        assert_eq!(sources.holds(A, x, true), Ok(Verdict::Apply));
        assert_eq!(
            sources.holds(B, x, true),
            Err(DecodeError::UnknownItem { id: x })
        );
        assert_eq!(sources.releases(A, x, 0, true), Verdict::Apply);
        sources.released(A, x, 0, B);
        assert_eq!(sources.holds(A, x, true), Ok(Verdict::Skip));
        assert_eq!(sources.claim(B, x, 1, true), Claim::Take);
        sources.claimed(B, x, 1, true);
        assert_eq!(sources.holds(B, x, true), Ok(Verdict::Apply));
        assert_eq!(sources.stats().handoffs, 1);
        assert!(sources.expire(B).is_empty());
    }

    #[test]
    fn an_adoption_seen_first_makes_the_old_holder_stale() {
        let mut sources = following_both();
        let x = a_item();
        assert_eq!(sources.claim(B, x, 1, true), Claim::Take);
        sources.claimed(B, x, 1, true);
        assert_eq!(
            sources.holds(A, x, true),
            Ok(Verdict::Skip),
            "A's late change"
        );
        assert_eq!(
            sources.releases(A, x, 0, true),
            Verdict::Skip,
            "A's late handoff"
        );
        // And back: B hands it to A at 1, A adopts it at 2; B's adoption at
        // 1, heard again, is stale.
        sources.released(B, x, 1, A);
        assert_eq!(sources.claim(A, x, 2, true), Claim::Take);
        sources.claimed(A, x, 2, true);
        assert_eq!(sources.claim(B, x, 1, true), Claim::Skip);
        assert_eq!(sources.holds(A, x, true), Ok(Verdict::Apply));
    }

    #[test]
    fn an_item_that_left_the_relays_world_is_dropped_and_comes_back_after_a_while() {
        let mut sources = Sources::default();
        sources.follow_mut(A).joined(1, 0);
        let x = a_item();
        sources.released(A, x, 0, B);
        assert_eq!(sources.holds(A, x, true), Ok(Verdict::Skip), "pending");
        for _ in 1..PENDING_FRAMES {
            assert!(
                sources.expire(A).is_empty(),
                "B is not followed: A's frames count"
            );
            sources.committed();
        }
        assert_eq!(sources.expire(A), [x]);
        sources.committed();
        assert_eq!(sources.holds(A, x, false), Ok(Verdict::Skip));
        assert_eq!(sources.claim(A, x, 0, false), Claim::Skip, "a late add");
        assert_eq!(sources.claim(A, x, 2, false), Claim::Defer, "back too soon");
        sources.deferred(A, x);
        // Dropped at the commit before the one above.
        for _ in 2..REUSE_COMMITS {
            sources.committed();
            assert!(!sources.needs_snapshot());
        }
        sources.committed();
        assert!(sources.needs_snapshot(), "A is asked for a snapshot");
        assert_eq!(sources.claim(A, x, 2, false), Claim::Add);
        for _ in 0..TOMBSTONE_COMMITS {
            sources.committed();
        }
        assert!(!sources.has_records(), "the tombstone went");
        assert_eq!(
            sources.holds(A, x, false),
            Err(DecodeError::UnknownItem { id: x })
        );
    }

    #[test]
    fn of_two_shards_that_adopt_an_item_at_one_tenure_the_first_heard_keeps_it() {
        // A handoff timed out and its shard took the item back, while the
        // shard it went to adopted it too: both claim tenure 1.
        let mut sources = following_both();
        let x = a_item();
        sources.released(A, x, 0, B);
        assert_eq!(sources.claim(B, x, 1, true), Claim::Take);
        sources.claimed(B, x, 1, true);
        assert_eq!(sources.claim(A, x, 1, true), Claim::Skip);
        assert_eq!(sources.holds(A, x, true), Ok(Verdict::Skip));
        assert_eq!(sources.holds(B, x, true), Ok(Verdict::Apply));
    }

    #[test]
    fn a_pending_item_not_adopted_in_time_is_removed() {
        let mut sources = following_both();
        let x = a_item();
        sources.released(A, x, 0, B);
        for _ in 1..PENDING_FRAMES {
            assert!(sources.expire(B).is_empty());
            assert!(sources.expire(A).is_empty(), "A's frames do not count");
        }
        assert_eq!(sources.expire(B), [x]);
        assert_eq!(
            sources.claim(B, x, 1, false),
            Claim::Defer,
            "a late adoption"
        );
    }
}
