//! A server's feed on the bus ([`FeedPublisher`]) and a relay following
//! it ([`FeedFollower`]): the frames on one subject, snapshots by request
//! and reply on another.
//!
//! For an array named `name`, the server publishes each frame's feed
//! ([`FastArray::write_feed`]) on `name.feed`, and answers a request on
//! `name.snapshot` with the array's feed snapshot
//! ([`FastArray::write_feed_snapshot`]), sent to the request's reply
//! subject. A relay subscribes to the frames first, then asks for a
//! snapshot; it asks again when it needs one
//! ([`FastArray::needs_feed_snapshot`]: a new server stream, a gap that
//! did not fill) or when frames have waited past a gap for longer than
//! [`FollowConfig::gap_wait`] (NATS keeps a publisher's order, so a gap is
//! a loss), at most once per [`FollowConfig::retry`].

use std::fmt;
use std::time::{Duration, Instant};

use fastarray_core::{
    DecodeError, FastArray, FeedReport, Replicate, Replicated, SendError, ShardId,
};

use crate::bus::{Bus, BusError, Subscription};
use crate::chunks::{self, Assembly};

/// Why a feed operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FeedError {
    /// The bus refused.
    Bus(BusError),
    /// The array could not write its feed (uncommitted work, a mirror…).
    Send(SendError),
    /// A snapshot that would take more chunks of the bus's largest message
    /// than a relay puts together (4 096).
    SnapshotTooLarge {
        /// The snapshot's size.
        bytes: usize,
        /// The bus's largest message.
        max_payload: usize,
    },
}

impl fmt::Display for FeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bus(error) => write!(f, "{error}"),
            Self::Send(error) => write!(f, "cannot write the feed: {error}"),
            Self::SnapshotTooLarge { bytes, max_payload } => write!(
                f,
                "a feed snapshot of {bytes} bytes takes more than 4 096 messages of {max_payload} bytes"
            ),
        }
    }
}

impl std::error::Error for FeedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Bus(error) => Some(error),
            Self::Send(error) => Some(error),
            Self::SnapshotTooLarge { .. } => None,
        }
    }
}

impl From<BusError> for FeedError {
    fn from(error: BusError) -> Self {
        Self::Bus(error)
    }
}

impl From<SendError> for FeedError {
    fn from(error: SendError) -> Self {
        Self::Send(error)
    }
}

/// What a [`FeedPublisher`] publishes: a server's [`FastArray`] or
/// [`Replicated`] object (their methods of the same names), or a shard's
/// ghosts for one neighbour ([`GhostSource`](crate::GhostSource)).
pub trait FeedSource {
    /// The last commit's feed.
    fn write_feed(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError>;
    /// The whole array or object, for a follower that joins or resyncs, as
    /// of the last [`write_feed`](Self::write_feed).
    fn write_feed_snapshot(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError>;
}

/// What a [`FeedFollower`] applies the feed to: a relay [`FastArray`] or
/// [`Replicated`] object, or a ghost array ([`FastArray::ghost`]) (their
/// methods of the same names).
pub trait FeedSink {
    /// Whether it follows a feed: a relay, or a ghost array.
    fn is_follower(&self) -> bool;
    /// Applies a feed message.
    fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError>;
    /// Whether frames alone cannot bring it up to date.
    fn needs_feed_snapshot(&self) -> bool;
    /// Whether frames wait past a gap.
    fn has_feed_gap(&self) -> bool;
    /// Whether frames of shard `shard` alone cannot bring it up to date.
    fn needs_feed_snapshot_from(&self, shard: ShardId) -> bool;
    /// Whether frames of shard `shard` wait past a gap.
    fn has_feed_gap_from(&self, shard: ShardId) -> bool;
}

impl<T: Replicate> FeedSource for FastArray<T> {
    fn write_feed(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        FastArray::write_feed(self, out)
    }
    fn write_feed_snapshot(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        FastArray::write_feed_snapshot(self, out)
    }
}

impl<T: Replicate + Clone> FeedSource for Replicated<T> {
    fn write_feed(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        Replicated::write_feed(self, out)
    }
    fn write_feed_snapshot(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        Replicated::write_feed_snapshot(self, out)
    }
}

impl<T: Replicate + Clone> FeedSink for FastArray<T> {
    fn is_follower(&self) -> bool {
        FastArray::is_relay(self) || FastArray::is_ghost(self)
    }
    fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError> {
        FastArray::apply_feed(self, bytes)
    }
    fn needs_feed_snapshot(&self) -> bool {
        FastArray::needs_feed_snapshot(self)
    }
    fn has_feed_gap(&self) -> bool {
        FastArray::has_feed_gap(self)
    }
    fn needs_feed_snapshot_from(&self, shard: ShardId) -> bool {
        FastArray::needs_feed_snapshot_from(self, shard)
    }
    fn has_feed_gap_from(&self, shard: ShardId) -> bool {
        FastArray::has_feed_gap_from(self, shard)
    }
}

impl<T: Replicate + Clone> FeedSink for Replicated<T> {
    fn is_follower(&self) -> bool {
        Replicated::is_relay(self)
    }
    fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError> {
        Replicated::apply_feed(self, bytes)
    }
    fn needs_feed_snapshot(&self) -> bool {
        Replicated::needs_feed_snapshot(self)
    }
    fn has_feed_gap(&self) -> bool {
        Replicated::has_feed_gap(self)
    }
    /// An object is one server's: its shard is that server's.
    fn needs_feed_snapshot_from(&self, _shard: ShardId) -> bool {
        Replicated::needs_feed_snapshot(self)
    }
    fn has_feed_gap_from(&self, _shard: ShardId) -> bool {
        Replicated::has_feed_gap(self)
    }
}

/// The subject of an array's frames.
pub fn feed_subject(name: &str) -> String {
    format!("{name}.feed")
}

/// The subject a relay asks an array's snapshot on.
pub fn snapshot_subject(name: &str) -> String {
    format!("{name}.snapshot")
}

/// What one [`FeedPublisher::publish`] sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Published {
    /// Bytes of the frame published.
    pub frame_bytes: usize,
    /// Snapshots sent in reply to relays' requests.
    pub snapshots: u32,
    /// Bytes of those snapshots.
    pub snapshot_bytes: usize,
}

/// A server's side: publishes an array's (or object's) feed each frame,
/// and answers relays' requests for a snapshot.
#[derive(Debug)]
pub struct FeedPublisher<B: Bus> {
    bus: B,
    subject: String,
    requests: B::Subscription,
}

impl<B: Bus> FeedPublisher<B> {
    /// Serves the feed of the array named `name` (a subject prefix, as
    /// `world.agents`; one name per array) on `bus`.
    ///
    /// # Errors
    /// [`BusError::Subscribe`] if the bus refuses the requests' subject.
    pub fn new(bus: B, name: &str) -> Result<Self, BusError> {
        let requests = bus.subscribe(&snapshot_subject(name))?;
        Ok(Self {
            bus,
            subject: feed_subject(name),
            requests,
        })
    }

