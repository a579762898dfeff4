//! [`SendState`]: one connection's send state for one array — what its
//! client may hold (the view), what it still needs (pending work), the
//! packets in flight (the retirement list) — and the rules that tie them:
//! what an acknowledgement makes known, what a loss puts back, what a
//! frame's changes make due, and in which form.
//!
//! The state knows nothing of the items' type: ids, keys, field masks and
//! frames. The writer asks it what is due and tells it what was written.

use core::num::NonZeroU64;

use hashbrown::HashMap;

pub(crate) mod audience;
mod catch_up;
mod due;
pub(crate) mod fate;
pub(crate) mod follow;
pub(crate) mod ghost_feed;
pub(crate) mod handles;
pub(crate) mod pending;
pub(crate) mod retirement;
pub(crate) mod routed;
pub(crate) mod scope;
pub(crate) mod scopes;
mod scoping;
pub(crate) mod seen;
pub(crate) mod stats;
pub(crate) mod tenures;
pub(crate) mod view;
pub(crate) mod watchers;

pub use ghost_feed::GhostFeed;
pub use scope::{MAX_DETAIL, ScopeExit};
pub use stats::{DeltaStats, Oversized};

use crate::error::SendError;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use pending::{PendingMap, Work};
use retirement::Retirement;
use scope::Scope;
use seen::Seen;
use view::Views;

/// How many ids a loop that looks each up in turn reads ahead (see
/// `Views::warm`).
pub(crate) const LOOKAHEAD: usize = 16;

/// The sending side of one connection for one array (or replicated object).
///
/// Create one per client with [`SendState::new`] (a client that holds
/// nothing yet) or with
/// [`FastArray::write_snapshot_for`](crate::FastArray::write_snapshot_for)
/// (a client that joins with a snapshot), pass it to
/// [`FastArray::write_delta`](crate::FastArray::write_delta) every tick, and
/// tell it what the transport learned: [`on_ack`](Self::on_ack) when a
/// packet arrived, [`on_loss`](Self::on_loss) when it did not. Packet ids
/// are yours (a wrapping `u16` sequence widened to `u32` works): they are
/// matched exactly, never compared for order. Acks and losses that name no
/// packet in flight (duplicates, stale reports) are ignored.
///
/// Nothing is resent on a timer: a change goes out once, and again only
/// when the packet that carried it is reported lost (or, having never been
/// reported, is [`HISTORY_LEN`](crate::HISTORY_LEN) frames old).
///
/// Acknowledgements must come back within [`HISTORY_LEN`](crate::HISTORY_LEN)
/// frames of the packet's frame: a later one counts as a loss, since the
/// mirror ignores messages that old and the sender cannot tell when the
/// packet arrived. A link whose round trip is always longer than that (in
/// commits) keeps the mirror up to date but never settles; see `WIRE.md`.
///
/// # Memory
/// Per item the client knows at rest (no packet in flight carries it, no
/// scope marks it) on a connection naming items by ids, one bit, in words
/// of 64 consecutive ids; on such a connection with no scope, one bit too
/// per item whose one packet in flight added it or removed it from rest
/// (a caught-up connection keeps about 0.3 bytes per item at 10 000 items
/// and 0.2 at 100 000, spare capacity included: `BENCHMARKS.md`). Per other
/// item the client may hold (or,
/// with a scope, in scope), one 16-byte hash map entry (id, state,
/// acknowledged key, records in flight, the scope's priority and detail
/// level), and 48 bytes more while two or more packets that carried it are
/// in flight; per packet in flight, 56 bytes plus 32 per item it carried (a frame's shared message
/// carries entries only for its adds and removals); per item with unsent
/// work, a 32-byte list entry and two to four 4-byte slots of the table
/// that finds it; per item with `#[replicate(array)]` fields that the
/// client may hold, one inner `SendState` (456 bytes before its own
/// entries) per array field. Hash maps add one control byte per bucket and
/// keep between 1 and 2 buckets per entry; the pending list, like them,
/// shrinks back after a burst.
/// Nothing here grows with items the client does not hold.
#[derive(Clone, Debug)]
pub struct SendState {
    /// What the client may hold, per id.
    views: Views,
    /// Work not yet written, per id.
    pending: PendingMap,
    /// The next frame of the history ring to merge into `pending`.
    cursor: u64,
    /// The retirement list: one record per packet in flight.
    retirement: Retirement,
    /// Changed fields that lost records carried: which of them later
    /// records carried is known only from the history ring, so they wait
    /// here for the next catch-up (see
    /// [`resolve_lost_fields`](Self::resolve_lost_fields)).
    lost_fields: Vec<LostFields>,
    /// Lost records of frames' shared messages, whose changed fields the
    /// next catch-up reads from the history ring (see
    /// [`resolve_lost_shared`](Self::resolve_lost_shared)).
    lost_shared: Vec<LostShared>,
    /// The newest frame carried by a packet the client acknowledged.
    acked_frame: Option<u64>,
    /// The newest frame a message was written for.
    written_frame: u64,
    /// Every field of the item type (learned from the first write).
    all_fields: FieldMask,
    /// For items with `#[replicate(array)]` fields that the client may
    /// hold: one send state per array field. Their messages travel inside
    /// this connection's packets, so this state passes on the fate of each
    /// packet that carried them (never anyone else's), and drops them when
    /// the item's removal is acknowledged.
    inner: HashMap<ReplicationId, Vec<SendState>>,
    /// The items the client may see, once the connection has a scope
    /// ([`FastArray::scope`](crate::FastArray::scope)); `None`: every item.
    scope: Option<Box<Scope>>,
    /// The client this connection serves, as item ownership names it
    /// ([`set_client`](Self::set_client)); `None`: it owns nothing.
    client: Option<u64>,
    /// The newest records, of frames' shared messages, if the view has not
    /// taken their entries yet (see [`record_shared`](Self::record_shared)).
    untaken: Option<Untaken>,
}

