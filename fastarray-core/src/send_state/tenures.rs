//! A shard's record of handoffs (see `FastArray::hand_off`): which shard
//! the array is, how many times each item it holds has changed shards
//! (its *tenure*: 0 for an item that never moved, which is not kept), and
//! the handoffs of the frame, which the commit puts in its changeset for
//! the feed. A relay that merges several shards orders what it hears of
//! an item by its tenure: a shard's word on an item is stale once another
//! shard adopted it at a higher one.

use std::collections::{HashMap, VecDeque};

use crate::changeset::Changeset;
use crate::id::ReplicationId;
use crate::shard::ShardId;

/// What a shard keeps of the handoffs of its items.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tenures {
    /// The shard this array is.
    shard: ShardId,
    /// Tenures above 0 of the items held.
    counts: HashMap<ReplicationId, u32>,
    /// Handed off this frame: item, to whom, its tenure when it left.
    handed: Vec<(ReplicationId, ShardId, u32)>,
    /// Adopted this frame: item, its tenure here.
    adopted: Vec<(ReplicationId, u32)>,
    /// Let go of this frame, at the tenure a shard that took them back
    /// overruled (held or not): item, that tenure.
    released: Vec<(ReplicationId, u32)>,
    /// The tenure each item handed off recently had here, so that a late
    /// copy of the handoff that brought it (sent again for want of a
    /// reply) is not adopted a second time.
    departed: HashMap<ReplicationId, (u32, u64)>,
    /// When each departure was committed, oldest first.
    departures: VecDeque<(u64, ReplicationId)>,
}

/// Frames a departure is remembered (34 s at 30 Hz): longer than a
/// handoff is sent again for.
const DEPARTED_FRAMES: u64 = 1024;

impl Tenures {
    /// The record of shard `shard`.
    pub(crate) fn of_shard(shard: ShardId) -> Self {
        Self {
            shard,
            ..Self::default()
        }
    }

    /// The shard this array is.
    pub(crate) fn shard(&self) -> ShardId {
        self.shard
    }

    /// Item `id`'s tenure.
    pub(crate) fn count(&self, id: ReplicationId) -> u32 {
        self.counts.get(&id).copied().unwrap_or(0)
    }

