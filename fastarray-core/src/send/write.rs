//! Writing a delta for one connection: the message kind, the frame, the
//! removed ids, then the sent items (see `WIRE.md`), and the record of
//! what the packet carries.

use super::encode_cache::EncodeCache;
use super::pending::Work;
use super::plan::{Plan, Planned, frame_entries, plan};
use super::retirement::RecordEntry;
use super::sender::Sender;
use super::state::{Removal, SendState};
use super::stats::{Budget, DeltaStats};
use crate::bits::{BitReader, BitWriter, copy_bits};
use crate::changeset::Changeset;
use crate::error::SendError;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::store::{Near, Store};
use crate::wire::MessageKind;
use crate::wire::exits::write_exits;
use crate::wire::field_set::write_field_set;
use crate::wire::id_list::IdWriter;

impl Sender {
    /// Writes into `writer` the delta that brings `conn`'s client up to
    /// date with `store`, within `budget` if given, and records that
    /// `packet` carries it. On error nothing is written and nothing is
    /// recorded.
    pub(crate) fn write<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        self.write_with(store, conn, packet, writer, budget, true)
    }

    /// [`write`](Self::write), the shared message allowed if `share`
    /// (without it: what a caught-up connection's own message would be,
    /// which the tests compare with the shared one).
    pub(crate) fn write_with<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
        share: bool,
    ) -> Result<DeltaStats, SendError> {
        if store.has_uncommitted_work() {
            return Err(SendError::Uncommitted);
        }
        if conn.has_in_flight(packet) {
            return Err(SendError::PacketInFlight { packet });
        }
        self.check_scope(store, conn)?;
        if budget.is_some_and(|budget| budget.bits == 0) {
            return Err(SendError::BudgetTooSmall { budget: 0 });
        }
        let frame = store.frame();
        // Every write starts its frame in the encode cache, whether or not
        // it encodes through it (the shared message encodes into itself):
        // the encodings of an earlier frame, a first full sync's say, go.
        self.encoded.begin(frame);
        let all_fields = FieldMask::all(T::FIELD_COUNT);
        conn.expire(frame);
        conn.choose_names();
        // A caught-up connection takes the frame's shared message, the
        // bits it would plan for itself, encoded once for all of them;
        // under a budget (a `Connection` packing a packet), when the
        // message fits it.
        let shareable = share
            && T::ARRAY_FIELDS == 0
            && conn.in_sync(frame, store.live_before(self.history.newest()));
        if shareable
            && (self.shared.holds(frame) || self.compose_shared(store, conn)?)
            && budget.is_none_or(|budget| self.shared.bits() <= budget.bits)
        {
            return Ok(self.shared.write(conn, packet, writer, all_fields));
        }
        let mut stats = DeltaStats {
            resynced: self.catch_up(store, conn),
            ..DeltaStats::default()
        };

        let mut scratch = core::mem::take(&mut self.scratch);
        scratch.clear();
        let planned = plan(
            store,
            &mut self.encoded,
            &mut self.buffers,
            conn,
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
            handles: conn.uses_handles(),
            removals: &removals,
            items: &items,
            inner: &scratch,
        };
        let start = writer.bits_written();
        message.write(&self.encoded, conn, writer);
        stats.bits = writer.bits_written() - start;
        debug_assert!(budget.is_none_or(|budget| stats.bits <= budget.bits));
        self.scratch = scratch;

        count(&removals, &items, &mut stats);
        let mut record = conn.entry_buffer(removals.len() + items.len());
        for removal in &removals {
            let key = ReplicationKey::default();
            let (id, since) = (removal.id, removal.since);
            record.push(RecordEntry::new(id, removal.work(), key, frame, since));
        }
        for item in &items {
            let entry = RecordEntry::new(item.id, item.work, item.key, frame, item.since);
            record.push(entry);
        }
        let oldest_due = removals
            .iter()
            .map(|removal| removal.since)
            .chain(items.iter().map(|item| item.since))
            .fold(frame, u64::min);
        // Usually everything due was written: the pending list empties at
        // once rather than id by id.
        let all_due = deferred == 0 && waiting == 0 && unfinished.is_empty();
        conn.record_written(packet, frame, oldest_due, record, all_fields, all_due);
        for (id, since) in unfinished {
            conn.queue_inner_work(id, since);
        }
        self.buffers.planned = items;
        Ok(stats)
    }
}

