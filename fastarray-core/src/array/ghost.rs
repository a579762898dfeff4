//! Ghosts: read-only copies of a neighbour shard's items near the border,
//! for the game logic of the shard that holds them (BigWorld's ghost
//! entities; see the "Ghosts" section of [`FastArray`]'s documentation).
//! The shard whose items they are writes each neighbour's ghost feed once
//! a commit ([`write_ghost_feed`](FastArray::write_ghost_feed)), with the
//! items its filter keeps and the fields a ghost holds; the neighbour's
//! ghost array applies it ([`apply_feed`](FastArray::apply_feed)) and
//! joins, or resyncs, from a ghost snapshot
//! ([`write_ghost_snapshot`](FastArray::write_ghost_snapshot)).

use super::FastArray;
use super::limits::read_whole;
use super::relay::remove;
use super::snapshot::write_truncating;
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, SendError};
use crate::feed_message;
use crate::feed_message::ghost::{self, FrameLists, Head, Message, ghost_fields};
use crate::id::ReplicationId;
use crate::inner_array::Follower;
use crate::limits::{ArrayLimits, MirrorLimits};
use crate::receive_state::events::{ApplyReport, Callbacks};
use crate::receive_state::follow::{FeedStats, Follow, GhostFollow, Place};
use crate::replicate::Replicate;
use crate::send::sender::Sender;
use crate::send_state::GhostFeed;

use super::relay::{FeedReport, take};

/// Messages of its neighbour's feed a kept ghost outlives if none says
/// where its item went.
const KEPT_MESSAGES: u64 = 64;

impl<T> FastArray<T> {
    /// An empty ghost array: read-only copies of a neighbour shard's items
    /// near the border, which this shard's game logic reads (to see across
    /// the border) and never changes. It follows the neighbour's ghost feed
    /// for this shard ([`apply_feed`](Self::apply_feed)), needs a ghost
    /// snapshot before it holds anything, and refuses changes of its own
    /// (they panic, as on a mirror) and writes for clients. Its items have
    /// the neighbour's ids, and hold every field but the `owner_only` ones
    /// (those are `Default`).
    ///
    /// ```
    /// use fastarray_core::{FastArray, GhostFeed, ShardId};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Walker { x: i32, #[replicate(owner_only)] purse: u32 }
    ///
    /// // West's walkers near x = 100 are ghosted on east.
    /// let mut west = FastArray::shard(ShardId::new(0));
    /// let near = west.push(Walker { x: 95, purse: 7 });
    /// west.push(Walker { x: 10, purse: 1 });
    /// west.commit();
    /// let mut to_east = GhostFeed::new();
    /// let mut ghosts = FastArray::<Walker>::ghost();
    /// let mut bus = Vec::new();
    /// west.write_ghost_feed(&mut to_east, |w| w.x > 90, &mut bus).unwrap();
    /// ghosts.apply_feed(&bus).unwrap();
    /// assert_eq!(ghosts.len(), 1);
    /// assert_eq!(ghosts.get(near), Some(&Walker { x: 95, purse: 0 }));
    ///
    /// // It walks away: its ghost goes.
    /// west.get_mut(near).unwrap().x = 50;
    /// west.commit();
    /// bus.clear();
    /// west.write_ghost_feed(&mut to_east, |w| w.x > 90, &mut bus).unwrap();
    /// ghosts.apply_feed(&bus).unwrap();
    /// assert!(ghosts.is_empty());
    /// ```
    pub fn ghost() -> Self {
        let mut array = Self::new();
        let mut sender = Box::<Sender>::default();
        sender.ghost = Some(Box::default());
        array.sender = Some(sender);
        array
    }

    /// Whether this is a ghost array ([`ghost`](Self::ghost)).
    pub fn is_ghost(&self) -> bool {
        self.ghost_follow().is_some()
    }

    pub(super) fn ghost_follow(&self) -> Option<&Follow> {
        Some(&self.sender.as_deref()?.ghost.as_deref()?.follow)
    }

    fn ghost_follow_mut(&mut self) -> Option<&mut Follow> {
        Some(&mut self.sender.as_deref_mut()?.ghost.as_deref_mut()?.follow)
    }

    fn ghost_state_mut(&mut self) -> &mut GhostFollow {
        (self
            .sender
            .as_deref_mut()
            .and_then(|sender| sender.ghost.as_deref_mut()))
        .expect("a ghost array follows a feed")
    }

