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

use std::sync::{Mutex, PoisonError};

use super::changed_spans::ChangedSpans;
use super::delta_bytes::DeltaBytes;
use super::encode_cache::EncodeCache;
use super::frame_body::FrameBody;
use super::message::Message;
use super::plan::PlanBuffers;
use super::plan::{Items, Plan, Planned, plan};
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
use crate::send_state::fate::Written;
use crate::send_state::follow::Follow;
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
    /// What writes reuse: this frame's encodings (shared by every
    /// connection), the lists a plan reuses, the array deltas of the items
    /// of the message being written.
    work: Workspace,
    /// The workspaces of the other threads of [`write_many`](Self::write_many),
    /// kept from tick to tick.
    pool: Vec<Workspace>,
    /// This frame's message for caught-up connections, once one wrote it.
    pub(crate) shared: SharedMessage,
    /// The last message of a connection's own lent out
    /// ([`write_lent`](Self::write_lent)), its buffer kept for the next.
    lent: Vec<u8>,
    /// The entries of the newest frame's shared message, written by its
    /// commit.
    pub(crate) body: FrameBody,
    /// The newest frame's changed fields, encoded by its commit for the
    /// scoped connections that follow them.
    pub(crate) changed: ChangedSpans,
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

/// Gives a message's buffer, `bytes` just written, back its room beyond
/// twice the message once it holds more than four times it: the buffer
/// is kept from message to message, and a one-off burst (a first full
/// sync) is not kept for good.
fn fit_to_message(bytes: &mut Vec<u8>) {
    if bytes.capacity() > 4 * bytes.len().max(64) {
        bytes.shrink_to(2 * bytes.len());
    }
}