    /// The items held with a tenure above 0.
    pub(crate) fn counts(&self) -> impl Iterator<Item = (ReplicationId, u32)> + '_ {
        self.counts.iter().map(|(&id, &count)| (id, count))
    }

    /// Item `id` leaves for shard `to` this frame; returns its tenure.
    pub(crate) fn hand_off(&mut self, id: ReplicationId, to: ShardId) -> u32 {
        let count = self.counts.remove(&id).unwrap_or(0);
        self.handed.push((id, to, count));
        count
    }

    /// Whether a handoff that would hold item `id` at tenure `count` here
    /// is a late copy: the item was here at that tenure or a later one,
    /// and left.
    pub(crate) fn is_stale(&self, id: ReplicationId, count: u32) -> bool {
        let let_go = |&(item, left): &(ReplicationId, u32)| item == id && left >= count;
        (self.departed.get(&id)).is_some_and(|&(left, _)| left >= count)
            || self.released.iter().any(let_go)
    }

    /// Item `id`, held here at tenure `count` or to be (its handoff not
    /// heard yet), is let go of this frame: the shard that handed it off
    /// took it back over that tenure. A late copy of that handoff is then
    /// refused, as for an item that left.
    pub(crate) fn release(&mut self, id: ReplicationId, count: u32) {
        if self.counts.get(&id) == Some(&count) {
            self.counts.remove(&id);
        }
        self.released.push((id, count));
    }

    /// Item `id` is held at tenure `count`, as a save says.
    #[cfg(feature = "serde")]
    pub(crate) fn restore(&mut self, id: ReplicationId, count: u32) {
        self.counts.insert(id, count);
    }

    /// The items that left recently: id, the tenure it left with, the
    /// frame it left in (what a save keeps, so that a restarted shard
    /// still refuses late copies of the handoffs that brought them).
    #[cfg(feature = "serde")]
    pub(crate) fn departed(&self) -> impl Iterator<Item = (ReplicationId, u32, u64)> + '_ {
        (self.departed.iter()).map(|(&id, &(count, frame))| (id, count, frame))
    }

    /// Item `id` left at tenure `count` in frame `frame`, as a save says
    /// (restored oldest first).
    #[cfg(feature = "serde")]
    pub(crate) fn restore_departed(&mut self, id: ReplicationId, count: u32, frame: u64) {
        self.departed.insert(id, (count, frame));
        self.departures.push_back((frame, id));
    }

    /// Item `id` arrives this frame, at tenure `count`.
    pub(crate) fn adopt(&mut self, id: ReplicationId, count: u32) {
        self.counts.insert(id, count);
        self.adopted.push((id, count));
    }

    /// Puts the frame's handoffs in its changeset, sorted by id; an
    /// adoption whose item is gone again by the commit is no add, and is
    /// dropped. Items removed are forgotten.
    pub(crate) fn commit(&mut self, changes: &mut Changeset) {
        if !self.counts.is_empty() {
            for id in changes.removed.iter().chain(&changes.vanished) {
                if !self.handed.iter().any(|&(handed, ..)| handed == *id) {
                    self.counts.remove(id);
                }
            }
        }
        while let Some(&(frame, id)) = self.departures.front() {
            if frame + DEPARTED_FRAMES > changes.frame {
                break;
            }
            self.departures.pop_front();
            if self.departed.get(&id).is_some_and(|&(_, at)| at == frame) {
                self.departed.remove(&id);
            }
        }
        let handed = self.handed.iter().map(|&(id, _, count)| (id, count));
        for (id, count) in handed.chain(self.released.drain(..)) {
            let left = self.departed.entry(id).or_insert((count, changes.frame));
            *left = (left.0.max(count), changes.frame);
            self.departures.push_back((changes.frame, id));
        }
        changes.handed.clear();
        changes.handed.append(&mut self.handed);
        changes.handed.sort_unstable_by_key(|&(id, ..)| id);
        // Handed off twice in a frame (adopted back in between): the last.
        changes.handed.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same {
                *first = *later;
            }
            same
        });
        changes.adopted.clear();
        let added = &changes.added;
        changes.adopted.extend(
            self.adopted
                .drain(..)
                .filter(|(id, _)| added.binary_search(id).is_ok()),
        );
        changes.adopted.sort_unstable_by_key(|&(id, _)| id);
        changes.adopted.dedup_by_key(|&mut (id, _)| id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(raw: u64) -> ReplicationId {
        ReplicationId::from_raw(raw)
    }

    #[test]
    fn a_frame_handoffs_go_in_its_changeset_and_removals_forget_tenures() {
        let mut tenures = Tenures::of_shard(ShardId::new(1));
        tenures.adopt(id(5), 1);
        tenures.adopt(id(9), 3);
        let mut changes = Changeset {
            added: vec![id(5)],
            vanished: vec![id(9)],
            ..Changeset::default()
        };
        tenures.commit(&mut changes);
        assert_eq!(changes.adopted, [(id(5), 1)], "9 came and went");
        assert_eq!(tenures.count(id(5)), 1);
        assert_eq!(tenures.count(id(9)), 0);

        assert_eq!(tenures.hand_off(id(5), ShardId::new(2)), 1);
        tenures.hand_off(id(2), ShardId::new(3));
        let mut changes = Changeset {
            removed: vec![id(2), id(5)],
            ..Changeset::default()
        };
        tenures.commit(&mut changes);
        assert_eq!(
            changes.handed,
            [(id(2), ShardId::new(3), 0), (id(5), ShardId::new(2), 1)]
        );
        assert!(changes.adopted.is_empty());
        assert_eq!(tenures.counts().count(), 0);
        // A late copy of the handoff that brought 5 here at 1 is stale; its
        // return at a later tenure is not.
        assert!(tenures.is_stale(id(5), 1));
        assert!(!tenures.is_stale(id(5), 3));
        for frame in 0..DEPARTED_FRAMES {
            let mut changes = Changeset {
                frame: frame + 2,
                ..Changeset::default()
            };
            tenures.commit(&mut changes);
        }
        assert!(!tenures.is_stale(id(5), 1), "forgotten after a while");
    }
}
