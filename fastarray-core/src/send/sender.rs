//! The sending side of an array: the history ring every connection reads,
//! and what writing deltas keeps from write to write (this frame's
//! encodings, the shared message of caught-up connections, buffers).
//!
//! A `FastArray` keeps it behind one box, made at its first commit or
//! write, so an array that only receives (a mirror, or the arrays inside
//! the items a mirror decodes) carries one pointer of it.
//!
//! Writing a delta for one connection (`Sender::write`): the message
//! kind, the frame, the removed ids, then the sent items (see `WIRE.md`;
//! the layout is `message`'s), and the record of what the packet carries.

use super::encode_cache::EncodeCache;
use super::message::Message;
use super::plan::PlanBuffers;
use super::plan::{Plan, Planned, plan};
use super::shared_message::SharedMessage;
use crate::bits::BitWriter;
use crate::error::SendError;
use crate::history::History;
use crate::id::ReplicationKey;
use crate::mask::FieldMask;
use crate::receive_state::follow::GhostFollow;
use crate::receive_state::sources::Sources;
use crate::replicate::{Replicate, audience};
use crate::send_state::audience::Owners;
use crate::send_state::pending::Work;
use crate::send_state::scopes::Scopes;
use crate::send_state::stats::{Budget, DeltaStats};
use crate::send_state::tenures::Tenures;
use crate::send_state::{Removal, SendState};
use crate::shard::ShardId;
use crate::store::Store;
use crate::wire::MessageKind;

/// What an array keeps for writing deltas.
#[derive(Debug, Default)]
pub(crate) struct Sender {
    /// The changesets of the last commits, shared by every connection.
    pub(crate) history: History,
    /// This frame's encodings, shared by every connection.
    pub(crate) encoded: EncodeCache,
    /// The array deltas of the items of the message being written.
    pub(crate) scratch: Vec<u8>,
    /// The lists a plan reuses.
    pub(crate) buffers: PlanBuffers,
    /// This frame's message for caught-up connections, once one wrote it.
    pub(crate) shared: SharedMessage,
    /// The connections with a scope, and who sees which item.
    pub(crate) scopes: Scopes,
    /// Who owns which item.
    pub(crate) owners: Owners,
    /// The stream the array's feed names (see `feed_message`): drawn at
    /// random at the first feed message, so a copy or a restarted server
    /// is a stream of its own, and an array that never feeds a relay (an
    /// inner array, most servers) never draws one.
    epoch: std::sync::OnceLock<u64>,
    /// On a relay: where it stands in the feeds it follows.
    pub(crate) follow: Option<Box<Sources>>,
    /// On a shard: which shard it is, and its items' handoffs.
    pub(crate) tenures: Option<Box<Tenures>>,
    /// On a ghost array: where it stands in the ghost feed it follows.
    pub(crate) ghost: Option<Box<GhostFollow>>,
}

impl Sender {
    /// The stream this array's feed names: a random number, unlike any
    /// other array's (std's hasher keys are drawn from the system's
    /// randomness once a thread, and differ for every hasher made after).
    pub(crate) fn epoch(&self) -> u64 {
        use core::hash::BuildHasher;
        *self
            .epoch
            .get_or_init(|| std::hash::RandomState::new().hash_one(0u8))
    }

    /// The stream this array's feed is: its epoch and shard.
    pub(crate) fn stream(&self) -> crate::feed_message::Stream {
        crate::feed_message::Stream {
            epoch: self.epoch(),
            shard: self.shard(),
        }
    }

    /// The shard the array is: 0 for one not made as a shard.
    pub(crate) fn shard(&self) -> ShardId {
        self.tenures
            .as_deref()
            .map_or_else(ShardId::default, Tenures::shard)
    }

    /// A copy for a cloned array: the history, the frame's caches, the
    /// owners and where a relay stands in its feed; the buffers start empty,
    /// no connection has a scope on the copy, and its own feed is a stream
    /// of its own.
    pub(crate) fn for_clone(&self) -> Self {
        Self {
            history: self.history.clone(),
            encoded: self.encoded.clone(),
            scratch: Vec::new(),
            buffers: PlanBuffers::default(),
            shared: self.shared.clone(),
            scopes: Scopes::default(),
            owners: self.owners.clone(),
            epoch: std::sync::OnceLock::new(),
            follow: self.follow.clone(),
            tenures: self.tenures.clone(),
            ghost: self.ghost.clone(),
        }
    }
}