impl Sender {
    /// The array's sender in `slot`, made there on its first use. In line
    /// with the making kept out of it: every write asks for the sender,
    /// and `Option::get_or_insert_with` built the whole `Sender` in a
    /// call of its own (22 instructions more a handed-out write of a
    /// caught-up connection, by callgrind: `fanout 60` minus `fanout 20`
    /// rounds of 256 connections).
    #[inline]
    pub(crate) fn made(slot: &mut Option<Box<Sender>>) -> &mut Sender {
        #[cold]
        #[inline(never)]
        fn make(slot: &mut Option<Box<Sender>>) {
            *slot = Some(Box::default());
        }
        if slot.is_none() {
            make(slot);
        }
        slot.as_deref_mut()
            .unwrap_or_else(|| unreachable!("the sender was just made"))
    }

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
            work: Workspace {
                encoded: self.work.encoded.clone(),
                ..Workspace::default()
            },
            pool: Vec::new(),
            shared: self.shared.clone(),
            lent: Vec::new(),
            body: self.body.clone(),
            changed: self.changed.clone(),
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
        if let Some(early) = self.prepare(store, state, packet, budget, share)? {
            self.shared.copy(writer, early);
            return Ok(self.shared.stats(early));
        }
        self.write_alone(store, state, packet, writer, budget)
    }

    /// [`write`](Self::write) of a whole message, handed out: the frame's
    /// shared message for a caught-up connection, the same bytes for each
    /// (not copied), or a message of the connection's own.
    pub(crate) fn write_bytes<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        state: &mut SendState,
        packet: u32,
        budget: Option<Budget>,
    ) -> Result<(DeltaBytes, DeltaStats), SendError> {
        if let Some(early) = self.prepare(store, state, packet, budget, true)? {
            return Ok((self.shared.hand_out(early), self.shared.stats(early)));
        }
        let mut out = Vec::new();
        let stats =
            self.write_alone(store, state, packet, &mut BitWriter::new(&mut out), budget)?;
        Ok((DeltaBytes::own(out), stats))
    }

    /// [`write`](Self::write) lending the message out: the frame's shared
    /// message's own bytes for a caught-up connection, else the
    /// connection's message written into a buffer the sender keeps for the
    /// next. Neither is copied nor shared by a reference count.
    pub(crate) fn write_lent<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        state: &mut SendState,
        packet: u32,
        budget: Option<Budget>,
    ) -> Result<(&[u8], DeltaStats), SendError> {
        if let Some(early) = self.prepare(store, state, packet, budget, true)? {
            return Ok((self.shared.lend(early), self.shared.stats(early)));
        }
        let mut out = core::mem::take(&mut self.lent);
        out.clear();
        let written = self.write_alone(store, state, packet, &mut BitWriter::new(&mut out), budget);
        fit_to_message(&mut out);
        self.lent = out;
        Ok((&self.lent, written?))
    }

    /// The bytes the buffer of lent messages keeps.
    #[cfg(test)]
    pub(crate) fn lent_capacity(&self) -> usize {
        self.lent.capacity()
    }

    /// The rest of a write after [`prepare`](Self::prepare) left the
    /// connection a message of its own.
    fn write_alone<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        let resynced = self.catch_up(store, state);
        let context = Context {
            owners: &self.owners,
            follow: self.follow.as_deref(),
            changed: &self.changed,
        };
        let items = Items::Exclusive(store);
        let own = Own {
            state,
            packet,
            writer,
            budget,
            resynced,
        };
        write_own(&context, &mut self.work, items, own)
    }

    /// What every write does first: refuses what it must, starts the
    /// frame, and records the frame's shared message for a caught-up
    /// connection (composing it if no connection did yet), returning the
    /// form it takes ([`SharedMessage::form_for`]: the caller copies or
    /// hands out its bytes, and returns its
    /// [stats](SharedMessage::stats)); `None` if the connection writes a
    /// message of its own.
    fn prepare<T: Replicate>(
        &mut self,
        store: &Store<T>,
        state: &mut SendState,
        packet: u32,
        budget: Option<Budget>,
        share: bool,
    ) -> Result<Option<bool>, SendError> {
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
        self.work.encoded.begin(frame);
        let all_fields = FieldMask::all(T::FIELD_COUNT);
        let reshapes = !T::STRUCTURE.is_empty();
        state.start_write(frame, reshapes);
        // A caught-up connection takes the frame's shared message, the
        // bits it would plan for itself, encoded once for all of them;
        // under a budget (a `Connection` packing a packet), when the
        // message fits it.
        let shareable = share
            && T::ARRAY_FIELDS == 0
            && state.in_sync(frame, store.live_before(self.history.newest()));
        if !(shareable
            && (self.shared.holds(frame) || self.compose_shared(store, state)?)
            && self.shared.serves(state.client()))
        {
            return Ok(None);
        }
        match self.shared.form_for(state.adds_known(), reshapes) {
            Some(early) if budget.is_none_or(|budget| self.shared.bits(early) <= budget.bits) => {
                self.shared.record(state, packet, all_fields);
                Ok(Some(early))
            }
            _ => Ok(None),
        }
    }

    /// [`write`](Self::write) for each of `writes` in turn, with the
    /// connections that write messages of their own planned and written
    /// on `threads` threads at once (a type with arrays inside its items,
    /// or fewer than 4 such connections, on this one). What is written,
    /// recorded and returned is what the writes one by one give.
    pub(crate) fn write_many<T: Replicate + Sync>(
        &mut self,
        store: &mut Store<T>,
        writes: &mut [DeltaWrite<'_>],
        threads: usize,
    ) -> Vec<Result<DeltaStats, SendError>> {
        // First, in order: the refusals and the shared message.
        let mut results: Vec<Option<Result<DeltaStats, SendError>>> =
            Vec::with_capacity(writes.len());
        for write in writes.iter_mut() {
            let budget = write.max_bits.map(Budget::of);
            let prepared = match self.prepare(store, write.state, write.packet, budget, true) {
                Ok(Some(early)) => {
                    self.shared.copy(&mut BitWriter::new(write.out), early);
                    Some(Ok(self.shared.stats(early)))
                }
                Ok(None) => None,
                Err(error) => Some(Err(error)),
            };
            results.push(prepared);
        }
        // The writes of messages of their own.
        let own: Vec<bool> = results.iter().map(Option::is_none).collect();
        let count = own.iter().filter(|&&own| own).count();
        let threads = threads.min(count / 2).max(1);
        let reads = Reads {
            history: &self.history,
            scopes: &self.scopes,
            context: Context {
                owners: &self.owners,
                follow: self.follow.as_deref(),
                changed: &self.changed,
            },
        };
        // Fewer than 4 messages of their own leave one thread.
        if T::ARRAY_FIELDS > 0 || threads < 2 {
            write_run(
                &reads,
                Items::Exclusive(store),
                writes,
                &mut results,
                &mut self.work,
            );
        } else {
            // Then the connections' own messages, in runs that the
            // threads take in turn as each finishes its last, each with
            // a workspace of its own (the encodings of the frame are made
            // once per thread): a thread whose connections cost more, or
            // that the machine slows, takes fewer runs.
            self.pool.resize_with(threads - 1, Workspace::default);
            let mut spaces: Vec<&mut Workspace> = Vec::with_capacity(threads);
            spaces.push(&mut self.work);
            spaces.extend(self.pool.iter_mut());
            let (store, reads): (&Store<T>, &Reads<'_>) = (store, &reads);
            let queue =
                Mutex::new(runs(writes, &mut results, &own, threads * RUNS_PER_THREAD).into_iter());
            let queue = &queue;
            std::thread::scope(|scope| {
                let mut spaces = spaces.into_iter();
                // This thread writes too, beside the others.
                let first = spaces.next();
                for space in spaces {
                    scope.spawn(move || take_runs(queue, reads, store, space));
                }
                if let Some(space) = first {
                    take_runs(queue, reads, store, space);
                }
            });
        }
        // What the scoped connections that caught up were handed is
        // theirs now (a refused write's stays for its next write).
        for (write, _) in writes.iter().zip(&own).filter(|&(_, &own)| own) {
            if let Some(scope) = write.state.scope() {
                self.scopes.clear_inbox(scope.slot);
            }
        }
        results
            .into_iter()
            .map(|result| result.expect("every write is done"))
            .collect()
    }
}

/// One connection's write, as [`FastArray::write_deltas`](crate::FastArray::write_deltas)
/// takes it: its state, the packet, where the bytes go, and the most bits
/// the message may take, if any (as
/// [`write_delta_with_budget`](crate::FastArray::write_delta_with_budget)).
#[derive(Debug)]
pub struct DeltaWrite<'a> {
    /// The connection.
    pub state: &'a mut SendState,
    /// The packet that will carry the message.
    pub packet: u32,
    /// The bytes, appended to.
    pub out: &'a mut Vec<u8>,
    /// The most bits the message may take (`None`: no limit).
    pub max_bits: Option<u64>,
}

