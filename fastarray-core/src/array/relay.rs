//! Relays: an array that follows a server's through its *feed* and serves
//! its own connections as if it were that server (see the "Relays" section
//! of [`FastArray`]'s documentation). The server writes its feed once a
//! frame for every relay ([`write_feed`](FastArray::write_feed)), and a
//! whole copy when a relay joins or has to resync
//! ([`write_feed_snapshot`](FastArray::write_feed_snapshot)); the relay
//! applies both ([`apply_feed`](FastArray::apply_feed)), committing each
//! frame as a frame of its own.

use super::FastArray;
use super::limits::read_whole;
use super::snapshot::write_truncating;
use crate::changeset::Changeset;
use crate::error::{DecodeError, SendError};
use crate::feed_message::{self, Arrays, Frame, Handoffs, Message, Snapshot};
use crate::id::ReplicationId;
use crate::limits::ArrayLimits;
use crate::mask::FieldMask;
use crate::receive_state::events::{ApplyReport, Callbacks};
use crate::receive_state::follow::{FeedStats, Follow, Place};
use crate::receive_state::sources::{Claim, Sources, Verdict};
use crate::replicate::Replicate;
use crate::send::sender::Sender;
use crate::send_state::audience::Owners;
use crate::shard::ShardId;
use crate::store::Store;

/// What [`FastArray::apply_feed`] did with a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeedReport {
    /// Frames applied, this message's and those that waited for it.
    pub frames: u32,
    /// Whether a snapshot was applied.
    pub snapshot: bool,
    /// Whether the relay cannot go on from frames and needs a snapshot
    /// from its server ([`FastArray::needs_feed_snapshot`]).
    pub needs_snapshot: bool,
}

impl<T> FastArray<T> {
    /// An empty relay: an array that follows a server's through the
    /// server's feed ([`apply_feed`](Self::apply_feed)) and serves its own
    /// connections as the server would, with the same ids: deltas,
    /// snapshots, scopes, detail levels, owners' fields, budgets.
    /// It refuses changes of its own (they panic, as on a mirror), and
    /// needs a feed snapshot before it holds anything.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16 }
    ///
    /// let mut server = FastArray::new();
    /// let a = server.push(Unit { hp: 3 });
    /// server.commit();
    ///
    /// // A relay joins from a feed snapshot, then follows the feed.
    /// let mut relay = FastArray::<Unit>::relay();
    /// let mut bus = Vec::new();
    /// server.write_feed_snapshot(&mut bus).unwrap();
    /// relay.apply_feed(&bus).unwrap();
    /// server.get_mut(a).unwrap().hp = 2;
    /// server.commit();
    /// bus.clear();
    /// server.write_feed(&mut bus).unwrap();
    /// relay.apply_feed(&bus).unwrap();
    ///
    /// // The relay serves a client as the server would.
    /// let (mut state, mut packet) = (SendState::new(), Vec::new());
    /// relay.write_delta(&mut state, 0, &mut packet).unwrap();
    /// let mut client = FastArray::mirror();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!(client, server);
    /// ```
    pub fn relay() -> Self {
        let mut array = Self::new();
        let mut sender = Box::<Sender>::default();
        sender.follow = Some(Box::default());
        array.sender = Some(sender);
        array
    }

    /// A replicated object's relay, holding `value` as item `#0` (as
    /// committed, so that what the feed brings changes it).
    pub(crate) fn relay_object(value: T) -> Self
    where
        T: Replicate,
    {
        let mut array = Self::relay();
        array.store.push_given(OBJECT, value);
        array.commit_frame();
        if let Some(sources) = array.sources_mut() {
            sources.object = true;
        }
        array
    }

    /// Whether this is a relay ([`relay`](Self::relay)).
    pub fn is_relay(&self) -> bool {
        self.sources().is_some()
    }

    pub(super) fn sources(&self) -> Option<&Sources> {
        self.sender.as_deref()?.follow.as_deref()
    }

    pub(super) fn sources_mut(&mut self) -> Option<&mut Sources> {
        self.sender.as_deref_mut()?.follow.as_deref_mut()
    }

