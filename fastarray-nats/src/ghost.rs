//! A shard's ghosts for one neighbour on the bus: [`GhostSource`] makes
//! a shard's array, the neighbour's [`GhostFeed`] and its filter one
//! [`FeedSource`], which a [`FeedPublisher`](crate::FeedPublisher)
//! publishes as it does a feed; the neighbour follows it into its ghost
//! array ([`FastArray::ghost`]) with a [`FeedFollower`](crate::FeedFollower),
//! through [`WithCallbacks`] if its game hears the ghosts come and go.
//!
//! Name each ghost stream for the shard and the neighbour, for example
//! `world.walkers.west.ghosts.east`: its frames go on `<name>.feed`, the
//! neighbour's requests for a snapshot on `<name>.snapshot`.

use fastarray_core::{
    Callbacks, DecodeError, FastArray, FeedReport, GhostFeed, Replicate, SendError, ShardId,
    WithCallbacks,
};

use crate::feed::{FeedSink, FeedSource};

/// A shard's array, one neighbour's [`GhostFeed`] and the filter of what
/// is within that neighbour's reach: what a
/// [`FeedPublisher`](crate::FeedPublisher) publishes to the neighbour's
/// ghost array ([`FastArray::write_ghost_feed`],
/// [`FastArray::write_ghost_snapshot`]).
///
/// ```
/// use fastarray::{FastArray, GhostFeed, Replicate, ShardId};
/// use fastarray_nats::{FeedSource, GhostSource};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// struct Walker { x: i32 }
///
/// let mut west = FastArray::shard(ShardId::new(0));
/// west.push(Walker { x: 95 });
/// west.commit();
/// let mut to_east = GhostFeed::new();
/// // Each tick, after the commit: `publisher.publish(&mut source)`.
/// let mut source = GhostSource::new(&west, &mut to_east, |w: &Walker| w.x > 90);
/// let (mut frame, mut snapshot) = (Vec::new(), Vec::new());
/// source.write_feed(&mut frame).unwrap();
/// source.write_feed_snapshot(&mut snapshot).unwrap();
///
/// let mut ghosts = FastArray::<Walker>::ghost();
/// ghosts.apply_feed(&snapshot).unwrap();
/// assert_eq!(ghosts.len(), 1);
/// ```
pub struct GhostSource<'a, T, F> {
    array: &'a FastArray<T>,
    feed: &'a mut GhostFeed,
    near: F,
}

impl<'a, T: Replicate, F: FnMut(&T) -> bool> GhostSource<'a, T, F> {
    /// The ghosts `array` writes for the neighbour `feed` is, of the items
    /// `near` keeps.
    pub fn new(array: &'a FastArray<T>, feed: &'a mut GhostFeed, near: F) -> Self {
        Self { array, feed, near }
    }
}

impl<T: Replicate, F: FnMut(&T) -> bool> FeedSource for GhostSource<'_, T, F> {
    fn write_feed(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        self.array.write_ghost_feed(self.feed, &mut self.near, out)
    }

    fn write_feed_snapshot(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError> {
        self.array.write_ghost_snapshot(self.feed, out)
    }
}

/// A follower (a ghost array, or a relay) and the game's [`Callbacks`]
/// ([`WithCallbacks`]) is a [`FeedSink`] that a
/// [`FeedFollower`](crate::FeedFollower) applies its feed to with
/// [`FastArray::apply_feed_with`]: the game hears each ghost (or item)
/// come, change and go.
///
/// ```
/// use fastarray::{Callbacks, FastArray, GhostFeed, Replicate, ReplicationId, ShardId, WithCallbacks};
/// use fastarray_nats::{FeedSink, FeedSource, GhostSource};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// struct Walker { x: i32 }
///
/// #[derive(Default)]
/// struct Proxies(Vec<ReplicationId>);
/// impl Callbacks<Walker> for Proxies {
///     fn post_add(&mut self, id: ReplicationId, _: &Walker) {
///         self.0.push(id);
///     }
/// }
///
/// let mut west = FastArray::shard(ShardId::new(0));
/// let walker = west.push(Walker { x: 95 });
/// west.commit();
/// let mut to_east = GhostFeed::new();
/// let mut first = Vec::new(); // a snapshot
/// GhostSource::new(&west, &mut to_east, |w: &Walker| w.x > 90)
///     .write_feed(&mut first)
///     .unwrap();
///
/// let (mut ghosts, mut proxies) = (FastArray::<Walker>::ghost(), Proxies::default());
/// // Each tick: `follower.poll(&mut WithCallbacks::new(&mut ghosts, &mut proxies), now)`.
/// WithCallbacks::new(&mut ghosts, &mut proxies).apply_feed(&first).unwrap();
/// assert_eq!(proxies.0, [walker]);
/// ```
impl<T: Replicate + Clone, C: Callbacks<T>> FeedSink for WithCallbacks<'_, FastArray<T>, C> {
    fn is_follower(&self) -> bool {
        self.mirror().is_ghost() || self.mirror().is_relay()
    }
    fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError> {
        let (array, callbacks) = self.parts();
        array.apply_feed_with(bytes, callbacks)
    }
    fn needs_feed_snapshot(&self) -> bool {
        self.mirror().needs_feed_snapshot()
    }
    fn has_feed_gap(&self) -> bool {
        self.mirror().has_feed_gap()
    }
    fn needs_feed_snapshot_from(&self, shard: ShardId) -> bool {
        self.mirror().needs_feed_snapshot_from(shard)
    }
    fn has_feed_gap_from(&self, shard: ShardId) -> bool {
        self.mirror().has_feed_gap_from(shard)
    }
}
