//! [`FastArray`]: the whole public surface of a replicated array, each
//! method delegating to the part that owns its rules — the items
//! (`store`), the sending side (`send`) and the receiving side (`receive`).

use core::cmp::Ordering;
use core::fmt;

use crate::changeset::Changeset;
use crate::history::History;
use crate::id::{ReplicationId, ReplicationKey};
use crate::iter::{Ids, Iter, IterMut};
use crate::receive_state::mirror::Mirror;
use crate::replicate::Replicate;
use crate::send::sender::Sender;
use crate::store::{ItemMut, Store};

pub(crate) use limits::read_whole;
pub use relay::FeedReport;
pub use scope::ScopeMut;

mod as_field;
mod delta;
#[cfg(test)]
mod follow_tests;
mod ghost;
#[cfg(test)]
mod in_place_tests;
mod limits;
mod mirror_state;
mod owner;
mod relay;
mod role;
mod scope;
mod settle;
mod shard;
#[cfg(test)]
mod shared_tests;
mod snapshot;
mod wire_eq;
mod write_many;

/// A collection of replicated items, each with a [`ReplicationId`] that
/// never changes and a [`ReplicationKey`] bumped when it really changes.
///
/// Items live contiguously in a `Vec` (iteration is a slice walk); an id →
/// position map finds them by id. Mutate freely during a frame — [`push`],
/// [`remove`], [`get_mut`], [`retain`], [`swap`], [`sort_by`] — then call
/// [`commit`] once per tick. Commit works out, in time proportional to the
/// items touched this frame (not to [`len`]), which items were added,
/// removed and changed, with a mask of the replicated fields that changed.
///
/// There is no `mark_dirty` to forget: [`get_mut`] returns an [`ItemMut`]
/// guard that keeps a copy of the item the first time it is written in a
/// frame, and commit compares against that copy. A write that leaves every
/// replicated field equal is not a change and bumps no key. Order is not
/// replicated: [`swap`], [`sort_by`] and the slot moves done by [`remove`]
/// never count as changes.
///
/// # Authority or mirror
///
/// The same type is the client's mirror. An array is either an
/// *authority* — a server's array: it has items or commits of its own and
/// writes deltas — or a *mirror* — a client's array: it follows an
/// authority through [`apply_delta`] and has no changes of its own, since
/// the next delta would overwrite them (a local [`push`] would take an id
/// the server hands out to another item). [`FastArray::mirror`] and
/// [`from_snapshot`] make mirrors; a [`new`] array becomes an authority at
/// its first [`push`], [`commit`] or write, and a mirror when a delta is
/// first applied to it ([`is_mirror`] tells which). Each side refuses the
/// other's work: local changes to a mirror ([`push`], [`get_mut`],
/// [`iter_mut`], [`remove`], [`retain`], [`clear`], [`commit`]) panic, and
/// its writes return [`SendError::NotAnAuthority`](crate::SendError::NotAnAuthority); a delta or snapshot
/// applied to an authority returns [`DecodeError::NotAMirror`](crate::DecodeError::NotAMirror) and
/// changes nothing. Reordering ([`swap`], [`sort_by`]) is local to each
/// side and allowed on both: order is never replicated.
///
/// ```
/// use fastarray_core::{FastArray, FieldMask};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Agent { hp: u8, ammo: u16 }
///
/// let mut agents = FastArray::new();
/// let a = agents.push(Agent { hp: 10, ammo: 50 });
/// let b = agents.push(Agent { hp: 20, ammo: 0 });
/// assert_eq!(agents.commit().added(), [a, b]);
///
/// agents.get_mut(a).unwrap().ammo -= 1; // recorded by the guard
/// agents.get_mut(b).unwrap().hp = 20;   // same value: not a change
/// agents.sort_by(|x, y| x.hp.cmp(&y.hp)); // reordering: not a change
/// let changes = agents.commit();
/// assert_eq!(changes.changed(), [(a, FieldMask::single(1))]);
/// assert!(changes.added().is_empty() && changes.removed().is_empty());
/// ```
///
/// # Relays
///
/// A third role serves clients for a server it follows, as UE5's
/// multi-server proxy does: a [`relay`](FastArray::relay). The server
/// writes its *feed* once a frame for all its relays
/// ([`write_feed`](FastArray::write_feed): what the commit changed, every
/// field, owners included) and a whole copy for a relay that joins or
/// must resync ([`write_feed_snapshot`](FastArray::write_feed_snapshot)).
/// The relay applies them ([`apply_feed`](FastArray::apply_feed)) in
/// order, whatever order they come in, committing each as a frame of its
/// own; it then writes deltas, snapshots and scopes for its own
/// connections exactly as an authority does, with the server's ids, so a
/// client cannot tell it from the server. Its own changes panic, as a
/// mirror's do; [`set_owner`](FastArray::set_owner) returns
/// [`SendError::Relay`](crate::SendError::Relay).
///
/// # Shards and handoff
///
/// A world too large for one process is split across *shards*, as
/// BigWorld splits its space into cells: each is an array made with
/// [`shard`](FastArray::shard), the authority of the items in its region,
/// pushing ids from a range of its own ([`ShardId`](crate::ShardId)). An
/// item that crosses into another shard's region is handed off
/// ([`hand_off`](FastArray::hand_off): a message with its id, owner and
/// every field, and the item leaves this shard) and adopted there
/// ([`adopt`](FastArray::adopt)), keeping its id. A relay that follows
/// every shard's feed merges them into one world for its clients, in which
/// a handed-off item is a change (or nothing), never a removal and an add,
/// whichever shard's feed it hears first. Shards serve their clients
/// through relays only: their own writes for clients return
/// [`SendError::ShardClients`](crate::SendError::ShardClients).
///
/// # Ghosts
///
/// A shard's game logic sees across its borders through *ghosts*:
/// read-only copies of a neighbour's items near the border, as BigWorld's
/// cells hold ghosts of their neighbours' entities. The shard whose items
/// they are keeps a [`GhostFeed`](crate::GhostFeed) per neighbour and
/// writes it once a commit ([`write_ghost_feed`](FastArray::write_ghost_feed)),
/// with a filter that says which items are within the neighbour's reach:
/// an item comes in, changes and leaves as it walks, and leaves when it is
/// removed or handed off (the shard that adopts it ghosts it back if it is
/// still near). The neighbour holds them in a [`ghost`](FastArray::ghost)
/// array that applies the feed ([`apply_feed`](FastArray::apply_feed)) and
/// joins, or resyncs, from [`write_ghost_snapshot`](FastArray::write_ghost_snapshot).
/// A ghost holds every field but the `owner_only` ones (a ghost is
/// nobody's); the others are `Default`. A ghost array panics on changes of
/// its own and refuses writes ([`SendError::Ghost`](crate::SendError::Ghost))
/// and clients' messages ([`DecodeError::Ghost`](crate::DecodeError::Ghost)).
/// Its game hears the ghosts come, change and go through
/// [`apply_feed_with`](FastArray::apply_feed_with) and the
/// [`Callbacks`](crate::Callbacks) a client's game implements. Items with
/// `#[replicate(array)]` fields are ghosted arrays and all, as they are
/// relayed and handed off.
///
/// [`push`]: FastArray::push
/// [`remove`]: FastArray::remove
/// [`get_mut`]: FastArray::get_mut
/// [`retain`]: FastArray::retain
/// [`swap`]: FastArray::swap
/// [`sort_by`]: FastArray::sort_by
/// [`commit`]: FastArray::commit
/// [`len`]: FastArray::len
/// [`apply_delta`]: FastArray::apply_delta
/// [`from_snapshot`]: FastArray::from_snapshot
/// [`new`]: FastArray::new
/// [`is_mirror`]: FastArray::is_mirror
/// [`iter_mut`]: FastArray::iter_mut
/// [`clear`]: FastArray::clear
pub struct FastArray<T> {
    /// The items, and what this frame did to them.
    store: Store<T>,
    /// Sending side: the history ring and the writer's caches, from the
    /// first commit or write on.
    sender: Option<Box<Sender>>,
    /// Receiving side: newest frame applied and tombstones, from the first
    /// message applied on.
    mirror: Option<Box<Mirror>>,
}