impl Sender {
    /// Writes the newest frame's message for the connections in sync with
    /// the array, `conn` the first of them this frame, and keeps it (see
    /// [`SharedMessage`](super::caught_up::SharedMessage)): straight from
    /// the frame's changes, each payload encoded into the message as it is
    /// written, with no lookup in the connection's state. Returns `false`,
    /// keeping nothing, if the frame changed nothing (the one-bit empty
    /// message is not worth keeping), or if a changed item is missing (a
    /// broken invariant, caught by a debug assertion): the connection then
    /// writes its own message.
    fn compose_shared<T: Replicate>(
        &mut self,
        store: &Store<T>,
        conn: &SendState,
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
                exit: false,
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
        let mut bytes = core::mem::take(&mut self.shared.bytes);
        bytes.clear();
        let mut out = BitWriter::new(&mut bytes);
        let written = message.write_frame(store, changes, conn, &mut out);
        let bits = out.finish();
        if bytes.capacity() > 4 * bytes.len().max(64) {
            bytes.shrink_to(2 * bytes.len());
        }
        self.shared.bytes = bytes;
        let Some((whole, changed)) = written? else {
            return Ok(false);
        };
        let stats = DeltaStats {
            shared: true,
            bits,
            added: whole.len(),
            changed: changed.len(),
            removed: removals.len(),
            ..DeltaStats::default()
        };
        self.shared.keep(frame, &removals, &whole, changed, stats);
        Ok(true)
    }

    /// Brings `conn`'s pending work up to the array's frame: from the
    /// history ring, or, for a connection with a scope, from what the
    /// array handed it. Returns whether it had to compare instead.
    pub(crate) fn catch_up<T: Replicate>(
        &mut self,
        store: &Store<T>,
        conn: &mut SendState,
    ) -> bool {
        let frame = store.frame();
        let Some(slot) = conn.scope().map(|scope| scope.slot) else {
            return conn.catch_up(&self.history, frame, T::STRUCTURE, store);
        };
        let routed = self.interest.inbox(slot);
        let resynced = conn.catch_up_scoped(routed, frame, T::STRUCTURE, store);
        self.interest.clear_inbox(slot);
        resynced
    }