/// What one thread's writes reuse from write to write.
#[derive(Debug, Default)]
struct Workspace {
    /// This frame's encodings.
    encoded: EncodeCache,
    /// The array deltas of the items of the message being written.
    scratch: Vec<u8>,
    /// The lists a plan reuses.
    buffers: PlanBuffers,
    /// The changes a write takes to send as they were handed.
    follows: Vec<Follow>,
}

/// Runs of connections each thread of [`Sender::write_many`] may take,
/// on average: enough that one slowed thread leaves little to wait for,
/// few enough that taking one costs nothing beside writing it.
const RUNS_PER_THREAD: usize = 8;

/// One run of writes and their results.
type Run<'w, 'd> = (
    &'w mut [DeltaWrite<'d>],
    &'w mut [Option<Result<DeltaStats, SendError>>],
);

/// Writes the runs `queue` hands out until it has none left.
fn take_runs<'w, 'd: 'w, T: Replicate>(
    queue: &Mutex<std::vec::IntoIter<Run<'w, 'd>>>,
    reads: &Reads<'_>,
    store: &Store<T>,
    space: &mut Workspace,
) {
    loop {
        // A run is taken whole or not at all: a poisoned lock (another
        // thread panicked) hands out what is left.
        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
        let Some((writes, results)) = next else {
            return;
        };
        write_run(reads, Items::Shared(store), writes, results, space);
    }
}