/// A copy of the items and of the history (a clone of an array inside an
/// item, written back in its place in the same frame, is an edit of it).
impl<T: Clone> Clone for FastArray<T> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            sender: self.sender.as_ref().map(|s| Box::new(s.for_clone())),
            mirror: self.mirror.clone(),
        }
    }
}

impl<T> Default for FastArray<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FastArray<T> {
    /// An empty array: a server's authority from its first [`push`](Self::push)
    /// or [`commit`](Self::commit) on, or a client's mirror from the first
    /// delta applied to it (see [`mirror`](Self::mirror)).
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty array with room for `capacity` items.
    pub fn with_capacity(capacity: usize) -> Self {
        Self::from_store(Store::with_capacity(capacity))
    }

    /// Its items.
    pub(crate) fn store(&self) -> &Store<T> {
        &self.store
    }

    /// An array of these items, with no sending or receiving side yet.
    pub(crate) fn from_store(store: Store<T>) -> Self {
        Self {
            store,
            sender: None,
            mirror: None,
        }
    }

    /// A server's array of these items, restored from a save: an
    /// authority (it refuses deltas applied to it), with no connection,
    /// its items `owned` owned by their clients as of the save's commit.
    #[cfg(feature = "serde")]
    pub(crate) fn restored(
        store: Store<T>,
        owned: impl Iterator<Item = (ReplicationId, u64)>,
    ) -> Self {
        let mut sender = Box::<Sender>::default();
        for (id, owner) in owned {
            sender.owners.restore(id, owner);
        }
        Self {
            sender: Some(sender),
            ..Self::from_store(store)
        }
    }