    /// Whether this relay cannot go on from its feeds' frames: it has not
    /// joined yet, a gap did not fill, or a server's stream changed (a
    /// restarted server). Ask the server for a
    /// [`write_feed_snapshot`](Self::write_feed_snapshot) and apply it (for
    /// a relay of several shards, ask those that
    /// [`needs_feed_snapshot_from`](Self::needs_feed_snapshot_from) says).
    /// On a ghost array: whether it needs a
    /// [`write_ghost_snapshot`](Self::write_ghost_snapshot) of its feed.
    /// `false` on an array that is neither.
    pub fn needs_feed_snapshot(&self) -> bool {
        self.sources().is_some_and(Sources::needs_snapshot) || self.ghost_needs_snapshot()
    }

    /// Whether this relay needs a feed snapshot from shard `shard`: it has
    /// not joined its feed yet, or cannot go on from its frames. `false` on
    /// an array that is not a relay.
    pub fn needs_feed_snapshot_from(&self, shard: ShardId) -> bool {
        self.sources()
            .is_some_and(|sources| sources.follow(shard).is_none_or(Follow::needs_snapshot))
    }

    /// Whether frames past a gap wait for the frames before it. On a bus
    /// that keeps each publisher's order (NATS does) a gap is a loss: ask
    /// for a snapshot soon, since a frame that never comes would keep the
    /// relay behind until 64 more arrive (or forever, if the server stops
    /// committing). On one that reorders, give the gap a moment to fill.
    /// The same of a ghost array's feed. `false` on an array that is
    /// neither a relay nor a ghost array.
    pub fn has_feed_gap(&self) -> bool {
        self.sources().is_some_and(Sources::has_gap) || self.ghost_has_gap()
    }

    /// Whether frames of shard `shard`'s feed wait past a gap (see
    /// [`has_feed_gap`](Self::has_feed_gap)).
    pub fn has_feed_gap_from(&self, shard: ShardId) -> bool {
        (self.sources().and_then(|sources| sources.follow(shard))).is_some_and(Follow::has_gap)
    }

    /// The server's frame this relay holds: of the first server it joined,
    /// for a relay of several shards; on a ghost array, the number of the
    /// last ghost message applied (`None` before it joined, and on an
    /// array that is neither).
    pub fn feed_frame(&self) -> Option<u64> {
        if self.is_ghost() {
            return self.ghost_at();
        }
        let (_, follow) = self.sources()?.follows().next()?;
        follow.at().map(|(_, frame)| frame)
    }

    /// The frame of shard `shard` this relay holds (`None` before it
    /// joined that shard's feed, and on an array that is not a relay).
    pub fn feed_frame_from(&self, shard: ShardId) -> Option<u64> {
        let follow = self.sources()?.follow(shard)?;
        follow.at().map(|(_, frame)| frame)
    }

    /// How this relay has followed its feeds, summed over the shards it
    /// follows, or this ghost array its ghost feed (zeros on an array that
    /// is neither).
    pub fn feed_stats(&self) -> FeedStats {
        (self.sources().map(Sources::stats))
            .or_else(|| self.ghost_stats())
            .unwrap_or_default()
    }
}

impl<T: Replicate> FastArray<T> {
    /// Appends to `out` this frame's feed message: what the last
    /// [`commit`](Self::commit) changed, with every field (`initial_only`
    /// ones too) and the owners, for every relay of this array at once.
    /// Write and publish it after every commit; a relay that misses one
    /// waits for it a while, then asks for a
    /// [`write_feed_snapshot`](Self::write_feed_snapshot). Returns the
    /// bits written (the last byte is padded with zeros).
    ///
    /// # Errors
    /// [`SendError::Uncommitted`] if the array changed since the commit,
    /// [`SendError::NotAnAuthority`] on a mirror,
    /// [`SendError::Encode`] if an item fails to encode. `out` is left as
    /// it was.
    pub fn write_feed(&self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        self.check_feed()?;
        const NONE: &Changeset = &Changeset::EMPTY;
        // An array that never committed nor fed a snapshot has no stream a
        // relay joined: its frame 0, of a stream of its own, is of no use
        // to any, as it should be.
        let sender = self.sender.as_deref();
        let changes = sender.and_then(|s| s.history.newest()).unwrap_or(NONE);
        let owners = sender.map(|s| &s.owners);
        let stream = match sender {
            Some(sender) => sender.stream(),
            None => Sender::default().stream(),
        };
        write_truncating(out, |writer| {
            feed_message::write_frame(&self.store, owners, changes, stream, writer)
                .map_err(|(id, error)| SendError::Encode { id, error })
        })
    }

