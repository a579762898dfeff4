//! [`SendState`]: one connection's protocol state for one array — what its
//! client may hold (the view), what it still needs (pending work), the
//! packets in flight (the retirement list) — and the rules that tie them:
//! what an acknowledgement makes known, what a loss puts back, what a
//! frame's changes make due, and in which form.
//!
//! The state knows nothing of the items' type: ids, keys, field masks and
//! frames. The writer asks it what is due and tells it what was written.

use hashbrown::HashMap;

use super::pending::{Pending, PendingMap, Work};
use super::retirement::{Record, RecordEntry, Retirement, SharedChanges};
use super::scope::{Scope, ScopeExit};
use super::seen::Seen;
use super::view::{Holding, View, Views, fields_work};
use crate::bits::BitWriter;
use crate::error::SendError;
use crate::history::History;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::wire::WINDOW;
use crate::wire::frame::{frame_bits, short_frame, write_frame};

/// How many changed ids a merge looks up in the view before queueing their
/// work.
const LOOKAHEAD: usize = 16;

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
/// Per item the client may hold (or, with a scope, in scope), one 16-byte
/// hash map entry (id, state, acknowledged key, records in flight, the
/// scope's priority and detail level), and 48 bytes more while two or more
/// packets that carried it are in flight; per packet in flight, 72 bytes plus 32 per item it carried (a frame's shared message
/// carries entries only for its adds and removals); per item with unsent
/// work, a 32-byte list entry and a 16-byte map entry; per item with
/// `#[replicate(array)]` fields that the client may hold, one inner
/// `SendState` (328 bytes before its own entries) per array field. Hash
/// maps add one control byte per bucket and keep between 1 and 2 buckets
/// per entry; the pending list, like them, shrinks back after a burst.
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
/// sent, of `all_fields`: every field without a scope. Written once, for
/// every path that writes a message.
fn visible(scope: Option<&Scope>, seen: Option<Seen>, all_fields: FieldMask) -> FieldMask {
    scope.map_or(all_fields, |scope| scope.visible(seen) & all_fields)
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
            acked_frame: None,
            written_frame: 0,
            all_fields: FieldMask::EMPTY,
            inner: HashMap::new(),
            scope: None,
        }
    }

    /// The transport delivered `packet`. Its content becomes known to the
    /// client. Returns whether a packet in flight had that id (a duplicate
    /// or stale ack returns `false` and changes nothing).
    ///
    /// A packet acknowledged after it fell out of the mirror's window
    /// ([`HISTORY_LEN`](crate::HISTORY_LEN) frames) was ignored by the
    /// mirror and is handled as lost.
    pub fn on_ack(&mut self, packet: u32) -> bool {
        let Some(record) = self.retirement.take(packet) else {
            return false;
        };
        self.ack_record(record);
        true
    }

    /// The transport gave up on `packet`. Whatever it carried that no later
    /// packet carries is due again. Returns whether a packet in flight had
    /// that id (a duplicate or stale report returns `false` and changes
    /// nothing).
    pub fn on_loss(&mut self, packet: u32) -> bool {
        match self.retirement.take(packet) {
            Some(record) => {
                self.retire_lost(record);
                true
            }
            None => false,
        }
    }

    /// Packets written and not yet acknowledged or lost.
    pub fn packets_in_flight(&self) -> usize {
        self.retirement.len()
    }

    /// Items with work not yet written (after the last write's merge),
    /// counting once each field set a lost packet carried that waits for
    /// the next write to tell whether a later packet carried it too.
    pub fn pending_items(&self) -> usize {
        self.pending.len() + self.lost_fields.len()
    }

    /// Whether something is due that no packet in flight carries: work
    /// pending, or fields of lost records waiting to be resolved.
    fn has_work_due(&self) -> bool {
        !(self.pending.is_empty() && self.lost_fields.is_empty())
    }

    /// Items the client may hold (known, or with an add or removal in flight).
    pub fn client_items(&self) -> usize {
        self.views.len()
    }

    /// Send states kept for arrays inside items (`#[replicate(array)]`
    /// fields of the items the client may hold), one per array field.
    pub fn inner_arrays(&self) -> usize {
        self.inner.values().map(Vec::len).sum()
    }

    /// Whether this connection has merged the changes of every frame up to
    /// `last_change`, written them, and seen every packet it wrote
    /// acknowledged: its client holds what the array held at that frame.
    /// The states of arrays inside items are not looked at (see
    /// [`each_inner`](Self::each_inner)).
    ///
    /// The state alone cannot answer "is the client up to date?": it does
    /// not know what the array committed since its last write, which is
    /// why the public question is
    /// [`FastArray::is_settled`](crate::FastArray::is_settled).
    pub(crate) fn has_delivered(&self, last_change: u64) -> bool {
        self.cursor > last_change
            && !self.has_work_due()
            && self.retirement.is_empty()
            && self
                .scope
                .as_ref()
                .is_none_or(|scope| !scope.has_returning(&self.views))
    }

    /// The send states of the arrays inside items the client may hold: per
    /// item, one per array field (none for an item whose arrays were empty
    /// when it joined with a snapshot).
    pub(crate) fn each_inner(&self) -> impl Iterator<Item = (ReplicationId, &[SendState])> {
        self.inner
            .iter()
            .map(|(&id, states)| (id, states.as_slice()))
    }

    // Joining with a snapshot.

    /// The state of a connection whose client holds exactly what a snapshot
    /// taken at `frame` held: [`hold`](Self::hold) each of its items next.
    pub(crate) fn after_snapshot(frame: u64, all_fields: FieldMask) -> Self {
        Self {
            cursor: frame + 1,
            // The client applied the snapshot, so short frames resolve.
            acked_frame: Some(frame),
            written_frame: frame,
            all_fields,
            ..Self::new()
        }
    }

    /// Records that the client holds item `id` at key `key` (from a
    /// snapshot), with `inner` the states of its arrays, if it has any.
    pub(crate) fn hold(&mut self, id: ReplicationId, key: ReplicationKey, inner: Vec<SendState>) {
        self.views.insert_known(id, key);
        if !inner.is_empty() {
            self.inner.insert(id, inner);
        }
    }

    // What the writer asks, in the order of a write.

    /// Whether `packet` names a packet in flight.
    pub(crate) fn has_in_flight(&self, packet: u32) -> bool {
        self.retirement.contains(packet)
    }

    /// The packets in flight, oldest first.
    pub(crate) fn in_flight(&self) -> impl Iterator<Item = u32> + '_ {
        self.retirement.packets()
    }

    /// Treats packets that are a whole window older than `frame` as lost:
    /// the mirror ignores them if they ever arrive.
    pub(crate) fn expire(&mut self, frame: u64) {
        while let Some(record) = self.retirement.take_expired(frame) {
            self.retire_lost(record);
        }
    }

    /// Chooses, before the connection's first message, how it names
    /// items on the wire: by handles if it has a scope (see
    /// `send::handles`), by ids otherwise. Once anything was written (or
    /// the client joined with a snapshot) the choice stays.
    pub(crate) fn choose_names(&mut self) {
        let fresh = self.written_frame == 0 && self.views.len() == 0 && self.retirement.is_empty();
        if fresh && self.scope.is_some() && !self.views.uses_handles() {
            self.views.start_handles();
        }
    }

    /// Whether the connection names items by handles.
    pub(crate) fn uses_handles(&self) -> bool {
        self.views.uses_handles()
    }

    /// How many frames before `frame` the handle `wire` was taken.
    pub(crate) fn handle_age(&self, wire: ReplicationId, frame: u64) -> u64 {
        self.views.handle_age(wire, frame)
    }

    /// Whether this connection can take frame `frame`'s shared message: it
    /// wrote everything up to the last frame (nothing due, no repair), its
    /// client knows every one of the `live_before` items the array held
    /// before `frame` and nothing else, and the frame goes in short form.
    /// Such a connection's message is the same bits as every other one's.
    pub(crate) fn in_sync(&self, frame: u64, live_before: usize) -> bool {
        self.cursor == frame
            && !self.has_work_due()
            && self.views.all_known()
            && self.views.len() == live_before
            && self.inner.is_empty()
            && self.scope.is_none()
            && short_frame(frame, self.acked_frame)
    }

    /// Brings the pending work up to `frame`: from the history ring when it
    /// reaches back to the cursor (O(changes)), else by comparing what the
    /// client may hold against `items` (O(items)). Returns whether it had
    /// to compare. `structure` is the item type's `Replicate::STRUCTURE`.
    pub(crate) fn catch_up(
        &mut self,
        history: &History,
        frame: u64,
        structure: FieldMask,
        items: &dyn Holdings,
    ) -> bool {
        let resynced = match history.since(self.cursor) {
            Some(frames) => {
                frames.for_each(|changes| self.merge_frame(changes, structure));
                false
            }
            None => {
                self.resync(items);
                true
            }
        };
        self.cursor = frame + 1;
        self.resolve_lost_fields((!resynced).then_some(history));
        resynced
    }

    /// [`catch_up`](Self::catch_up) for a connection with a scope: from
    /// `routed`, the changes of its items the array handed it since its
    /// last catch-up (O(changes in scope)), or, if the array dropped them
    /// (`None`: a window of frames went by), by comparing the items in
    /// scope against `items` (O(scope)). Items whose exit the client
    /// acknowledged before `frame` and that are in scope again become due
    /// whole.
    pub(crate) fn catch_up_scoped(
        &mut self,
        routed: Option<&[(ReplicationId, Work, u64)]>,
        frame: u64,
        structure: FieldMask,
        items: &dyn Holdings,
    ) -> bool {
        let resynced = match routed {
            Some(entries) => {
                for &(id, work, at) in entries {
                    self.merge_routed(id, work, at, structure);
                }
                false
            }
            None => {
                self.resync(items);
                true
            }
        };
        self.cursor = frame + 1;
        self.resolve_lost_fields(None);
        if let Some(scope) = self.scope.as_deref_mut() {
            let pending = &mut self.pending;
            scope.take_returning(&self.views, frame, &mut |id| {
                pending.queue(id, Work::Add { structural: true }, frame);
            });
        }
        resynced
    }

    /// Whether the connection's client may join by a snapshot, which
    /// holds every item with every field: not with a scope (see
    /// [`SendError::ScopedSnapshot`]).
    pub(crate) fn may_join_by_snapshot(&self) -> Result<(), SendError> {
        match self.scope {
            Some(_) => Err(SendError::ScopedSnapshot),
            None => Ok(()),
        }
    }

    // The scope.

    /// The connection's scope, if it has one.
    pub(crate) fn scope(&self) -> Option<&Scope> {
        self.scope.as_deref()
    }

    /// Whether item `id` is in the connection's scope (every item is,
    /// without one).
    pub(crate) fn sees(&self, id: ReplicationId) -> bool {
        self.scope.is_none() || self.views.seen(id).is_some()
    }

    /// Items in the connection's scope (none without one).
    pub(crate) fn scope_len(&self) -> usize {
        self.scope.as_deref().map_or(0, Scope::len)
    }

    /// The ids in the connection's scope, in no order (none without one).
    pub(crate) fn scope_ids(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.views.scope_ids()
    }

    /// The priority of item `id` for this connection (1 without a scope).
    pub(crate) fn priority(&self, id: ReplicationId) -> f32 {
        match self.scope {
            Some(_) => Scope::priority(&self.views, id),
            None => 1.0,
        }
    }

    /// Sets the priority of item `id`, if in scope; returns whether it is.
    pub(crate) fn set_priority(&mut self, id: ReplicationId, priority: f32) -> bool {
        self.scope.is_some() && Scope::set_priority(&mut self.views, id, priority)
    }

    /// Gives the connection a scope, empty: every item its client may hold
    /// leaves it as the scope's exit says (and unsent adds are dropped).
    /// The connection is caught up to `frame`. Returns the items frozen
    /// ([`ScopeExit::Persist`]), which the array must keep watching.
    pub(crate) fn set_scope(&mut self, scope: Scope, frame: u64) -> Vec<ReplicationId> {
        let persist = scope.exit() == ScopeExit::Persist;
        self.scope = Some(Box::new(scope));
        self.views.clear_scope();
        let unsent: Vec<ReplicationId> = self
            .pending
            .iter()
            .map(|&(id, _)| id)
            .filter(|&id| !self.views.contains(id))
            .collect();
        for id in unsent {
            self.forget(id);
        }
        let held: Vec<ReplicationId> = self
            .views
            .ids()
            .filter(|&id| self.views.get(id).is_some_and(|view| view.is_held()))
            .collect();
        for &id in &held {
            if persist {
                self.freeze(id, frame);
            } else {
                self.pending.queue(id, Work::Exit, frame);
            }
        }
        if persist { held } else { Vec::new() }
    }

    /// Puts item `id` in scope at `frame` (the connection caught up to
    /// it): the client gets it whole. Returns whether it was out of scope
    /// (`false` as well for a connection without a scope).
    pub(crate) fn include(&mut self, id: ReplicationId, frame: u64) -> bool {
        let Some(scope) = self.scope.as_deref_mut() else {
            return false;
        };
        if self.views.seen(id).is_some() {
            return false;
        }
        if scope.is_frozen(id) {
            // The client kept its copy: it gets what changed meanwhile.
            let thawed = scope.thaw(id);
            scope.insert(&mut self.views, id);
            if let Some((mask, since)) = thawed {
                let work = if mask.covers(self.all_fields) {
                    Work::Add { structural: true }
                } else {
                    self.views.fields_work(id, mask)
                };
                self.queue_seen(id, work, since);
            }
            if self.inner.contains_key(&id) {
                // Its arrays catch up in an entry of their own.
                self.pending
                    .queue(id, Work::Fields(FieldMask::EMPTY), frame);
            }
            return true;
        }
        scope.insert(&mut self.views, id);
        match self.views.get(id).map(|view| view.holding) {
            // Its exit was acknowledged in this frame: it returns in a
            // later one.
            None if scope.is_returning(id) => {}
            None => self
                .pending
                .queue(id, Work::Add { structural: true }, frame),
            // Its exit is in flight: it comes back whole once the client
            // is known to have dropped it.
            Some(Holding::RemoveInFlight) => {}
            Some(_) => {
                // The client still holds it, and its exit was not written:
                // what changed meanwhile was not followed, so it goes
                // whole.
                self.pending.remove(&id);
                self.pending
                    .queue(id, Work::Add { structural: false }, frame);
            }
        }
        true
    }

    /// Takes item `id` out of scope at `frame` (the connection caught up
    /// to it): the client is told to drop it, if it may hold it. Returns
    /// whether it was in scope.
    pub(crate) fn exclude(&mut self, id: ReplicationId, frame: u64) -> bool {
        let Some(scope) = self.scope.as_deref_mut() else {
            return false;
        };
        if !scope.remove(&mut self.views, id) {
            return false;
        }
        let persist = scope.exit() == ScopeExit::Persist;
        if !persist {
            scope.forget(id);
        }
        match self.views.get(id) {
            None => {
                scope.forget(id);
                self.forget(id);
            }
            Some(view) if view.is_held() && persist => self.freeze(id, frame),
            Some(view) if view.is_held() => self.pending.queue(id, Work::Exit, frame),
            Some(_) => scope.forget(id),
        }
        true
    }

    /// Freezes item `id`, which the client holds and which left the scope
    /// at `frame`: what was due for it waits for it to come back.
    fn freeze(&mut self, id: ReplicationId, frame: u64) {
        let (mask, since) = match self.pending.remove(&id) {
            Some(Pending {
                work: Work::Fields(mask),
                since,
            }) => (mask, since),
            Some(pending) => (self.all_fields, pending.since),
            None => (FieldMask::EMPTY, frame),
        };
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.freeze(&self.views, id, mask, since);
        }
    }

    /// Whether item `id` is out of scope with its copy kept by the client
    /// ([`ScopeExit::Persist`]).
    pub(crate) fn is_frozen(&self, id: ReplicationId) -> bool {
        self.scope
            .as_deref()
            .is_some_and(|scope| scope.is_frozen(id))
    }

    /// What an item leaving the scope leaves the client.
    pub(crate) fn scope_exit(&self) -> ScopeExit {
        self.scope
            .as_deref()
            .map_or_else(ScopeExit::default, Scope::exit)
    }

    /// Sets what items leaving the scope from now on leave the client.
    pub(crate) fn set_scope_exit(&mut self, exit: ScopeExit) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.set_exit(exit);
        }
    }

    /// The work due at `frame`, sorted into removals (with the frame each
    /// became due) and live items (`position` finds an item in the array's
    /// storage), each in the form the view allows. Work for items that are
    /// gone and that the client never held is dropped. `has_arrays`:
    /// whether the item type has array fields; `all_fields`: every field
    /// of it. Each item's work carries only the fields the connection may
    /// see ([`Scope::visible`]), whatever made it due: changed
    /// fields its level no longer sends (it dropped since they were
    /// queued) are withheld again, and a whole value is only those fields.
    /// Returns how many items wait for their detail level's interval (they
    /// stay pending).
    pub(crate) fn due(
        &mut self,
        frame: u64,
        position: impl Fn(ReplicationId) -> Option<usize>,
        has_arrays: bool,
        all_fields: FieldMask,
        removals: &mut Vec<Removal>,
        items: &mut Vec<Due>,
    ) -> usize {
        let mut dropped = Vec::new();
        let mut withheld = Vec::new();
        let mut waiting = 0;
        for &(id, ref pending) in self.pending.iter() {
            let entry = self.views.for_write(id, frame);
            let held = entry.holding.is_some();
            let pos = match position(id) {
                Some(pos) if !pending.work.drops() => pos,
                pos => {
                    if held {
                        removals.push(Removal {
                            id,
                            wire: entry.wire,
                            since: pending.since,
                            // An item gone since it left the scope is
                            // simply gone.
                            exit: pending.work == Work::Exit && pos.is_some(),
                        });
                    } else {
                        dropped.push(id);
                    }
                    continue;
                }
            };
            if let (Work::Fields(_), Some(scope)) = (pending.work, self.scope.as_deref()) {
                // An item seen at a level with an interval waits until
                // its changes have been due that many frames.
                let interval = u64::from(scope.interval(entry.seen));
                if interval > 1 && frame + 1 < pending.since + interval {
                    waiting += 1;
                    continue;
                }
            }
            let whole = visible(self.scope.as_deref(), entry.seen, all_fields);
            let (work, arrays_only) = match pending.work {
                Work::Fields(mask) => {
                    let sent = match self.scope.as_deref_mut() {
                        Some(scope) if !whole.covers(mask) || scope.is_frozen(id) => {
                            scope.withhold(&self.views, id, mask, pending.since)
                        }
                        _ => mask,
                    };
                    if sent.is_empty() && !mask.is_empty() && !has_arrays {
                        // All withheld again: nothing to write.
                        withheld.push(id);
                        continue;
                    }
                    let work = fields_work(entry.holding, sent);
                    // A whole value for a client that holds nothing of
                    // the item is real work, not a carrier.
                    (work, sent.is_empty() && held)
                }
                work => (work, false),
            };
            items.push(Due {
                id,
                wire: entry.wire,
                pos,
                work,
                whole,
                since: pending.since,
                arrays_only: arrays_only && has_arrays,
            });
        }
        for id in dropped {
            self.forget(id);
        }
        for id in withheld {
            self.pending.remove(&id);
        }
        waiting
    }

    /// Bits of the frame of a message written for `frame`.
    pub(crate) fn frame_bits(&self, frame: u64) -> u64 {
        frame_bits(frame, self.acked_frame)
    }

    /// Writes the frame of a message for `frame`: short once the client
    /// acknowledged a frame less than a window older.
    pub(crate) fn write_frame(&self, writer: &mut BitWriter<'_>, frame: u64) {
        write_frame(writer, frame, self.acked_frame);
    }

    /// The send states of item `id`'s `count` array fields.
    pub(crate) fn inner_states(&mut self, id: ReplicationId, count: u32) -> &mut Vec<SendState> {
        let states = self.inner.entry(id).or_default();
        if states.len() < count as usize {
            states.resize_with(count as usize, SendState::new);
        }
        states
    }

    /// A write that will not be sent wrote into the arrays of `ids` for
    /// `packet`: retires what they recorded as lost.
    pub(crate) fn unwrite_inner(&mut self, ids: &[ReplicationId], packet: u32) {
        for id in ids {
            if let Some(states) = self.inner.get_mut(id) {
                states.iter_mut().for_each(|state| {
                    state.on_loss(packet);
                });
            }
        }
    }

    /// Drops the due work of `id`: nothing needs writing for it.
    pub(crate) fn drop_due(&mut self, id: ReplicationId) {
        self.pending.remove(&id);
    }

    /// An empty buffer for a record of `entries` entries (a retired
    /// record's, if any).
    pub(crate) fn entry_buffer(&mut self, entries: usize) -> Vec<RecordEntry> {
        self.retirement.entry_buffer(entries)
    }

    /// Records that `packet` carries `entries` (the work the writer took,
    /// the oldest of it due since `oldest_due`), and updates what the
    /// client may hold. `all_due`: every piece of work due was written,
    /// so the pending list empties at once rather than id by id.
    pub(crate) fn record_written(
        &mut self,
        packet: u32,
        frame: u64,
        oldest_due: u64,
        entries: Vec<RecordEntry>,
        all_fields: FieldMask,
        all_due: bool,
    ) {
        if all_due {
            self.pending.clear();
        } else {
            for entry in &entries {
                self.pending.remove(&entry.id);
            }
        }
        self.record(packet, frame, oldest_due, entries, None, all_fields);
    }

    /// Records that `packet` carries frame `frame`'s shared message:
    /// `entries` for its adds and removals, and `changes`, the changed
    /// fields of known items, which update nothing here (the connection was
    /// caught up, so nothing is pending).
    pub(crate) fn record_shared(
        &mut self,
        packet: u32,
        frame: u64,
        entries: Vec<RecordEntry>,
        changes: Option<SharedChanges>,
        all_fields: FieldMask,
    ) {
        self.record(packet, frame, frame, entries, changes, all_fields);
        self.cursor = frame + 1;
        // Nothing is pending; its capacity goes back to that (after a
        // first full sync written per item, say).
        self.pending.clear();
    }

    /// The arrays of item `id` have work left for a later packet (the
    /// budget ran out), due since `since`: an entry for the item carries it.
    pub(crate) fn queue_inner_work(&mut self, id: ReplicationId, since: u64) {
        // Not for a frozen copy: its arrays catch up when it comes back.
        self.queue_seen(id, Work::Fields(FieldMask::EMPTY), since);
    }

    // The rules.

    /// Forgets item `id`, which is gone and which the client never held.
    fn forget(&mut self, id: ReplicationId) {
        self.pending.remove(&id);
        self.inner.remove(&id);
    }

    /// Puts back `work` for item `id` that a lost record of frame `frame`
    /// carried, due since `since`. Changed fields wait for the next
    /// catch-up, which knows which of them later records carried (see
    /// [`resolve_lost_fields`](Self::resolve_lost_fields)); anything else
    /// (a whole value, a removal, an array's repair) is due at once.
    fn repair(&mut self, id: ReplicationId, work: Work, frame: u64, since: u64) {
        match work {
            Work::Fields(fields) if !fields.is_empty() => self.lost_fields.push(LostFields {
                id,
                fields,
                frame,
                since,
            }),
            work => self.queue_seen(id, work, since),
        }
    }

    /// Queues the lost fields that no later record carried: those that
    /// frames after the lost record's changed went out with the frame that
    /// changed them, or are pending (every frame up to the cursor is
    /// merged), and that record's own fate takes care of them; pending
    /// work keeps the lost record's urgency. The item's view knows only
    /// the records written per item (a shared one keeps no per-item
    /// trace), so `history` tells. Without it (a scoped connection, a
    /// resync), or once it no longer reaches back, all of them. Call after
    /// merging up to the cursor.
    fn resolve_lost_fields(&mut self, history: Option<&History>) {
        if self.lost_fields.is_empty() {
            return;
        }
        let cursor = self.cursor;
        for lost in core::mem::take(&mut self.lost_fields) {
            let later = history
                .and_then(|history| history.changed_between(lost.id, lost.frame, cursor))
                .unwrap_or(FieldMask::EMPTY);
            let fields = lost.fields.without(later);
            if fields.is_empty() {
                self.pending.hasten(lost.id, lost.since);
            } else {
                self.queue_seen(lost.id, Work::Fields(fields), lost.since);
            }
        }
    }

    /// Merges one frame of the history ring into the pending work.
    fn merge_frame(&mut self, changes: &crate::changeset::Changeset, structure: FieldMask) {
        let frame = changes.frame;
        for &id in &changes.added {
            self.pending
                .queue(id, Work::Add { structural: true }, frame);
        }
        for chunk in changes.changed.chunks(LOOKAHEAD) {
            // The view of a large array is far bigger than the caches: look
            // a run of ids up before queueing any, so the cache misses of
            // these independent lookups overlap instead of taking turns.
            let mut works = [Work::Remove; LOOKAHEAD];
            for (work, &(id, mask)) in works.iter_mut().zip(chunk) {
                *work = if (mask & structure).is_empty() {
                    self.views.fields_work(id, mask)
                } else {
                    // A new shape (an enum's variant) goes whole.
                    Work::Add { structural: true }
                };
            }
            for (&work, &(id, _)) in works.iter().zip(chunk) {
                self.pending.queue(id, work, frame);
            }
        }
        for &id in &changes.arrays_changed {
            // Only the item's arrays changed: an entry with no fields, which
            // carries their deltas.
            self.pending
                .queue(id, Work::Fields(FieldMask::EMPTY), frame);
        }
        for &id in &changes.removed {
            if self.views.contains(id) {
                self.pending.queue(id, Work::Remove, frame);
            } else {
                // Never sent (or only in a write that failed): forget it.
                self.forget(id);
            }
        }
    }

    /// Merges one change the array handed this scoped connection: item
    /// `id` changed `work` at `frame` (fields, only its arrays as no
    /// fields, or its removal).
    fn merge_routed(&mut self, id: ReplicationId, work: Work, frame: u64, structure: FieldMask) {
        let Some(scope) = self.scope.as_deref_mut() else {
            return;
        };
        let frozen = scope.is_frozen(id);
        if self.views.seen(id).is_none() && !frozen {
            return;
        }
        if work == Work::Remove {
            self.lose_scoped(id, frame);
            return;
        }
        if self
            .views
            .get(id)
            .is_some_and(|view| view.holding == Holding::RemoveInFlight)
        {
            // Back in scope while its exit is in flight: it returns whole.
            return;
        }
        let work = match work {
            Work::Fields(mask) if !(mask & structure).is_empty() => Work::Add { structural: true },
            // Only its arrays changed: an entry with no fields.
            Work::Fields(mask) if mask.is_empty() => work,
            Work::Fields(mask) => self.views.fields_work(id, mask),
            work => work,
        };
        self.queue_seen(id, work, frame);
    }

    /// Item `id`, in scope or frozen, is gone from the array (since
    /// `since`): it leaves the scope, a frozen copy included, and the
    /// client is told if it may hold it.
    fn lose_scoped(&mut self, id: ReplicationId, since: u64) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.forget(id);
            scope.remove(&mut self.views, id);
        }
        if self.views.contains(id) {
            self.pending.queue(id, Work::Remove, since);
        } else {
            self.forget(id);
        }
    }

    /// Queues `work` for `id`, due since `since`, as the connection's
    /// scope sees the item: changed fields above its detail level are
    /// withheld until the level rises.
    fn queue_seen(&mut self, id: ReplicationId, work: Work, since: u64) {
        let work = match (work, self.scope.as_deref_mut()) {
            (work, Some(scope)) if !work.drops() && scope.is_frozen(id) => {
                // Frozen: everything waits for the item to come back (a
                // whole value as every field).
                let mask = match work {
                    Work::Fields(mask) => mask,
                    _ => self.all_fields,
                };
                scope.withhold(&self.views, id, mask, since);
                return;
            }
            (Work::Fields(mask), Some(scope)) if !mask.is_empty() => {
                let sent = scope.withhold(&self.views, id, mask, since);
                if sent.is_empty() {
                    return;
                }
                Work::Fields(sent)
            }
            _ => work,
        };
        self.pending.queue(id, work, since);
    }

    /// Sets the detail level item `id` is seen at, if in scope: changed
    /// fields withheld until now that the level sends become due. Returns
    /// whether `id` is in scope.
    pub(crate) fn set_detail(&mut self, id: ReplicationId, level: u8) -> bool {
        let Some(scope) = self.scope.as_deref_mut() else {
            return false;
        };
        if let Some((mask, since)) = scope.set_level(&mut self.views, id, level) {
            let work = self.views.fields_work(id, mask);
            self.pending.queue(id, work, since);
        }
        true
    }

    /// The detail level item `id` is seen at.
    pub(crate) fn detail(&self, id: ReplicationId) -> u8 {
        self.scope
            .as_deref()
            .map_or(super::scope::MAX_DETAIL, |_| Scope::level(&self.views, id))
    }

    /// Sets the fewest frames between two writes of the changed fields of
    /// items seen at detail level `level`.
    pub(crate) fn set_interval(&mut self, level: u8, frames: u32) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.set_interval(level, frames);
        }
    }

    /// Works out what is due by comparing what the client may hold against
    /// the array's items: used when the history ring no longer reaches back
    /// to this connection's cursor. O(items + view). Work already due
    /// (repairs of lost packets) stays due.
    fn resync(&mut self, items: &dyn Holdings) {
        let delivered = self.delivered_through();
        // What this finds became due at the oldest frame not merged, or
        // later: so `delivered_through` stays behind it until it is acked.
        let due = self.cursor;
        // Up to date: the client knows the item, and either acknowledged
        // a record with its current key, or has everything committed up
        // to a frame at or after its last change (which covers changes
        // sent in shared messages, whose acks touch no view entry).
        let up_to_date = |view: Option<View>, key: ReplicationKey, changed: u64| {
            view.is_some_and(|v| {
                v.holding == Holding::Known
                    && ((v.acked && v.acked_key == key)
                        || delivered.is_some_and(|delivered| changed <= delivered))
            })
        };
        if let Some(scope) = self.scope.as_deref_mut() {
            // Only the items in scope: the others are the client's only
            // through exits already due or in flight.
            let mut gone = Vec::new();
            for id in self.views.scope_ids() {
                let view = self.views.get(id);
                match items.key_of(id) {
                    None => gone.push(id),
                    // It returns whole once its exit is acknowledged.
                    Some(_) if view.is_some_and(|v| v.holding == Holding::RemoveInFlight) => {}
                    Some((key, changed)) if !up_to_date(view, key, changed) => {
                        self.pending.queue(id, Work::Add { structural: true }, due);
                    }
                    Some(_) => {}
                }
            }
            // Frozen copies: a destroyed item's goes; a changed one is
            // resent whole when it comes back.
            let frozen: Vec<ReplicationId> = scope.frozen().collect();
            for id in frozen {
                match items.key_of(id) {
                    None => gone.push(id),
                    Some((key, changed)) if !up_to_date(self.views.get(id), key, changed) => {
                        scope.withhold(&self.views, id, self.all_fields, due);
                    }
                    Some(_) => {}
                }
            }
            for id in gone {
                self.lose_scoped(id, due);
            }
            return;
        }
        let (views, pending) = (&self.views, &mut self.pending);
        items.each_key(&mut |id, key, changed| {
            if !up_to_date(views.get(id), key, changed) {
                pending.queue(id, Work::Add { structural: true }, due);
            }
        });
        let gone: Vec<ReplicationId> = self.views.ids().filter(|&id| !items.holds(id)).collect();
        for id in gone {
            self.pending.queue(id, Work::Remove, due);
        }
    }

    /// The newest frame up to which everything committed has been
    /// delivered: merged, written, and acknowledged (or, if lost, repaired
    /// and acknowledged). `None` before anything is.
    ///
    /// Work merged from frame `f` is due since `f` or earlier; it stays
    /// either pending (with that frame or an older one) or in a record in
    /// flight (whose `oldest_due` is at most that), and a loss puts it back
    /// as due since the frame it first became due. So every change
    /// committed before the oldest of those frames, and before the cursor,
    /// was acked.
    fn delivered_through(&self) -> Option<u64> {
        let pending = self.pending.iter().map(|(_, p)| p.since);
        let in_flight = self.retirement.oldest_dues();
        let undelivered = pending.chain(in_flight).fold(self.cursor, u64::min);
        undelivered.checked_sub(1)
    }

    /// Records a packet about to be written with `entries`, and updates
    /// what the client may hold. `shared` is the changed fields of known
    /// items that a frame's shared message carried besides `entries`: they
    /// update nothing here.
    fn record(
        &mut self,
        packet: u32,
        frame: u64,
        oldest_due: u64,
        entries: Vec<RecordEntry>,
        shared: Option<SharedChanges>,
        all_fields: FieldMask,
    ) {
        let seq = self.retirement.next_seq();
        self.all_fields = all_fields;
        self.written_frame = self.written_frame.max(frame);
        for entry in &entries {
            self.views.written(entry.id, entry.work, seq, all_fields);
            if let (Work::Add { .. }, Some(scope)) = (entry.work, self.scope.as_deref_mut()) {
                scope.sent_whole(&self.views, entry.id, all_fields, frame);
            }
        }
        self.views.trim(self.retirement.oldest_seq());
        self.retirement
            .push(packet, frame, oldest_due, entries, shared);
    }

    /// Makes what an acknowledged record carried known to the client.
    fn ack_record(&mut self, record: Record) {
        if record.frame + WINDOW <= self.written_frame {
            self.retire_lost(record);
            return;
        }
        for entry in &record.entries {
            // Late acks can retire the arrays' own old records as lost.
            let inner_due = self.route(entry.id, record.packet, true);
            if inner_due
                && self
                    .views
                    .get(entry.id)
                    .is_some_and(|view| view.holding != Holding::RemoveInFlight)
            {
                self.queue_inner_work(entry.id, record.frame);
            }
            if self.views.acknowledged(
                entry.id,
                entry.work,
                entry.key,
                record.seq,
                self.written_frame,
            ) {
                self.inner.remove(&entry.id);
                if let (Work::Exit, Some(scope)) = (entry.work, self.scope.as_deref_mut()) {
                    scope.exit_acknowledged(entry.id, record.frame);
                }
            }
        }
        self.acked_frame = Some(
            self.acked_frame
                .map_or(record.frame, |f| f.max(record.frame)),
        );
        self.retirement.recycle(record);
    }

    /// Passes the fate of `packet` on to the send states of item `id`'s
    /// arrays. Returns whether they now have work due (a loss to repair),
    /// which only an entry for `id` in a later packet can carry.
    fn route(&mut self, id: ReplicationId, packet: u32, delivered: bool) -> bool {
        // Items without array fields, the common case: no lookup per entry.
        if self.inner.is_empty() {
            return false;
        }
        let Some(states) = self.inner.get_mut(&id) else {
            return false;
        };
        let mut due = false;
        for state in states {
            if delivered {
                state.on_ack(packet);
            } else {
                state.on_loss(packet);
            }
            due |= state.has_work_due();
        }
        due
    }

    /// Puts back what a lost record carried, except what a later record
    /// carried for the same item (that record's own fate takes care of it).
    fn retire_lost(&mut self, record: Record) {
        for entry in &record.entries {
            let inner_due = self.route(entry.id, record.packet, false);
            let Some(view) = self.views.get(entry.id) else {
                // Its removal was acknowledged: nothing left to repair.
                continue;
            };
            let repairs_inner = inner_due && view.holding != Holding::RemoveInFlight;
            let work = self.views.lost_work(entry, record.seq, self.all_fields);
            self.views.lost(entry.id, record.seq);
            let since = entry.since(record.frame, record.oldest_due);
            if repairs_inner {
                // The arrays' repair needs an entry for the item, now.
                self.queue_seen(entry.id, Work::Fields(FieldMask::EMPTY), since);
            }
            if let Some(work) = work {
                self.repair(entry.id, work, record.frame, since);
            }
        }
        for &(id, mask) in record.shared.iter().flat_map(|changes| changes.iter()) {
            // A frame's shared message carries that frame's changes only.
            let entry = RecordEntry::new(
                id,
                Work::Fields(mask),
                ReplicationKey::default(),
                record.frame,
                record.frame,
            );
            if let Some(work) = self.views.lost_work(&entry, record.seq, self.all_fields) {
                self.repair(id, work, record.frame, record.oldest_due);
            }
        }
        self.retirement.recycle(record);
    }
}

#[cfg(test)]
mod tests {
    use super::super::pending::Pending;
    use super::*;

    /// The per-item and per-entry sizes stated in the docs and `WIRE.md`.
    #[test]
    fn documented_sizes_hold() {
        assert_eq!(core::mem::size_of::<RecordEntry>(), 32);
        assert_eq!(core::mem::size_of::<(ReplicationId, Pending)>(), 32);
        assert_eq!(core::mem::size_of::<(ReplicationId, usize)>(), 16);
        assert_eq!(core::mem::size_of::<Record>(), 72);
        assert_eq!(
            core::mem::size_of::<SendState>(),
            328,
            "per array inside an item"
        );
    }
}
