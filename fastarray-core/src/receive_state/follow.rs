//! What a relay keeps of the feed it follows, below `Replicate` (it knows
//! nothing of the items' type): which server stream and frame it holds,
//! the frames that arrived ahead of a gap, and its counts. The feed's
//! formats and the applying of frames are `feed`'s, above the facade.
//!
//! A server's feed is a stream of frames, one per commit, each naming the
//! stream (a random *epoch* drawn when the server's array was made, so a
//! restarted server is a new stream) and its frame. A relay applies them
//! in order: an older frame is a duplicate and is dropped; one ahead of a
//! gap waits (up to [`MAX_WAITING`] of them) for the frames before it; a
//! frame of another stream, a gap that does not fill, or a relay that has
//! not joined yet needs a feed snapshot.

use std::collections::BTreeMap;

/// Frames a relay keeps waiting for a gap to fill; one more and it drops
/// them and waits for a snapshot.
pub(crate) const MAX_WAITING: usize = 64;

/// How a relay has followed its feed (see [`FastArray::feed_stats`](crate::FastArray::feed_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeedStats {
    /// Frames applied, in order.
    pub frames: u64,
    /// Feed snapshots applied: the join, and each resync after.
    pub snapshots: u64,
    /// Frames and snapshots dropped as older than what the relay holds
    /// (duplicates and late copies).
    pub stale: u64,
    /// Frames that arrived ahead of a gap and waited for it to fill.
    pub early: u64,
    /// Times the relay found it could not go on from frames alone (a gap
    /// that did not fill, a frame of another stream) and needed a snapshot.
    pub resyncs: u64,
    /// Items handed off from one shard the relay follows to another, which
    /// its connections were sent as changes (or nothing), not as a removal
    /// and an add.
    pub handoffs: u64,
    /// What a shard said of an item after another shard adopted it, which
    /// reached the relay late and was dropped.
    pub superseded: u64,
}

impl FeedStats {
    /// The sum of two relays' (or two feeds') counts.
    pub(crate) fn add(self, other: Self) -> Self {
        Self {
            frames: self.frames + other.frames,
            snapshots: self.snapshots + other.snapshots,
            stale: self.stale + other.stale,
            early: self.early + other.early,
            resyncs: self.resyncs + other.resyncs,
            handoffs: self.handoffs + other.handoffs,
            superseded: self.superseded + other.superseded,
        }
    }
}

/// Where a feed message stands against what the relay holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Not newer than what the relay holds: drop it.
    Stale,
    /// The next frame: apply it.
    Next,
    /// Past a gap: keep it until the gap fills.
    Early,
    /// Of a stream the relay does not follow (or before it joined): a
    /// snapshot must come first.
    Foreign,
}

/// What a ghost array keeps of the ghost feed it follows: where it stands
/// in it, and what the game lets a message make of the array.
#[derive(Clone, Debug, Default)]
pub(crate) struct GhostFollow {
    pub(crate) follow: Follow,
    pub(crate) limits: crate::limits::MirrorLimits,
    /// Messages applied.
    pub(crate) applied: u64,
    /// Ghosts the shard kept of items it handed off to the neighbour
    /// (`FastArray::keep_ghost`), until the neighbour's feed says where
    /// they went: each with the messages applied when it was kept.
    pub(crate) kept: Vec<(crate::id::ReplicationId, u64)>,
}

/// A relay's position in its server's feed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Follow {
    /// The stream and frame the relay holds, once it joined.
    at: Option<(u64, u64)>,
    /// Whether the relay needs a snapshot to go on.
    lost: bool,
    /// Frames ahead of a gap, by frame, as they arrived.
    waiting: BTreeMap<u64, Vec<u8>>,
    stats: FeedStats,
}

impl Follow {
    /// Where a frame `frame` of stream `epoch` stands.
    pub(crate) fn place(&self, epoch: u64, frame: u64) -> Place {
        match self.at {
            Some((held, _)) if held != epoch => Place::Foreign,
            None => Place::Foreign,
            Some((_, at)) if frame <= at => Place::Stale,
            Some((_, at)) if frame == at + 1 => Place::Next,
            Some(_) => Place::Early,
        }
    }

    /// Whether a snapshot of stream `epoch` at `frame` is newer than what
    /// the relay holds (any snapshot is, of another stream).
    pub(crate) fn snapshot_applies(&self, epoch: u64, frame: u64) -> bool {
        match self.at {
            Some((held, at)) => held != epoch || frame > at || self.lost,
            None => true,
        }
    }

