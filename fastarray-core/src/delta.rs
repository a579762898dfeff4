//! Writing deltas: what one connection needs, bit-packed.
//!
//! Layout (see `WIRE.md`): the message kind, the frame, the removed ids
//! (an id list: count, gap code, ascending gaps), then the sent items (an
//! id list whose every id is followed by one bit `1` = whole item / `0` =
//! changed fields, and the payload).

use crate::array::FastArray;
use crate::bits::{BitReader, BitWriter, copy_bits};
use crate::encode_cache::{EncodeCache, Payload, Span};
use crate::error::SendError;
use crate::history::History;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::send::{Holding, RecordEntry, SendState, Work};
use crate::sender::Sender;
use crate::shared::SharedMessage;
use crate::wire::id_list::{IdWriter, ListSize};
use crate::wire::{self, MessageKind};

/// What one [`write_delta`](FastArray::write_delta) wrote. The counts
/// include the items of `#[replicate(array)]` fields inside the items sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeltaStats {
    /// Bits of the message (before the padding of the byte variant).
    pub bits: u64,
    /// Removals written.
    pub removed: usize,
    /// Whole items written (new to the client, or resent whole).
    pub added: usize,
    /// Items written as changed fields only.
    pub changed: usize,
    /// Items with work left for a later packet because of the bit budget.
    pub deferred: usize,
    /// Items that cannot fit in a message of this budget even alone: they
    /// stay due (and are counted in `deferred`), and every budgeted write
    /// reports them until a larger budget, or a write without one, sends
    /// them. The rest of the work flows around them.
    pub oversized: Option<Oversized>,
    /// Whether this write compared the whole array against what the client
    /// holds, because the connection was more than
    /// [`HISTORY_LEN`](crate::HISTORY_LEN) commits behind.
    pub resynced: bool,
    /// Whether the message was this frame's shared message: the connection
    /// was caught up (everything up to the last frame written, every add
    /// acknowledged, nothing to repair), so its message was the same bits
    /// as every other caught-up connection's. The second such connection of
    /// a frame writes and keeps it; the later ones copy it. (The first
    /// writes its own, so a lone connection pays nothing for sharing.)
    pub shared: bool,
}

/// Items too large for a write's bit budget (see [`DeltaStats::oversized`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oversized {
    /// The largest of them. For an item inside an array field, the item
    /// of this array that holds it (its array's work cannot complete).
    pub id: ReplicationId,
    /// The bits a message carrying only that item needs.
    pub bits: u64,
    /// How many items this write found too large.
    pub count: usize,
}

impl Oversized {
    /// Both reports in one: the larger item, and the counts summed.
    fn merge(this: Option<Self>, other: Option<Self>) -> Option<Self> {
        match (this, other) {
            (Some(a), Some(b)) => {
                let largest = if b.bits > a.bits { b } else { a };
                Some(Self {
                    count: a.count + b.count,
                    ..largest
                })
            }
            (a, b) => a.or(b),
        }
    }
}

impl DeltaStats {
    /// Adds the counts of a delta written inside this one (an array inside
    /// an item); its bits are already part of this message's.
    fn absorb(&mut self, inner: &DeltaStats) {
        self.added += inner.added;
        self.changed += inner.changed;
        self.removed += inner.removed;
        self.deferred += inner.deferred;
    }
}

/// A write's bit budget: what this message may take, and what a message
/// may take at most (for an array inside an item: if its owner's message
/// carried that item alone), against which an item is judged too large.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Budget {
    /// Bits this message may take.
    pub bits: u64,
    /// Bits a message carrying a single item could take.
    pub alone: u64,
}

impl Budget {
    /// A budget of `bits` for a message of its own.
    pub fn of(bits: u64) -> Self {
        Self { bits, alone: bits }
    }
}

/// An item chosen for this message.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    id: ReplicationId,
    work: Work,
    key: ReplicationKey,
    since: u64,
    span: Span,
    /// Its array deltas in the nested scratch: first bit and length.
    nested: (u64, u64),
}

/// An item with work due, before it is chosen for a message.
#[derive(Debug)]
pub(crate) struct Candidate {
    id: ReplicationId,
    pos: usize,
    work: Work,
    since: u64,
    /// Whether the entry carries only the item's array deltas (its plain
    /// fields are sent only because the client may not hold the item
    /// yet): it is written only if those deltas carry something.
    arrays_only: bool,
}

