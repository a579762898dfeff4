//! Writing deltas: what one connection needs, bit-packed.
//!
//! Layout (see `WIRE.md`): the message kind, the frame, the removed ids
//! (an id list: count, gap code, ascending gaps), then the sent items (an
//! id list whose every id is followed by one bit `1` = whole item / `0` =
//! changed fields, and the payload).

use crate::array::FastArray;
use crate::bits::{BitReader, BitWriter, copy_bits};
use crate::encode_cache::{Payload, Span};
use crate::error::SendError;
use crate::id::{ReplicationId, ReplicationKey};
use crate::id_list::{self, IdWriter};
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::send::{Holding, RecordEntry, SendState, Work};
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

/// An item chosen for this message.
#[derive(Clone)]
pub(crate) struct Planned {
    id: ReplicationId,
    work: Work,
    key: ReplicationKey,
    since: u64,
    span: Span,
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
    /// most `max_bits` bits: removals first, then the items that have waited
    /// longest, as many as fit; the rest stays due for the next packet.
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
        if self.has_uncommitted_work() {
            return Err(SendError::Uncommitted);
        }
        if conn.has_in_flight(packet) {
            return Err(SendError::PacketInFlight { packet });
        }
        if max_bits == Some(0) {
            return Err(SendError::BudgetTooSmall { budget: 0 });
        }
        let frame = self.frame;
        conn.expire(frame);
        let shareable =
            max_bits.is_none() && T::ARRAY_FIELDS == 0 && conn.in_sync(frame, self.live_before());
        if shareable && self.shared.frame == frame {
            return Ok(self.write_shared(conn, packet, writer));
        }
        // The first caught-up connection of a frame writes as usual; the
        // second keeps its bits for the others. A lone connection pays
        // nothing for sharing.
        let keep = shareable && self.shared.seen == frame;
        if shareable {
            self.shared.seen = frame;
        }
        let mut stats = DeltaStats::default();
        self.merge_history(conn, &mut stats);

        let (mut removals, mut items) = self.plan(conn)?;
        let due = removals.len() + items.len();
        let mut left = None;
        if let Some(budget) = max_bits {
            left = Some(fit_budget::<T>(
                budget,
                frame,
                conn.acked_frame,
                &mut removals,
                &mut items,
            ));
        }
        stats.deferred = due - removals.len() - items.len();
        if removals.is_empty() && items.is_empty() {
            MessageKind::Empty.write(writer);
            stats.bits = 1;
            return Ok(stats);
        }
        removals.sort_unstable_by_key(|&(id, _)| id);
        items.sort_unstable_by_key(|p| p.id);
        let nested = if T::ARRAY_FIELDS > 0 {
            self.write_nested(conn, packet, &items, left)?
        } else {
            NestedDeltas::default()
        };
        let mut scratch = core::mem::take(&mut self.nested_scratch);
        let mut inner = BitReader::new(&scratch);
        let acked = conn.acked_frame;
        if keep {
            // Keep the bits for the other caught-up connections.
            let mut bytes = core::mem::take(&mut self.shared.bytes);
            bytes.clear();
            let mut copy = BitWriter::new(&mut bytes);
            self.write_message(&mut copy, acked, &removals, &items, &nested, &mut inner);
            stats.bits = copy.finish();
            copy_bits(&mut BitReader::new(&bytes), writer, stats.bits);
            self.shared.bytes = bytes;
        } else {
            let start = writer.bits_written();
            self.write_message(writer, acked, &removals, &items, &nested, &mut inner);
            stats.bits = writer.bits_written() - start;
        }
        scratch.clear();
        self.nested_scratch = scratch;