/// The records in flight whose entries the view has not taken yet: every
/// one from `first` on (the records of frames' shared messages written
/// since the view last took one).
#[derive(Clone, Copy, Debug)]
struct Untaken {
    /// The sequence number of the first of them.
    first: NonZeroU64,
    /// The oldest record in flight when the first was written: no later
    /// one's is older, so the view, taking any of them, is trimmed as of
    /// this one ([`trim`](view::Views::trim), which only ends what no
    /// record that old can need).
    oldest: u64,
}

/// Fields of an item that a lost record of frame `frame` carried, due
/// since `since` (see [`SendState::resolve_lost_fields`]).
#[derive(Clone, Copy, Debug)]
struct LostFields {
    id: ReplicationId,
    fields: FieldMask,
    frame: u64,
    since: u64,
}

/// A lost record of frame `frame`'s shared message (sequence number `seq`),
/// which carried the changed fields of `items` items (see
/// [`SendState::resolve_lost_shared`]). Its work was that frame's changes,
/// so it was due since that frame.
#[derive(Clone, Copy, Debug)]
struct LostShared {
    frame: u64,
    seq: u64,
    items: u32,
}

/// The items of an array as a resynchronisation compares them: what the
/// storage tells the connection state, which knows nothing of their type.
pub(crate) trait Holdings {
    /// Calls `visit` with each item's id, key and the frame of its last
    /// change.
    fn each_key(&self, visit: &mut dyn FnMut(ReplicationId, ReplicationKey, u64));
    /// Whether the array holds `id`.
    fn holds(&self, id: ReplicationId) -> bool;
    /// Item `id`'s key and the frame of its last change, if the array
    /// holds it.
    fn key_of(&self, id: ReplicationId) -> Option<(ReplicationKey, u64)>;
}

/// A removal due: the item is gone, or (`exit`) it left the client's
/// scope.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Removal {
    pub(crate) id: ReplicationId,
    /// Its name on the wire: the id, or the connection's handle for it.
    pub(crate) wire: ReplicationId,
    /// The frame it first became due.
    pub(crate) since: u64,
    /// Whether the item still exists and only left the scope.
    pub(crate) exit: bool,
}

impl Removal {
    /// The work the removal does.
    pub(crate) fn work(&self) -> Work {
        if self.exit { Work::Exit } else { Work::Remove }
    }
}

/// The fields of an item seen as `seen` that a connection with `scope` is
/// sent, of `allowed` (those the audience rule lets it be sent: see
/// `audience`): all of them without a scope. Written once, for every path
/// that writes a message.
fn visible(scope: Option<&Scope>, seen: Option<Seen>, allowed: FieldMask) -> FieldMask {
    scope.map_or(allowed, |scope| scope.visible(seen) & allowed)
}

/// Work due for a live item, in the form the view allows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due {
    pub(crate) id: ReplicationId,
    /// Its name on the wire: the id, or the connection's handle for it.
    pub(crate) wire: ReplicationId,
    /// The item's position in the array's storage.
    pub(crate) pos: usize,
    pub(crate) work: Work,
    /// The fields a whole entry for it carries: those the connection may
    /// see.
    pub(crate) whole: FieldMask,
    /// The frame the work first became due.
    pub(crate) since: u64,
    /// Whether the entry would carry only the item's array deltas (its
    /// plain fields go only because the client may not hold the item yet,
    /// or none changed): it is written only if those deltas carry
    /// something.
    pub(crate) arrays_only: bool,
}

impl Due {
    /// How urgent the work is at `frame` for a connection that gives the
    /// item `priority`: the priority times the frames it has waited
    /// (counting the current one), so a lower priority waits longer but
    /// gets its turn.
    pub(crate) fn urgency(&self, frame: u64, priority: f32) -> f32 {
        priority * (frame.saturating_sub(self.since) + 1) as f32
    }
}

impl Default for SendState {
    fn default() -> Self {
        Self::new()
    }
}

