//! [`SendState`]: what one connection's client may hold, what it still
//! needs, and the retirement list of packets in flight.

use std::collections::VecDeque;
use std::sync::Arc;

use hashbrown::HashMap;

use crate::changeset::Changeset;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::wire::WINDOW;

/// How many changed ids [`SendState::merge_frame`] looks up in the view
/// before queueing their work.
const LOOKAHEAD: usize = 16;

/// The sending side of one connection for one array (or replicated object).
///
/// Create one per client with [`SendState::new`], pass it to
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
/// Per item the client may hold, one 48-byte hash map entry (id, state,
/// newest record and its fields, acknowledged record and key); per packet in
/// flight, 72 bytes plus 32 per item it carried (a frame's shared message
/// carries entries only for its adds and removals); per item with unsent
/// work, a 32-byte list entry and a 16-byte map entry; per item with
/// `#[replicate(array)]` fields that the client may hold, one nested
/// `SendState` (256 bytes before its own entries) per array field. Hash
/// maps add one control byte per bucket and keep between 1 and 2 buckets
/// per entry; the pending list, like them, shrinks back after a burst.
/// Nothing here grows with items the client does not hold.
#[derive(Clone, Debug)]
pub struct SendState {
    /// What the client may hold, per id.
    pub(crate) view: HashMap<ReplicationId, View>,
    /// Work not yet written, per id.
    pub(crate) pending: PendingMap,
    /// The next frame of the history ring to merge into `pending`.
    pub(crate) cursor: u64,
    /// The retirement list: one record per packet in flight, in write order.
    records: VecDeque<Record>,
    /// Sequence number of the next record (orders records for coverage).
    next_seq: u64,
    /// The newest frame carried by a packet the client acknowledged.
    pub(crate) acked_frame: Option<u64>,
    /// The newest frame a message was written for.
    written_frame: u64,
    /// Entry buffers of retired records, reused by new ones.
    spare: Vec<Vec<RecordEntry>>,
    /// Every field of the item type (learned from the first write).
    all_fields: FieldMask,
    /// How many entries of `view` are [`Holding::Known`]: when all are,
    /// and they are every item of the array, the connection can take the
    /// frame's shared message.
    known: usize,
    /// For items with `#[replicate(array)]` fields that the client may
    /// hold: one send state per array field. Their messages travel inside
    /// this connection's packets, so this state passes on the fate of each
    /// packet that carried them (never anyone else's), and drops them when
    /// the item's removal is acknowledged.
    pub(crate) nested: HashMap<ReplicationId, Vec<SendState>>,
}

/// What the client may hold of one item.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub(crate) holding: Holding,
    /// The newest record that carried this id.
    last_seq: u64,
    /// The newest acknowledged record that carried this id (0: none).
    acked_seq: u64,
    /// The newest record that carried a structural whole value (the add,
    /// or a change of an enum's variant): the client's copy is `Known`
    /// again only once a whole value at least that new is acknowledged.
    structural_seq: u64,
    /// The item's key when that record was written.
    pub(crate) acked_key: ReplicationKey,
    /// The fields the newest record carried for this id: a lost older
    /// record's fields among these need no resend, since that newer
    /// record's own ack or loss takes care of them.
    last_fields: FieldMask,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holding {
    /// A packet with the whole item was written; none acknowledged yet.
    AddInFlight,
    /// The client acknowledged a packet with the whole item.
    Known,
    /// A removal was written; not acknowledged yet.
    RemoveInFlight,
}

/// Work for one id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Send the whole item. `structural` when the client may not have the
    /// item, or holds another shape of it (another enum variant): then no
    /// partial change may follow until a whole value is acknowledged.
    Add {
        /// Whether the whole value is needed for its shape.
        structural: bool,
    },
    /// Send these fields.
    Fields(FieldMask),
    /// Tell the client the item is gone.
    Remove,
}