    /// Refuses a connection whose scope is registered with another array
    /// (or with this one's original, for a clone).
    pub(crate) fn check_scope<T>(
        &self,
        store: &Store<T>,
        conn: &SendState,
    ) -> Result<(), SendError> {
        match conn.scope() {
            Some(scope) if scope.array != store.origin() || !self.interest.is_registered(scope) => {
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

/// A planned message, ready to write.
struct Message<'a> {
    frame: u64,
    /// The item type's replicated fields.
    field_count: u32,
    /// Whether the item type can withhold fields (then a whole entry says
    /// which it carries: see `Replicate::WITHHOLDS`).
    withholds: bool,
    /// Whether the item type has array fields (then a fields entry starts
    /// with a bit saying whether plain fields follow).
    arrays: bool,
    /// Whether items are named by the connection's handles (a whole entry
    /// then carries the item's id).
    handles: bool,
    removals: &'a [Removal],
    items: &'a [Planned],
    /// The items' array deltas.
    inner: &'a [u8],
}

impl Message<'_> {
    /// Writes the message: kind, frame, the removals, then the items with
    /// their payloads (from `encoded`) and array deltas.
    fn write(&self, encoded: &EncodeCache, conn: &SendState, writer: &mut BitWriter<'_>) {
        let common = common_fields(self.items.iter().map(|item| item.work));
        let wires = self.items.iter().map(|item| item.wire);
        let mut list = self.write_head(conn, writer, wires, common);
        for item in self.items {
            let entry = (item.wire, item.id, item.work, item.whole);
            self.write_entry_head(conn, writer, &mut list, entry);
            encoded.copy(item.span, writer);
            let (start, bits) = item.inner;
            if bits > 0 {
                let mut reader = BitReader::at(self.inner, start);
                copy_bits(&mut reader, writer, bits);
            }
        }
    }

    /// Writes the frame's shared message (see [`frame_entries`]): the
    /// head, then each entry with its payload encoded straight from the
    /// item in `store`, no plan in between. Returns what the connections
    /// that take it record: the record entries of the items sent whole
    /// (adds and new shapes), and the changed fields of the others; `None`
    /// if an entry's item is not in `store` (a broken invariant: the caller
    /// then writes per connection), with `writer` holding a partial
    /// message.
    fn write_frame<T: Replicate>(
        &self,
        store: &Store<T>,
        changes: &Changeset,
        conn: &SendState,
        writer: &mut BitWriter<'_>,
    ) -> Result<Option<FrameRecord>, SendError> {
        let entries = frame_entries::<T>(changes);
        let common = common_fields(entries.clone().map(|(_, work)| work));
        let wires = entries.clone().map(|(id, _)| id);
        let mut list = self.write_head(conn, writer, wires, common);
        let mut whole = Vec::new();
        let mut changed = Vec::with_capacity(changes.changed.len());
        let mut near = Near::default();
        // The connections taking it have no scope: they see every field.
        let all = FieldMask::all(T::FIELD_COUNT);
        for (id, work) in entries {
            // A commit's changes name live items only, and nothing has
            // changed since the commit.
            let Some(pos) = store.locate(id, &mut near) else {
                debug_assert!(false, "item {id} of the newest changeset is gone");
                return Ok(None);
            };
            let slot = store.slot(pos);
            self.write_entry_head(conn, writer, &mut list, (id, id, work, all));
            let encoded = match work {
                Work::Fields(mask) => {
                    changed.push((id, mask));
                    slot.value.encode_fields(mask, writer)
                }
                _ => {
                    whole.push(RecordEntry::new(id, work, slot.key, self.frame, self.frame));
                    slot.value.encode(writer)
                }
            };
            encoded.map_err(|error| SendError::Encode { id, error })?;
        }
        Ok(Some((whole, changed)))
    }

    /// Writes the message's kind, frame and removals, then the start of
    /// its item list, whose entries are named `wires` and, if `common`,
    /// all carry those changed fields. The entries follow, written by the
    /// caller through the returned list.
    fn write_head(
        &self,
        conn: &SendState,
        writer: &mut BitWriter<'_>,
        wires: impl ExactSizeIterator<Item = ReplicationId> + Clone,
        common: Option<FieldMask>,
    ) -> ItemList {
        let exits = self.removals.iter().any(|removal| removal.exit);
        MessageKind::delta(exits, self.handles).write(writer);
        conn.write_frame(writer, self.frame);
        let mut ids = IdWriter::start(writer, self.removals.iter().map(|removal| removal.wire));
        for removal in self.removals {
            ids.write(writer, removal.wire);
        }
        if exits {
            write_exits(writer, self.removals.iter().map(|removal| removal.exit));
        }
        let any = wires.len() > 0;
        let ids = IdWriter::start(writer, wires);
        if any {
            writer.write_bool(common.is_some());
            if let Some(mask) = common {
                write_field_set(writer, mask, self.field_count);
            }
        }
        ItemList { ids, common }
    }

    /// Writes the entry `(wire, id, work, fields)` of item `id`, named
    /// `wire`, up to its payload: its name, whether it is whole (then, with
    /// handles, its id and its handle's age; and for a type that can
    /// withhold fields, whether this one carries only `fields`, and which),
    /// and the changed fields it carries unless the message states them
    /// once for the whole `list`.
    #[inline]
    fn write_entry_head(
        &self,
        conn: &SendState,
        writer: &mut BitWriter<'_>,
        list: &mut ItemList,
        (wire, id, work, fields): (ReplicationId, ReplicationId, Work, FieldMask),
    ) {
        list.ids.write(writer, wire);
        let whole = matches!(work, Work::Add { .. });
        writer.write_bool(whole);
        if whole && self.handles {
            writer.write_varint(id.to_raw());
            writer.write_gamma(conn.handle_age(wire, self.frame));
        }
        if whole && self.withholds {
            let withheld = fields != FieldMask::all(self.field_count);
            writer.write_bool(withheld);
            if withheld {
                write_field_set(writer, fields, self.field_count);
            }
        }
        if let Work::Fields(mask) = work {
            if self.arrays {
                // Whether plain fields follow: an entry may carry array
                // deltas only.
                writer.write_bool(!mask.is_empty());
            }
            if !mask.is_empty() && list.common.is_none() {
                write_field_set(writer, mask, self.field_count);
            }
        }
    }
}

/// What the connections taking a frame's shared message record (see
/// [`SharedMessage::keep`](super::caught_up::SharedMessage::keep)): the
/// record entries of its whole items, and the changed fields of the others.
type FrameRecord = (Vec<RecordEntry>, Vec<(ReplicationId, FieldMask)>);

/// A message's item list being written: its ids, and the changed fields
/// its entries all carry if the message states them once.
struct ItemList {
    ids: IdWriter,
    common: Option<FieldMask>,
}

/// The field set every entry with changed fields carries, if there are two
/// or more such entries and they all carry the same one: then the message
/// states it once (a sparse or dense tick changes the same fields of every
/// item it sends).
fn common_fields(works: impl Iterator<Item = Work>) -> Option<FieldMask> {
    let mut sets = works.filter_map(|work| match work {
        Work::Fields(mask) if !mask.is_empty() => Some(mask),
        _ => None,
    });
    let first = sets.next()?;
    let mut count = 1;
    for mask in sets {
        if mask != first {
            return None;
        }
        count += 1;
    }
    (count >= 2).then_some(first)
}
