//! What a packet's fate does to a [`SendState`]: the record of what
//! each packet carried, an acknowledgement making it known to the client,
//! a loss putting its work back (and the arrays' inside its items).

use super::pending::Work;
use core::num::NonZeroU64;

use super::retirement::{Record, RecordEntry};
use super::scope::Scope;
use super::view::{Holding, Views};
use super::{LOOKAHEAD, LostFields, LostShared, SendState, Untaken};
use crate::history::History;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::wire::WINDOW;

/// One item a message carried, as [`SendState::record_written`] takes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Written {
    pub(crate) id: ReplicationId,
    pub(crate) work: Work,
    /// The item's key when it was written.
    pub(crate) key: ReplicationKey,
    /// The frame its work first became due.
    pub(crate) since: u64,
    /// Whether it is changed fields sent as they were handed (see
    /// `follow`): the view is not told of it.
    pub(crate) followed: bool,
}

impl SendState {
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
        if record.entries.capacity() == 0 && self.untaken.is_none() && !self.expired(&record) {
            // A record without entries (a caught-up connection's, of a
            // frame that only changed fields): it made nothing known that
            // the view keeps, and has no buffer to keep.
            self.acked(record.frame);
            return true;
        }
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

    // What the writer asks, in the order of a write.

    /// Whether `packet` names a packet in flight.
    #[inline]
    pub(crate) fn has_in_flight(&self, packet: u32) -> bool {
        self.retirement.contains(packet)
    }

    /// The packets in flight, oldest first.
    pub(crate) fn in_flight(&self) -> impl Iterator<Item = u32> + '_ {
        self.retirement.packets()
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

    /// Records that `packet` carries the work the writer took for
    /// `frame`: `written` (each item's work, its key, and the frame its
    /// work first became due; changed fields sent as they were handed
    /// are marked followed), then `unfinished`, the
    /// items whose arrays have work left for a later packet (the budget
    /// ran out), each with the frame it became due; and updates what the
    /// client may hold. `all_fields`: every field of the item type.
    /// `all_due`: every piece of work due was written, so the pending list
    /// empties at once rather than id by id.
    pub(crate) fn record_written(
        &mut self,
        packet: u32,
        frame: u64,
        written: impl Iterator<Item = Written>,
        unfinished: impl IntoIterator<Item = (ReplicationId, u64)>,
        all_fields: FieldMask,
        all_due: bool,
    ) {
        let mut entries = self.retirement.entry_buffer(written.size_hint().0);
        let (mut oldest_due, mut adds) = (frame, 0u32);
        for written in written {
            let Written {
                id,
                work,
                key,
                since,
                followed,
            } = written;
            oldest_due = oldest_due.min(since);
            adds += u32::from(matches!(work, Work::Add { .. }));
            entries.push(match work {
                Work::Fields(fields) if followed => RecordEntry::followed(id, fields, frame, since),
                work => RecordEntry::new(id, work, key, frame, since),
            });
        }
        if all_due {
            self.pending.clear();
        } else {
            for entry in &entries {
                self.pending.remove(&entry.id);
            }
        }
        let counts = (adds, 0);
        self.record(
            packet, frame, oldest_due, entries, counts, all_fields, false,
        );
        for (id, since) in unfinished {
            self.queue_inner_work(id, since);
        }
    }