    /// The stream and frame the relay holds.
    pub(crate) fn at(&self) -> Option<(u64, u64)> {
        self.at
    }

    /// Whether the relay must apply a snapshot before frames can go on.
    pub(crate) fn needs_snapshot(&self) -> bool {
        self.at.is_none() || self.lost
    }

    /// Frame `frame` was applied.
    pub(crate) fn applied(&mut self, frame: u64) {
        if let Some((_, at)) = &mut self.at {
            *at = frame;
        }
        self.stats.frames += 1;
    }

    /// A snapshot of stream `epoch` at `frame` was applied: frames up to it
    /// that were waiting are dropped.
    pub(crate) fn joined(&mut self, epoch: u64, frame: u64) {
        if self.at.is_some_and(|(held, _)| held != epoch) {
            self.waiting.clear();
        }
        self.at = Some((epoch, frame));
        self.lost = false;
        self.waiting = self.waiting.split_off(&(frame + 1));
        self.stats.snapshots += 1;
    }

    /// A message older than what the relay holds was dropped.
    pub(crate) fn stale(&mut self) {
        self.stats.stale += 1;
    }

    /// Frame `frame`'s message `bytes` came ahead of a gap. Keeps it, or,
    /// past [`MAX_WAITING`], gives up on the gap.
    pub(crate) fn wait(&mut self, frame: u64, bytes: &[u8]) {
        self.stats.early += 1;
        if self.waiting.len() >= MAX_WAITING && !self.waiting.contains_key(&frame) {
            self.waiting.clear();
            self.lose();
            return;
        }
        self.waiting.insert(frame, bytes.to_vec());
    }

    /// The relay cannot go on from frames: it needs a snapshot.
    pub(crate) fn lose(&mut self) {
        if !self.lost {
            self.lost = true;
            self.stats.resyncs += 1;
        }
    }

    /// The waiting frame that comes next, if it arrived.
    pub(crate) fn take_next(&mut self) -> Option<Vec<u8>> {
        let (_, at) = self.at?;
        let next = self.waiting.first_key_value()?.0;
        if *next > at + 1 {
            return None;
        }
        self.waiting.pop_first().map(|(_, bytes)| bytes)
    }

    /// Whether frames wait past a gap.
    pub(crate) fn has_gap(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Frames kept ahead of a gap.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    pub(crate) fn stats(&self) -> FeedStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_placed_against_the_stream_and_frame_held() {
        let mut follow = Follow::default();
        assert_eq!(follow.place(7, 1), Place::Foreign);
        assert!(follow.needs_snapshot());
        follow.joined(7, 10);
        assert!(!follow.needs_snapshot());
        assert_eq!(follow.place(7, 9), Place::Stale);
        assert_eq!(follow.place(7, 10), Place::Stale);
        assert_eq!(follow.place(7, 11), Place::Next);
        assert_eq!(follow.place(7, 12), Place::Early);
        assert_eq!(follow.place(8, 11), Place::Foreign);
        assert!(!follow.snapshot_applies(7, 10));
        assert!(follow.snapshot_applies(7, 11));
        assert!(follow.snapshot_applies(8, 1));
    }

    #[test]
    fn early_frames_wait_for_the_gap_and_a_snapshot_drops_those_it_covers() {
        let mut follow = Follow::default();
        follow.joined(1, 0);
        follow.wait(3, &[3]);
        follow.wait(2, &[2]);
        assert_eq!(follow.take_next(), None, "frame 1 is missing");
        follow.applied(1);
        assert_eq!(follow.take_next(), Some(vec![2]));
        follow.applied(2);
        assert_eq!(follow.take_next(), Some(vec![3]));
        follow.wait(9, &[9]);
        follow.wait(5, &[5]);
        follow.joined(1, 6);
        assert_eq!(follow.waiting(), 1, "frame 5 is in the snapshot");
        assert_eq!(follow.take_next(), None);
    }

    #[test]
    fn a_gap_that_does_not_fill_needs_a_snapshot_and_keeps_nothing() {
        let mut follow = Follow::default();
        follow.joined(1, 0);
        for frame in 2..2 + MAX_WAITING as u64 {
            follow.wait(frame, &[]);
        }
        assert!(!follow.needs_snapshot());
        follow.wait(100, &[]);
        assert!(follow.needs_snapshot());
        assert_eq!(follow.waiting(), 0);
        assert_eq!(follow.stats().resyncs, 1);
        assert!(
            follow.snapshot_applies(1, 0),
            "any snapshot helps a lost relay"
        );
    }
}