/// What one message carries, chosen and encoded, not yet written.
struct Plan {
    /// Removals and the frame each became due.
    removals: Vec<(ReplicationId, u64)>,
    items: Vec<Planned>,
    /// Removals and items left for a later packet.
    deferred: usize,
    oversized: Option<Oversized>,
    /// The figures of the array deltas written inside the items.
    nested: DeltaStats,
    /// Items whose arrays have work left, and since when it is due.
    unfinished: Vec<(ReplicationId, u64)>,
}

/// The bits a budgeted message has used so far: exact for everything
/// but the id lists, which are counted as if written with Elias-delta
/// gaps (the writer takes that code unless another is cheaper).
struct Fill {
    budget: u64,
    /// What a message of a single item may take (see [`Budget::alone`]).
    alone_budget: u64,
    /// Kind and frame.
    header: u64,
    removals: ListSize,
    items: ListSize,
    /// Flags, payloads and array deltas of the items.
    entries: u64,
}

impl Fill {
    fn used(&self) -> u64 {
        self.header + self.removals.bits() + self.items.bits() + self.entries
    }

    fn left(&self) -> u64 {
        self.budget.saturating_sub(self.used())
    }

    /// The bits of a message carrying only an item with `id` whose entry
    /// takes `entry` bits after its id.
    fn alone(&self, id: ReplicationId, entry: u64) -> u64 {
        let empty = ListSize::default();
        let items = empty.bits() + empty.cost(id);
        self.header + empty.bits() + items + entry
    }
}