    /// Records that `packet` carries frame `frame`'s shared message:
    /// `entries` for its adds (`adds` of them) and removals,
    /// and the changed fields of `changed` known items, which update
    /// nothing here (the connection was caught up, so nothing is pending)
    /// and are not listed: they are the frame's changes in the history
    /// ring.
    ///
    /// The view takes the entries later, with those of every record
    /// written before it that it has not taken either, in the order they
    /// were written ([`replay`](Self::replay)), at the first thing this
    /// state is asked to do that reads the view. Until then the next write
    /// counts their adds and removals to know whether the connection is
    /// still in sync. For an item type without shapes (whose whole values
    /// in a shared message are adds of items new to the client), that next
    /// write, taking the next frame's shared message, is no such thing
    /// ([`start_write`](Self::start_write)): a follower of the array, whose packets
    /// are acknowledged a round trip later, writes record after record the
    /// view never takes. The acknowledgement of the oldest of them brings
    /// each plain item it added or removed to rest in one step
    /// ([`Views::written_acknowledged`]), any other in two, before the view
    /// takes the later ones: what they could share with it is an item it
    /// added and a later one removes, which comes to the same whether the
    /// removal is taken before the add's acknowledgement or after. A loss,
    /// or an acknowledgement out of order, makes the view take them all
    /// first.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_shared(
        &mut self,
        packet: u32,
        frame: u64,
        entries: &[RecordEntry],
        adds: u32,
        changed: usize,
        all_fields: FieldMask,
    ) {
        // A record without entries is taken at once, unless records before
        // it wait: they are taken in order.
        if self.untaken.is_none() && !entries.is_empty() {
            self.untaken = Some(Untaken {
                first: NonZeroU64::new(self.retirement.next_seq())
                    .expect("sequence numbers start at 1"),
                oldest: self.retirement.oldest_seq(),
            });
        }
        let defer = self.untaken.is_some();
        // At most one entry per item, and items are counted in `usize`.
        let changed = u32::try_from(changed).unwrap_or(u32::MAX);
        let mut record = self.retirement.entry_buffer(entries.len());
        record.extend_from_slice(entries);
        self.record(
            packet,
            frame,
            frame,
            record,
            (adds, changed),
            all_fields,
            defer,
        );
        self.cursor = frame + 1;
        // Nothing is pending; its capacity goes back to that (after a
        // first full sync written per item, say).
        self.pending.clear();
    }

    // The rules.

    /// Forgets item `id`, which is gone and which the client never held.
    pub(super) fn forget(&mut self, id: ReplicationId) {
        self.pending.remove(&id);
        self.drop_inner(id);
    }

    /// Drops the send states of item `id`'s arrays, if it has any (most
    /// types have none: no lookup then, on every removal acknowledged).
    #[inline]
    fn drop_inner(&mut self, id: ReplicationId) {
        if !self.inner.is_empty() {
            self.inner.remove(&id);
        }
    }

    /// Puts back `work` for item `id` that a lost record of frame `frame`
    /// carried, due since `since`. Changed fields wait for the next
    /// catch-up, which knows which of them later records carried (see
    /// [`resolve_lost_fields`](Self::resolve_lost_fields)); anything else
    /// (a whole value, a removal, an array's repair) is due at once.
    pub(super) fn repair(&mut self, id: ReplicationId, work: Work, frame: u64, since: u64) {
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
    pub(super) fn resolve_lost_fields(&mut self, history: Option<&History>) {
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

    /// Puts back the changed fields that lost records of frames' shared
    /// messages carried, read from the frames' changesets in `history`
    /// (every connection that took a frame's message carried the same
    /// fields; the records name none of them), except what a later record
    /// carried (see [`Views::lost_work`](super::view::Views::lost_work)).
    /// A change of shape went whole, as an entry of its own record, and is
    /// left to that record's fate. Returns `false`, putting nothing back,
    /// if the ring no longer holds one of those frames: the caller then
    /// compares with the items instead ([`resync`](Self::resync), which
    /// counts them as undelivered). Call before merging frames into the
    /// pending work, as a loss reported then would have been.
    pub(super) fn resolve_lost_shared(&mut self, history: &History, structure: FieldMask) -> bool {
        if self.lost_shared.is_empty() {
            return true;
        }
        let held = |lost: &LostShared| history.at(lost.frame).map(|changes| &changes.changed);
        if !self.lost_shared.iter().all(|lost| held(lost).is_some()) {
            return false;
        }
        for lost in core::mem::take(&mut self.lost_shared) {
            for &(id, mask) in held(&lost).into_iter().flatten() {
                if mask.intersects(structure) {
                    continue;
                }
                let entry = RecordEntry::new(
                    id,
                    Work::Fields(mask),
                    ReplicationKey::default(),
                    lost.frame,
                    lost.frame,
                );
                if let Some(work) = self.views.lost_work(&entry, lost.seq, self.all_fields) {
                    self.repair(id, work, lost.frame, lost.frame);
                }
            }
        }
        true
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
    pub(super) fn delivered_through(&self) -> Option<u64> {
        let pending = self.pending.iter().map(|(_, p)| p.since);
        let in_flight = self.retirement.oldest_dues();
        let lost = self.lost_shared.iter().map(|lost| lost.frame);
        let undelivered = pending
            .chain(in_flight)
            .chain(lost)
            .chain(self.followed_frames())
            .fold(self.cursor, u64::min);
        undelivered.checked_sub(1)
    }

    /// Lets the view take the entries of the records it has not taken yet
    /// (see [`record_shared`](Self::record_shared)): called first by
    /// everything else that reads or changes the view, so that it takes
    /// every record's entries in the order they were written, before
    /// anything that came after.
    #[inline]
    pub(super) fn replay(&mut self) {
        if self.untaken.is_some() {
            self.replay_around(None);
        }
    }

    /// [`replay`](Self::replay), with `record`, taken out of the packets
    /// in flight, in its place among them if the view has not taken it.
    fn replay_around(&mut self, record: Option<&mut Record>) {
        let Some(untaken) = self.untaken.take() else {
            return;
        };
        let (views, all_fields) = (&mut self.views, self.all_fields);
        let mut scope = self.scope.as_deref_mut();
        let mut take = |record: &mut Record| {
            let at = (record.seq, record.frame);
            take_entries(
                views,
                scope.as_deref_mut(),
                &mut record.entries,
                at,
                all_fields,
            );
            views.trim(untaken.oldest);
        };
        let first = untaken.first.get();
        let mut own = record.filter(|record| record.seq >= first);
        for other in self.retirement.since_seq_mut(first) {
            if let Some(record) = own.take_if(|record| record.seq < other.seq) {
                take(record);
            }
            take(other);
        }
        if let Some(record) = own {
            take(record);
        }
    }

    /// Before `record`, taken out of the packets in flight, is
    /// acknowledged: if it is the oldest record whose entries the view has
    /// not taken, the sequence number the view is trimmed as of once it
    /// takes them (the caller folds them into the acknowledgement; the
    /// later ones may stay untaken). An older record's acknowledgement
    /// needs nothing of the later ones; a later one's makes the view take
    /// them all first, `record` among them.
    #[inline]
    fn first_untaken(&mut self, record: &mut Record) -> Option<u64> {
        let untaken = self.untaken.as_mut()?;
        let first = untaken.first.get();
        if record.seq < first {
            return None;
        }
        if record.seq > first {
            self.replay_around(Some(record));
            return None;
        }
        let oldest = untaken.oldest;
        // Records after it wait still, if any was written.
        let next = untaken.first.checked_add(1);
        match next.filter(|next| next.get() < self.retirement.next_seq()) {
            Some(next) => untaken.first = next,
            None => self.untaken = None,
        }
        Some(oldest)
    }

    /// How many records in flight the view has not taken the entries of.
    #[cfg(test)]
    pub(crate) fn untaken_records(&self) -> usize {
        self.untaken.map_or(0, |untaken| {
            self.retirement.since_seq(untaken.first.get()).count()
        })
    }

    /// [`replay`](Self::replay), for the tests that compare a view taking
    /// a record's entries later with one taking them as it is written.
    #[cfg(test)]
    pub(crate) fn replay_now(&mut self) {
        self.replay();
    }

    /// Acknowledges `record`, the oldest record whose entries the view had
    /// not taken: what taking them and then acknowledging them does, in
    /// one step for each plain item added or removed (see
    /// [`Views::written_acknowledged`]), and in two for any other.
    fn ack_untaken(&mut self, record: &mut Record, oldest: u64) {
        let mut others = Vec::new();
        for (i, entry) in record.entries.iter_mut().enumerate() {
            debug_assert!(!entry.is_followed(), "a shared message follows nothing");
            match self.views.written_acknowledged(entry.id, entry.work()) {
                Some(dropped) => {
                    if dropped {
                        self.drop_inner(entry.id);
                    }
                }
                None => {
                    let work = entry.work();
                    entry.place = self
                        .views
                        .written(entry.id, work, record.seq, self.all_fields);
                    others.push(i);
                }
            }
        }
        self.views.trim(oldest);
        for i in others {
            self.ack_entry(&record.entries[i], record.packet, record.frame, record.seq);
        }
    }

    /// Records a packet about to be written with `entries`, and updates
    /// what the client may hold (with `defer`, a frame's shared message:
    /// the view takes the entries later, see
    /// [`record_shared`](Self::record_shared)). `adds` counts the adds
    /// (whole values) among `entries`; `shared` the known items whose
    /// changed fields a frame's shared message carried besides them, which
    /// update nothing here.
    ///
    /// In line, always: `entries` would go through the stack, written a
    /// word at a time and read back in wider loads the processor cannot
    /// forward from those stores, a stall on every caught-up connection's
    /// write (measured at about a tenth of its write and acknowledgement
    /// in the sparse fan-out to 256 connections).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn record(
        &mut self,
        packet: u32,
        frame: u64,
        oldest_due: u64,
        mut entries: Vec<RecordEntry>,
        (adds, shared): (u32, u32),
        all_fields: FieldMask,
        defer: bool,
    ) {
        self.all_fields = all_fields;
        self.written_frame = self.written_frame.max(frame);
        if !defer {
            debug_assert!(self.untaken.is_none(), "the view took every record before");
            let (seq, oldest) = (self.retirement.next_seq(), self.retirement.oldest_seq());
            if !entries.is_empty() {
                let scope = self.scope.as_deref_mut();
                take_entries(
                    &mut self.views,
                    scope,
                    &mut entries,
                    (seq, frame),
                    all_fields,
                );
            }
            self.views.trim(oldest);
        }
        self.retirement
            .push(packet, frame, oldest_due, entries, (adds, shared));
    }

    /// Whether `record` is a window of frames or more older than the
    /// newest write: acknowledged that late, it is retired as lost.
    #[inline]
    fn expired(&self, record: &Record) -> bool {
        record.frame + WINDOW <= self.written_frame
    }

    /// Frame `frame` was carried by a packet the client acknowledged.
    #[inline]
    fn acked(&mut self, frame: u64) {
        self.acked_frame = Some(self.acked_frame.map_or(frame, |f| f.max(frame)));
    }

    /// Makes what an acknowledged record carried known to the client.
    pub(super) fn ack_record(&mut self, mut record: Record) {
        if self.expired(&record) {
            self.retire_lost(record);
            return;
        }
        match self.first_untaken(&mut record) {
            Some(oldest) => self.ack_untaken(&mut record, oldest),
            None => {
                for (i, entry) in record.entries.iter().enumerate() {
                    if i % LOOKAHEAD == 0 {
                        let ahead = record.entries[i..].iter().take(LOOKAHEAD);
                        let ahead = ahead.filter(|entry| !entry.is_followed());
                        self.views
                            .warm_at(ahead.map(|entry| (entry.id, entry.place)));
                    }
                    // A followed entry changed nothing in the view: the
                    // client knew the item, and knows it still.
                    if !entry.is_followed() {
                        self.ack_entry(entry, record.packet, record.frame, record.seq);
                    }
                }
            }
        }
        self.acked(record.frame);
        if !record.entries.is_empty() {
            // Its items may have come to rest, and left the map.
            self.views.shrink();
        }
        self.retirement.recycle(&mut record.entries);
    }

    /// Makes `entry` of the acknowledged record `seq` (packet `packet`, of
    /// frame `frame`) known to the client. In line, always: it is the
    /// body of the loop over a record's entries (as a call, the loop took
    /// a third more instructions).
    #[inline(always)]
    fn ack_entry(&mut self, entry: &RecordEntry, packet: u32, frame: u64, seq: u64) {
        // Late acks can retire the arrays' own old records as lost.
        let inner_due = self.route(entry.id, packet, true);
        if inner_due
            && self
                .views
                .get(entry.id)
                .is_some_and(|view| view.holding != Holding::RemoveInFlight)
        {
            self.queue_inner_work(entry.id, frame);
        }
        if self.views.acknowledged(
            (entry.id, entry.place),
            entry.work(),
            entry.key,
            seq,
            self.written_frame,
        ) {
            // Records older than this one may carry the stay that ended.
            let oldest = self.retirement.oldest_seq();
            self.views.departed(entry.id, seq, oldest);
            self.drop_inner(entry.id);
            if let (Work::Exit, Some(scope)) = (entry.work(), self.scope.as_deref_mut()) {
                scope.exit_acknowledged(entry.id, frame);
            }
        }
    }

    /// Passes the fate of `packet` on to the send states of item `id`'s
    /// arrays. Returns whether they now have work due (a loss to repair),
    /// which only an entry for `id` in a later packet can carry.
    #[inline]
    pub(super) fn route(&mut self, id: ReplicationId, packet: u32, delivered: bool) -> bool {
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
    pub(super) fn retire_lost(&mut self, mut record: Record) {
        // What a later record carried is known once the view took it.
        self.replay_around(Some(&mut record));
        for entry in &record.entries {
            if entry.is_followed() {
                // Sent again if the client still knows the item. The view
                // kept no trace of this record, so later followed records
                // may have carried the same fields (sent again all the
                // same: a field the mirror holds newer stays); but it
                // knows what later records it took carried, as for any
                // entry: a whole value of a new shape (a change of a
                // field of the old one must not follow it), those fields,
                // or the item's removal.
                let since = entry.since(record.frame, record.oldest_due());
                let known = self
                    .views
                    .get(entry.id)
                    .is_some_and(|view| view.holding == Holding::Known);
                if known
                    && let Some(work) = self.views.lost_work(entry, record.seq, self.all_fields)
                {
                    self.repair(entry.id, work, record.frame, since);
                }
                continue;
            }
            let inner_due = self.route(entry.id, record.packet, false);
            let Some(view) = self.views.get(entry.id) else {
                // Its removal was acknowledged: nothing left to repair.
                continue;
            };
            let repairs_inner = inner_due && view.holding != Holding::RemoveInFlight;
            let work = self.views.lost_work(entry, record.seq, self.all_fields);
            self.views.lost(entry.id, record.seq);
            let since = entry.since(record.frame, record.oldest_due());
            if repairs_inner {
                // The arrays' repair needs an entry for the item, now.
                self.queue_seen(entry.id, Work::Fields(FieldMask::EMPTY), since);
            }
            if let Some(work) = work {
                self.repair(entry.id, work, record.frame, since);
            }
        }
        if record.shared > 0 {
            // Which fields those were is in the history ring, which the
            // next catch-up reads.
            self.lost_shared.push(LostShared {
                frame: record.frame,
                seq: record.seq,
                items: record.shared,
            });
        }
        if !record.entries.is_empty() {
            self.views.shrink();
        }
        self.retirement.recycle(&mut record.entries);
    }
}

/// The view takes `entries`, which record `seq` of frame `frame` carries
/// (`all_fields` being every field of a whole value), and the scope, if
/// any, notes the items sent whole: what writing a record does to the
/// view, at once or (a shared message's) later. The caller then trims the
/// view as of the oldest record in flight when the record was written
/// ([`Views::trim`]); a record without entries (a caught-up connection's,
/// of a frame that only changed fields, on its every write) needs only
/// that, not this call.
fn take_entries(
    views: &mut Views,
    mut scope: Option<&mut Scope>,
    entries: &mut [RecordEntry],
    (seq, frame): (u64, u64),
    all_fields: FieldMask,
) {
    for entry in entries {
        if entry.is_followed() {
            // The view hears nothing of it (see `follow`).
            continue;
        }
        entry.place = views.written(entry.id, entry.work(), seq, all_fields);
        if let (Work::Add { .. }, Some(scope)) = (entry.work(), scope.as_deref_mut()) {
            scope.sent_whole(views, entry.id, all_fields, frame);
        }
    }
}