/// `writes` and their `results` cut into at most `count` runs of about
/// as many messages of their own each (`own`): the others are written
/// already (the frame's shared message, a refusal) and cost nothing.
fn runs<'w, 'd>(
    mut writes: &'w mut [DeltaWrite<'d>],
    mut results: &'w mut [Option<Result<DeltaStats, SendError>>],
    own: &[bool],
    count: usize,
) -> Vec<Run<'w, 'd>> {
    let per_run = own
        .iter()
        .filter(|&&own| own)
        .count()
        .div_ceil(count)
        .max(1);
    let mut runs = Vec::with_capacity(count);
    let (mut start, mut counted) = (0, 0);
    for (index, _) in own.iter().enumerate().filter(|&(_, &own)| own) {
        counted += 1;
        if counted == per_run && runs.len() + 1 < count {
            let (run, rest) = core::mem::take(&mut writes).split_at_mut(index + 1 - start);
            let (done, left) = core::mem::take(&mut results).split_at_mut(index + 1 - start);
            runs.push((run, done));
            (writes, results, start, counted) = (rest, left, index + 1, 0);
        }
    }
    if !writes.is_empty() || runs.is_empty() {
        runs.push((writes, results));
    }
    runs
}

/// What the writes of several connections read of the array, beyond its
/// items.
struct Reads<'a> {
    history: &'a History,
    scopes: &'a Scopes,
    context: Context<'a>,
}

/// Writes the own messages of `writes` whose `results` are not in yet:
/// each catches up (reading what its scope was handed, which the array
/// empties after) and writes in `space`.
fn write_run<T: Replicate>(
    reads: &Reads<'_>,
    mut store: Items<'_, T>,
    writes: &mut [DeltaWrite<'_>],
    results: &mut [Option<Result<DeltaStats, SendError>>],
    space: &mut Workspace,
) {
    space.encoded.begin(store.get().frame());
    for (write, result) in writes.iter_mut().zip(results) {
        if result.is_some() {
            continue;
        }
        let budget = write.max_bits.map(Budget::of);
        let mut writer = BitWriter::new(write.out);
        let resynced = catch_up_reading(reads.history, reads.scopes, store.get(), write.state);
        let own = Own {
            state: write.state,
            packet: write.packet,
            writer: &mut writer,
            budget,
            resynced,
        };
        *result = Some(write_own(&reads.context, space, store.reborrow(), own));
    }
}

/// What a connection's own message reads of the array beyond its items.
struct Context<'a> {
    owners: &'a Owners,
    follow: Option<&'a Sources>,
    /// The newest frame's changed fields, encoded by its commit.
    changed: &'a ChangedSpans,
}

/// One connection's own message to write.
struct Own<'a, 'w> {
    state: &'a mut SendState,
    packet: u32,
    writer: &'a mut BitWriter<'w>,
    budget: Option<Budget>,
    /// Whether its catch-up had to compare.
    resynced: bool,
}

/// Plans and writes a connection's own message (its catch-up done), and
/// records what the packet carries.
fn write_own<T: Replicate>(
    context: &Context<'_>,
    work: &mut Workspace,
    store: Items<'_, T>,
    own: Own<'_, '_>,
) -> Result<DeltaStats, SendError> {
    let Own {
        state,
        packet,
        writer,
        budget,
        resynced,
    } = own;
    let frame = store.get().frame();
    let all_fields = FieldMask::all(T::FIELD_COUNT);
    let mut stats = DeltaStats {
        resynced,
        ..DeltaStats::default()
    };
    let mut scratch = core::mem::take(&mut work.scratch);
    scratch.clear();
    let audience = audience::<T>(Some(context.owners));
    // Changes kept to send as they were handed: without a budget, those
    // that may go so; under one, every change is work to choose among.
    let mut follows = core::mem::take(&mut work.follows);
    follows.clear();
    match budget {
        None => state.take_followed(T::STRUCTURE, &audience, &mut follows),
        Some(_) => state.unfollow(T::STRUCTURE),
    }
    let planned = plan(
        store,
        &mut work.encoded,
        &mut work.buffers,
        &audience,
        context.follow,
        context.changed,
        state,
        packet,
        budget,
        &follows,
        &mut scratch,
    );
    if planned.is_err() {
        // Nothing was written: they are due still.
        state.untake_followed(&follows, T::STRUCTURE);
    }
    work.follows = follows;
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
            work.scratch = scratch;
            return Err(error);
        }
    };
    stats.deferred = deferred;
    stats.oversized = oversized;
    stats.absorb(&inner);
    if removals.is_empty() && items.is_empty() {
        work.scratch = scratch;
        work.buffers.planned = items;
        MessageKind::Empty.write(writer);
        stats.bits = 1;
        return Ok(stats);
    }
    removals.sort_unstable_by_key(|removal| removal.wire);
    work.buffers.sort_by_wire(&mut items);
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
    message.write(&work.encoded, state, writer);
    stats.bits = writer.bits_written() - start;
    debug_assert!(budget.is_none_or(|budget| stats.bits <= budget.bits));
    work.scratch = scratch;

    count(&removals, &items, &mut stats);
    let removed = removals.iter().map(|removal| Written {
        id: removal.id,
        work: removal.work(),
        key: ReplicationKey::default(),
        since: removal.since,
        followed: false,
    });
    let sent = items.iter().map(|item| Written {
        id: item.id,
        work: item.work,
        key: item.key,
        since: item.since,
        followed: item.followed,
    });
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
    work.buffers.planned = items;
    Ok(stats)
}