    /// Appends to `out` the whole array as its feed's snapshot: what a
    /// relay joins from, or resyncs from when it
    /// [`needs_feed_snapshot`](Self::needs_feed_snapshot). The relay then
    /// goes on with the frames after it. Returns the bits written.
    ///
    /// # Errors
    /// As [`write_feed`](Self::write_feed).
    pub fn write_feed_snapshot(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        self.check_feed()?;
        // The stream is named from now on, whether or not the array ever
        // committed.
        let sender = Sender::made(&mut self.sender);
        let (store, owners, stream) = (&self.store, &sender.owners, sender.stream());
        let handoffs = Handoffs {
            tenures: sender.tenures.as_deref(),
            history: &sender.history,
        };
        write_truncating(out, |writer| {
            feed_message::write_snapshot(store, Some(owners), handoffs, stream, writer)
                .map_err(|(id, error)| SendError::Encode { id, error })
        })
    }

    pub(super) fn check_feed(&self) -> Result<(), SendError> {
        self.expect_writer()?;
        if self.has_uncommitted_work() {
            return Err(SendError::Uncommitted);
        }
        Ok(())
    }
}

impl<T: Replicate + Clone> FastArray<T> {
    /// Applies a feed message from this relay's server: a frame
    /// ([`write_feed`](Self::write_feed)) or a snapshot
    /// ([`write_feed_snapshot`](Self::write_feed_snapshot)), each committed
    /// as a frame of the relay's own, so its connections are sent what
    /// changed as the server's would be. Messages may come late, twice or
    /// out of order: a frame older than what the relay holds is dropped, one
    /// past a gap waits for the frames before it (up to 64 of them; then,
    /// as for a frame of another stream, the relay
    /// [needs a snapshot](Self::needs_feed_snapshot), which the report says
    /// too).
    ///
    /// On a [ghost array](Self::ghost), applies a message of its
    /// neighbour's ghost feed ([`write_ghost_feed`](Self::write_ghost_feed),
    /// [`write_ghost_snapshot`](Self::write_ghost_snapshot)) by the same
    /// rules of order.
    ///
    /// # Errors
    /// [`DecodeError::NotARelay`] on an array that is neither a relay nor a
    /// ghost array; a
    /// [`DecodeError`] for a message that does not decode, or that names
    /// items the relay's state contradicts (a removed or changed item it
    /// does not hold, an add of one it holds). The relay is then unchanged.
    pub fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError> {
        if self.is_ghost() {
            return self.apply_ghost_feed(bytes, &mut ());
        }
        if !self.is_relay() {
            return Err(DecodeError::NotARelay {
                type_name: T::TYPE_NAME,
            });
        }
        self.apply_relay_feed(bytes, &mut ())
    }

