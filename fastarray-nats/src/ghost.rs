//! A shard's ghosts for one neighbour on the bus: [`GhostSource`] makes
//! a shard's array, the neighbour's [`GhostFeed`] and its filter one
//! [`FeedSource`], which a [`FeedPublisher`](crate::FeedPublisher)
//! publishes as it does a feed; the neighbour follows it into its ghost
//! array ([`FastArray::ghost`]) with a [`FeedFollower`](crate::FeedFollower).
//!
//! Name each ghost stream for the shard and the neighbour, for example
//! `world.walkers.west.ghosts.east`: its frames go on `<name>.feed`, the
//! neighbour's requests for a snapshot on `<name>.snapshot`.

use fastarray_core::{
    Callbacks, DecodeError, FastArray, FeedReport, GhostFeed, Replicate, ReplicationId, SendError,
    ShardId,
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

/// A ghost array and the game's [`Callbacks`], as one [`FeedSink`] that a
/// [`FeedFollower`](crate::FeedFollower) applies the ghost feed to with
/// [`FastArray::apply_feed_with`]: the game hears each ghost come, change
/// and go.
///
/// ```
/// use fastarray::{Callbacks, FastArray, GhostFeed, Replicate, ReplicationId, ShardId};
/// use fastarray_nats::{FeedSink, FeedSource, GhostSource, GhostSink};
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
/// // Each tick: `follower.poll(&mut GhostSink::new(&mut ghosts, &mut proxies), now)`.
/// GhostSink::new(&mut ghosts, &mut proxies).apply_feed(&first).unwrap();
/// assert_eq!(proxies.0, [walker]);
/// ```
pub struct GhostSink<'a, T, C> {
    ghosts: &'a mut FastArray<T>,
    callbacks: &'a mut C,
}

impl<'a, T: Replicate + Clone, C: Callbacks<T>> GhostSink<'a, T, C> {
    /// The ghost array `ghosts`, whose feed `callbacks` hears.
    pub fn new(ghosts: &'a mut FastArray<T>, callbacks: &'a mut C) -> Self {
        Self { ghosts, callbacks }
    }

    /// Keeps a ghost of the item `handoff` hands off
    /// ([`FastArray::keep_ghost`]), the callbacks hearing it.
    ///
    /// # Errors
    /// As [`FastArray::keep_ghost`].
    pub fn keep_ghost(&mut self, handoff: &[u8]) -> Result<ReplicationId, DecodeError> {
        self.ghosts.keep_ghost(handoff, self.callbacks)
    }

    /// Drops the ghost kept of item `id` ([`FastArray::drop_kept`]), the
    /// callbacks hearing it. Returns whether there was one.
    pub fn drop_kept(&mut self, id: ReplicationId) -> bool {
        self.ghosts.drop_kept(id, self.callbacks)
    }
}

impl<T: Replicate + Clone, C: Callbacks<T>> FeedSink for GhostSink<'_, T, C> {
    fn is_follower(&self) -> bool {
        self.ghosts.is_ghost()
    }
    fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError> {
        self.ghosts.apply_feed_with(bytes, self.callbacks)
    }
    fn needs_feed_snapshot(&self) -> bool {
        self.ghosts.needs_feed_snapshot()
    }
    fn has_feed_gap(&self) -> bool {
        self.ghosts.has_feed_gap()
    }
    fn needs_feed_snapshot_from(&self, shard: ShardId) -> bool {
        self.ghosts.needs_feed_snapshot_from(shard)
    }
    fn has_feed_gap_from(&self, shard: ShardId) -> bool {
        self.ghosts.has_feed_gap_from(shard)
    }
}