    /// Number of items.
    #[inline]
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether there are no items.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// Adds an item at the end and returns its new id.
    ///
    /// # Panics
    /// On a [mirror](Self::is_mirror) (its ids are the server's). After
    /// 2⁶⁴ pushes to one array, because ids are never reused.
    #[track_caller]
    pub fn push(&mut self, value: T) -> ReplicationId {
        self.expect_authority("FastArray::push");
        self.store.push(value)
    }

    /// The item with this id.
    #[inline]
    pub fn get(&self, id: ReplicationId) -> Option<&T> {
        self.store.get(id)
    }

    /// Whether an item has this id.
    #[inline]
    pub fn contains(&self, id: ReplicationId) -> bool {
        self.store.position(id).is_some()
    }

    /// The item's version: bumped by each commit that found it changed.
    pub fn key(&self, id: ReplicationId) -> Option<ReplicationKey> {
        Some(self.store.slot(self.store.position(id)?).key)
    }

    /// The array's version: bumped by each commit that found any add,
    /// remove or change.
    pub fn array_key(&self) -> ReplicationKey {
        self.store.array_key()
    }

    /// Number of commits so far (the frame the last [`commit`](Self::commit) ended).
    pub fn frame(&self) -> u64 {
        self.store.frame()
    }

    /// The changeset of the last commit (empty before the first).
    pub fn last_changeset(&self) -> &Changeset {
        static NONE: Changeset = Changeset::EMPTY;
        let history = self.sender.as_deref().map(|sender| &sender.history);
        history.and_then(History::newest).unwrap_or(&NONE)
    }

    /// Whether anything was pushed, removed or written through a guard
    /// since the last commit (writes that restored equal values included),
    /// or an item's owner set ([`set_owner`](Self::set_owner)).
    pub fn has_uncommitted_work(&self) -> bool {
        match self.sender.as_deref() {
            Some(sender) => sender.has_uncommitted_work(&self.store),
            None => self.store.has_uncommitted_work(),
        }
    }

    /// Removes the item and returns it. O(1): the last item moves into its
    /// place, like [`Vec::swap_remove`] (positions are not replicated; use
    /// [`retain`](Self::retain) to remove while keeping the order).
    ///
    /// # Panics
    /// On a [mirror](Self::is_mirror): only its server removes items.
    #[track_caller]
    pub fn remove(&mut self, id: ReplicationId) -> Option<T> {
        self.expect_authority("FastArray::remove");
        self.store.remove(id)
    }

    /// Keeps the items for which `keep(id, &item)` is true, in order, and
    /// removes the rest. O(len).
    ///
    /// # Panics
    /// On a [mirror](Self::is_mirror): only its server removes items.
    #[track_caller]
    pub fn retain(&mut self, keep: impl FnMut(ReplicationId, &T) -> bool) {
        self.expect_authority("FastArray::retain");
        self.store.retain(keep);
    }

    /// Removes every item.
    ///
    /// # Panics
    /// On a [mirror](Self::is_mirror): only its server removes items (to
    /// start a client over, replace it with a new [`mirror`](Self::mirror)).
    #[track_caller]
    pub fn clear(&mut self) {
        self.expect_authority("FastArray::clear");
        self.store.retain(|_, _| false);
    }