impl Sender {
    /// Whether `store`'s array has work since its last commit: changes of
    /// its items, or moves of their owners.
    pub(crate) fn has_uncommitted_work<T>(&self, store: &Store<T>) -> bool {
        store.has_uncommitted_work() || self.owners.has_staged()
    }

    /// Writes into `writer` the delta that brings `state`'s client up to
    /// date with `store`, within `budget` if given, and records that
    /// `packet` carries it. On error nothing is written and nothing is
    /// recorded.
    pub(crate) fn write<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        self.write_with(store, state, packet, writer, budget, true)
    }

    /// [`write`](Self::write), the shared message allowed if `share`
    /// (without it: what a caught-up connection's own message would be,
    /// which the tests compare with the shared one).
    pub(crate) fn write_with<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
        share: bool,
    ) -> Result<DeltaStats, SendError> {
        if self.has_uncommitted_work(store) {
            return Err(SendError::Uncommitted);
        }
        if state.has_in_flight(packet) {
            return Err(SendError::PacketInFlight { packet });
        }
        self.check_scope(store, state)?;
        if budget.is_some_and(|budget| budget.bits == 0) {
            return Err(SendError::BudgetTooSmall { budget: 0 });
        }
        let frame = store.frame();
        // Every write starts its frame in the encode cache, whether or not
        // it encodes through it (the shared message encodes into itself):
        // the encodings of an earlier frame, a first full sync's say, go.
        self.encoded.begin(frame);
        let all_fields = FieldMask::all(T::FIELD_COUNT);
        state.start_write(frame);
        // A caught-up connection takes the frame's shared message, the
        // bits it would plan for itself, encoded once for all of them;
        // under a budget (a `Connection` packing a packet), when the
        // message fits it.
        let shareable = share
            && T::ARRAY_FIELDS == 0
            && state.in_sync(frame, store.live_before(self.history.newest()));
        if shareable
            && (self.shared.holds(frame) || self.compose_shared(store, state)?)
            && self.shared.serves(state.client())
            && budget.is_none_or(|budget| self.shared.bits() <= budget.bits)
        {
            return Ok(self.shared.write(state, packet, writer, all_fields));
        }
        let mut stats = DeltaStats {
            resynced: self.catch_up(store, state),
            ..DeltaStats::default()
        };

        let mut scratch = core::mem::take(&mut self.scratch);
        scratch.clear();
        let audience = audience::<T>(Some(&self.owners));
        let planned = plan(
            store,
            &mut self.encoded,
            &mut self.buffers,
            &audience,
            self.follow.as_deref(),
            state,
            packet,
            budget,
            &mut scratch,
        );
        let Plan {
            mut removals,
            mut items,
            deferred,
            oversized,
            inner,
            unfinished,
            waiting,
        } = match planned {
            Ok(plan) => plan,
            Err(error) => {
                self.scratch = scratch;
                return Err(error);
            }
        };
        stats.deferred = deferred;
        stats.oversized = oversized;
        stats.absorb(&inner);
        if removals.is_empty() && items.is_empty() {
            self.scratch = scratch;
            self.buffers.planned = items;
            MessageKind::Empty.write(writer);
            stats.bits = 1;
            return Ok(stats);
        }
        removals.sort_unstable_by_key(|removal| removal.wire);
        items.sort_unstable_by_key(|p| p.wire);
        let message = Message {
            frame,
            field_count: T::FIELD_COUNT,
            withholds: T::WITHHOLDS,
            arrays: T::ARRAY_FIELDS > 0,
            handles: state.uses_handles(),
            removals: &removals,
            items: &items,
            inner: &scratch,
        };
        let start = writer.bits_written();
        message.write(&self.encoded, state, writer);
        stats.bits = writer.bits_written() - start;
        debug_assert!(budget.is_none_or(|budget| stats.bits <= budget.bits));
        self.scratch = scratch;

        count(&removals, &items, &mut stats);
        let removed = removals.iter().map(|removal| {
            let key = ReplicationKey::default();
            (removal.id, removal.work(), key, removal.since)
        });
        let sent = items
            .iter()
            .map(|item| (item.id, item.work, item.key, item.since));
        // Usually everything due was written: the pending list empties at
        // once rather than id by id.
        let all_due = deferred == 0 && waiting == 0 && unfinished.is_empty();
        state.record_written(
            packet,
            frame,
            removed.chain(sent),
            unfinished,
            all_fields,
            all_due,
        );
        self.buffers.planned = items;
        Ok(stats)
    }
}