        let mut record = conn.entry_buffer();
        record.reserve(removals.len() + items.len());
        // Usually everything due was written: clear the map at once rather
        // than removing each id.
        let wrote_all = stats.deferred == 0;
        if wrote_all {
            conn.pending.clear();
        }
        for &(id, _) in &removals {
            if !wrote_all {
                conn.pending.remove(&id);
            }
            record.push(RecordEntry {
                id,
                work: Work::Remove,
                key: ReplicationKey::default(),
            });
        }
        for item in &items {
            if !wrote_all {
                conn.pending.remove(&item.id);
            }
            record.push(RecordEntry {
                id: item.id,
                work: item.work,
                key: item.key,
            });
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
            self.keep_shared(&record, stats);
        }
        conn.record(
            packet,
            frame,
            oldest_due,
            record,
            None,
            FieldMask::all(T::FIELD_COUNT),
        );
        for id in nested.unfinished {
            conn.queue(id, Work::Fields(FieldMask::EMPTY), frame);
        }
        stats.absorb(&nested.stats);
        self.planned = items;
        Ok(stats)
    }

    /// Writes the message: kind, frame, the removals, then the items with
    /// their payloads (and array deltas, read from `inner`).
    fn write_message(
        &self,
        writer: &mut BitWriter<'_>,
        acked: Option<u64>,
        removals: &[(ReplicationId, u64)],
        items: &[Planned],
        nested: &NestedDeltas,
        inner: &mut BitReader<'_>,
    ) {
        MessageKind::Delta.write(writer);
        wire::write_frame(writer, self.frame, acked);
        let mut ids = IdWriter::start(writer, removals.iter().map(|&(id, _)| id));
        for &(id, _) in removals {
            ids.write(writer, id);
        }
        let mut ids = IdWriter::start(writer, items.iter().map(|p| p.id));
        for (index, item) in items.iter().enumerate() {
            ids.write(writer, item.id);
            writer.write_bool(matches!(item.work, Work::Add { .. }));
            self.encoded.copy(item.span, writer);
            if let Some(&bits) = nested.bits.get(index) {
                copy_bits(inner, writer, bits);
            }
        }
    }

    /// The number of items before this frame's changes: what a caught-up
    /// client holds.
    fn live_before(&self) -> usize {
        match self.history.newest() {
            Some(changes) if changes.frame == self.frame => {
                self.slots.len() + changes.removed.len() - changes.added.len()
            }
            _ => self.slots.len(),
        }
    }

    /// Keeps the message just written to a caught-up connection, whose
    /// record is `entries`, for the other caught-up connections this frame.
    fn keep_shared(&mut self, entries: &[RecordEntry], stats: DeltaStats) {
        let shared = &mut self.shared;
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
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
    ) -> DeltaStats {
        let frame = self.frame;
        let shared = &self.shared;
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

    /// Writes the deltas of the `#[replicate(array)]` fields of each item
    /// about to be sent, in the same order, into `self.nested_scratch`,
    /// sharing the bits `left` by the budget. On error every array delta
    /// already written for `packet` is retired as lost, so nothing stays in
    /// flight for a packet that will not be sent.
    fn write_nested(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        items: &[Planned],
        mut left: Option<u64>,
    ) -> Result<NestedDeltas, SendError> {
        let mut nested = NestedDeltas::default();
        let mut scratch = core::mem::take(&mut self.nested_scratch);
        scratch.clear();
        let mut writer = BitWriter::new(&mut scratch);
        let mut failure = None;
        let mut written = 0;
        for item in items {
            let Some(&pos) = self.index.get(&item.id) else {
                nested.bits.push(0);
                continue;
            };
            let states = conn.nested_states(item.id, T::ARRAY_FIELDS);
            let start = writer.bits_written();
            let mut index = 0;
            let mut unfinished = false;
            self.slots[pos].value.for_each_array_mut(&mut |array| {
                let Some(state) = states.get_mut(index) else {
                    return;
                };
                index += 1;
                if failure.is_some() {
                    return;
                }
                // Every array gets at least its one-bit empty message,
                // which the budget reserved.
                let budget = left.map(|left| left + 1);
                match array.write_delta_into(state, packet, &mut writer, budget) {
                    Ok(part) => {
                        if let Some(left) = &mut left {
                            *left -= part.bits.saturating_sub(1).min(*left);
                        }
                        unfinished |= part.deferred > 0;
                        nested.stats.absorb(&part);
                    }
                    Err(error) => failure = Some(error),
                }
            });
            written += 1;
            if failure.is_some() {
                break;
            }
            nested.bits.push(writer.bits_written() - start);
            if unfinished {
                nested.unfinished.push(item.id);
            }
        }
        drop(writer);
        self.nested_scratch = scratch;
        if let Some(error) = failure {
            for item in &items[..written] {
                if let Some(states) = conn.nested.get_mut(&item.id) {
                    states.iter_mut().for_each(|state| {
                        state.on_loss(packet);
                    });
                }
            }
            return Err(error);
        }
        Ok(nested)
    }

    /// Brings `conn`'s pending work up to the current frame: from the
    /// history ring when it reaches back far enough, else by comparison.
    fn merge_history(&self, conn: &mut SendState, stats: &mut DeltaStats) {
        match self.history.since(conn.cursor) {
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

    /// Turns `conn`'s pending work into removals and items to send, with
    /// their payloads encoded (once per frame, shared by all connections).
    #[allow(clippy::type_complexity)]
    fn plan(
        &mut self,
        conn: &mut SendState,
    ) -> Result<(Vec<(ReplicationId, u64)>, Vec<Planned>), SendError> {
        let mut removals = Vec::new();
        // The last write's list, not a new one: allocating a list of a few
        // kB per write cost 7% of a sparse write's instructions in malloc.
        // Its capacity follows what recent writes needed.
        let due = conn.pending.len();
        let mut items = Vec::new();
        if due > 0 {
            items = core::mem::take(&mut self.planned);
            items.clear();
            if items.capacity() > 4 * due.max(64) {
                items = Vec::new();
            }
            items.reserve(due);
        }
        let mut dropped = Vec::new();
        for &(id, ref pending) in conn.pending.iter() {
            let view = conn.view.get(&id);
            let live = self.index.get(&id).map(|&pos| &self.slots[pos]);
            match (pending.work, live) {
                (Work::Remove, _) | (_, None) => {
                    if view.is_some() {
                        removals.push((id, pending.since));
                    } else {
                        dropped.push(id);
                    }
                }
                (work, Some(slot)) => {
                    let work = match (work, view) {
                        (Work::Fields(mask), Some(v)) if v.holding == Holding::Known => {
                            Work::Fields(mask)
                        }
                        (add @ Work::Add { .. }, _) => add,
                        _ => Work::Add { structural: false },
                    };
                    let payload = match work {
                        Work::Fields(mask) => Payload::Fields(mask.bits()),
                        _ => Payload::Full,
                    };
                    let value = &slot.value;
                    let span = self
                        .encoded
                        .get_or_encode(self.frame, id, payload, |w| match work {
                            Work::Fields(mask) => {
                                if T::ARRAY_FIELDS > 0 {
                                    // Whether any plain field follows: an
                                    // entry may carry array deltas only.
                                    w.write_bool(!mask.is_empty());
                                    if mask.is_empty() {
                                        return Ok(());
                                    }
                                }
                                wire::write_field_set(w, mask, T::FIELD_COUNT);
                                value.encode_fields(mask, w)
                            }
                            _ => value.encode(w),
                        })
                        .map_err(|error| SendError::Encode { id, error })?;
                    items.push(Planned {
                        id,
                        work,
                        key: slot.key,
                        since: pending.since,
                        span,
                    });
                }
            }
        }
        for id in dropped {
            conn.pending.remove(&id);
            conn.nested.remove(&id);
        }
        Ok((removals, items))
    }
}

/// Keeps the removals, then the longest-waiting items, that fit in
/// `budget` bits, and returns the bits left over. Sizes are upper bounds
/// (an id's gap is never larger than the id), so the message written never
/// exceeds the budget. An item with `#[replicate(array)]` fields counts
/// one bit per array (an empty delta); the bits left over are shared by
/// the arrays' deltas.
fn fit_budget<T: Replicate>(
    budget: u64,
    frame: u64,
    acked: Option<u64>,
    removals: &mut Vec<(ReplicationId, u64)>,
    items: &mut Vec<Planned>,
) -> u64 {
    // A list's gap code and gaps never cost more than the one bit of the
    // Elias-delta code and every gap as its varint, and a gap is never
    // larger than its id: so each id is counted as the varint of the id.
    let header = 2
        + wire::frame_bits(frame, acked)
        + id_list::count_bits(removals.len() as u64)
        + id_list::count_bits(items.len() as u64)
        + 2;
    if header > budget {
        removals.clear();
        items.clear();
        return 0;
    }
    let mut left = budget - header;
    removals.sort_unstable_by_key(|&(id, since)| (since, id));
    removals.retain(|&(id, _)| {
        let cost = wire::varint_bits(id.to_raw());
        let fits = cost <= left;
        if fits {
            left -= cost;
        }
        fits
    });
    items.sort_unstable_by_key(|p| (p.since, p.id));
    items.retain(|p| {
        let cost = wire::varint_bits(p.id.to_raw()) + 1 + p.span.bits + u64::from(T::ARRAY_FIELDS);
        let fits = cost <= left;
        if fits {
            left -= cost;
        }
        fits
    });
    left
}

/// The array deltas of the items of one message, written ahead of it.
#[derive(Default)]
struct NestedDeltas {
    /// Bits of each item's array deltas, in the message's item order.
    bits: Vec<u64>,
    /// Items whose arrays have work left over (the budget ran out).
    unfinished: Vec<ReplicationId>,
    /// The arrays' figures, summed.
    stats: DeltaStats,
}