    /// Exchanges the positions of two items. Returns `false` (and does
    /// nothing) if either id is absent. Never a change, so a mirror may
    /// reorder its items too.
    pub fn swap(&mut self, a: ReplicationId, b: ReplicationId) -> bool {
        self.store.swap(a, b)
    }

    /// Sorts the items with a comparator (stable). Never a change, so a
    /// mirror may sort its items too.
    pub fn sort_by(&mut self, compare: impl FnMut(&T, &T) -> Ordering) {
        self.store.sort_by(compare);
    }

    /// The items in their current order, with their ids.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter::new(self.store.slots())
    }

    /// The ids in the items' current order.
    ///
    /// The iterator keeps the array borrowed only while it is used, so an
    /// id taken from it can be used to mutate at once:
    ///
    /// ```
    /// # use fastarray_core::FastArray;
    /// # use fastarray_derive::Replicate;
    /// # #[derive(Replicate, Clone, Debug, PartialEq)]
    /// # #[replicate(crate = "fastarray_core")]
    /// # struct Unit { hp: u16 }
    /// let mut units = FastArray::new();
    /// units.push(Unit { hp: 10 });
    /// if let Some(id) = units.ids().next() {
    ///     units.get_mut(id).unwrap().hp = 0;
    /// }
    /// assert_eq!(units.iter().next().unwrap().1.hp, 0);
    /// ```
    pub fn ids(&self) -> Ids<'_, T> {
        Ids::new(self.store.slots())
    }
}

impl<T: Replicate> FastArray<T> {
    /// The item with this id, behind a guard that records its pre-image the
    /// first time it is written this frame (reads through the guard cost
    /// nothing). [`commit`](Self::commit) compares against that pre-image.
    ///
    /// The pre-image is a copy of the item's replicated fields into a
    /// buffer the array keeps from frame to frame. Commit brings each
    /// buffer up to its item's new value (copying the fields that changed),
    /// so when the frame's writes meet the items in the same order as the
    /// last frame's (a loop over the same items, by `get_mut` or
    /// [`iter_mut`](Self::iter_mut)), each buffer already holds its item and
    /// the first write copies nothing: a `String` field is copied when it
    /// changes, not every frame.
    ///
    /// For an item type with `#[replicate(array)]` fields the pre-image is
    /// the plain fields only: the arrays inside
    /// track their own changes, and this array's commit commits them.
    /// Edit those arrays in place: an array replaced by another one (a new
    /// `FastArray`, another item's, an old copy) would restart its frames
    /// and ids while every mirror keeps the old array's, so
    /// [`commit`](Self::commit) refuses it with a panic. An edited clone of
    /// the array written back in the same frame is an edit.
    ///
    /// # Panics
    /// On a [mirror](Self::is_mirror): the next delta would overwrite the
    /// change.
    #[track_caller]
    pub fn get_mut(&mut self, id: ReplicationId) -> Option<ItemMut<'_, T>>
    where
        T: Clone,
    {
        self.expect_authority("FastArray::get_mut");
        self.store.get_mut(id)
    }

    /// Every item with its id, in the items' order, each behind a guard
    /// that records its change exactly as [`get_mut`](Self::get_mut)'s does
    /// (a pre-image on the first write, nothing for an item only read). The
    /// guards may be kept alive together.
    ///
    /// Costs O(len) to start (one pre-image cell per item not yet written
    /// this frame, in a list the array keeps from frame to frame) and
    /// nothing per item beyond what [`get_mut`](Self::get_mut) costs: no
    /// allocation, and an item is copied only when first written, and not
    /// even then if the last frame's loop wrote it too (see `get_mut`).
    ///
    /// ```
    /// use fastarray_core::{FastArray, FieldMask};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16, poisoned: bool }
    ///
    /// let mut units = FastArray::new();
    /// let a = units.push(Unit { hp: 10, poisoned: true });
    /// let b = units.push(Unit { hp: 10, poisoned: false });
    /// units.commit();
    ///
    /// for (_, mut unit) in units.iter_mut() {
    ///     if unit.poisoned {
    ///         unit.hp -= 1; // recorded: only `hp` of `a` changed
    ///     }
    /// }
    /// assert_eq!(units.commit().changed(), [(a, FieldMask::single(0))]);
    /// # let _ = b;
    /// ```
    ///
    /// # Panics
    /// On a [mirror](Self::is_mirror): the next delta would overwrite the
    /// changes.
    #[track_caller]
    pub fn iter_mut(&mut self) -> IterMut<'_, T>
    where
        T: Clone,
    {
        self.expect_authority("FastArray::iter_mut");
        let (slots, cells) = self.store.lend();
        IterMut::new(slots, cells)
    }