/// [`Sender::catch_up`] of `state`, reading what its scope was handed and
/// leaving it there (several threads catch up at once; the array empties
/// the inboxes after).
fn catch_up_reading<T: Replicate>(
    history: &History,
    scopes: &Scopes,
    store: &Store<T>,
    state: &mut SendState,
) -> bool {
    let frame = store.frame();
    match state.scope().map(|scope| scope.slot) {
        None => state.catch_up(history, frame, T::STRUCTURE, store),
        // An item with arrays inside has their deltas to carry in its
        // entry: its changes go through the plan.
        Some(slot) => {
            let inbox = scopes.inbox(slot);
            state.catch_up_scoped(inbox, frame, T::STRUCTURE, store, T::ARRAY_FIELDS == 0)
        }
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
        // A caught-up connection is writing: the next frame's commit
        // writes its entries as it diffs the items.
        self.body.want();
        let Some(changes) = self
            .history
            .newest()
            .filter(|changes| changes.frame == frame && !changes.is_empty())
        else {
            return Ok(false);
        };
        // No connection plans its own message this frame.
        self.work.buffers.idle();
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
        let spare = self.shared.spare_changes();
        let written = message.write_frame(
            store,
            changes,
            allowed,
            state,
            &mut out,
            spare,
            &mut self.body,
        );
        let bits = out.finish();
        fit_to_message(&mut bytes);
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
        let slot = state.scope().map(|scope| scope.slot);
        let resynced = catch_up_reading(&self.history, &self.scopes, store, state);
        if let Some(slot) = slot {
            self.scopes.clear_inbox(slot);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs hold about as many messages of their own each, whatever
    /// lies between them.
    #[test]
    fn runs_share_the_own_messages_out() {
        let own = [
            false, false, false, true, true, true, true, false, true, true,
        ];
        let mut states: Vec<SendState> = own.iter().map(|_| SendState::new()).collect();
        let mut outs: Vec<Vec<u8>> = own.iter().map(|_| Vec::new()).collect();
        let mut writes: Vec<DeltaWrite<'_>> = (states.iter_mut().zip(&mut outs))
            .map(|(state, out)| DeltaWrite {
                state,
                packet: 1,
                out,
                max_bits: None,
            })
            .collect();
        let mut results: Vec<Option<Result<DeltaStats, SendError>>> =
            own.iter().map(|_| None).collect();
        let mut lengths = |count| -> Vec<usize> {
            let runs = runs(&mut writes, &mut results, &own, count);
            runs.iter()
                .map(|(writes, results)| {
                    assert_eq!(writes.len(), results.len());
                    writes.len()
                })
                .collect()
        };
        // 6 own messages: 3 and 3, the first run taking the 3 done ones.
        assert_eq!(lengths(2), [6, 4]);
        assert_eq!(lengths(3), [5, 2, 3]);
        assert_eq!(lengths(1), [10]);
        // More runs than messages: a run each, none empty.
        assert_eq!(lengths(8), [4, 1, 1, 1, 2, 1]);
    }
}