impl SendState {
    /// A connection whose client holds nothing yet.
    pub fn new() -> Self {
        Self {
            views: Views::default(),
            pending: PendingMap::default(),
            cursor: 1,
            retirement: Retirement::default(),
            lost_fields: Vec::new(),
            lost_shared: Vec::new(),
            acked_frame: None,
            written_frame: 0,
            all_fields: FieldMask::EMPTY,
            inner: HashMap::new(),
            scope: None,
            client: None,
            untaken: None,
        }
    }

    /// Names the client this connection serves, for item ownership: it is
    /// sent the `#[replicate(owner_only)]` fields of the items owned by
    /// `client` ([`FastArray::set_owner`](crate::FastArray::set_owner)),
    /// and not their `#[replicate(skip_owner)]` fields; of every other
    /// item, the reverse. Any number the application uses for its clients
    /// will do (renet's `ClientId`, a player's account number); give every
    /// connection of one client the same number, and no two clients the
    /// same. A connection without one owns nothing.
    ///
    /// # Errors
    /// [`SendError::ClientAfterWrite`] once something was written for the
    /// connection (or its client joined by snapshot) under another client
    /// (or none): what its client holds was chosen by that one. Set it
    /// first.
    ///
    /// ```
    /// use fastarray_core::SendState;
    ///
    /// let mut state = SendState::new();
    /// state.set_client(42).unwrap();
    /// assert_eq!(state.client(), Some(42));
    /// ```
    pub fn set_client(&mut self, client: u64) -> Result<(), SendError> {
        if !self.may_serve(client) {
            return Err(SendError::ClientAfterWrite);
        }
        self.client = Some(client);
        Ok(())
    }

    /// Whether [`set_client`](Self::set_client) may name `client`: it
    /// already serves it, or nothing was written yet.
    pub(crate) fn may_serve(&self, client: u64) -> bool {
        self.client == Some(client) || self.is_fresh()
    }

    /// Whether nothing was written for the connection and its client holds
    /// nothing (it did not join by snapshot either): what it is sent next
    /// is its first message.
    fn is_fresh(&self) -> bool {
        self.written_frame == 0 && self.views.len() == 0 && self.retirement.is_empty()
    }

    /// The client this connection serves ([`set_client`](Self::set_client)),
    /// if it was named.
    pub fn client(&self) -> Option<u64> {
        self.client
    }

    /// Packets written and not yet acknowledged or lost.
    pub fn packets_in_flight(&self) -> usize {
        self.retirement.len()
    }

    /// Items with work not yet written (after the last write's merge),
    /// counting once each field set a lost packet carried that waits for
    /// the next write to tell whether a later packet carried it too; with
    /// a scope, counting each item whose changes the array handed since
    /// the last write, which the next write may still find withheld by
    /// the item's detail level, or superseded by its exit.
    pub fn pending_items(&self) -> usize {
        let shared = self.lost_shared.iter().map(|lost| lost.items as usize);
        let lost = self.lost_fields.len() + shared.sum::<usize>();
        self.pending.len() + lost + self.followed_items()
    }

    /// Whether something is due that no packet in flight carries: work
    /// pending, changes kept to follow, or fields of lost records waiting
    /// to be resolved.
    fn has_work_due(&self) -> bool {
        !(self.pending.is_empty()
            && self.lost_fields.is_empty()
            && self.lost_shared.is_empty()
            && !self.follows_any())
    }

    /// Items the client may hold (known, or with an add or removal in flight).
    pub fn client_items(&self) -> usize {
        // The entries of the records the view has not taken yet: an item
        // new to it is one more (an item's add and removal are in two
        // records, so no item is counted twice).
        let untaken = self.untaken.map_or(u64::MAX, |untaken| untaken.first.get());
        let new = self.retirement.since_seq(untaken).map(|record| {
            let entries = record.entries.iter();
            entries
                .filter(|entry| matches!(entry.work(), Work::Add { .. }))
                .filter(|entry| !self.views.contains(entry.id))
                .count()
        });
        self.views.len() + new.sum::<usize>()
    }

    /// Send states kept for arrays inside items (`#[replicate(array)]`
    /// fields of the items the client may hold), one per array field.
    pub fn inner_arrays(&self) -> usize {
        self.inner.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::pending::Pending;
    use super::retirement::{Record, RecordEntry};
    use super::*;

    /// The per-item and per-entry sizes stated in the docs and `WIRE.md`.
    #[test]
    fn documented_sizes_hold() {
        assert_eq!(core::mem::size_of::<RecordEntry>(), 32);
        assert_eq!(core::mem::size_of::<(ReplicationId, Pending)>(), 32);
        assert_eq!(core::mem::size_of::<Record>(), 56);
        assert_eq!(
            core::mem::size_of::<routed::Routed>(),
            32,
            "a change handed to a scope, as the routing writes one per watcher"
        );
        assert_eq!(
            core::mem::size_of::<SendState>(),
            456,
            "per array inside an item"
        );
    }
}