    /// Ends the frame: works out what was added, removed and changed since
    /// the last commit, bumps the keys of items that really changed, and
    /// returns the changeset. Costs O(items touched this frame).
    ///
    /// Items with `#[replicate(array)]` fields have those arrays committed
    /// too, when the item was added or written through a guard this frame
    /// (the only ways to reach them): an item whose arrays changed is listed
    /// in [`Changeset::arrays_changed`] and its key is bumped.
    ///
    /// # Panics
    /// If an `#[replicate(array)]` field of an item written through a guard
    /// this frame was replaced by another `FastArray` (see
    /// [`get_mut`](Self::get_mut)): mirrors could not follow it. On a
    /// [mirror](Self::is_mirror), which has no changes of its own.
    #[track_caller]
    pub fn commit(&mut self) -> &Changeset {
        self.expect_authority("FastArray::commit");
        self.commit_frame()
    }

    /// Commits the frame's work: [`commit`](Self::commit) without the
    /// check (a relay commits what its feed brought).
    fn commit_frame(&mut self) -> &Changeset {
        let sender = Sender::made(&mut self.sender);
        let moved = sender.owners.commit();
        // The frame's shared message is written as the items are diffed,
        // if one is likely wanted and no change of owner adds entries.
        let frame = self.store.frame() + 1;
        // And the changed fields that scoped connections follow are
        // encoded, if they see at least half of the items (else most would
        // be encoded for no one); an item with arrays inside has them
        // planned with it.
        let watched = sender.scopes.watched();
        let spans = T::ARRAY_FIELDS == 0 && moved.is_empty() && 2 * watched >= self.store.len();
        sender.changed.begin(if spans { frame } else { 0 });
        let mut body = (moved.is_empty())
            .then(|| sender.body.begin::<T>(frame))
            .flatten();
        let changed = &mut sender.changed;
        let entry = |id, value: &T, mask| {
            if let Some(body) = body.as_mut() {
                body.entry(id, value, mask);
            }
            if spans {
                changed.make(id, value, mask);
            }
        };
        self.store.commit(&mut sender.history, &moved, entry);
        // Taken whole, so that no borrow of the sender outlives it.
        if let Some(body) = { body } {
            body.finish();
        }
        if spans {
            sender.changed.finish(&sender.history);
        }
        // Only a shard's ids have a range (an array of one process has
        // 2^64 of them).
        if let (Some(tenures), Some(changes)) =
            (sender.tenures.as_deref_mut(), sender.history.newest_mut())
        {
            let shard = tenures.shard();
            assert!(
                self.store.next_id() <= shard.ids().end,
                "{shard} pushed past the end of its ids (2^40 of them)"
            );
            tenures.commit(changes);
        }
        if let Some(changes) = sender.history.newest() {
            sender.owners.forget(&changes.removed);
            sender.owners.forget(&changes.vanished);
            sender.scopes.route(changes);
        }
        self.last_changeset()
    }

    /// A replicated object's array (see [`Replicated`](crate::Replicated)):
    /// `value` as item `#0`, pushed on a server; on a mirror, held as
    /// applied at frame 0, so that anything the server sends is newer. Its
    /// mirror refuses messages that remove an item or name another.
    pub(crate) fn for_object(value: T, mirror: bool) -> Self {
        let mut array = Self::new();
        if mirror {
            array.store.insert_replicated(
                ReplicationId::from_raw(0),
                0,
                value,
                crate::mask::FieldMask::all(T::FIELD_COUNT),
            );
            array.mirror = Some(Box::new(Mirror::object()));
        } else {
            array.store.push(value);
        }
        array
    }
}

/// Equal when both hold the same ids with equal items, in any order.
impl<T: PartialEq> PartialEq for FastArray<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(id, item)| other.get(id) == Some(item))
    }
}

impl<T: fmt::Debug> fmt::Debug for FastArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of an array itself, which every item with array fields
    /// carries once per field (`WIRE.md`).
    #[test]
    fn documented_size_holds() {
        assert_eq!(core::mem::size_of::<FastArray<()>>(), 240);
    }
}
