//! The retirement list: one record per packet in flight of what it
//! carried, so that an acknowledgement makes exactly that known to the
//! client and a loss puts exactly that back.

use std::collections::VecDeque;

use super::pending::Work;
use crate::id::{ReplicationId, ReplicationKey};
use crate::id_map::Place;
use crate::mask::FieldMask;
use crate::wire::WINDOW;

/// What one packet in flight carried.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub(crate) packet: u32,
    /// How many items of its frame's shared message the record carried
    /// the changed fields of, besides `entries` (0: none, or not a shared
    /// message). Those fields are the frame's changes in the history ring:
    /// the record names none of them, so that every connection that took
    /// the message records it in O(adds + removals) without sharing a list
    /// (whose reference count every record would touch). An ack has
    /// nothing to do for them; a loss puts them back at the next catch-up
    /// (`SendState::resolve_lost_shared`).
    pub(crate) shared: u32,
    /// How many of `entries` are adds (whole values).
    adds: u32,
    /// `frame` minus the oldest frame at which any work this record
    /// carried became due ([`oldest_due`](Self::oldest_due)), in 32 bits
    /// so that a record stays 56 bytes (`u32::MAX`: longer ago than that).
    due_age: u32,
    pub(crate) seq: u64,
    pub(crate) frame: u64,
    pub(crate) entries: Vec<RecordEntry>,
}

/// One item in a record: what was sent, the item's key at the time, and
/// how long its work had waited. Its work is kept as a kind and a field
/// mask, not as a [`Work`], whose tag would take a word of its own: an
/// entry stays 32 bytes with the place of the item's view entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordEntry {
    pub(crate) id: ReplicationId,
    /// The changed fields of `Work::Fields`; empty for any other work.
    fields: FieldMask,
    pub(crate) key: ReplicationKey,
    /// The record's frame minus the frame this work first became due
    /// (`u32::MAX`: longer ago than that; then the record's `oldest_due`
    /// stands for it). A lost entry's work is due again since then, so
    /// it keeps its place among the work a budget serves oldest first.
    age: u32,
    /// Where the connection's view put the item's entry when the record
    /// was written (see `IdTable`): its acknowledgement reads it there.
    pub(crate) place: Place,
    /// Which work: see [`work`](Self::work).
    kind: u8,
}

impl Record {
    /// How many of its entries are adds (whole values).
    #[inline]
    pub(crate) fn adds(&self) -> u32 {
        self.adds
    }

    /// The oldest frame at which any work this record carried became due:
    /// a loss puts that work back as due since then, so nothing committed
    /// at or after it counts as delivered until it is repaired. Work due
    /// for 2^32 frames or more counts as due since frame 0.
    #[inline]
    pub(crate) fn oldest_due(&self) -> u64 {
        match self.due_age {
            u32::MAX => 0,
            age => self.frame - u64::from(age),
        }
    }
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
        let (kind, fields) = match work {
            Work::Add { structural: false } => (0, FieldMask::EMPTY),
            Work::Add { structural: true } => (1, FieldMask::EMPTY),
            Work::Fields(fields) => (2, fields),
            Work::Remove => (3, FieldMask::EMPTY),
            Work::Exit => (4, FieldMask::EMPTY),
        };
        Self {
            id,
            fields,
            key,
            age,
            place: Place::MAX,
            kind,
        }
    }

    /// An entry for changed fields `fields` of an item the client knew,
    /// which a scoped connection sent as the array handed them (see
    /// `SendState::take_followed`): the view was not told, so neither is
    /// it of the entry's fate. Its acknowledgement does nothing; its loss
    /// sends the fields again if the client still knows the item, but for
    /// what later records the view took carried (`SendState::retire_lost`).
    pub(crate) fn followed(id: ReplicationId, fields: FieldMask, frame: u64, since: u64) -> Self {
        Self {
            kind: FOLLOWED,
            ..Self::new(
                id,
                Work::Fields(fields),
                ReplicationKey::default(),
                frame,
                since,
            )
        }
    }

    /// Whether it is a [`followed`](Self::followed) entry.
    #[inline]
    pub(crate) fn is_followed(&self) -> bool {
        self.kind == FOLLOWED
    }

    /// The work it carried.
    #[inline]
    pub(crate) fn work(&self) -> Work {
        match self.kind {
            0 => Work::Add { structural: false },
            1 => Work::Add { structural: true },
            2 | FOLLOWED => Work::Fields(self.fields),
            3 => Work::Remove,
            _ => Work::Exit,
        }
    }

    /// The frame its work first became due, in a record written at
    /// `frame` whose oldest work became due at `oldest_due`.
    pub(crate) fn since(&self, frame: u64, oldest_due: u64) -> u64 {
        match self.age {
            u32::MAX => oldest_due,
            age => frame - u64::from(age),
        }
    }
}

/// The kind of a [`RecordEntry::followed`] entry.
const FOLLOWED: u8 = 5;

/// The records of the packets in flight, in write order.
#[derive(Clone, Debug)]
pub(crate) struct Retirement {
    records: VecDeque<Record>,
    /// Sequence number of the next record (orders records for coverage).
    next_seq: u64,
    /// Entry buffers of retired records, reused by new ones.
    spare: Vec<Vec<RecordEntry>>,
    /// How many records in flight carry an add (asked before every write
    /// of a caught-up connection: see [`carries_adds`](Self::carries_adds)).
    with_adds: usize,
}