impl Work {
    /// The work that does both `self` and `other`.
    fn merge(self, other: Work) -> Work {
        match (self, other) {
            (Work::Remove, _) | (_, Work::Remove) => Work::Remove,
            (Work::Add { structural: a }, Work::Add { structural: b }) => {
                Work::Add { structural: a || b }
            }
            (add @ Work::Add { .. }, Work::Fields(_))
            | (Work::Fields(_), add @ Work::Add { .. }) => add,
            (Work::Fields(a), Work::Fields(b)) => Work::Fields(a | b),
        }
    }
}

/// Unsent work for one id and the frame it first became due (for budgets:
/// oldest first).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub(crate) work: Work,
    pub(crate) since: u64,
}

/// Unsent work per id, kept in the order it first became due: in the
/// usual write (one frame merged, its ids ascending) that is already the
/// order of the message, so sorting it costs one pass.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingMap {
    /// Each id's position in `entries`.
    positions: HashMap<ReplicationId, usize>,
    /// The work, in the order it first became due (until a removal).
    entries: Vec<(ReplicationId, Pending)>,
}

impl PendingMap {
    /// Ids with work.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no id has work.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The work of every id, oldest first.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &(ReplicationId, Pending)> {
        self.entries.iter()
    }

    /// Adds work for `id`, merged with any already due.
    fn queue(&mut self, id: ReplicationId, work: Work, since: u64) {
        let next = self.entries.len();
        let pos = *self.positions.entry(id).or_insert(next);
        match self.entries.get_mut(pos) {
            Some((_, pending)) if pos != next => {
                pending.work = pending.work.merge(work);
                pending.since = pending.since.min(since);
            }
            _ => self.entries.push((id, Pending { work, since })),
        }
    }

    /// Drops the work of `id` (the last entry takes its place).
    pub(crate) fn remove(&mut self, id: &ReplicationId) -> Option<Pending> {
        let pos = self.positions.remove(id)?;
        let (_, pending) = self.entries.swap_remove(pos);
        if let Some(&(moved, _)) = self.entries.get(pos) {
            self.positions.insert(moved, pos);
        }
        Some(pending)
    }

    /// Forgets all work. The map's capacity follows what recent writes
    /// needed, so clearing it stays proportional to the work, not to a
    /// past burst (a first full sync).
    pub(crate) fn clear(&mut self) {
        let used = self.entries.len();
        self.entries.clear();
        self.positions.clear();
        if self.positions.capacity() > 4 * used.max(64) {
            self.positions.shrink_to(2 * used);
            self.entries.shrink_to(2 * used);
        }
    }
}

/// The changed fields of the items of one frame's shared message (see
/// [`SendState::record`]), shared by the records of every connection that
/// took it.
pub(crate) type SharedChanges = Arc<[(ReplicationId, FieldMask)]>;

/// What one packet in flight carried.
#[derive(Clone, Debug)]
struct Record {
    packet: u32,
    seq: u64,
    frame: u64,
    /// The oldest frame at which any work this record carried became due:
    /// a loss puts that work back as due since then, so nothing committed
    /// at or after it counts as delivered until it is repaired.
    oldest_due: u64,
    entries: Vec<RecordEntry>,
    /// Changed fields of items the client knows, carried by a frame's
    /// shared message: kept once for all connections, and left out of
    /// `view` (an ack has nothing to do for them; a loss puts them back).
    shared: Option<SharedChanges>,
}

/// One item in a record: what was sent, the item's key at the time, and
/// how long its work had waited.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordEntry {
    pub(crate) id: ReplicationId,
    pub(crate) work: Work,
    pub(crate) key: ReplicationKey,
    /// The record's frame minus the frame this work first became due
    /// (`u32::MAX`: longer ago than that; then the record's `oldest_due`
    /// stands for it). A lost entry's work is due again since then, so
    /// it keeps its place among the work a budget serves oldest first.
    age: u32,
}