    /// Whether ghost `id` is one this shard kept of an item it handed off
    /// ([`keep_ghost`](Self::keep_ghost)), its neighbour's feed not having
    /// said yet where the item went.
    pub fn is_kept(&self, id: ReplicationId) -> bool {
        (self
            .sender
            .as_deref()
            .and_then(|sender| sender.ghost.as_deref()))
        .is_some_and(|ghost| ghost.kept.iter().any(|&(kept, _)| kept == id))
    }

    /// On a ghost array: the limits its messages are checked against.
    pub(super) fn ghost_limits_mut(&mut self) -> Option<&mut MirrorLimits> {
        Some(&mut self.sender.as_deref_mut()?.ghost.as_deref_mut()?.limits)
    }

    /// On a ghost array: the limits its messages are checked against.
    pub(super) fn ghost_limits(&self) -> Option<MirrorLimits> {
        Some(self.sender.as_deref()?.ghost.as_deref()?.limits)
    }

    /// On a ghost array: whether it needs a ghost snapshot
    /// ([`needs_feed_snapshot`](Self::needs_feed_snapshot)).
    pub(super) fn ghost_needs_snapshot(&self) -> bool {
        self.ghost_follow().is_some_and(Follow::needs_snapshot)
    }

    /// On a ghost array: whether messages wait past a gap.
    pub(super) fn ghost_has_gap(&self) -> bool {
        self.ghost_follow().is_some_and(Follow::has_gap)
    }

    /// On a ghost array: the number of the last message applied.
    pub(super) fn ghost_at(&self) -> Option<u64> {
        self.ghost_follow()?.at().map(|(_, seq)| seq)
    }

    /// On a ghost array: how it followed its feed.
    pub(super) fn ghost_stats(&self) -> Option<FeedStats> {
        self.ghost_follow().map(Follow::stats)
    }
}

impl<T: Replicate> FastArray<T> {
    /// Appends to `out` the ghost feed message of one neighbour (`feed`)
    /// for the last [`commit`](Self::commit): the items that came within
    /// its reach, left it, or changed fields a ghost holds. `near` says
    /// whether an item is within the neighbour's reach; it is asked of the
    /// items the commits since the last message added, changed or adopted
    /// (and of every item after [`GhostFeed::refilter`]). An item removed
    /// or handed off leaves.
    ///
    /// Write one after every commit, for each neighbour, and publish it to
    /// that neighbour's [ghost array](Self::ghost). The first message of a
    /// feed is a snapshot, and so is one that follows more than
    /// [`HISTORY_LEN`](crate::HISTORY_LEN) commits unwritten. Returns the
    /// bits written.
    ///
    /// A ghost holds every field but the `owner_only` ones: what any client
    /// that does not own the item may see (BigWorld's ghosted properties).
    ///
    /// # Errors
    /// As [`write_feed`](Self::write_feed), and [`SendError::Ghost`] on a
    /// ghost array. `out` and `feed` are then left as they were.
    pub fn write_ghost_feed(
        &self,
        feed: &mut GhostFeed,
        mut near: impl FnMut(&T) -> bool,
        out: &mut Vec<u8>,
    ) -> Result<u64, SendError> {
        self.check_feed()?;
        let sender = self.sender.as_deref();
        let (array, frame) = (sender.map_or(0, Sender::epoch), self.frame());
        let store = &self.store;
        let plan = feed.plan(
            array,
            frame,
            sender.map(|sender| &sender.history),
            ghost_fields::<T>(),
            store.slots().iter().map(|slot| slot.id),
            |id| store.get(id).is_some_and(&mut near),
        );
        let (epoch, seq) = feed.at();
        let head = Head {
            epoch,
            seq: seq + 1,
        };
        let bits = write_truncating(out, |writer| {
            let written = if plan.snapshot {
                ghost::write_snapshot(store, head, &plan.entered, writer)
            } else {
                let lists = FrameLists {
                    left: &plan.left,
                    entered: &plan.entered,
                    changed: &plan.changed,
                    settled: &plan.settled,
                };
                ghost::write_frame(store, head, lists, writer)
            };
            written.map_err(|(id, error)| SendError::Encode { id, error })
        })?;
        feed.wrote(&plan, array, frame);
        Ok(bits)
    }

