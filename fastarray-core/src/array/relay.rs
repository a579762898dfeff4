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
use crate::feed_message::{self, Frame, Message, Snapshot};
use crate::id::ReplicationId;
use crate::limits::{ArrayLimits, MirrorLimits};
use crate::receive_state::follow::{FeedStats, Follow, Place};
use crate::replicate::Replicate;
use crate::send::sender::Sender;

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
        if let Some(follow) = array.follow_mut() {
            follow.object = true;
        }
        array
    }

    /// Whether this is a relay ([`relay`](Self::relay)).
    pub fn is_relay(&self) -> bool {
        self.follow().is_some()
    }

    fn follow(&self) -> Option<&Follow> {
        self.sender.as_deref()?.follow.as_deref()
    }

    fn follow_mut(&mut self) -> Option<&mut Follow> {
        self.sender.as_deref_mut()?.follow.as_deref_mut()
    }

    /// Whether this relay cannot go on from its feed's frames: it has not
    /// joined yet, a gap did not fill, or its server's stream changed (a
    /// restarted server). Ask the server for a
    /// [`write_feed_snapshot`](Self::write_feed_snapshot) and apply it.
    /// `false` on an array that is not a relay.
    pub fn needs_feed_snapshot(&self) -> bool {
        self.follow().is_some_and(Follow::needs_snapshot)
    }

    /// Whether frames past a gap wait for the frames before it. On a bus
    /// that keeps each publisher's order (NATS does) a gap is a loss: ask
    /// for a snapshot soon, since a frame that never comes would keep the
    /// relay behind until 64 more arrive (or forever, if the server stops
    /// committing). On one that reorders, give the gap a moment to fill.
    /// `false` on an array that is not a relay.
    pub fn has_feed_gap(&self) -> bool {
        self.follow().is_some_and(Follow::has_gap)
    }

    /// The server's frame this relay holds (`None` before it joined, and on
    /// an array that is not a relay).
    pub fn feed_frame(&self) -> Option<u64> {
        self.follow()?.at().map(|(_, frame)| frame)
    }

    /// How this relay has followed its feed (zeros on an array that is not
    /// a relay).
    pub fn feed_stats(&self) -> FeedStats {
        self.follow().map(Follow::stats).unwrap_or_default()
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
    /// [`SendError::FeedUnsupported`] for items with `#[replicate(array)]`
    /// fields, [`SendError::Encode`] if an item fails to encode. `out` is
    /// left as it was.
    pub fn write_feed(&self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        self.check_feed()?;
        const NONE: &Changeset = &Changeset::EMPTY;
        // An array that never committed nor fed a snapshot has no stream a
        // relay joined: its frame 0, of a stream of its own, is of no use
        // to any, as it should be.
        let sender = self.sender.as_deref();
        let changes = sender.and_then(|s| s.history.newest()).unwrap_or(NONE);
        let owners = sender.map(|s| &s.owners);
        let epoch = sender.map_or_else(|| Sender::default().epoch(), Sender::epoch);
        write_truncating(out, |writer| {
            feed_message::write_frame(&self.store, owners, changes, epoch, writer)
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
        let sender = self.sender.get_or_insert_with(Box::default);
        let (store, owners, epoch) = (&self.store, &sender.owners, sender.epoch());
        write_truncating(out, |writer| {
            feed_message::write_snapshot(store, Some(owners), epoch, writer)
                .map_err(|(id, error)| SendError::Encode { id, error })
        })
    }

    fn check_feed(&self) -> Result<(), SendError> {
        self.expect_writer()?;
        if T::ARRAY_FIELDS > 0 {
            return Err(SendError::FeedUnsupported {
                type_name: T::TYPE_NAME,
            });
        }
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
    /// # Errors
    /// [`DecodeError::NotARelay`] on an array that is not a relay; a
    /// [`DecodeError`] for a message that does not decode, or that names
    /// items the relay's state contradicts (a removed or changed item it
    /// does not hold, an add of one it holds). The relay is then unchanged.
    pub fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError> {
        if !self.is_relay() {
            return Err(DecodeError::NotARelay {
                type_name: T::TYPE_NAME,
            });
        }
        let mut report = FeedReport::default();
        self.apply_feed_message(bytes, &mut report)?;
        // Frames that waited for this one.
        while report.frames > 0 || report.snapshot {
            let Some(bytes) = self.follow_mut().and_then(Follow::take_next) else {
                break;
            };
            if self.apply_feed_message(&bytes, &mut report).is_err() {
                // It passed the checks of its head when it came: the state it
                // applies to is not the one it was written for.
                self.follow_mut().map(Follow::lose);
            }
        }
        report.needs_snapshot = self.needs_feed_snapshot();
        Ok(report)
    }

    fn apply_feed_message(
        &mut self,
        bytes: &[u8],
        report: &mut FeedReport,
    ) -> Result<(), DecodeError> {
        let limits = MirrorLimits::DEFAULT;
        let message = read_whole(bytes, &limits, |reader| {
            feed_message::read::<T>(reader, ArrayLimits::top(limits))
        })?;
        let Some(follow) = self.follow_mut() else {
            unreachable!("checked by apply_feed");
        };
        match message {
            Message::Snapshot(snapshot) => {
                let head = snapshot.head;
                if !follow.snapshot_applies(head.epoch, head.frame) {
                    follow.stale();
                    return Ok(());
                }
                self.apply_snapshot_diff(snapshot)?;
                report.snapshot = true;
            }
            Message::Frame(frame) => {
                let head = frame.head;
                match follow.place(head.epoch, head.frame) {
                    Place::Stale => follow.stale(),
                    Place::Early => follow.wait(head.frame, bytes),
                    Place::Foreign => {
                        // Before the join, frames are of no use; after it,
                        // a new stream means the server restarted.
                        if follow.at().is_some() {
                            follow.lose();
                        }
                    }
                    Place::Next => {
                        self.apply_frame(frame)?;
                        report.frames += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Applies the next frame, if the relay holds what it was written
    /// against; else changes nothing.
    fn apply_frame(&mut self, frame: Frame<T>) -> Result<(), DecodeError> {
        let object = self.follow().is_some_and(|follow| follow.object);
        let named = (frame.added.iter().map(|(id, ..)| id))
            .chain(frame.changed.iter().map(|(id, _)| id))
            .chain(frame.moved.iter().map(|(id, _)| id));
        check_object(object, named, !frame.removed.is_empty())?;
        let held = |id: ReplicationId| self.store.position(id).is_some();
        if let Some(&id) = frame.removed.iter().find(|&&id| !held(id)) {
            return Err(unknown(id));
        }
        if let Some(&(id, ..)) = frame.added.iter().find(|&&(id, ..)| held(id)) {
            return Err(DecodeError::DuplicateId { id });
        }
        let removed = |id: &ReplicationId| frame.removed.binary_search(id).is_ok();
        if let Some((id, _)) = frame
            .changed
            .iter()
            .find(|(id, _)| !held(*id) || removed(id))
        {
            return Err(unknown(*id));
        }
        if let Some(&(id, _)) = frame.moved.iter().find(|(id, _)| !held(*id) || removed(id)) {
            return Err(unknown(id));
        }
        for id in &frame.removed {
            self.store.remove(*id);
        }
        let sender = self.sender.as_deref_mut().expect("a relay has a sender");
        for (id, owner, value) in frame.added {
            self.store.push_given(id, value);
            if owner.is_some() {
                sender.owners.stage(id, owner);
            }
        }
        for (id, patch) in frame.changed {
            if let Some(mut item) = self.store.get_mut(id) {
                item.apply_patch(patch);
            }
        }
        for (id, owner) in frame.moved {
            sender.owners.stage(id, owner);
        }
        self.commit_frame();
        if let Some(follow) = self.follow_mut() {
            follow.applied(frame.head.frame);
        }
        Ok(())
    }

    /// Makes the relay hold what `snapshot` holds, as one frame of its own
    /// that removes, adds and changes what differs.
    fn apply_snapshot_diff(&mut self, snapshot: Snapshot<T>) -> Result<(), DecodeError> {
        if self.follow().is_some_and(|follow| follow.object) {
            if snapshot.items.is_empty() {
                return Err(DecodeError::MissingObject);
            }
            check_object(true, snapshot.items.iter().map(|(id, ..)| id), false)?;
        }
        let kept = |id: &ReplicationId| {
            snapshot
                .items
                .binary_search_by_key(id, |&(id, ..)| id)
                .is_ok()
        };
        let gone: Vec<ReplicationId> = self
            .store
            .slots()
            .iter()
            .map(|slot| slot.id)
            .filter(|id| !kept(id))
            .collect();
        for id in gone {
            self.store.remove(id);
        }
        let sender = self.sender.as_deref_mut().expect("a relay has a sender");
        for (id, owner, value) in snapshot.items {
            match self.store.get_mut(id) {
                Some(mut item) => {
                    if !item.wire_eq(&value) {
                        *item = value;
                    }
                }
                None => self.store.push_given(id, value),
            }
            if sender.owners.owner(id) != owner {
                sender.owners.stage(id, owner);
            }
        }
        self.store.raise_next_id(snapshot.next_id);
        self.commit_frame();
        if let Some(follow) = self.follow_mut() {
            follow.joined(snapshot.head.epoch, snapshot.head.frame);
        }
        Ok(())
    }
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