impl Default for Retirement {
    fn default() -> Self {
        Self {
            records: VecDeque::new(),
            next_seq: 1,
            spare: Vec::new(),
            with_adds: 0,
        }
    }
}

impl Retirement {
    /// Packets in flight.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no packet is in flight.
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Whether `packet` names a packet in flight.
    #[inline]
    pub(crate) fn contains(&self, packet: u32) -> bool {
        self.records.iter().any(|r| r.packet == packet)
    }

    /// The packets of the records in flight, in write order.
    pub(crate) fn packets(&self) -> impl Iterator<Item = u32> + '_ {
        self.records.iter().map(|r| r.packet)
    }

    /// The frames since which the work of each record in flight was due.
    pub(crate) fn oldest_dues(&self) -> impl Iterator<Item = u64> + '_ {
        self.records.iter().map(Record::oldest_due)
    }

    /// Whether a record in flight carries an add (a whole value).
    #[inline]
    pub(crate) fn carries_adds(&self) -> bool {
        debug_assert_eq!(
            self.with_adds,
            self.records.iter().filter(|record| record.adds > 0).count()
        );
        self.with_adds > 0
    }

    /// Takes out the record of `packet`.
    #[inline]
    pub(crate) fn take(&mut self, packet: u32) -> Option<Record> {
        // Acks come in order on a good link: the oldest record, usually.
        let record = if self.records.front().is_some_and(|r| r.packet == packet) {
            self.records.pop_front()
        } else {
            let index = self.records.iter().position(|r| r.packet == packet)?;
            self.records.remove(index)
        };
        self.taken(record)
    }

    /// Counts out `record`, just taken out of the list.
    #[inline]
    fn taken(&mut self, record: Option<Record>) -> Option<Record> {
        if record.as_ref().is_some_and(|record| record.adds > 0) {
            self.with_adds -= 1;
        }
        record
    }

    /// The records in flight from sequence number `first` on, oldest
    /// first.
    #[inline]
    pub(crate) fn since_seq(&self, first: u64) -> impl Iterator<Item = &Record> {
        self.records
            .iter()
            .skip_while(move |record| record.seq < first)
    }

    #[inline]
    pub(crate) fn take_expired(&mut self, frame: u64) -> Option<Record> {
        let oldest = self.records.front()?;
        if oldest.frame + WINDOW > frame {
            return None;
        }
        let record = self.records.pop_front();
        self.taken(record)
    }

    /// An empty buffer for a record of `entries` entries (a retired
    /// record's, if any). A record of none needs no buffer: a caught-up
    /// connection's record of a frame that only changed fields takes none,
    /// and touches none of the spare ones.
    #[inline]
    pub(crate) fn entry_buffer(&mut self, entries: usize) -> Vec<RecordEntry> {
        if entries == 0 {
            return Vec::new();
        }
        let mut buffer = self.spare.pop().unwrap_or_default();
        buffer.clear();
        buffer.reserve(entries);
        buffer
    }

    /// Appends the record of a packet being written, numbered
    /// [`next_seq`](Self::next_seq), whose `entries` are `adds` adds
    /// (whole values) and others, and which carried the changed fields of
    /// `shared` items of its frame's shared message besides them.
    #[inline]
    pub(crate) fn push(
        &mut self,
        packet: u32,
        frame: u64,
        oldest_due: u64,
        entries: Vec<RecordEntry>,
        (adds, shared): (u32, u32),
    ) {
        debug_assert_eq!(
            adds as usize,
            entries
                .iter()
                .filter(|entry| matches!(entry.work(), Work::Add { .. }))
                .count()
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        let due_age = u32::try_from(frame.saturating_sub(oldest_due)).unwrap_or(u32::MAX);
        self.with_adds += usize::from(adds > 0);
        self.records.push_back(Record {
            packet,
            shared,
            adds,
            due_age,
            seq,
            frame,
            entries,
        });
    }

    /// The records in flight from sequence number `first` on, oldest
    /// first.
    #[inline]
    pub(crate) fn since_seq_mut(&mut self, first: u64) -> impl Iterator<Item = &mut Record> {
        self.records
            .iter_mut()
            .skip_while(move |record| record.seq < first)
    }

    /// The sequence number of the oldest record in flight (the next
    /// record's, if none is).
    #[inline]
    pub(crate) fn oldest_seq(&self) -> u64 {
        self.records
            .front()
            .map_or(self.next_seq, |record| record.seq)
    }

    /// The sequence number the next record will get.
    #[inline]
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Keeps a retired record's buffer for the next record, unless it is
    /// large (a first full sync): that memory would otherwise stay with the
    /// connection for good. A buffer far larger than its record needed (one
    /// kept from a larger write) gives the room back.
    ///
    /// Takes the buffer by reference: a record without entries (most of a
    /// caught-up connection's) has none to keep, and only its capacity is
    /// read.
    #[inline]
    pub(crate) fn recycle(&mut self, entries: &mut Vec<RecordEntry>) {
        const KEEP_CAPACITY: usize = 1024;
        let keep = (1..=KEEP_CAPACITY).contains(&entries.capacity());
        if keep && self.spare.len() < 8 {
            if entries.capacity() > 4 * entries.len().max(16) {
                entries.shrink_to(2 * entries.len());
            }
            self.spare.push(core::mem::take(entries));
        }
    }
}