    /// Appends to `out` every ghost of `feed` as its neighbour holds them
    /// after its last message: what a ghost array joins from, or resyncs
    /// from when it [`needs_feed_snapshot`](Self::needs_feed_snapshot)
    /// (a restarted neighbour, a message lost). It goes on with the
    /// messages after it. Returns the bits written.
    ///
    /// # Errors
    /// [`SendError::GhostFeedBehind`] if `feed` has not written this
    /// array's last commit; otherwise as
    /// [`write_ghost_feed`](Self::write_ghost_feed).
    pub fn write_ghost_snapshot(
        &self,
        feed: &GhostFeed,
        out: &mut Vec<u8>,
    ) -> Result<u64, SendError> {
        self.check_feed()?;
        let array = self.sender.as_deref().map_or(0, Sender::epoch);
        if feed.covered() != Some((array, self.frame())) {
            return Err(SendError::GhostFeedBehind);
        }
        let (epoch, seq) = feed.at();
        let ids = feed.sorted_members();
        write_truncating(out, |writer| {
            ghost::write_snapshot(&self.store, Head { epoch, seq }, &ids, writer)
                .map_err(|(id, error)| SendError::Encode { id, error })
        })
    }
}

impl<T: Replicate + Clone> FastArray<T> {
    /// [`apply_feed`](Self::apply_feed) on a ghost array: a ghost frame or
    /// snapshot, and the frames that waited for it.
    pub(super) fn apply_ghost_feed(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<FeedReport, DecodeError> {
        let mut report = FeedReport::default();
        let applied = self.apply_ghost_message(bytes, &mut report, callbacks)?;
        self.apply_waiting(
            applied,
            |ghosts, ()| ghosts.ghost_follow_mut(),
            |ghosts, bytes| ghosts.apply_ghost_message(bytes, &mut report, callbacks),
        );
        report.needs_snapshot = self.ghost_needs_snapshot();
        Ok(report)
    }

    /// Applies one ghost message, if it comes in its turn; returns
    /// `Some` if it did.
    fn apply_ghost_message(
        &mut self,
        bytes: &[u8],
        report: &mut FeedReport,
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<Option<()>, DecodeError> {
        let limits = self.limits();
        let message = read_whole(bytes, &limits, |reader| {
            ghost::read::<T>(reader, ArrayLimits::top(limits))
        })?;
        let Some(follow) = self.ghost_follow_mut() else {
            unreachable!("a ghost array follows a feed");
        };
        match message {
            Message::Snapshot(snapshot) => {
                let head = snapshot.head;
                if !follow.snapshot_applies(head.epoch, head.seq) {
                    follow.stale();
                    return Ok(None);
                }
                let items = snapshot.items;
                let kept =
                    |id: &ReplicationId| items.binary_search_by_key(id, |&(id, _)| id).is_ok();
                let gone: Vec<ReplicationId> = (self.store.slots().iter())
                    .map(|slot| slot.id)
                    .filter(|id| !kept(id))
                    .collect();
                let mut applied = ApplyReport {
                    frame: Some(head.seq),
                    ..ApplyReport::default()
                };
                for id in gone {
                    remove(&mut self.store, id, &mut applied, callbacks);
                }
                for (id, value) in items {
                    self.take_ghost(id, value, false, &mut applied, callbacks);
                }
                // The neighbour's whole truth: a kept ghost it holds is
                // its own now, one it does not is gone (removed above).
                let state = self.ghost_state_mut();
                state.kept.clear();
                state.applied += 1;
                self.commit_frame();
                let follow = self
                    .ghost_follow_mut()
                    .expect("a ghost array follows a feed");
                follow.joined(head.epoch, head.seq);
                report.snapshot = true;
                callbacks.post_receive(&applied);
                Ok(Some(()))
            }
            Message::Frame(frame) => {
                let head = frame.head;
                match follow.place(head.epoch, head.seq) {
                    Place::Stale => follow.stale(),
                    Place::Early => follow.wait(head.seq, bytes),
                    // A new stream: the neighbour restarted.
                    Place::Foreign => follow.lose(),
                    Place::Next => {
                        let applied = self.apply_ghost_frame(frame, callbacks)?;
                        let follow = self
                            .ghost_follow_mut()
                            .expect("a ghost array follows a feed");
                        follow.applied(head.seq);
                        report.frames += 1;
                        callbacks.post_receive(&applied);
                        return Ok(Some(()));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Makes the ghost array hold `value` as ghost `id`, added or written
    /// over the one it holds (`whole`: sent whole again, so reported even
    /// if no field changed), and tells `callbacks`.
    fn take_ghost(
        &mut self,
        id: ReplicationId,
        value: T,
        whole: bool,
        applied: &mut ApplyReport,
        callbacks: &mut impl Callbacks<T>,
    ) {
        let sender = self
            .sender
            .as_deref_mut()
            .expect("a ghost array has a sender");
        let taken = take(&mut self.store, &mut sender.owners, id, None, value);
        let item = self.store.get(id).expect("just taken");
        match taken {
            None => {
                callbacks.post_add(id, item);
                applied.added += 1;
            }
            Some(changed) if whole || !changed.is_empty() => {
                callbacks.post_change_whole(id, item, changed);
                applied.changed += 1;
            }
            Some(_) => applied.skipped += 1,
        }
    }

    /// Applies the next ghost frame, if the ghosts held are those it was
    /// written against; else changes nothing. A ghost that leaves and
    /// enters again in it (sent whole again) is written over.
    fn apply_ghost_frame(
        &mut self,
        frame: ghost::Frame<T>,
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        let kept = |id: &ReplicationId| self.is_kept(*id);
        let held = |id: &ReplicationId| self.store.position(*id).is_some();
        let left = |id: &ReplicationId| frame.left.binary_search(id).is_ok();
        let entered = |id: &ReplicationId| {
            (frame.entered)
                .binary_search_by_key(id, |&(id, _)| id)
                .is_ok()
        };
        if let Some(&id) = frame.left.iter().find(|id| !held(id)) {
            return Err(DecodeError::UnknownItem { id });
        }
        let taken = |id: &ReplicationId| held(id) && !left(id) && !kept(id);
        if let Some(&(id, _)) = (frame.entered.iter()).find(|(id, _)| taken(id)) {
            return Err(DecodeError::DuplicateId { id });
        }
        let stays = |id: &ReplicationId| held(id) && !left(id) && !entered(id);
        if let Some(&(id, _)) = frame.changed.iter().find(|(id, _)| !stays(id)) {
            return Err(DecodeError::UnknownItem { id });
        }
        // A kept ghost is the neighbour's now if it entered, and goes if
        // the neighbour adopted it out of reach (or it left), or said
        // nothing of it for `KEPT_MESSAGES` messages (its handoff refused,
        // or taken back).
        let state = self.ghost_state_mut();
        state.applied += 1;
        let now = state.applied;
        let mut kept = core::mem::take(&mut state.kept);
        let mut drop = Vec::new();
        kept.retain(|&(id, at)| {
            let settled = frame.settled.binary_search(&id).is_ok();
            let on = !entered(&id) && !left(&id) && !settled;
            if on && now - at >= KEPT_MESSAGES || settled && !left(&id) && !entered(&id) {
                drop.push(id);
            }
            on && now - at < KEPT_MESSAGES
        });
        self.ghost_state_mut().kept = kept;
        let mut applied = ApplyReport {
            frame: Some(frame.head.seq),
            ..ApplyReport::default()
        };
        let back: Vec<bool> = frame.left.iter().map(entered).collect();
        for (id, back) in frame.left.into_iter().zip(back) {
            if !back {
                remove(&mut self.store, id, &mut applied, callbacks);
            }
        }
        for (id, value) in frame.entered {
            self.take_ghost(id, value, true, &mut applied, callbacks);
        }
        for (id, patch) in frame.changed {
            if let Some(mut item) = self.store.get_mut(id) {
                let changed = item.apply_patch(patch);
                if changed.is_empty() {
                    applied.skipped += 1;
                } else {
                    callbacks.post_change(id, &item, changed);
                    applied.changed += 1;
                }
            }
        }
        for id in drop {
            remove(&mut self.store, id, &mut applied, callbacks);
        }
        self.commit_frame();
        Ok(applied)
    }

    /// Keeps a ghost of the item this shard hands off in `handoff` (the
    /// message [`hand_off`](Self::hand_off) wrote) in this ghost array,
    /// the one that follows the ghost feed of the shard it goes to, so the
    /// shard's game sees the item all along, as a BigWorld cell keeps a
    /// ghost of an entity it offloads: from the handoff until that shard's
    /// feed says where it went. `callbacks` hears it come (`post_add`), as
    /// [`apply_feed_with`](Self::apply_feed_with)'s hears what becomes of
    /// it. The ghost holds the item's ghost fields;
    /// it becomes the neighbour's ghost when its feed brings the item in
    /// (a `post_change_whole`, not an add), and goes when the feed says it
    /// adopted the item out of reach, when a snapshot does not hold it, or
    /// after 64 messages that say nothing of it (the handoff refused or
    /// taken back: [`drop_kept`](Self::drop_kept) drops it at once).
    ///
    /// # Errors
    /// [`DecodeError::NotAGhost`] on an array that is not a ghost array,
    /// [`DecodeError::DuplicateId`] if it holds a ghost of that id, or a
    /// [`DecodeError`] for a message that is not a handoff of this type.
    /// The array is then unchanged.
    ///
    /// ```
    /// use fastarray_core::{FastArray, GhostFeed, ShardId};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Walker { x: i32 }
    ///
    /// let (west_id, east_id) = (ShardId::new(0), ShardId::new(1));
    /// let (mut west, mut east) = (FastArray::shard(west_id), FastArray::shard(east_id));
    /// // West's ghosts of east's walkers, and the feed that keeps them.
    /// let (mut from_east, mut west_sees) = (GhostFeed::new(), FastArray::ghost());
    /// let walker = west.push(Walker { x: 99 });
    /// west.commit();
    /// east.commit();
    /// let mut bus = Vec::new();
    /// east.write_ghost_feed(&mut from_east, |w: &Walker| w.x < 110, &mut bus).unwrap();
    /// west_sees.apply_feed(&bus).unwrap();
    ///
    /// // It crosses: west hands it off and keeps seeing it.
    /// west.get_mut(walker).unwrap().x = 100;
    /// let mut handoff = Vec::new();
    /// west.hand_off(walker, east_id, &mut handoff).unwrap();
    /// west.commit();
    /// west_sees.keep_ghost(&handoff, &mut ()).unwrap();
    /// assert!(west_sees.is_kept(walker) && !west.contains(walker));
    ///
    /// // East adopts it, and ghosts it back: the same ghost goes on.
    /// east.adopt(&handoff).unwrap();
    /// east.commit();
    /// bus.clear();
    /// east.write_ghost_feed(&mut from_east, |w: &Walker| w.x < 110, &mut bus).unwrap();
    /// west_sees.apply_feed(&bus).unwrap();
    /// assert!(!west_sees.is_kept(walker));
    /// assert_eq!(west_sees.get(walker), Some(&Walker { x: 100 }));
    /// ```
    pub fn keep_ghost(
        &mut self,
        handoff: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ReplicationId, DecodeError> {
        let Some(limits) = self.ghost_limits() else {
            return Err(DecodeError::NotAGhost {
                type_name: T::TYPE_NAME,
            });
        };
        let handoff = read_whole(handoff, &limits, |reader| {
            feed_message::read_handoff::<T>(reader, ArrayLimits::top(limits))
        })?;
        let id = handoff.id;
        if self.store.position(id).is_some() {
            return Err(DecodeError::DuplicateId { id });
        }
        // Its ghost fields alone, arrays and all: as a ghost feed carries it.
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        feed_message::write_value(&handoff.value, Follower::Ghost, &mut writer).map_err(|_| {
            DecodeError::Custom {
                bit_offset: 0,
                message: "the handed-off item does not encode as a ghost",
            }
        })?;
        writer.finish();
        let inner = ArrayLimits::top(limits).for_arrays(false);
        let value = feed_message::read_value(&mut BitReader::new(&bytes), Follower::Ghost, inner)?;
        self.store.push_given(id, value);
        let state = self.ghost_state_mut();
        let at = state.applied;
        state.kept.push((id, at));
        self.commit_frame();
        callbacks.post_add(id, self.store.get(id).expect("just kept"));
        Ok(id)
    }

    /// Drops the ghost this shard [kept](Self::keep_ghost) of item `id`
    /// (it took the item back: it is real here again), telling
    /// `callbacks` (`pre_remove`). Returns whether it held one.
    pub fn drop_kept(&mut self, id: ReplicationId, callbacks: &mut impl Callbacks<T>) -> bool {
        if !self.is_kept(id) {
            return false;
        }
        self.ghost_state_mut().kept.retain(|&(kept, _)| kept != id);
        if let Some(value) = self.store.remove(id) {
            callbacks.pre_remove(id, &value);
        }
        self.commit_frame();
        true
    }
}