    /// [`apply_feed`](Self::apply_feed), telling `callbacks` what it did
    /// to the items: on a relay, `post_add` for an item added, `pre_remove`
    /// for one removed (by its shard, by a resync snapshot that does not
    /// hold it, or when it left for a shard the relay does not follow),
    /// `post_change` with the fields that changed (an empty set: only its
    /// `#[replicate(array)]` fields did), `post_change_whole` for an item
    /// a shard took over or a resync wrote over (a handoff is a change,
    /// never a removal and an add), and `post_receive` after each frame or
    /// snapshot applied, those that waited for a gap in order; a relay
    /// that serves its clients with an [`InterestGrid`](crate::InterestGrid)
    /// moves its items there from these. On a ghost array, what a ghost
    /// did (see the "Ghosts" section): `post_add` for a ghost that came,
    /// `pre_remove` for one that went (out of reach, removed, or handed off
    /// to a shard that is not this one: a ghost array cannot tell those
    /// apart), `post_change` with the fields that changed, or
    /// `post_change_whole` for a ghost sent whole again (its arrays
    /// changed — an empty set of fields then —, it was handed off and
    /// taken back, or it is one this shard [kept](Self::keep_ghost) that
    /// the feed brings in), and `post_receive` as on a relay. Nothing is
    /// reported of a message that is refused, or that waits.
    ///
    /// # Errors
    /// As [`apply_feed`](Self::apply_feed).
    ///
    /// ```
    /// use fastarray_core::{Callbacks, FastArray, GhostFeed, ReplicationId, ShardId};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Walker { x: i32 }
    ///
    /// /// The game's proxies of the neighbour's walkers.
    /// #[derive(Default)]
    /// struct Proxies(Vec<ReplicationId>);
    /// impl Callbacks<Walker> for Proxies {
    ///     fn post_add(&mut self, id: ReplicationId, _: &Walker) {
    ///         self.0.push(id);
    ///     }
    ///     fn pre_remove(&mut self, id: ReplicationId, _: &Walker) {
    ///         self.0.retain(|&held| held != id);
    ///     }
    /// }
    ///
    /// let mut west = FastArray::shard(ShardId::new(0));
    /// let walker = west.push(Walker { x: 95 });
    /// west.commit();
    /// let (mut to_east, mut ghosts, mut proxies) =
    ///     (GhostFeed::new(), FastArray::ghost(), Proxies::default());
    /// let mut bus = Vec::new();
    /// west.write_ghost_feed(&mut to_east, |w| w.x > 90, &mut bus).unwrap();
    /// ghosts.apply_feed_with(&bus, &mut proxies).unwrap();
    /// assert_eq!(proxies.0, [walker]);
    ///
    /// west.get_mut(walker).unwrap().x = 50;
    /// west.commit();
    /// bus.clear();
    /// west.write_ghost_feed(&mut to_east, |w| w.x > 90, &mut bus).unwrap();
    /// ghosts.apply_feed_with(&bus, &mut proxies).unwrap();
    /// assert!(proxies.0.is_empty());
    ///
    /// // A relay's game hears its items the same way.
    /// let (mut relay, mut seen) = (FastArray::<Walker>::relay(), Proxies::default());
    /// bus.clear();
    /// west.write_feed_snapshot(&mut bus).unwrap();
    /// relay.apply_feed_with(&bus, &mut seen).unwrap();
    /// assert_eq!(seen.0, [walker]);
    /// ```
    pub fn apply_feed_with(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<FeedReport, DecodeError> {
        if self.is_ghost() {
            return self.apply_ghost_feed(bytes, callbacks);
        }
        if !self.is_relay() {
            return Err(DecodeError::NotARelay {
                type_name: T::TYPE_NAME,
            });
        }
        self.apply_relay_feed(bytes, callbacks)
    }

    /// [`apply_feed_with`](Self::apply_feed_with) on a relay.
    fn apply_relay_feed(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<FeedReport, DecodeError> {
        let mut report = FeedReport::default();
        let applied = self.apply_feed_message(bytes, &mut report, callbacks)?;
        self.apply_waiting(
            applied,
            |relay, shard| relay.sources_mut()?.followed_mut(shard),
            |relay, bytes| relay.apply_feed_message(bytes, &mut report, callbacks),
        );
        report.needs_snapshot = self.needs_feed_snapshot();
        Ok(report)
    }

    /// Applies, in order, the frames of a feed (a relay's shard's, a ghost
    /// array's, named by a `K`) that waited for the one just `applied`. A
    /// frame that does not apply passed the checks of its head when it
    /// came, so the state it applies to is not the one it was written
    /// for: the feed is lost, and needs a snapshot.
    pub(super) fn apply_waiting<K: Copy>(
        &mut self,
        mut applied: Option<K>,
        follow: for<'a> fn(&'a mut Self, K) -> Option<&'a mut Follow>,
        mut apply: impl FnMut(&mut Self, &[u8]) -> Result<Option<K>, DecodeError>,
    ) {
        while let Some(feed) = applied {
            let Some(bytes) = follow(self, feed).and_then(Follow::take_next) else {
                break;
            };
            applied = apply(self, &bytes).ok().flatten();
            if applied.is_none() {
                follow(self, feed).map(Follow::lose);
            }
        }
    }

    /// Applies one message, if it comes in its turn; returns the shard
    /// whose feed moved on, if one did.
    fn apply_feed_message(
        &mut self,
        bytes: &[u8],
        report: &mut FeedReport,
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<Option<ShardId>, DecodeError> {
        let limits = self.limits();
        let object = self.sources().is_some_and(|sources| sources.object);
        let message = read_whole(bytes, &limits, |reader| {
            let top = ArrayLimits::top(limits);
            feed_message::read::<T>(reader, top, top.for_arrays(object))
        })?;
        let Some(sources) = self.sources_mut() else {
            unreachable!("checked by apply_feed");
        };
        match message {
            Message::Snapshot(snapshot) => {
                let head = snapshot.head;
                let applies = (sources.follow(head.shard))
                    .is_none_or(|follow| follow.snapshot_applies(head.epoch, head.frame));
                if !applies {
                    sources.follow_mut(head.shard).stale();
                    return Ok(None);
                }
                self.apply_snapshot_diff(snapshot, callbacks)?;
                report.snapshot = true;
                Ok(Some(head.shard))
            }
            Message::Frame(frame) => {
                let head = frame.head;
                // Before the join, a feed's frames are of no use.
                let Some(follow) = sources.followed_mut(head.shard) else {
                    return Ok(None);
                };
                match follow.place(head.epoch, head.frame) {
                    Place::Stale => follow.stale(),
                    Place::Early => follow.wait(head.frame, bytes),
                    // A new stream: the server restarted.
                    Place::Foreign => follow.lose(),
                    Place::Next => {
                        self.apply_frame(frame, callbacks)?;
                        report.frames += 1;
                        return Ok(Some(head.shard));
                    }
                }
                Ok(None)
            }
        }
    }

    /// Applies the next frame of a shard's feed, if the relay holds what it
    /// was written against; else changes nothing. What the frame says of an
    /// item another shard took over since is dropped (see `sources`).
    fn apply_frame(
        &mut self,
        frame: Frame<T>,
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<(), DecodeError> {
        let shard = frame.head.shard;
        let Some(sources) = self.sources() else {
            unreachable!("a relay has sources");
        };
        let named = (frame.added.iter().map(|(id, ..)| id))
            .chain(frame.changed.iter().map(|change| &change.id))
            .chain(frame.moved.iter().map(|(id, _)| id));
        let removes = !frame.removed.is_empty() || !frame.handed.is_empty();
        check_object(sources.object, named, removes)?;
        let store = &self.store;
        let held = |id: ReplicationId| store.position(id).is_some();
        // Every verdict first: a frame is applied whole or not at all.
        let removed: Vec<Verdict> = (frame.removed.iter())
            .map(|&id| sources.holds(shard, id, held(id)))
            .collect::<Result<_, _>>()?;
        let handed: Vec<Verdict> = (frame.handed.iter())
            .map(|&(id, _, count)| sources.releases(shard, id, count, held(id)))
            .collect();
        let leaves = |id: &ReplicationId| {
            let listed = |ids: &mut dyn Iterator<Item = ReplicationId>, verdicts: &[Verdict]| {
                ids.zip(verdicts)
                    .any(|(listed, &verdict)| listed == *id && verdict == Verdict::Apply)
            };
            listed(&mut frame.removed.iter().copied(), &removed)
                || listed(&mut frame.handed.iter().map(|&(id, ..)| id), &handed)
        };
        let count_of = |id: &ReplicationId| {
            (frame.adopted.binary_search_by_key(id, |&(id, _)| id))
                .map_or(0, |at| frame.adopted[at].1)
        };
        let mut added = Vec::with_capacity(frame.added.len());
        for (id, ..) in &frame.added {
            let claim = sources.claim(shard, *id, count_of(id), held(*id) && !leaves(id));
            if claim == Claim::Keep {
                return Err(DecodeError::DuplicateId { id: *id });
            }
            added.push(claim);
        }
        let gone = |id: &ReplicationId| {
            frame.removed.binary_search(id).is_ok()
                || (frame.handed.binary_search_by_key(id, |&(id, ..)| id)).is_ok()
        };
        let verdict = |id: ReplicationId| match gone(&id) {
            true => Err(unknown(id)),
            false => sources.holds(shard, id, held(id)),
        };
        let changed: Vec<Verdict> = (frame.changed.iter())
            .map(|change| verdict(change.id))
            .collect::<Result<_, _>>()?;
        // What a change says of the arrays inside an item applies to the
        // arrays the relay holds.
        for (change, &verdict) in frame.changed.iter().zip(&changed) {
            if let (Verdict::Apply, Some(arrays), Some(item)) =
                (verdict, &change.arrays, store.get(change.id))
            {
                check_arrays(item, arrays)?;
            }
        }
        let moved: Vec<Verdict> = (frame.moved.iter())
            .map(|&(id, _)| verdict(id))
            .collect::<Result<_, _>>()?;

        let mut applied = ApplyReport {
            frame: Some(frame.head.frame),
            ..ApplyReport::default()
        };
        let sender = self.sender.as_deref_mut().expect("a relay has a sender");
        let sources = sender.follow.as_deref_mut().expect("a relay has sources");
        for (id, verdict) in frame.removed.into_iter().zip(removed) {
            match verdict {
                Verdict::Apply => {
                    remove(&mut self.store, id, &mut applied, callbacks);
                    sources.removed(id);
                }
                Verdict::Skip => sources.skipped(),
            }
        }
        for ((id, to, count), verdict) in frame.handed.into_iter().zip(handed) {
            match verdict {
                Verdict::Apply => sources.released(shard, id, count, to),
                Verdict::Skip => sources.skipped(),
            }
        }
        let claims = frame.added.into_iter().zip(added);
        let follower = Follower {
            store: &mut self.store,
            owners: &mut sender.owners,
            sources,
            shard,
        };
        apply_claims(follower, claims, count_of, &mut applied, callbacks);
        for (change, verdict) in frame.changed.into_iter().zip(changed) {
            match verdict {
                Verdict::Apply => {
                    if let Some(mut item) = self.store.get_mut(change.id) {
                        let mut fields = FieldMask::EMPTY;
                        if let Some(patch) = change.patch {
                            fields = item.apply_patch(patch);
                        }
                        let mut inside = false;
                        if let Some(arrays) = change.arrays {
                            let mut changes = arrays.into_iter();
                            item.for_each_array_mut(&mut |mine| {
                                if let Some(Some(changes)) = changes.next() {
                                    mine.apply_follow_changes(changes);
                                    inside = true;
                                }
                            });
                        }
                        if fields.is_empty() && !inside {
                            applied.skipped += 1;
                        } else {
                            callbacks.post_change(change.id, &item, fields);
                            applied.changed += 1;
                        }
                    }
                }
                Verdict::Skip => sources.skipped(),
            }
        }
        for ((id, owner), verdict) in frame.moved.into_iter().zip(moved) {
            match verdict {
                Verdict::Apply => sender.owners.stage(id, owner),
                Verdict::Skip => sources.skipped(),
            }
        }
        for id in sources.expire(shard) {
            remove(&mut self.store, id, &mut applied, callbacks);
        }
        self.commit_frame();
        let sources = self.sources_mut().expect("a relay has sources");
        sources.committed();
        if let Some(follow) = sources.followed_mut(shard) {
            follow.applied(frame.head.frame);
        }
        callbacks.post_receive(&applied);
        Ok(())
    }

    /// Makes the relay hold what `snapshot` holds of its shard, as one
    /// frame of its own that removes, adds and changes what differs.
    fn apply_snapshot_diff(
        &mut self,
        snapshot: Snapshot<T>,
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<(), DecodeError> {
        let shard = snapshot.head.shard;
        let Some(sources) = self.sources() else {
            unreachable!("a relay has sources");
        };
        if sources.object {
            if snapshot.items.is_empty() {
                return Err(DecodeError::MissingObject);
            }
            check_object(true, snapshot.items.iter().map(|(id, ..)| id), false)?;
        }
        let store = &self.store;
        let held = |id: ReplicationId| store.position(id).is_some();
        let kept = |id: &ReplicationId| {
            (snapshot.items)
                .binary_search_by_key(id, |&(id, ..)| id)
                .is_ok()
        };
        let count_of = |id: &ReplicationId| {
            (snapshot.counts.binary_search_by_key(id, |&(id, _)| id))
                .map_or(0, |at| snapshot.counts[at].1)
        };
        let handed: Vec<Verdict> = (snapshot.handed.iter())
            .map(|&(id, _, count)| match kept(&id) {
                true => Verdict::Skip,
                false => sources.releases(shard, id, count, held(id)),
            })
            .collect();
        let released = |id: &ReplicationId| {
            (snapshot.handed.iter().zip(&handed))
                .any(|(&(handed, ..), &verdict)| handed == *id && verdict == Verdict::Apply)
        };
        let gone: Vec<ReplicationId> = (self.store.slots().iter())
            .map(|slot| slot.id)
            .filter(|id| sources.is_holder(shard, *id) && !kept(id) && !released(id))
            .collect();
        let claims: Vec<Claim> = (snapshot.items.iter())
            .map(|&(id, ..)| sources.claim(shard, id, count_of(&id), held(id)))
            .collect();

        let mut applied = ApplyReport {
            frame: Some(snapshot.head.frame),
            ..ApplyReport::default()
        };
        let sender = self.sender.as_deref_mut().expect("a relay has a sender");
        let sources = sender.follow.as_deref_mut().expect("a relay has sources");
        for id in gone {
            remove(&mut self.store, id, &mut applied, callbacks);
            sources.dropped(shard, id);
        }
        for (&(id, to, count), verdict) in snapshot.handed.iter().zip(handed) {
            if verdict == Verdict::Apply {
                sources.released(shard, id, count, to);
            }
        }
        let claims = snapshot.items.into_iter().zip(claims);
        let follower = Follower {
            store: &mut self.store,
            owners: &mut sender.owners,
            sources,
            shard,
        };
        apply_claims(follower, claims, count_of, &mut applied, callbacks);
        self.store.raise_next_id(snapshot.next_id);
        // Joined first, so that the expiry counts this snapshot as one of
        // the shard's frames even when it is the first.
        let head = snapshot.head;
        sources.follow_mut(shard).joined(head.epoch, head.frame);
        for id in sources.expire(shard) {
            remove(&mut self.store, id, &mut applied, callbacks);
        }
        self.commit_frame();
        self.sources_mut().expect("a relay has sources").committed();
        callbacks.post_receive(&applied);
        Ok(())
    }
}

/// What a relay applies a shard's items to.
struct Follower<'a, T> {
    store: &'a mut Store<T>,
    owners: &'a mut Owners,
    sources: &'a mut Sources,
    shard: ShardId,
}

/// Removes item `id` of a follower (a relay, a ghost array), telling
/// `callbacks` and counting it in `applied`.
pub(super) fn remove<T>(
    store: &mut Store<T>,
    id: ReplicationId,
    applied: &mut ApplyReport,
    callbacks: &mut impl Callbacks<T>,
) {
    if let Some(value) = store.remove(id) {
        callbacks.pre_remove(id, &value);
        applied.removed += 1;
    }
}

/// Applies the items a shard says it holds (a frame's adds, a snapshot's
/// items) as their claims say (see `Sources::claim`), each at the tenure
/// `count_of` gives.
/// An item taken over (or written over by a resync) is reported even if
/// no field changed: its arrays may have.
fn apply_claims<T: Replicate + Clone>(
    follower: Follower<'_, T>,
    claims: impl Iterator<Item = ((ReplicationId, Option<u64>, T), Claim)>,
    count_of: impl Fn(&ReplicationId) -> u32,
    applied: &mut ApplyReport,
    callbacks: &mut impl Callbacks<T>,
) {
    let Follower {
        store,
        owners,
        sources,
        shard,
    } = follower;
    for ((id, owner, value), claim) in claims {
        match claim {
            Claim::Skip => sources.skipped(),
            Claim::Defer => sources.deferred(shard, id),
            Claim::Add | Claim::Take | Claim::Keep => {
                let taken = take(store, owners, id, owner, value);
                let item = store.get(id).expect("just taken");
                match taken {
                    None => {
                        callbacks.post_add(id, item);
                        applied.added += 1;
                    }
                    Some(fields) if !fields.is_empty() || T::ARRAY_FIELDS > 0 => {
                        callbacks.post_change_whole(id, item, fields);
                        applied.changed += 1;
                    }
                    Some(_) => applied.skipped += 1,
                }
                // Held by this shard already (a snapshot's): no handoff.
                let took = taken.is_some();
                sources.claimed(shard, id, count_of(&id), took && claim != Claim::Keep);
            }
        }
    }
}

/// Makes a follower (a relay, a ghost array) hold `value` as item `id`,
/// owned by `owner`: added, or
/// written over what it holds (only where it differs, so connections are
/// sent the fields that changed). Returns, if it held the item (a
/// handoff of an item kept pending in the same frame is one), the fields
/// that changed.
pub(super) fn take<T: Replicate>(
    store: &mut Store<T>,
    owners: &mut Owners,
    id: ReplicationId,
    owner: Option<u64>,
    value: T,
) -> Option<FieldMask> {
    let held = match store.get(id) {
        // The fields as commit will compare them: one diff, which also
        // says whether to write at all (an item with arrays always: they
        // are compared and written by their own commit).
        Some(item) => {
            let changed = value.diff(item);
            if T::ARRAY_FIELDS > 0 || !changed.is_empty() {
                store.replace(id, value);
            }
            Some(changed)
        }
        None => {
            store.push_given(id, value);
            None
        }
    };
    if owners.owner(id) != owner {
        owners.stage(id, owner);
    }
    held
}

/// Refuses changes of the arrays inside `item` (`arrays`, one entry an
/// array field) that do not apply to the arrays it holds.
fn check_arrays<T: Replicate>(item: &T, arrays: &Arrays) -> Result<(), DecodeError> {
    let (mut result, mut field) = (Ok(()), 0);
    item.for_each_array(&mut |mine| {
        if let (Ok(()), Some(Some(changes))) = (&result, arrays.get(field)) {
            result = mine.check_follow_changes(changes);
        }
        field += 1;
    });
    result
}

/// A replicated object's one item.
const OBJECT: ReplicationId = ReplicationId::from_raw(0);

/// Refuses, on an object's relay, a message that names another item than
/// the object, or removes it.
fn check_object<'a>(
    object: bool,
    mut named: impl Iterator<Item = &'a ReplicationId>,
    removes: bool,
) -> Result<(), DecodeError> {
    if !object {
        return Ok(());
    }
    if removes {
        return Err(DecodeError::NotAnObjectChange { id: OBJECT });
    }
    match named.find(|&&id| id != OBJECT) {
        Some(&id) => Err(DecodeError::NotAnObjectChange { id }),
        None => Ok(()),
    }
}

fn unknown(id: ReplicationId) -> DecodeError {
    DecodeError::UnknownItem { id }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(fastarray_derive::Replicate, Clone, Debug, PartialEq)]
    struct Gem {
        kind: u8,
    }

    #[derive(fastarray_derive::Replicate, Clone, Debug, PartialEq)]
    struct Bag {
        slot: u8,
        #[replicate(array)]
        gems: FastArray<Gem>,
    }

    /// A frame whose changes inside an item's array contradict what the
    /// relay holds there is refused whole, and changes nothing.
    #[test]
    fn a_frame_that_contradicts_the_arrays_a_relay_holds_is_refused_whole() {
        let mut server = FastArray::new();
        let mut gems = FastArray::new();
        let first = gems.push(Gem { kind: 1 });
        gems.push(Gem { kind: 2 });
        let bag = server.push(Bag { slot: 0, gems });
        let other = server.push(Bag {
            slot: 9,
            gems: FastArray::new(),
        });
        server.commit();
        let mut relay = FastArray::<Bag>::relay();
        let mut bytes = Vec::new();
        server.write_feed_snapshot(&mut bytes).unwrap();
        relay.apply_feed(&bytes).unwrap();
        // The relay's copy of the bag lost its first gem (as no feed would
        // make it).
        let pos = relay.store.position(bag).unwrap();
        relay.store.value_mut(pos).gems.remove(first);
        relay.store.value_mut(pos).gems.commit();
        let before: Vec<(u8, usize)> = relay.iter().map(|(_, b)| (b.slot, b.gems.len())).collect();

        // The server changes that gem, and the other bag.
        {
            let mut held = server.get_mut(bag).unwrap();
            held.gems.get_mut(first).unwrap().kind = 7;
        }
        server.get_mut(other).unwrap().slot = 10;
        server.commit();
        bytes.clear();
        server.write_feed(&mut bytes).unwrap();
        assert_eq!(
            relay.apply_feed(&bytes),
            Err(DecodeError::UnknownItem { id: first })
        );
        let after: Vec<(u8, usize)> = relay.iter().map(|(_, b)| (b.slot, b.gems.len())).collect();
        assert_eq!(after, before, "the other bag's change was applied");
        assert_eq!(relay.feed_frame(), Some(1));
    }
}