impl Sender {
    /// Writes the newest frame's message for the connections in sync with
    /// the array, `state` the first of them this frame, and keeps it (see
    /// [`SharedMessage`](super::shared_message::SharedMessage)): straight from
    /// the frame's changes, each payload encoded into the message as it is
    /// written, with no lookup in the connection's state. Returns `false`,
    /// keeping nothing, if the frame changed nothing (the one-bit empty
    /// message is not worth keeping), or if a changed item is missing (a
    /// broken invariant, caught by a debug assertion): the connection then
    /// writes its own message.
    fn compose_shared<T: Replicate>(
        &mut self,
        store: &Store<T>,
        state: &SendState,
    ) -> Result<bool, SendError> {
        let frame = store.frame();
        let Some(changes) = self
            .history
            .newest()
            .filter(|changes| changes.frame == frame && !changes.is_empty())
        else {
            return Ok(false);
        };
        // No connection plans its own message this frame.
        self.buffers.idle();
        let removals: Vec<Removal> = changes
            .removed
            .iter()
            .map(|&id| Removal {
                id,
                wire: id,
                since: frame,
                exit: (self.follow.as_deref()).is_some_and(|sources| sources.returns(id)),
            })
            .collect();
        let message = Message {
            frame,
            field_count: T::FIELD_COUNT,
            withholds: T::WITHHOLDS,
            arrays: false,
            handles: false,
            removals: &removals,
            items: &[],
            inner: &[],
        };
        // The message is what a connection that owns none of the items
        // may be sent; the owners of items whose entries would differ for
        // them (an add, a new shape, a change of audience fields) write
        // their own.
        let audience = audience::<T>(Some(&self.owners));
        let excluded = if audience.applies() {
            let differs = audience.moving() | T::STRUCTURE;
            let ids = changes
                .changed
                .iter()
                .filter(|(_, mask)| mask.intersects(differs));
            let ids = ids.map(|&(id, _)| id).chain(changes.added.iter().copied());
            self.owners.owners_among(ids)
        } else {
            Vec::new()
        };
        let mut bytes = core::mem::take(&mut self.shared.bytes);
        bytes.clear();
        let mut out = BitWriter::new(&mut bytes);
        let allowed = audience.fields_for(false);
        let written = message.write_frame(store, changes, allowed, state, &mut out);
        let bits = out.finish();
        if bytes.capacity() > 4 * bytes.len().max(64) {
            bytes.shrink_to(2 * bytes.len());
        }
        self.shared.bytes = bytes;
        let Some((whole, changed)) = written? else {
            return Ok(false);
        };
        if removals.is_empty() && whole.is_empty() && changed.is_empty() {
            // Every change was some owner's alone: each connection's own
            // message is empty, or its owner's.
            self.shared.keep_none(frame);
            return Ok(true);
        }
        let stats = DeltaStats {
            shared: true,
            bits,
            added: whole.len(),
            changed: changed.len(),
            removed: removals.len(),
            ..DeltaStats::default()
        };
        self.shared
            .keep(frame, &removals, &whole, changed, excluded, stats);
        Ok(true)
    }

    /// Brings `state`'s pending work up to the array's frame: from the
    /// history ring, or, for a connection with a scope, from what the
    /// array handed it. Returns whether it had to compare instead.
    pub(crate) fn catch_up<T: Replicate>(
        &mut self,
        store: &Store<T>,
        state: &mut SendState,
    ) -> bool {
        let frame = store.frame();
        let Some(slot) = state.scope().map(|scope| scope.slot) else {
            return state.catch_up(&self.history, frame, T::STRUCTURE, store);
        };
        let routed = self.scopes.inbox(slot);
        let resynced = state.catch_up_scoped(routed, frame, T::STRUCTURE, store);
        self.scopes.clear_inbox(slot);
        resynced
    }

    /// Refuses a connection whose scope is registered with another array
    /// (or with this one's original, for a clone).
    pub(crate) fn check_scope<T>(
        &self,
        store: &Store<T>,
        state: &SendState,
    ) -> Result<(), SendError> {
        match state.scope() {
            Some(scope) if scope.array != store.origin() || !self.scopes.is_registered(scope) => {
                Err(SendError::ScopedElsewhere)
            }
            _ => Ok(()),
        }
    }
}

/// Counts in `stats` what a message carrying `removals` and `items` does.
fn count(removals: &[Removal], items: &[Planned], stats: &mut DeltaStats) {
    let added = items
        .iter()
        .filter(|item| matches!(item.work, Work::Add { .. }))
        .count();
    stats.added += added;
    stats.changed += items.len() - added;
    let exits = removals.iter().filter(|removal| removal.exit).count();
    stats.left_scope += exits;
    stats.removed += removals.len() - exits;
}