    /// Call after each [`commit`](FastArray::commit): publishes the frame,
    /// then answers the relays that asked for a snapshot since the last
    /// call (with the array as of that frame: a ghost snapshot can only be
    /// written after its frame).
    ///
    /// A snapshot larger than one bus message goes in chunks, each within
    /// the bus's [`max_payload`](Bus::max_payload), which the relay puts
    /// back together (up to 4 096 chunks and 16 MiB).
    ///
    /// # Errors
    /// [`FeedError::Send`] if the array cannot write its feed (it has
    /// uncommitted work, it is a mirror, its items have array fields);
    /// [`FeedError::SnapshotTooLarge`] past 4 096 chunks;
    /// [`FeedError::Bus`] if the bus refuses a message (a closed
    /// connection). A relay whose request was not answered asks again.
    pub fn publish(&mut self, array: &mut impl FeedSource) -> Result<Published, FeedError> {
        let mut published = Published::default();
        let mut chunks: Option<Vec<Vec<u8>>> = None;
        let mut frame = Vec::new();
        array.write_feed(&mut frame)?;
        published.frame_bytes = frame.len();
        self.bus.publish(&self.subject, None, frame)?;
        while let Some(request) = self.requests.try_next() {
            let Some(reply) = request.reply else {
                continue;
            };
            if chunks.is_none() {
                let mut bytes = Vec::new();
                array.write_feed_snapshot(&mut bytes)?;
                // Room for the subject and the protocol's framing: a
                // message over the server's limit closes the connection.
                let max_payload = match self.bus.max_payload() {
                    0 => 1 << 20,
                    max => max,
                }
                .saturating_sub(1_024)
                .max(chunks::HEADER + 1);
                let split = chunks::split(chunks::new_serial(), &bytes, max_payload);
                chunks = Some(split.ok_or(FeedError::SnapshotTooLarge {
                    bytes: bytes.len(),
                    max_payload,
                })?);
            }
            for chunk in chunks.iter().flatten() {
                published.snapshot_bytes += chunk.len();
                self.bus.publish(&reply, None, chunk.clone())?;
            }
            published.snapshots += 1;
        }
        Ok(published)
    }

    /// The bus.
    pub fn bus(&self) -> &B {
        &self.bus
    }

    /// The bus, to change.
    pub fn bus_mut(&mut self) -> &mut B {
        &mut self.bus
    }
}

/// When a [`FeedFollower`] asks for a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowConfig {
    /// How long frames may wait past a gap before the relay asks for a
    /// snapshot. Default 100 ms: NATS keeps a publisher's order, so a gap
    /// is a loss (the relay fell behind, or a node failed), and waiting
    /// longer only keeps the relay's clients behind.
    pub gap_wait: Duration,
    /// The least time between two requests for a snapshot (a reply can be
    /// lost too). Default 500 ms.
    pub retry: Duration,
}

impl Default for FollowConfig {
    fn default() -> Self {
        Self {
            gap_wait: Duration::from_millis(100),
            retry: Duration::from_millis(500),
        }
    }
}