impl RecordEntry {
    /// An entry of a record written at `frame` for work due since `since`.
    pub(crate) fn new(
        id: ReplicationId,
        work: Work,
        key: ReplicationKey,
        frame: u64,
        since: u64,
    ) -> Self {
        let age = u32::try_from(frame.saturating_sub(since)).unwrap_or(u32::MAX);
        Self { id, work, key, age }
    }

    /// The frame its work first became due, in a record written at
    /// `frame` whose oldest work became due at `oldest_due`.
    fn since(&self, frame: u64, oldest_due: u64) -> u64 {
        match self.age {
            u32::MAX => oldest_due,
            age => frame - u64::from(age),
        }
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
            view: HashMap::new(),
            pending: PendingMap::default(),
            cursor: 1,
            records: VecDeque::new(),
            next_seq: 1,
            acked_frame: None,
            written_frame: 0,
            spare: Vec::new(),
            all_fields: FieldMask::EMPTY,
            known: 0,
            nested: HashMap::new(),
        }
    }

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
    /// snapshot), with `nested` the states of its arrays, if it has any.
    pub(crate) fn hold(&mut self, id: ReplicationId, key: ReplicationKey, nested: Vec<SendState>) {
        self.view.insert(
            id,
            View {
                holding: Holding::Known,
                last_seq: 0,
                acked_seq: 0,
                structural_seq: 0,
                acked_key: key,
                last_fields: FieldMask::EMPTY,
            },
        );
        self.known += 1;
        if !nested.is_empty() {
            self.nested.insert(id, nested);
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
        let Some(record) = self.take_record(packet) else {
            return false;
        };
        self.ack_record(record);
        true
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
                    .view
                    .get(&entry.id)
                    .is_some_and(|view| view.holding != Holding::RemoveInFlight)
            {
                self.queue(entry.id, Work::Fields(FieldMask::EMPTY), record.frame);
            }
            let Some(view) = self.view.get_mut(&entry.id) else {
                continue;
            };
            match entry.work {
                Work::Remove => {
                    if view.holding == Holding::Known {
                        self.known -= 1;
                    }
                    self.view.remove(&entry.id);
                    self.nested.remove(&entry.id);
                    continue;
                }
                Work::Add { .. } => {
                    if view.holding == Holding::AddInFlight && record.seq >= view.structural_seq {
                        view.holding = Holding::Known;
                        self.known += 1;
                    }
                }
                Work::Fields(_) => {}
            }
            if record.seq > view.acked_seq {
                view.acked_seq = record.seq;
                view.acked_key = entry.key;
            }
        }
        self.acked_frame = Some(
            self.acked_frame
                .map_or(record.frame, |f| f.max(record.frame)),
        );
        self.recycle(record);
    }

    /// The transport gave up on `packet`. Whatever it carried that no later
    /// packet carries is due again. Returns whether a packet in flight had
    /// that id (a duplicate or stale report returns `false` and changes
    /// nothing).
    pub fn on_loss(&mut self, packet: u32) -> bool {
        match self.take_record(packet) {
            Some(record) => {
                self.retire_lost(record);
                true
            }
            None => false,
        }
    }

    /// The send states of item `id`'s `count` array fields.
    pub(crate) fn nested_states(&mut self, id: ReplicationId, count: u32) -> &mut Vec<SendState> {
        let states = self.nested.entry(id).or_default();
        if states.len() < count as usize {
            states.resize_with(count as usize, SendState::new);
        }
        states
    }

    /// Passes the fate of `packet` on to the send states of item `id`'s
    /// arrays. Returns whether they now have work due (a loss to repair),
    /// which only an entry for `id` in a later packet can carry.
    fn route(&mut self, id: ReplicationId, packet: u32, delivered: bool) -> bool {
        // Items without array fields, the common case: no lookup per entry.
        if self.nested.is_empty() {
            return false;
        }
        let Some(states) = self.nested.get_mut(&id) else {
            return false;
        };
        let mut due = false;
        for state in states {
            if delivered {
                state.on_ack(packet);
            } else {
                state.on_loss(packet);
            }
            due |= !state.pending.is_empty();
        }
        due
    }

    /// Packets written and not yet acknowledged or lost.
    pub fn packets_in_flight(&self) -> usize {
        self.records.len()
    }

    /// Items with work not yet written (after the last write's merge).
    pub fn pending_items(&self) -> usize {
        self.pending.len()
    }

    /// Items the client may hold (known, or with an add or removal in flight).
    pub fn client_items(&self) -> usize {
        self.view.len()
    }

    /// Send states kept for arrays inside items (`#[replicate(array)]`
    /// fields of the items the client may hold), one per array field.
    pub fn nested_arrays(&self) -> usize {
        self.nested.values().map(Vec::len).sum()
    }

    /// Whether every change written so far is acknowledged and nothing is
    /// due: the client holds exactly what the array held at the last write.
    pub fn is_settled(&self) -> bool {
        self.records.is_empty()
            && self.pending.is_empty()
            && self.nested.values().flatten().all(SendState::is_settled)
    }

    /// Whether `packet` names a packet in flight.
    pub(crate) fn has_in_flight(&self, packet: u32) -> bool {
        self.records.iter().any(|r| r.packet == packet)
    }

    /// Adds work for `id`, merged with any already due.
    pub(crate) fn queue(&mut self, id: ReplicationId, work: Work, since: u64) {
        self.pending.queue(id, work, since);
    }

    /// Merges one frame of the history ring into the pending work.
    /// `structure` is the item type's `Replicate::STRUCTURE`.
    pub(crate) fn merge_frame(&mut self, changes: &Changeset, structure: FieldMask) {
        let frame = changes.frame;
        for &id in &changes.added {
            self.queue(id, Work::Add { structural: true }, frame);
        }
        for chunk in changes.changed.chunks(LOOKAHEAD) {
            // The view of a large array is far bigger than the caches: look
            // a run of ids up before queueing any, so the cache misses of
            // these independent lookups overlap instead of taking turns.
            let mut known = [false; LOOKAHEAD];
            for (known, &(id, _)) in known.iter_mut().zip(chunk) {
                *known = self
                    .view
                    .get(&id)
                    .is_some_and(|v| v.holding == Holding::Known);
            }
            for (&known, &(id, mask)) in known.iter().zip(chunk) {
                let work = if !(mask & structure).is_empty() {
                    Work::Add { structural: true }
                } else if known {
                    Work::Fields(mask)
                } else {
                    Work::Add { structural: false }
                };
                self.queue(id, work, frame);
            }
        }
        for &id in &changes.arrays_changed {
            // Only the item's arrays changed: an entry with no fields, which
            // carries their deltas.
            self.queue(id, Work::Fields(FieldMask::EMPTY), frame);
        }
        for &id in &changes.removed {
            if self.view.contains_key(&id) {
                self.queue(id, Work::Remove, frame);
            } else {
                // Never sent (or only in a write that failed): forget it.
                self.pending.remove(&id);
                self.nested.remove(&id);
            }
        }
    }

    /// Works out what is due by comparing what the client may hold against
    /// the array's `items` (id, key): used when the history ring no longer
    /// reaches back to this connection's cursor. O(items + view). Work
    /// already due (repairs of lost packets) stays due.
    pub(crate) fn resync(
        &mut self,
        items: impl Iterator<Item = (ReplicationId, ReplicationKey, u64)>,
        contains: impl Fn(ReplicationId) -> bool,
    ) {
        let delivered = self.delivered_through();
        // What this finds became due at the oldest frame not merged, or
        // later: so `delivered_through` stays behind it until it is acked.
        let due = self.cursor;
        for (id, key, changed) in items {
            // Up to date: the client knows the item, and either acknowledged
            // a record with its current key, or has everything committed up
            // to a frame at or after its last change (which covers changes
            // sent in shared messages, whose acks touch no view entry).
            let up_to_date = self.view.get(&id).is_some_and(|v| {
                v.holding == Holding::Known
                    && ((v.acked_seq != 0 && v.acked_key == key)
                        || delivered.is_some_and(|delivered| changed <= delivered))
            });
            if !up_to_date {
                self.queue(id, Work::Add { structural: true }, due);
            }
        }
        let gone: Vec<ReplicationId> = self
            .view
            .keys()
            .copied()
            .filter(|&id| !contains(id))
            .collect();
        for id in gone {
            self.queue(id, Work::Remove, due);
        }
    }

    /// The newest frame up to which everything committed has been
    /// delivered: merged, written, and acknowledged (or, if lost, repaired
    /// and acknowledged). `None` before anything is.
    ///
    /// Work merged from frame `f` is due since `f` or earlier; it stays
    /// either pending (with that frame or an older one) or in a record in
    /// flight (whose `oldest_due` is at most that), and a loss puts it back
    /// as due since the record's `oldest_due`. So every change committed
    /// before the oldest of those frames, and before the cursor, was acked.
    fn delivered_through(&self) -> Option<u64> {
        let pending = self.pending.iter().map(|(_, p)| p.since);
        let in_flight = self.records.iter().map(|r| r.oldest_due);
        let undelivered = pending.chain(in_flight).fold(self.cursor, u64::min);
        undelivered.checked_sub(1)
    }

    /// Whether this connection can take frame `frame`'s shared message: it
    /// wrote everything up to the last frame (nothing due, no repair), its
    /// client knows every one of the `live_before` items the array held
    /// before `frame` and nothing else, and the frame goes in short form.
    /// Such a connection's message is the same bits as every other one's.
    pub(crate) fn in_sync(&self, frame: u64, live_before: usize) -> bool {
        self.cursor == frame
            && self.pending.is_empty()
            && self.known == self.view.len()
            && self.view.len() == live_before
            && self.nested.is_empty()
            && crate::wire::frame::short_frame(frame, self.acked_frame)
    }

    /// Treats packets that are a whole window old as lost: the mirror
    /// ignores them if they ever arrive.
    pub(crate) fn expire(&mut self, frame: u64) {
        while let Some(oldest) = self.records.front() {
            if oldest.frame + WINDOW > frame {
                break;
            }
            if let Some(record) = self.records.pop_front() {
                self.retire_lost(record);
            }
        }
    }

    /// An empty buffer for a record's entries (a retired record's, if any).
    pub(crate) fn entry_buffer(&mut self) -> Vec<RecordEntry> {
        let mut buffer = self.spare.pop().unwrap_or_default();
        buffer.clear();
        buffer
    }

    /// Records a packet about to be written with `entries`, and updates what
    /// the client may hold. `entries` must be the work just taken from
    /// `pending`, the oldest of it due since `oldest_due`. `shared` is the
    /// changed fields of known items that a frame's shared message carried
    /// besides `entries`: they update nothing here.
    pub(crate) fn record(
        &mut self,
        packet: u32,
        frame: u64,
        oldest_due: u64,
        entries: Vec<RecordEntry>,
        shared: Option<SharedChanges>,
        all_fields: FieldMask,
    ) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.all_fields = all_fields;
        self.written_frame = self.written_frame.max(frame);
        for entry in &entries {
            let view = self.view.entry(entry.id).or_insert(View {
                holding: Holding::AddInFlight,
                last_seq: 0,
                acked_seq: 0,
                structural_seq: seq,
                acked_key: ReplicationKey::default(),
                last_fields: FieldMask::EMPTY,
            });
            view.last_seq = seq;
            let was_known = view.holding == Holding::Known;
            view.last_fields = match entry.work {
                Work::Add { structural } => {
                    if structural {
                        view.structural_seq = seq;
                        view.holding = Holding::AddInFlight;
                    }
                    all_fields
                }
                Work::Fields(mask) => mask,
                Work::Remove => {
                    view.holding = Holding::RemoveInFlight;
                    FieldMask::EMPTY
                }
            };
            if was_known && view.holding != Holding::Known {
                self.known -= 1;
            }
        }
        self.records.push_back(Record {
            packet,
            seq,
            frame,
            oldest_due,
            entries,
            shared,
        });
    }

    fn take_record(&mut self, packet: u32) -> Option<Record> {
        let index = self.records.iter().position(|r| r.packet == packet)?;
        self.records.remove(index)
    }

    /// Puts back what a lost record carried, except what a later record
    /// carried for the same item (that record's own fate takes care of it).
    fn retire_lost(&mut self, record: Record) {
        for entry in &record.entries {
            let inner_due = self.route(entry.id, record.packet, false);
            let Some(view) = self.view.get(&entry.id) else {
                // Its removal was acknowledged: nothing left to repair.
                continue;
            };
            let mut work = self.lost_work(view, entry, record.seq);
            if inner_due && view.holding != Holding::RemoveInFlight {
                let inner = Work::Fields(FieldMask::EMPTY);
                work = Some(work.map_or(inner, |work| work.merge(inner)));
            }
            if let Some(work) = work {
                let since = entry.since(record.frame, record.oldest_due);
                self.queue(entry.id, work, since);
            }
        }
        for &(id, mask) in record.shared.iter().flat_map(|changes| changes.iter()) {
            let Some(view) = self.view.get(&id) else {
                continue;
            };
            // A frame's shared message carries that frame's changes only.
            let entry = RecordEntry::new(
                id,
                Work::Fields(mask),
                ReplicationKey::default(),
                record.frame,
                record.frame,
            );
            if let Some(work) = self.lost_work(view, &entry, record.seq) {
                self.queue(id, work, record.oldest_due);
            }
        }
        self.recycle(record);
    }

    /// What must be sent again because `entry`, written in record `seq`,
    /// was lost: `None` when nothing.
    fn lost_work(&self, view: &View, entry: &RecordEntry, seq: u64) -> Option<Work> {
        if !matches!(entry.work, Work::Remove) && view.structural_seq > seq {
            // A whole value written after this record carries everything
            // it did, in the item's current shape; its own fate decides.
            return None;
        }
        let later = view.last_seq > seq;
        let covered = if later {
            view.last_fields
        } else {
            FieldMask::EMPTY
        };
        match entry.work {
            Work::Remove if later => None,
            Work::Remove => Some(Work::Remove),
            Work::Add { .. } | Work::Fields(_) => {
                let lost = match entry.work {
                    Work::Fields(mask) => mask,
                    _ => self.all_fields,
                };
                let missing = lost.without(covered);
                if missing.is_empty() {
                    return None;
                }
                Some(match entry.work {
                    // A lost whole value is resent whole: which fields
                    // exist depends on the item's shape (an enum's variant).
                    add @ Work::Add { .. } if view.holding != Holding::Known => add,
                    Work::Add { .. } => Work::Add { structural: false },
                    _ if view.holding == Holding::Known => Work::Fields(missing),
                    _ => Work::Add { structural: false },
                })
            }
        }
    }

    /// Keeps a retired record's buffer for the next record, unless it is
    /// large (a first full sync): that memory would otherwise stay with the
    /// connection for good.
    fn recycle(&mut self, record: Record) {
        const KEEP_CAPACITY: usize = 1024;
        if self.spare.len() < 8 && record.entries.capacity() <= KEEP_CAPACITY {
            self.spare.push(record.entries);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-item and per-entry sizes stated in the docs and `WIRE.md`.
    #[test]
    fn documented_sizes_hold() {
        let entry = core::mem::size_of::<(ReplicationId, View)>();
        assert_eq!(entry, 48, "view map entry");
        assert_eq!(core::mem::size_of::<RecordEntry>(), 32);
        assert_eq!(core::mem::size_of::<(ReplicationId, Pending)>(), 32);
        assert_eq!(core::mem::size_of::<(ReplicationId, usize)>(), 16);
        assert_eq!(core::mem::size_of::<Record>(), 72);
        assert_eq!(
            core::mem::size_of::<SendState>(),
            256,
            "per array inside an item"
        );
    }
}