impl<T: Replicate> FastArray<T> {
    /// Appends to `out` the delta that brings `conn`'s client up to date,
    /// and records that packet `packet` carries it. A message with nothing
    /// to send is one byte (one bit, padded).
    ///
    /// Call it after [`commit`](Self::commit), once per connection per tick;
    /// then report the packet's fate with [`SendState::on_ack`] or
    /// [`SendState::on_loss`]. On error nothing is written and nothing changes.
    ///
    /// Connections that are caught up (everything up to the last frame
    /// written, every add acknowledged, nothing to repair) get the same
    /// bits: the second of them in a frame writes the message and keeps it,
    /// and the others copy it and record the packet without visiting each
    /// changed item, so many clients cost little more than one
    /// ([`DeltaStats::shared`] says which writes took it).
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16, team: u8 }
    ///
    /// let mut server = FastArray::new();
    /// let id = server.push(Unit { hp: 100, team: 1 });
    /// server.commit();
    /// let mut conn = SendState::new();
    /// let mut client = FastArray::new();
    ///
    /// let mut packet = Vec::new();
    /// server.write_delta(&mut conn, 1, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// conn.on_ack(1);
    ///
    /// server.get_mut(id).unwrap().hp = 75;
    /// server.commit();
    /// packet.clear();
    /// let stats = server.write_delta(&mut conn, 2, &mut packet).unwrap();
    /// assert_eq!((stats.changed, stats.added), (1, 0)); // only `hp` is sent
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!(client, server);
    /// ```
    pub fn write_delta(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        out: &mut Vec<u8>,
    ) -> Result<DeltaStats, SendError> {
        let mut writer = BitWriter::new(out);
        self.write_delta_bits(conn, packet, &mut writer, None)
    }

    /// Like [`write_delta`](Self::write_delta), but the message takes at
    /// most `max_bits` bits: removals first, then the items whose work has
    /// waited longest (a lost packet's work keeps the place it had), as
    /// many as fit. An item that does not fit waits, and smaller ones
    /// behind it may still go, so every packet whose budget holds an item
    /// carries one. The rest stays due for the next packet
    /// ([`DeltaStats::deferred`]).
    ///
    /// An item with `#[replicate(array)]` fields shares what is left with
    /// its arrays' deltas, which may take several packets; an entry whose
    /// only purpose is to carry those deltas is written only if they carry
    /// something. An item too large for the budget even alone stays due
    /// and is reported in [`DeltaStats::oversized`] while the rest flows:
    /// send it with a larger budget, or without one.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Player { name: String, hp: u8 }
    ///
    /// let mut server = FastArray::new();
    /// for n in 0..10 {
    ///     server.push(Player { name: format!("p{n}"), hp: 100 });
    /// }
    /// let big = server.push(Player { name: "x".repeat(2_000), hp: 1 });
    /// server.commit();
    /// let (mut conn, mut client) = (SendState::new(), FastArray::<Player>::new());
    ///
    /// let mut packet = Vec::new();
    /// let stats = server.write_delta_with_budget(&mut conn, 1, &mut packet, 1_200 * 8).unwrap();
    /// assert_eq!((stats.added, stats.deferred), (10, 1));
    /// let oversized = stats.oversized.unwrap();
    /// assert_eq!(oversized.id, big);
    /// assert!(oversized.bits > 16_000);
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// conn.on_ack(1);
    /// assert_eq!(client.len(), 10);
    /// ```
    pub fn write_delta_with_budget(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        out: &mut Vec<u8>,
        max_bits: u64,
    ) -> Result<DeltaStats, SendError> {
        let mut writer = BitWriter::new(out);
        self.write_delta_bits(conn, packet, &mut writer, Some(max_bits))
    }
    /// Writes the delta into a shared bit stream (several arrays can share
    /// one packet, unaligned), optionally within a bit budget.
    pub fn write_delta_bits(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        max_bits: Option<u64>,
    ) -> Result<DeltaStats, SendError> {
        self.write_budgeted(conn, packet, writer, max_bits.map(Budget::of))
    }

    /// [`write_delta_bits`](Self::write_delta_bits) with a [`Budget`].
    pub(crate) fn write_budgeted(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        if self.has_uncommitted_work() {
            return Err(SendError::Uncommitted);
        }
        if conn.has_in_flight(packet) {
            return Err(SendError::PacketInFlight { packet });
        }
        if budget.is_some_and(|budget| budget.bits == 0) {
            return Err(SendError::BudgetTooSmall { budget: 0 });
        }
        let mut sender = self.sender_box();
        let result = self.write_with(&mut sender, conn, packet, writer, budget);
        self.put_sender(sender);
        result
    }

    /// [`write_delta_bits`](Self::write_delta_bits) once its arguments are
    /// checked, with the array's sending side taken out of it.
    fn write_with(
        &mut self,
        sender: &mut Sender,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        let frame = self.frame;
        conn.expire(frame);
        let shareable = budget.is_none()
            && T::ARRAY_FIELDS == 0
            && conn.in_sync(frame, self.live_before(&sender.history));
        if shareable && sender.shared.frame == frame {
            return Ok(self.write_shared(&sender.shared, conn, packet, writer));
        }
        // The first caught-up connection of a frame writes as usual; the
        // second keeps its bits for the others. A lone connection pays
        // nothing for sharing.
        let keep = shareable && sender.shared.seen == frame;
        if shareable {
            sender.shared.seen = frame;
        }
        let mut stats = DeltaStats::default();
        self.merge_history(&sender.history, conn, &mut stats);

        let mut scratch = core::mem::take(&mut sender.nested_scratch);
        scratch.clear();
        let plan = self.plan(sender, conn, packet, budget, &mut scratch);
        let plan = match plan {
            Ok(plan) => plan,
            Err(error) => {
                sender.nested_scratch = scratch;
                return Err(error);
            }
        };
        let Plan {
            mut removals,
            mut items,
            deferred,
            oversized,
            nested,
            unfinished,
        } = plan;
        stats.deferred = deferred;
        stats.oversized = oversized;
        if removals.is_empty() && items.is_empty() {
            sender.nested_scratch = scratch;
            sender.planned = items;
            MessageKind::Empty.write(writer);
            stats.bits = 1;
            stats.absorb(&nested);
            return Ok(stats);
        }
        removals.sort_unstable_by_key(|&(id, _)| id);
        items.sort_unstable_by_key(|p| p.id);
        let acked = conn.acked_frame;
        if keep {
            // Keep the bits for the other caught-up connections.
            let mut bytes = core::mem::take(&mut sender.shared.bytes);
            bytes.clear();
            let mut copy = BitWriter::new(&mut bytes);
            self.write_message(
                &sender.encoded,
                &mut copy,
                acked,
                &removals,
                &items,
                &scratch,
            );
            stats.bits = copy.finish();
            copy_bits(&mut BitReader::new(&bytes), writer, stats.bits);
            sender.shared.bytes = bytes;
        } else {
            let start = writer.bits_written();
            self.write_message(&sender.encoded, writer, acked, &removals, &items, &scratch);
            stats.bits = writer.bits_written() - start;
        }
        debug_assert!(budget.is_none_or(|budget| stats.bits <= budget.bits));
        sender.nested_scratch = scratch;

        let mut record = conn.entry_buffer();
        record.reserve(removals.len() + items.len());
        // Usually everything due was written: clear the map at once rather
        // than removing each id.
        let wrote_all = stats.deferred == 0 && unfinished.is_empty();
        if wrote_all {
            conn.pending.clear();
        }
        for &(id, since) in &removals {
            if !wrote_all {
                conn.pending.remove(&id);
            }
            record.push(RecordEntry::new(
                id,
                Work::Remove,
                ReplicationKey::default(),
                frame,
                since,
            ));
        }
        for item in &items {
            if !wrote_all {
                conn.pending.remove(&item.id);
            }
            record.push(RecordEntry::new(
                item.id, item.work, item.key, frame, item.since,
            ));
            match item.work {
                Work::Add { .. } => stats.added += 1,
                _ => stats.changed += 1,
            }
        }
        stats.removed = removals.len();
        let oldest_due = removals
            .iter()
            .map(|&(_, since)| since)
            .chain(items.iter().map(|item| item.since))
            .fold(frame, u64::min);
        if keep {
            stats.shared = true;
            self.keep_shared(&mut sender.shared, &record, stats);
        }
        conn.record(
            packet,
            frame,
            oldest_due,
            record,
            None,
            FieldMask::all(T::FIELD_COUNT),
        );
        for (id, since) in unfinished {
            conn.queue(id, Work::Fields(FieldMask::EMPTY), since);
        }
        stats.absorb(&nested);
        sender.planned = items;
        Ok(stats)
    }

    /// Writes the message: kind, frame, the removals, then the items with
    /// their payloads and array deltas (read from `nested`).
    fn write_message(
        &self,
        encoded: &EncodeCache,
        writer: &mut BitWriter<'_>,
        acked: Option<u64>,
        removals: &[(ReplicationId, u64)],
        items: &[Planned],
        nested: &[u8],
    ) {
        MessageKind::Delta.write(writer);
        wire::frame::write_frame(writer, self.frame, acked);
        let mut ids = IdWriter::start(writer, removals.iter().map(|&(id, _)| id));
        for &(id, _) in removals {
            ids.write(writer, id);
        }
        let mut ids = IdWriter::start(writer, items.iter().map(|p| p.id));
        for item in items {
            ids.write(writer, item.id);
            writer.write_bool(matches!(item.work, Work::Add { .. }));
            encoded.copy(item.span, writer);
            let (start, bits) = item.nested;
            if bits > 0 {
                let mut reader = BitReader::at(nested, start);
                copy_bits(&mut reader, writer, bits);
            }
        }
    }

    /// The number of items before this frame's changes: what a caught-up
    /// client holds.
    fn live_before(&self, history: &History) -> usize {
        match history.newest() {
            Some(changes) if changes.frame == self.frame => {
                self.slots.len() + changes.removed.len() - changes.added.len()
            }
            _ => self.slots.len(),
        }
    }

    /// Keeps the message just written to a caught-up connection, whose
    /// record is `entries`, for the other caught-up connections this frame.
    fn keep_shared(&self, shared: &mut SharedMessage, entries: &[RecordEntry], stats: DeltaStats) {
        shared.frame = self.frame;
        shared.bits = stats.bits;
        shared.entries.clear();
        let mut changed = Vec::new();
        for entry in entries {
            match entry.work {
                Work::Fields(mask) => changed.push((entry.id, mask)),
                _ => shared.entries.push(*entry),
            }
        }
        shared.changed = (!changed.is_empty()).then(|| changed.into());
        shared.stats = DeltaStats {
            shared: true,
            ..stats
        };
    }

    /// Copies this frame's shared message into `writer` for a caught-up
    /// connection, and records it: O(adds + removals) for the connection,
    /// whatever the number of changed items.
    fn write_shared(
        &self,
        shared: &SharedMessage,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
    ) -> DeltaStats {
        let frame = self.frame;
        copy_bits(&mut BitReader::new(&shared.bytes), writer, shared.bits);
        let mut entries = conn.entry_buffer();
        entries.extend_from_slice(&shared.entries);
        conn.record(
            packet,
            frame,
            frame,
            entries,
            shared.changed.clone(),
            FieldMask::all(T::FIELD_COUNT),
        );
        conn.cursor = frame + 1;
        shared.stats
    }

    /// Brings `conn`'s pending work up to the current frame: from the
    /// history ring when it reaches back far enough, else by comparison.
    fn merge_history(&self, history: &History, conn: &mut SendState, stats: &mut DeltaStats) {
        match history.since(conn.cursor) {
            Some(frames) => frames.for_each(|changes| conn.merge_frame(changes, T::STRUCTURE)),
            None => {
                stats.resynced = true;
                conn.resync(
                    self.slots
                        .iter()
                        .map(|slot| (slot.id, slot.key, slot.changed)),
                    |id| self.index.contains_key(&id),
                );
            }
        }
        conn.cursor = self.frame + 1;
    }

    /// Chooses what the message for `conn` carries: every removal and item
    /// due, or, within a budget, the removals and then the items that have
    /// waited longest, as many as fit (an item that does not fit waits,
    /// and a smaller one behind it may go). Each item's payload is encoded
    /// (once per frame, shared by every connection) and its arrays' deltas
    /// written into `scratch`. On error, every array delta already written
    /// for `packet` is retired as lost, so nothing stays in flight for a
    /// packet that will not be sent.
    fn plan(
        &mut self,
        sender: &mut Sender,
        conn: &mut SendState,
        packet: u32,
        budget: Option<Budget>,
        scratch: &mut Vec<u8>,
    ) -> Result<Plan, SendError> {
        let mut candidates = core::mem::take(&mut sender.candidates);
        let mut removals = self.candidates(conn, &mut candidates);
        let mut plan = Plan {
            removals: Vec::new(),
            // The last write's list, not a new one: allocating a list of a
            // few kB per write cost 7% of a sparse write's instructions in
            // malloc. Its capacity follows what recent writes needed.
            items: core::mem::take(&mut sender.planned),
            deferred: 0,
            oversized: None,
            nested: DeltaStats::default(),
            unfinished: Vec::new(),
        };
        plan.items.clear();
        if plan.items.capacity() > 4 * candidates.len().max(64) {
            plan.items = Vec::new();
        }
        let mut fill = budget.map(|budget| Fill {
            budget: budget.bits,
            alone_budget: budget.alone,
            header: 2 + wire::frame::frame_bits(self.frame, conn.acked_frame),
            removals: ListSize::default(),
            items: ListSize::default(),
            entries: 0,
        });
        match &mut fill {
            None => {
                plan.removals = removals;
                plan.items.reserve(candidates.len());
            }
            Some(fill) => {
                // Removals first, then by how long the work has waited.
                removals.sort_unstable_by_key(|&(id, since)| (since, id));
                for (id, since) in removals {
                    let cost = fill.removals.cost(id);
                    if fill.used() + cost <= fill.budget {
                        fill.removals.insert(id);
                        plan.removals.push((id, since));
                    } else {
                        plan.deferred += 1;
                    }
                }
                candidates.sort_unstable_by_key(|c| (c.since, c.id));
            }
        }
        let mut writer = BitWriter::new(scratch);
        let mut written = Vec::new();
        let result = self.choose_items(
            &mut sender.encoded,
            conn,
            packet,
            &mut candidates,
            fill.as_mut(),
            &mut writer,
            &mut plan,
            &mut written,
        );
        drop(writer);
        sender.candidates = candidates;
        if let Err(error) = result {
            for id in written {
                if let Some(states) = conn.nested.get_mut(&id) {
                    states.iter_mut().for_each(|state| {
                        state.on_loss(packet);
                    });
                }
            }
            sender.planned = plan.items;
            return Err(error);
        }
        Ok(plan)
    }

    /// Sorts `conn`'s pending work into removals (with the frame each
    /// became due) and items to send, and drops work for items that are
    /// gone and that the client never held.
    fn candidates(
        &self,
        conn: &mut SendState,
        candidates: &mut Vec<Candidate>,
    ) -> Vec<(ReplicationId, u64)> {
        let mut removals = Vec::new();
        candidates.clear();
        // Reused across writes (see `Plan::items`), sized by recent needs.
        if candidates.capacity() > 4 * conn.pending.len().max(64) {
            *candidates = Vec::new();
        }
        candidates.reserve(conn.pending.len());
        let mut dropped = Vec::new();
        for &(id, ref pending) in conn.pending.iter() {
            let view = conn.view.get(&id);
            let pos = self.index.get(&id).copied();
            let (work, Some(pos)) = (pending.work, pos) else {
                if view.is_some() {
                    removals.push((id, pending.since));
                } else {
                    dropped.push(id);
                }
                continue;
            };
            // Changed fields go only to a client that knows the item;
            // others get the whole item.
            let known = view.is_some_and(|v| v.holding == Holding::Known);
            let (work, arrays_only) = match work {
                Work::Remove => {
                    if view.is_some() {
                        removals.push((id, pending.since));
                    } else {
                        dropped.push(id);
                    }
                    continue;
                }
                Work::Fields(mask) if known => (Work::Fields(mask), mask.is_empty()),
                add @ Work::Add { .. } => (add, false),
                Work::Fields(mask) if view.is_some() => {
                    (Work::Add { structural: false }, mask.is_empty())
                }
                Work::Fields(_) => (Work::Add { structural: true }, false),
            };
            candidates.push(Candidate {
                id,
                pos,
                work,
                since: pending.since,
                arrays_only: arrays_only && T::ARRAY_FIELDS > 0,
            });
        }
        for id in dropped {
            conn.pending.remove(&id);
            conn.nested.remove(&id);
        }
        removals
    }

    /// Encodes the candidates and writes their array deltas, keeping those
    /// that fit `fill` (all of them without a budget) in `plan`. `written`
    /// gets the id of every item whose arrays wrote into this packet.
    #[allow(clippy::too_many_arguments)]
    fn choose_items(
        &mut self,
        encoded: &mut EncodeCache,
        conn: &mut SendState,
        packet: u32,
        candidates: &mut Vec<Candidate>,
        mut fill: Option<&mut Fill>,
        scratch: &mut BitWriter<'_>,
        plan: &mut Plan,
        written: &mut Vec<ReplicationId>,
    ) -> Result<(), SendError> {
        let arrays = u64::from(T::ARRAY_FIELDS);
        let count = candidates.len();
        for (index, c) in candidates.drain(..).enumerate() {
            if let Some(fill) = fill.as_deref() {
                // Nothing fits in fewer bits than an id, a flag and the
                // item's one-bit array deltas.
                if fill.left() < 2 + arrays {
                    plan.deferred += count - index;
                    break;
                }
            }
            let mut work = c.work;
            let mut span = self.encode_entry(encoded, c.id, c.pos, work)?;
            if let (Some(fill), Work::Fields(mask)) = (fill.as_deref(), work) {
                let cost = fill.items.cost(c.id) + 1 + span.bits + arrays;
                if !mask.is_empty() && fill.used() + cost > fill.budget {
                    // A known item may always go whole: with most of its
                    // fields changed, that can be the smaller entry.
                    let whole = Work::Add { structural: false };
                    let full = self.encode_entry(encoded, c.id, c.pos, whole)?;
                    if full.bits < span.bits {
                        (work, span) = (whole, full);
                    }
                }
            }
            let own = 1 + span.bits + arrays;
            let mut inner = None;
            if let Some(fill) = fill.as_deref() {
                let cost = fill.items.cost(c.id) + own;
                let alone = fill.alone(c.id, own);
                if fill.used() + cost > fill.budget {
                    if alone > fill.alone_budget {
                        let this = Oversized {
                            id: c.id,
                            bits: alone,
                            count: 1,
                        };
                        plan.oversized = Oversized::merge(plan.oversized, Some(this));
                    }
                    plan.deferred += 1;
                    continue;
                }
                // Each array gets back the one bit its entry counted.
                inner = Some(Budget {
                    bits: fill.budget - fill.used() - cost + 1,
                    alone: fill.alone_budget - alone + 1,
                });
            }
            let mut nested = (scratch.bits_written(), 0);
            if T::ARRAY_FIELDS > 0 {
                written.push(c.id);
                let mut part = self.write_arrays(conn, packet, &c, inner, scratch)?;
                if let (Some(fill), Some(oversized)) = (fill.as_deref(), &mut part.oversized) {
                    // What the owner's message needs to carry it: the
                    // owner's entry alone, with that array's message.
                    oversized.bits += fill.alone(c.id, own) - 1;
                }
                nested.1 = part.bits;
                if part.wrote_nothing && c.arrays_only {
                    // Nothing to carry: the work waits for a larger
                    // budget, or is done.
                    if part.unfinished {
                        plan.deferred += 1;
                    } else {
                        conn.pending.remove(&c.id);
                    }
                    plan.oversized = Oversized::merge(plan.oversized, part.oversized);
                    continue;
                }
                plan.nested.absorb(&part.stats);
                plan.oversized = Oversized::merge(plan.oversized, part.oversized);
                if part.unfinished {
                    plan.unfinished.push((c.id, c.since));
                }
            }
            if let Some(fill) = fill.as_deref_mut() {
                fill.items.insert(c.id);
                fill.entries += 1 + span.bits + nested.1;
            }
            let key = self.slots[c.pos].key;
            plan.items.push(Planned {
                id: c.id,
                work,
                key,
                since: c.since,
                span,
                nested,
            });
        }
        Ok(())
    }

    /// The encoding of an item's entry after its flag (shared by every
    /// connection this frame): the whole item, or the field set and the
    /// changed fields.
    fn encode_entry(
        &self,
        encoded: &mut EncodeCache,
        id: ReplicationId,
        pos: usize,
        work: Work,
    ) -> Result<Span, SendError> {
        let payload = match work {
            Work::Fields(mask) => Payload::Fields(mask.bits()),
            _ => Payload::Full,
        };
        let value = &self.slots[pos].value;
        encoded
            .get_or_encode(self.frame, id, payload, |w| match work {
                Work::Fields(mask) => {
                    if T::ARRAY_FIELDS > 0 {
                        // Whether any plain field follows: an entry may
                        // carry array deltas only.
                        w.write_bool(!mask.is_empty());
                        if mask.is_empty() {
                            return Ok(());
                        }
                    }
                    wire::field_set::write_field_set(w, mask, T::FIELD_COUNT);
                    value.encode_fields(mask, w)
                }
                _ => value.encode(w),
            })
            .map_err(|error| SendError::Encode { id, error })
    }

    /// Writes the deltas of a candidate's `#[replicate(array)]` fields into
    /// `scratch`, within `budget` if there is one: its bits are for the
    /// first array, and each array leaves the next what it did not take
    /// beyond its one-bit empty message (which the entry's cost counts).
    fn write_arrays(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        c: &Candidate,
        budget: Option<Budget>,
        scratch: &mut BitWriter<'_>,
    ) -> Result<ArrayDeltas, SendError> {
        // The bits beyond each array's one-bit empty message.
        let mut left = budget.map(|budget| budget.bits - 1);
        let states = conn.nested_states(c.id, T::ARRAY_FIELDS);
        let start = scratch.bits_written();
        let mut out = ArrayDeltas {
            bits: 0,
            wrote_nothing: true,
            unfinished: false,
            oversized: None,
            stats: DeltaStats::default(),
        };
        let mut failure = None;
        let mut index = 0;
        self.slots[c.pos].value.for_each_array_mut(&mut |array| {
            let Some(state) = states.get_mut(index) else {
                return;
            };
            index += 1;
            if failure.is_some() {
                return;
            }
            let budget = budget.zip(left).map(|(budget, left)| Budget {
                bits: left + 1,
                alone: budget.alone,
            });
            match array.write_delta_into(state, packet, scratch, budget) {
                Ok(part) => {
                    if let Some(left) = &mut left {
                        *left -= part.bits.saturating_sub(1).min(*left);
                    }
                    out.wrote_nothing &= part.bits <= 1;
                    out.unfinished |= part.deferred > 0;
                    out.oversized = Oversized::merge(out.oversized, part.oversized);
                    out.stats.absorb(&part);
                }
                Err(error) => failure = Some(error),
            }
        });
        if let Some(error) = failure {
            return Err(error);
        }
        out.bits = scratch.bits_written() - start;
        if let Some(inner) = &mut out.oversized {
            // What the owner's message needs to carry it.
            inner.id = c.id;
        }
        Ok(out)
    }
}

/// The array deltas of one item, written for a message.
struct ArrayDeltas {
    bits: u64,
    /// Every array wrote its one-bit empty message.
    wrote_nothing: bool,
    /// Some array has work left (the budget ran out).
    unfinished: bool,
    oversized: Option<Oversized>,
    stats: DeltaStats,
}