/// What one [`FeedFollower::poll`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Followed {
    /// Frames applied.
    pub frames: u32,
    /// Snapshots applied.
    pub snapshots: u32,
    /// Messages refused as malformed (the relay asks for a snapshot).
    pub refused: u32,
    /// Whether a snapshot was asked for.
    pub asked: bool,
}

/// A relay's side: applies a server's feed from the bus to a relay array
/// ([`FastArray::relay`]) or object ([`Replicated::relay`]), and asks for
/// snapshots when it must.
#[derive(Debug)]
pub struct FeedFollower<B: Bus> {
    bus: B,
    request_subject: String,
    inbox: String,
    frames: B::Subscription,
    replies: B::Subscription,
    config: FollowConfig,
    asked_at: Option<Instant>,
    gap_since: Option<Instant>,
    refused: bool,
    /// The chunks of the snapshot being received.
    assembly: Assembly,
    /// The shard whose feed this is, for a relay of several.
    shard: Option<ShardId>,
}

impl<B: Bus> FeedFollower<B> {
    /// Follows the feed of the array named `name` (as the server's
    /// [`FeedPublisher`] names it) on `bus`. It subscribes to the frames
    /// now; the first [`poll`](Self::poll) asks for the snapshot the relay
    /// joins from.
    ///
    /// # Errors
    /// [`BusError::Subscribe`] if the bus refuses a subscription.
    pub fn new(bus: B, name: &str, config: FollowConfig) -> Result<Self, BusError> {
        let frames = bus.subscribe(&feed_subject(name))?;
        let inbox = bus.new_inbox();
        let replies = bus.subscribe(&inbox)?;
        Ok(Self {
            request_subject: snapshot_subject(name),
            inbox,
            frames,
            replies,
            bus,
            config,
            asked_at: None,
            gap_since: None,
            refused: false,
            assembly: Assembly::default(),
            shard: None,
        })
    }

    /// Makes this the follower of shard `shard`'s feed, for a relay that
    /// follows several shards (one follower each, on one relay array): it
    /// asks for a snapshot when that shard's feed needs one
    /// ([`FastArray::needs_feed_snapshot_from`]), not another's.
    pub fn of_shard(mut self, shard: ShardId) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Applies to `relay` what arrived (snapshots first, then frames), and
    /// asks for a snapshot if the relay needs one, if frames waited past a
    /// gap for [`FollowConfig::gap_wait`], or if a message was refused; at
    /// most once per [`FollowConfig::retry`]. `now` is the game's clock.
    ///
    /// # Errors
    /// [`FeedError::Bus`] if the request for a snapshot cannot be sent;
    /// [`FeedError::Send`] never. Malformed messages are not errors: they
    /// are counted in [`Followed::refused`] and repaired by a snapshot.
    ///
    /// # Panics
    /// If `relay` is not a relay ([`FastArray::relay`],
    /// [`Replicated::relay`]).
    pub fn poll(&mut self, relay: &mut impl FeedSink, now: Instant) -> Result<Followed, FeedError> {
        assert!(
            relay.is_follower(),
            "FeedFollower::poll takes a relay (FastArray::relay(), Replicated::relay()) or a ghost \
             array (FastArray::ghost())"
        );
        let mut followed = Followed::default();
        while let Some(message) = self.replies.try_next() {
            match self.assembly.accept(&message.payload) {
                Ok(Some(snapshot)) => self.apply(relay, &snapshot, &mut followed),
                Ok(None) => {}
                Err(_) => {
                    followed.refused += 1;
                    self.refused = true;
                }
            }
        }
        while let Some(message) = self.frames.try_next() {
            self.apply(relay, &message.payload, &mut followed);
        }
        let (needs, gap) = match self.shard {
            Some(shard) => (
                relay.needs_feed_snapshot_from(shard),
                relay.has_feed_gap_from(shard),
            ),
            None => (relay.needs_feed_snapshot(), relay.has_feed_gap()),
        };
        self.gap_since = match (gap, self.gap_since) {
            (true, None) => Some(now),
            (true, since) => since,
            (false, _) => None,
        };
        let stuck = self
            .gap_since
            .is_some_and(|since| now.duration_since(since) >= self.config.gap_wait);
        let due = self
            .asked_at
            .is_none_or(|at| now.duration_since(at) >= self.config.retry);
        if (needs || stuck || self.refused) && due {
            self.bus
                .publish(&self.request_subject, Some(&self.inbox), Vec::new())?;
            self.asked_at = Some(now);
            self.refused = false;
            followed.asked = true;
        }
        Ok(followed)
    }

    fn apply(&mut self, relay: &mut impl FeedSink, bytes: &[u8], followed: &mut Followed) {
        match relay.apply_feed(bytes) {
            Ok(report) => {
                followed.frames += report.frames;
                followed.snapshots += u32::from(report.snapshot);
            }
            Err(DecodeError::NotARelay { .. }) => unreachable!("checked by poll"),
            Err(_) => {
                followed.refused += 1;
                self.refused = true;
            }
        }
    }

    /// The bus.
    pub fn bus(&self) -> &B {
        &self.bus
    }
}
