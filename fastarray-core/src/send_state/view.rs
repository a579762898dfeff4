//! The view: what a connection's client may hold of each item, and the
//! rules that follow from it: which form changed fields go in, and what a
//! lost record makes due again.
//!
//! The same table keeps, for a connection with a scope, how it sees each
//! item in its scope ([`Seen`]; the rules are `send_state::scope`'s): one map
//! entry per item serves both, so an item in scope costs one 16-byte
//! entry, not one in each of two maps.

use hashbrown::hash_map::Entry;

use super::handles::Handles;
use super::pending::Work;
use super::retirement::RecordEntry;
use super::seen::Seen;
use crate::id::{ReplicationId, ReplicationKey};
use crate::id_map::{IdMap, IdTable, Place};
use crate::mask::FieldMask;

mod bits;
mod flight;
mod plain;
mod rest;

use bits::Bits;
pub(crate) use flight::Flight;
use rest::{ACKED, FLIGHT, IN_SCOPE, Rest};

/// What the client may hold of one item (what is kept of it at rest; the
/// [`Flight`] of its records in flight stays inside [`Views`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub(crate) holding: Holding,
    /// Whether a record that carried this id was acknowledged, its key
    /// then [`acked_key`](Self::acked_key).
    pub(crate) acked: bool,
    /// The item's key when the newest acknowledged record carrying it was
    /// written.
    pub(crate) acked_key: ReplicationKey,
}

impl View {
    /// Whether the client holds the item or may soon (its add is in
    /// flight): not on its way out.
    pub(crate) fn is_held(&self) -> bool {
        self.holding != Holding::RemoveInFlight
    }
}

/// How far the client's copy of an item is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Holding {
    /// A packet with the whole item was written; none acknowledged yet.
    AddInFlight,
    /// The client acknowledged a packet with the whole item.
    Known,
    /// A removal or a scope exit was written; not acknowledged yet.
    RemoveInFlight,
}

/// What a write needs of an item's entry ([`Views::for_write`]).
pub(crate) struct ForWrite {
    /// What the client holds, if anything.
    pub(crate) holding: Option<Holding>,
    /// How the scope sees it, if in scope.
    pub(crate) seen: Option<Seen>,
    /// Its name on the wire.
    pub(crate) wire: ReplicationId,
}

/// The one rule for changed fields `mask` of an item the client holds as
/// `holding` (see [`Views::fields_work`]).
pub(crate) fn fields_work(holding: Option<Holding>, mask: FieldMask) -> Work {
    match holding {
        Some(Holding::Known) => Work::Fields(mask),
        Some(_) => Work::Add { structural: false },
        None => Work::Add { structural: true },
    }
}

/// Gives back the handle of `rest`, if the connection names items by
/// handles and it took one: named by messages up to frame `after`, or by
/// none (`None`).
fn give_back(handles: &mut Option<Box<Handles>>, rest: &Rest, after: Option<u64>) {
    if let (Some(handles), Some(handle)) = (handles.as_deref_mut(), rest.handle()) {
        match after {
            Some(after) => handles.give_back(handle, after),
            None => handles.give_back_unused(handle),
        }
    }
}

/// The entry of `id` in `map`, made if it has none: the entry of an item
/// kept as a bit (taken out of `bits`), or one for an item the client
/// holds nothing of. Returns its place.
#[inline]
fn entry<'a>(
    map: &'a mut IdTable<Rest>,
    bits: &mut Bits,
    id: ReplicationId,
) -> (Place, &'a mut Rest) {
    map.or_insert_with(id, || bits.take(id).unwrap_or_else(Rest::absent))
}

/// Whether records of an earlier stay of `id`, which has no entry or one
/// the client holds nothing of, may be in flight: `flights` keeps a guard
/// for it then (see [`Views::departed`]).
#[inline]
fn has_departed(flights: &IdMap<Flight>, id: ReplicationId) -> bool {
    !flights.is_empty() && flights.contains_key(&id)
}

/// The name on the wire of item `id`, kept as `rest`: the id itself on a
/// connection naming items by ids (`by_handles` false), else its handle,
/// if it took one.
#[inline]
fn wire(by_handles: bool, id: ReplicationId, rest: &Rest) -> Option<ReplicationId> {
    match (by_handles, rest.handle()) {
        (false, _) => Some(id),
        (true, handle) => handle.map(|handle| ReplicationId::from_raw(u64::from(handle))),
    }
}

/// Where [`Views::written`] says an entry kept as a bit is: nowhere in the
/// map, which a lookup finds.
const NO_PLACE: Place = Place::MAX;

/// Whether record `seq` carried an earlier stay of `id` than its entry
/// `rest`'s (made by a later record, still guarded).
fn is_stale(flights: &IdMap<Flight>, id: ReplicationId, rest: &Rest, seq: u64) -> bool {
    rest.flags & FLIGHT != 0 && flights.get(&id).is_some_and(|flight| seq < flight.born)
}

/// The view of every item the client may hold, with a count of the ones it
/// knows (kept with every change of a holding, so that "the client knows
/// every item" is one comparison); and the scope's marks of the items in
/// the connection's scope.
///
/// An item costs an 8-byte entry; the 40 bytes of its [`Flight`] are kept
/// only while two or more records that carried it are in flight (an item
/// changed in consecutive packets before the first was acknowledged), so
/// a tick that writes each changed item once touches no second map.
///
/// On a connection naming items by ids, an item the client knows at rest
/// (no record in flight carries it, no flight is kept, no scope marks it)
/// has no entry: it is a bit ([`Bits`]), from the moment it comes to rest
/// until anything needs an entry for it again. Its acknowledged key is
/// not kept: a resynchronisation finds it up to date by frames alone. So,
/// while the connection has no scope, is an item whose one record in
/// flight added it (an id new to the view) or removed it (from rest): the
/// record resolves the bit, and anything else makes it an entry.
#[derive(Clone, Debug, Default)]
pub(crate) struct Views {
    /// An entry per item the client may hold or the scope holds, but the
    /// ones kept as bits.
    map: IdTable<Rest>,
    /// The items the client knows at rest, and those whose one record in
    /// flight added them or removed them from rest (none while the
    /// connection names items by handles, whose entries keep them; none in
    /// flight once an item entered a scope here).
    bits: Bits,
    flights: IdMap<Flight>,
    /// The oldest record that made an entry still guarded (see
    /// [`Flight::born`]), `u64::MAX` if none: [`trim`](Self::trim) looks at
    /// the flights only once that guard can end.
    first_guard: u64,
    known: u32,
    /// Entries the client may hold (the others are only in scope).
    held: u32,
    /// Of those, the ones whose removal or exit is in flight.
    leaving: u32,
    /// The handles, once the connection names items by them.
    handles: Option<Box<Handles>>,
    /// Whether an item ever entered a scope here: only then can an id
    /// leave and come back, so that records of its earlier stay may be in
    /// flight when it is added again (see [`Flight::born`]).
    scoped: bool,
    /// The highest raw id that ever had an entry or a plain bit here: an
    /// id above it has neither, with no lookup.
    newest: u64,
}

impl Views {
    /// The view of `id`, if the client may hold it.
    pub(crate) fn get(&self, id: ReplicationId) -> Option<View> {
        let rest = self.rest(id)?;
        Some(View {
            holding: rest.holding()?,
            acked: rest.flags & ACKED != 0,
            acked_key: ReplicationKey::from_raw(rest.word),
        })
    }

    /// What is kept of `id`: its entry, or a plain item's.
    #[inline]
    fn rest(&self, id: ReplicationId) -> Option<Rest> {
        match self.map.get(id) {
            Some(rest) => Some(*rest),
            None => self.bits.get(id),
        }
    }

    /// Whether the view keeps nothing of `id`: an id above every one it
    /// kept (dealt out after every one it was sent, usually) needs no
    /// lookup.
    #[inline]
    fn is_new(&self, id: ReplicationId) -> bool {
        id.to_raw() > self.newest || self.map.get(id).is_none() && !self.bits.holds(id)
    }

    /// Makes `id`'s entry a plain item if it came to rest (see
    /// [`Views`]): called wherever an entry may have.
    #[inline]
    fn settle(&mut self, id: ReplicationId) {
        if self.handles.is_none() && self.map.get(id).is_some_and(Rest::at_rest) {
            self.map.remove(id);
            self.bits.known.insert(id);
        }
    }

    /// Gives back the map's room once it is far beyond its entries (after
    /// a first full sync, whose entries became plain items): a table far
    /// bigger than its entries costs a cache line per lookup all the same.
    #[inline]
    pub(crate) fn shrink(&mut self) {
        self.map.shrink();
    }

    /// How the connection sees `id` and what its client holds of it, in
    /// one lookup (what [`seen`](Self::seen) and [`get`](Self::get) say).
    pub(crate) fn look(&self, id: ReplicationId) -> (Option<Seen>, Option<Holding>) {
        self.rest(id)
            .map_or((None, None), |rest| (rest.seen(), rest.holding()))
    }

    /// Reads the entries of `ids` and does nothing with them, so that
    /// their cache misses overlap: called on a run of ids before a loop
    /// that looks each up and works on it in turn, whose work between
    /// lookups keeps the processor from running ahead to the next miss.
    /// A connection's view is read once per tick, long after the last, so
    /// at a thousand connections nearly every lookup misses.
    pub(crate) fn warm(&self, ids: impl IntoIterator<Item = ReplicationId>) {
        for id in ids {
            core::hint::black_box(self.map.get(id).map(|rest| rest.flags));
        }
    }

    /// [`warm`](Self::warm) for entries whose places are known: reads
    /// only the bucket of each.
    pub(crate) fn warm_at(&self, entries: impl IntoIterator<Item = (ReplicationId, Place)>) {
        for (id, place) in entries {
            // A bit's record has no place to read (see `acknowledged`).
            if place != NO_PLACE {
                core::hint::black_box(self.map.get_at(id, place).map(|rest| rest.flags));
            }
        }
    }

    /// The flight of `id`'s records (a fresh one's values if none is in
    /// flight).
    fn flight(&self, id: ReplicationId, rest: &Rest) -> Flight {
        match rest.flags & FLIGHT {
            0 => Flight::default(),
            _ => self.flights.get(&id).copied().unwrap_or_default(),
        }
    }

    /// Whether the client may hold `id`.
    pub(crate) fn contains(&self, id: ReplicationId) -> bool {
        self.rest(id).is_some_and(|rest| rest.holding().is_some())
    }

    /// Items the client may hold.
    pub(crate) fn len(&self) -> usize {
        self.held as usize
    }

    /// Whether the client knows every item it may hold but those on their
    /// way out (what the tests check the counts by; a write asks the
    /// packets in flight, `SendState::adds_known`).
    #[cfg(test)]
    pub(crate) fn adds_known(&self) -> bool {
        self.known + self.leaving == self.held
    }

    /// Items the client holds or will once their adds arrive: those it
    /// may hold but the ones on their way out.
    #[inline]
    pub(crate) fn staying(&self) -> usize {
        (self.held - self.leaving) as usize
    }

    /// The ids the client may hold, in no order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.map
            .iter()
            .filter(|(_, rest)| rest.holding().is_some())
            .map(|(id, _)| id)
            .chain(self.bits.iter())
    }

    // The scope's marks (its rules are `send_state::scope`'s).

    /// How the connection sees `id`, if it is in its scope.
    pub(crate) fn seen(&self, id: ReplicationId) -> Option<Seen> {
        self.map.get(id)?.seen()
    }

    /// Sets how the connection sees `id`, if it is in its scope; returns
    /// whether it is.
    pub(crate) fn set_seen(&mut self, id: ReplicationId, seen: Seen) -> bool {
        match self.map.get_mut(id) {
            Some(rest) if rest.flags & IN_SCOPE != 0 => {
                rest.set_seen(seen);
                true
            }
            _ => false,
        }
    }

    /// Puts `id` in the scope, seen as `seen`; returns whether it was out
    /// (an item in scope already keeps how it is seen).
    pub(crate) fn enter_scope(&mut self, id: ReplicationId, seen: Seen) -> bool {
        self.scoped = true;
        self.newest = self.newest.max(id.to_raw());
        let rest = entry(&mut self.map, &mut self.bits, id).1;
        let entered = rest.flags & IN_SCOPE == 0;
        if entered {
            rest.set_seen(seen);
        }
        entered
    }

    /// Takes `id` out of the scope; returns whether it was in.
    pub(crate) fn leave_scope(&mut self, id: ReplicationId) -> bool {
        let Some(rest) = self.map.get_mut(id) else {
            return false;
        };
        if rest.flags & IN_SCOPE == 0 {
            return false;
        }
        rest.clear_seen();
        if rest.holding().is_none() {
            // Its handle, if it took one, was never written.
            give_back(&mut self.handles, rest, None);
            self.map.remove(id);
        } else {
            self.settle(id);
        }
        true
    }

    /// Empties the scope (a new one starts): the entries only in it go.
    pub(crate) fn clear_scope(&mut self) {
        let (handles, plain) = (&mut self.handles, &mut self.bits.known);
        self.map.retain(|id, rest| {
            rest.clear_seen();
            let held = rest.holding().is_some();
            if !held {
                give_back(handles, rest, None);
            } else if handles.is_none() && rest.at_rest() {
                plain.insert(id);
                return false;
            }
            held
        });
    }

    // Handles (see `send_state::handles`).

    /// Whether the connection names items by handles.
    pub(crate) fn uses_handles(&self) -> bool {
        self.handles.is_some()
    }

    /// From now on the connection names items by handles: call only while
    /// the client holds nothing.
    pub(crate) fn start_handles(&mut self) {
        debug_assert_eq!(self.held, 0);
        self.handles.get_or_insert_with(Box::default);
    }

    /// How many frames before `frame` the handle `wire` was taken (0 for
    /// a connection naming items by ids).
    pub(crate) fn handle_age(&self, wire: ReplicationId, frame: u64) -> u64 {
        self.handles
            .as_deref()
            .map_or(0, |handles| handles.age(wire.to_raw() as u32, frame))
    }

    /// The ids in the scope, in no order.
    pub(crate) fn scope_ids(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.map
            .iter()
            .filter(|(_, rest)| rest.flags & IN_SCOPE != 0)
            .map(|(id, _)| id)
    }

    /// The one rule for changed fields: they go only to a client that
    /// knows the item; one that may not gets the whole item, which is
    /// structural if it holds nothing of it yet.
    pub(crate) fn fields_work(&self, id: ReplicationId, mask: FieldMask) -> Work {
        fields_work(self.get(id).map(|view| view.holding), mask)
    }

    /// What a write needs of `id`'s entry, in one lookup: what the client
    /// holds, the scope's marks, and its name on the wire in a message of
    /// `frame` (taking a handle for an item in scope or held that has
    /// none).
    pub(crate) fn for_write(&mut self, id: ReplicationId, frame: u64) -> ForWrite {
        let Some(rest) = self.map.get_mut(id) else {
            // A plain item has no handle: none is kept while handles are.
            return ForWrite {
                holding: self.bits.get(id).and_then(|rest| rest.holding()),
                seen: None,
                wire: id,
            };
        };
        let wire = match (
            wire(self.handles.is_some(), id, rest),
            self.handles.as_deref_mut(),
        ) {
            (Some(wire), _) => wire,
            // By handles, none taken yet.
            (None, Some(handles)) => {
                let handle = handles.take(frame);
                rest.word = handle + 1;
                ReplicationId::from_raw(u64::from(handle))
            }
            (None, None) => id,
        };
        ForWrite {
            holding: rest.holding(),
            seen: rest.seen(),
            wire,
        }
    }

    /// What sending changed fields of `id` as they were handed to the
    /// connection needs of its entry, in one lookup: how the scope sees
    /// it and its name on the wire, if the client knows the item (its add
    /// was acknowledged, no removal or exit is in flight), it is in scope,
    /// and it has a name (a handle, on a connection naming items by
    /// them); `None` otherwise.
    #[inline]
    pub(crate) fn for_follow(&self, id: ReplicationId) -> Option<(Seen, ReplicationId)> {
        let rest = self.map.get(id)?;
        if !rest.is(Holding::Known) {
            return None;
        }
        Some((rest.seen()?, wire(self.handles.is_some(), id, rest)?))
    }

    /// Records that a client holds `id` at `key`, from a snapshot.
    pub(crate) fn insert_known(&mut self, id: ReplicationId, key: ReplicationKey) {
        self.newest = self.newest.max(id.to_raw());
        if self.handles.is_none() && self.map.get(id).is_none() && !self.bits.is_moving(id) {
            // The key is not kept: a snapshot's items are not acknowledged
            // records', and a resynchronisation goes by frames for them.
            if self.bits.known.insert(id) {
                self.held += 1;
                self.known += 1;
            }
            return;
        }
        let rest = entry(&mut self.map, &mut self.bits, id).1;
        match rest.holding() {
            None => self.held += 1,
            Some(Holding::Known) => self.known -= 1,
            Some(Holding::RemoveInFlight) => self.leaving -= 1,
            Some(Holding::AddInFlight) => {}
        }
        if rest.flags & FLIGHT != 0 {
            self.flights.remove(&id);
        }
        rest.clear_view();
        rest.set_holding(Holding::Known);
        rest.word = key.to_raw();
        self.known += 1;
        self.settle(id);
    }

    /// Updates the view of `id` for record `seq`, which carried `work`
    /// (`all_fields` being every field of a whole value). Every call is
    /// answered by one [`acknowledged`](Self::acknowledged) or
    /// [`lost`](Self::lost) for the same record. Returns where the entry
    /// is kept, for the record to find it again.
    pub(crate) fn written(
        &mut self,
        id: ReplicationId,
        work: Work,
        seq: u64,
        all_fields: FieldMask,
    ) -> Place {
        if self.handles.is_none() && !self.scoped {
            // Without an entry: an add of an item the view keeps nothing
            // of, a removal of a plain item (see [`Bits`]).
            match work {
                Work::Add { .. } if self.is_new(id) => {
                    self.newest = self.newest.max(id.to_raw());
                    self.bits.arrive(id);
                    self.held += 1;
                    return NO_PLACE;
                }
                Work::Remove if self.bits.depart(id) => {
                    self.known -= 1;
                    self.leaving += 1;
                    return NO_PLACE;
                }
                _ => {}
            }
        }
        self.newest = self.newest.max(id.to_raw());
        let (place, rest) = entry(&mut self.map, &mut self.bits, id);
        let new = rest.holding().is_none();
        let was_leaving = rest.is(Holding::RemoveInFlight);
        // A whole value of a new shape (an enum's variant) for an item the
        // client knows supersedes whatever older records carried, as an add
        // does an earlier stay's: their fate is not this entry's. (A record
        // of the frame's shared message keeps no per-item trace, so only
        // this guard tells its loss that a new shape was written since.)
        let reshaped = rest.is(Holding::Known) && work == (Work::Add { structural: true });
        if new {
            rest.set_holding(Holding::AddInFlight);
            self.held += 1;
        }
        let was_known = rest.is(Holding::Known);
        let fields = match work {
            Work::Add { structural } => {
                if structural {
                    rest.set_holding(Holding::AddInFlight);
                }
                all_fields
            }
            Work::Fields(mask) => mask,
            Work::Remove | Work::Exit => {
                rest.set_holding(Holding::RemoveInFlight);
                FieldMask::EMPTY
            }
        };
        rest.in_flight = if reshaped {
            1
        } else {
            rest.in_flight.saturating_add(1)
        };
        // Without a scope an id never comes back, so a new one has no
        // earlier stay to guard against: an add costs no flight. With one,
        // only an id that left while older records were in flight has.
        if (new && self.scoped && has_departed(&self.flights, id)) || reshaped {
            // Records of the id's earlier stay may still be in flight.
            rest.flags |= FLIGHT;
            self.first_guard = self.first_guard.min(seq);
            self.flights.insert(
                id,
                Flight {
                    born: seq,
                    structural_seq: seq,
                    last_seq: seq,
                    acked_seq: 0,
                    last_fields: fields,
                },
            );
        } else if rest.in_flight >= 2 || rest.flags & FLIGHT != 0 {
            // A flight made now starts from a fresh one's values: they
            // describe the one record in flight before this one.
            rest.flags |= FLIGHT;
            let flight = self.flights.entry(id).or_default();
            flight.last_seq = seq;
            flight.last_fields = fields;
            if matches!(work, Work::Add { structural: true }) {
                flight.structural_seq = seq;
            }
        }
        if was_known && !rest.is(Holding::Known) {
            self.known -= 1;
        }
        match (was_leaving, rest.is(Holding::RemoveInFlight)) {
            (false, true) => self.leaving += 1,
            (true, false) => self.leaving -= 1,
            _ => {}
        }
        place
    }

    /// What [`written`](Self::written) and then
    /// [`acknowledged`](Self::acknowledged) for one record do to `id`, in
    /// one step, where that is all they do to a plain item: an add of an
    /// item the client holds nothing of makes it a plain item, a removal of
    /// a plain item forgets it (returns whether the client no longer holds
    /// the item). `None`, having done nothing, for anything else (an item
    /// with an entry, a connection by handles or with a scope, any other
    /// work): the caller takes the two steps.
    #[inline]
    pub(crate) fn written_acknowledged(&mut self, id: ReplicationId, work: Work) -> Option<bool> {
        if self.handles.is_some() || self.scoped {
            return None;
        }
        match work {
            // Plain items and entries are apart: a plain item has none.
            Work::Remove | Work::Exit if self.bits.known.remove(id) => {
                self.held -= 1;
                self.known -= 1;
                Some(true)
            }
            // An item new to the client: a new id (dealt out after every
            // one it was sent, usually), or one with neither.
            Work::Add { .. } if self.is_new(id) => {
                self.newest = self.newest.max(id.to_raw());
                self.bits.known.insert(id);
                self.held += 1;
                self.known += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Gives back room for flights far beyond what a record needs: a join
    /// puts every item in flight at once. Called after each record is
    /// written (not as flights land: a tick's flights all land, and the
    /// next tick's would grow the map again).
    ///
    /// Also ends the guards of entries born before `oldest`, the oldest
    /// record in flight: no record of an earlier stay is left.
    #[inline]
    pub(crate) fn trim(&mut self, oldest: u64) {
        let (len, capacity) = (self.flights.len(), self.flights.capacity());
        // Neither, on a caught-up connection's every write.
        if self.first_guard <= oldest || capacity > 8 * len.max(128) {
            self.trim_flights(oldest);
        }
    }

    /// Item `id`'s removal or exit, record `seq`, was acknowledged (the
    /// client dropped it), when `oldest` was the oldest record in flight:
    /// if that is older, it may carry the item's stay that ended, and an
    /// entry made for it again is guarded. Until then, a guard born of
    /// `seq` is kept for it among the flights, with no entry's flag
    /// pointing at it (so no lookup reads it but the next entry's making),
    /// and ends as any guard does ([`trim`](Self::trim)). Any other id
    /// that comes back needs no guard: no record of its earlier stay is
    /// left.
    pub(crate) fn departed(&mut self, id: ReplicationId, seq: u64, oldest: u64) {
        if oldest < seq && self.scoped {
            let guard = Flight {
                born: seq,
                ..Flight::default()
            };
            self.flights.insert(id, guard);
            self.first_guard = self.first_guard.min(seq);
        }
    }

    /// [`trim`](Self::trim)'s work, when there is some.
    #[cold]
    fn trim_flights(&mut self, oldest: u64) {
        if self.first_guard <= oldest {
            let (map, plain, mut first) = (&mut self.map, &mut self.bits.known, u64::MAX);
            let by_ids = self.handles.is_none();
            self.flights.retain(|id, flight| {
                if flight.born == 0 {
                    return true;
                }
                if flight.born > oldest {
                    first = first.min(flight.born);
                    return true;
                }
                flight.born = 0;
                match map.get_mut(*id) {
                    Some(rest) if rest.in_flight == 0 => {
                        rest.flags &= !FLIGHT;
                        if by_ids && rest.at_rest() {
                            map.remove(*id);
                            plain.insert(*id);
                        }
                        false
                    }
                    Some(_) => true,
                    None => false,
                }
            });
            self.first_guard = first;
        }
        let (len, capacity) = (self.flights.len(), self.flights.capacity());
        if capacity > 8 * len.max(128) {
            self.flights.shrink_to(2 * len);
        }
    }

    /// Updates the view of `id` for acknowledged record `seq`, which
    /// carried `work` at `key`. Returns whether the client no longer holds
    /// the item (its removal was acknowledged).
    ///
    /// `written` is the connection's newest frame written: a handle the
    /// item gives back is reused only in a later one.
    ///
    /// A connection naming items by handles keeps no acknowledged key (the
    /// entry keeps the handle instead): it resynchronises by frames only.
    pub(crate) fn acknowledged(
        &mut self,
        (id, place): (ReplicationId, Place),
        work: Work,
        key: ReplicationKey,
        seq: u64,
        written: u64,
    ) -> bool {
        // Only the record that made a bit in flight resolves it, and it
        // has no place: an id in flight as a bit has no entry, so a
        // record that made one looks there first.
        if place == NO_PLACE {
            if work.drops() && self.bits.departed(id) {
                self.held -= 1;
                self.leaving -= 1;
                return true;
            }
            if matches!(work, Work::Add { .. }) && self.bits.arrived(id) {
                self.known += 1;
                return false;
            }
        }
        let Some(rest) = self.map.get_at_mut(id, place) else {
            return false;
        };
        if rest.holding().is_none() || is_stale(&self.flights, id, rest, seq) {
            return false;
        }
        if work.drops() {
            if rest.is(Holding::Known) {
                self.known -= 1;
            }
            if rest.is(Holding::RemoveInFlight) {
                self.leaving -= 1;
            }
            if rest.flags & FLIGHT != 0 {
                self.flights.remove(&id);
            }
            self.held -= 1;
            give_back(&mut self.handles, rest, Some(written));
            if rest.flags & IN_SCOPE == 0 {
                self.map.remove_at(id, place);
            } else {
                // Back in scope meanwhile: it waits to be sent again.
                rest.clear_view();
            }
            return true;
        }
        // One lookup of the flight: read, update, and drop it if this was
        // its last record.
        let mut flight = match rest.flags & FLIGHT {
            0 => None,
            _ => match self.flights.entry(id) {
                Entry::Occupied(entry) => Some(entry),
                Entry::Vacant(_) => None,
            },
        };
        let (structural_seq, acked_seq) = flight
            .as_ref()
            .map_or((0, 0), |f| (f.get().structural_seq, f.get().acked_seq));
        if let Work::Add { .. } = work {
            if rest.is(Holding::AddInFlight) && seq >= structural_seq {
                rest.set_holding(Holding::Known);
                self.known += 1;
            }
        }
        if seq > acked_seq {
            if self.handles.is_none() {
                rest.flags |= ACKED;
                rest.word = key.to_raw();
            }
            if let Some(flight) = flight.as_mut() {
                flight.get_mut().acked_seq = seq;
            }
        }
        if rest.land() {
            if let Some(flight) = flight.filter(|flight| flight.get().born == 0) {
                rest.flags &= !FLIGHT;
                flight.remove();
            }
        }
        if self.handles.is_none() && rest.at_rest() {
            // At rest: a plain item from now on.
            self.map.remove_at(id, place);
            self.bits.known.insert(id);
        }
        false
    }

    /// Record `seq`, which carried `id`, was lost: its flight ends with
    /// the last record that carried the item (call after
    /// [`lost_work`](Self::lost_work)).
    pub(crate) fn lost(&mut self, id: ReplicationId, seq: u64) {
        let Some(rest) = self.map.get_mut(id) else {
            // A bit in flight lands, due again: an entry from now on.
            let Some(holding) = self.bits.land(id) else {
                return;
            };
            let mut rest = Rest::once(holding);
            rest.land();
            self.map.or_insert_with(id, || rest);
            return;
        };
        if rest.holding().is_none() || is_stale(&self.flights, id, rest, seq) {
            return;
        }
        if rest.land() && rest.flags & FLIGHT != 0 {
            if let Entry::Occupied(flight) = self.flights.entry(id) {
                if flight.get().born == 0 {
                    rest.flags &= !FLIGHT;
                    flight.remove();
                }
            }
        }
        if self.handles.is_none() && rest.at_rest() {
            self.map.remove(id);
            self.bits.known.insert(id);
        }
    }

    /// What must be sent again because `entry`, written in record `seq`,
    /// was lost: `None` when nothing (or when the client no longer holds
    /// the item). `all_fields`: every field of the item type.
    pub(crate) fn lost_work(
        &self,
        entry: &RecordEntry,
        seq: u64,
        all_fields: FieldMask,
    ) -> Option<Work> {
        let rest = &self.rest(entry.id)?;
        let holding = rest.holding()?;
        if is_stale(&self.flights, entry.id, rest, seq) {
            // The id's earlier stay: the client dropped that copy.
            return None;
        }
        let flight = self.flight(entry.id, rest);
        if !entry.work().drops() && holding == Holding::RemoveInFlight {
            // A removal or exit written since supersedes it: the client
            // drops the item (and gets it whole if it comes back).
            return None;
        }
        if !entry.work().drops() && flight.structural_seq > seq {
            // A whole value written after this record carries everything
            // it did, in the item's current shape; its own fate decides.
            return None;
        }
        let later = flight.last_seq > seq;
        let covered = if later {
            flight.last_fields
        } else {
            FieldMask::EMPTY
        };
        match entry.work() {
            Work::Remove | Work::Exit if later => None,
            work @ (Work::Remove | Work::Exit) => Some(work),
            Work::Add { .. } | Work::Fields(_) => {
                let lost = match entry.work() {
                    Work::Fields(mask) => mask,
                    _ => all_fields,
                };
                let missing = lost.without(covered);
                if missing.is_empty() {
                    return None;
                }
                Some(match entry.work() {
                    // A lost whole value is resent whole: which fields
                    // exist depends on the item's shape (an enum's variant).
                    add @ Work::Add { .. } if holding != Holding::Known => add,
                    Work::Add { .. } => Work::Add { structural: false },
                    _ => self.fields_work(entry.id, missing),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// One step of [`plain_items_answer_as_entries_do`].
    #[derive(Clone, Debug)]
    enum Step {
        /// A record carries item `.0` (work kind `.1`).
        Write(u64, u8),
        /// The `.0`-th record entry in flight is acknowledged, or (`.1`)
        /// lost.
        Settle(usize, bool),
        /// A record carries item `.0` (work kind `.1`) and is acknowledged
        /// before anything else happens: in one step where
        /// [`Views::written_acknowledged`] takes it.
        WriteAcked(u64, u8),
        Trim,
        Snapshot(u64),
        Enter(u64),
        Leave(u64),
        ClearScope,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0..16u64, 0..5u8).prop_map(|(id, kind)| Step::Write(id, kind)),
            2 => (0..16u64, 0..5u8).prop_map(|(id, kind)| Step::WriteAcked(id, kind)),
            4 => (any::<usize>(), any::<bool>()).prop_map(|(i, lost)| Step::Settle(i, lost)),
            1 => Just(Step::Trim),
            1 => (0..16u64).prop_map(Step::Snapshot),
            1 => (0..16u64).prop_map(Step::Enter),
            1 => (0..16u64).prop_map(Step::Leave),
            1 => Just(Step::ClearScope),
        ]
    }

    proptest! {
        /// The same steps given to a connection naming items by ids (whose
        /// items at rest are plain items) and to one naming them by
        /// handles (which keeps every entry) leave the same view: every
        /// holding, scope mark, count and answer of a loss and an
        /// acknowledgement is the same, step after step.
        #[test]
        fn plain_items_answer_as_entries_do(steps in prop::collection::vec(step(), 0..120)) {
            let (mut ids, mut handles) = (Views::default(), Views::default());
            handles.start_handles();
            let all = FieldMask::all(3);
            let key = ReplicationKey::default();
            let mut in_flight: Vec<RecordEntry> = Vec::new();
            let mut seqs: Vec<u64> = Vec::new();
            let mut seq = 0;
            let (mut written_ever, mut gone, mut removed) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
            for step in steps {
                let (raw, kind, acked) = match step {
                    Step::Write(raw, kind) => (raw, kind, false),
                    Step::WriteAcked(raw, kind) => (raw, kind, true),
                    _ => (0, 0, false),
                };
                match step {
                    Step::Write(..) | Step::WriteAcked(..) => {
                        let work = match kind {
                            0 => Work::Add { structural: true },
                            1 => Work::Add { structural: false },
                            2 => Work::Fields(FieldMask::from_bits(0b011)),
                            3 => Work::Remove,
                            _ => Work::Exit,
                        };
                        // As a connection writes (`SendState::include`,
                        // `exclude`, `lose_scoped`, the catch-up): an item
                        // is added before anything else, and once it left
                        // the scope it comes back only through a scope.
                        // While its exit or removal is in flight, only a
                        // removal is written for it, or a drop lost
                        // before is sent again; once its drop was
                        // acknowledged, nothing but its return through a
                        // scope. Once it was removed, nothing but its
                        // removal is written again (ids are not reused).
                        let sent = written_ever.contains(&raw);
                        let holding = ids.get(id(raw)).map(|view| view.holding);
                        let leaving = holding == Some(Holding::RemoveInFlight);
                        let dropping = |drop: Work| {
                            in_flight.iter().any(|e| e.id == id(raw) && e.work() == drop)
                        };
                        let skip = match work {
                            Work::Remove if removed.contains(&raw) => holding.is_none() || dropping(Work::Remove),
                            _ if removed.contains(&raw) => true,
                            Work::Add { .. } => leaving || gone.contains(&raw) && !ids.scoped,
                            Work::Exit => {
                                !sent || holding.is_none() || leaving && dropping(Work::Exit)
                            }
                            Work::Remove => !sent || holding.is_none(),
                            Work::Fields(_) => !sent || holding.is_none() || leaving,
                        };
                        if skip {
                            continue;
                        }
                        if work.drops() {
                            gone.insert(raw);
                        } else if matches!(work, Work::Add { .. }) {
                            gone.remove(&raw);
                        }
                        if work == Work::Remove {
                            removed.insert(raw);
                        }
                        written_ever.insert(raw);
                        seq += 1;
                        if acked {
                            // By handles, always the two steps.
                            prop_assert_eq!(handles.written_acknowledged(id(raw), work), None);
                            handles.written(id(raw), work, seq, all);
                            let b = handles.acknowledged((id(raw), UNKNOWN), work, key, seq, seq);
                            let a = match ids.written_acknowledged(id(raw), work) {
                                Some(dropped) => dropped,
                                None => {
                                    ids.written(id(raw), work, seq, all);
                                    ids.acknowledged((id(raw), UNKNOWN), work, key, seq, seq)
                                }
                            };
                            prop_assert_eq!(a, b);
                            // As a connection's acknowledgement tells it.
                            let oldest = seqs.iter().copied().min().unwrap_or(seq + 1);
                            if a {
                                ids.departed(id(raw), seq, oldest);
                                handles.departed(id(raw), seq, oldest);
                            }
                        } else {
                            ids.written(id(raw), work, seq, all);
                            handles.written(id(raw), work, seq, all);
                            in_flight.push(RecordEntry::new(id(raw), work, key, seq, seq));
                            seqs.push(seq);
                        }
                    }
                    Step::Settle(_, _) if in_flight.is_empty() => {}
                    Step::Settle(i, lost) => {
                        let i = i % in_flight.len();
                        let (entry, seq) = (in_flight.remove(i), seqs.remove(i));
                        if lost {
                            prop_assert_eq!(
                                ids.lost_work(&entry, seq, all),
                                handles.lost_work(&entry, seq, all)
                            );
                            ids.lost(entry.id, seq);
                            handles.lost(entry.id, seq);
                        } else {
                            let a = ids.acknowledged((entry.id, UNKNOWN), entry.work(), key, seq, seq);
                            let b = handles.acknowledged((entry.id, UNKNOWN), entry.work(), key, seq, seq);
                            prop_assert_eq!(a, b);
                            let oldest = seqs.iter().copied().min().unwrap_or(u64::MAX);
                            if a {
                                ids.departed(entry.id, seq, oldest);
                                handles.departed(entry.id, seq, oldest);
                            }
                        }
                    }
                    Step::Trim => {
                        let oldest = seqs.iter().copied().min().unwrap_or(seq + 1);
                        ids.trim(oldest);
                        handles.trim(oldest);
                    }
                    // A snapshot's items have no record in flight (a
                    // connection joins by snapshot before any write).
                    Step::Snapshot(raw) if in_flight.iter().any(|e| e.id == id(raw)) => {}
                    Step::Snapshot(raw) => {
                        ids.insert_known(id(raw), key);
                        handles.insert_known(id(raw), key);
                    }
                    Step::Enter(raw) => {
                        prop_assert_eq!(
                            ids.enter_scope(id(raw), Seen::default()),
                            handles.enter_scope(id(raw), Seen::default())
                        );
                    }
                    Step::Leave(raw) => {
                        prop_assert_eq!(ids.leave_scope(id(raw)), handles.leave_scope(id(raw)));
                    }
                    Step::ClearScope => {
                        ids.clear_scope();
                        handles.clear_scope();
                    }
                }
                for raw in 0..16 {
                    // What a lost shared message's changed fields put back.
                    let shared = RecordEntry::new(id(raw), Work::Fields(FieldMask::from_bits(0b101)), key, seq, seq);
                    prop_assert_eq!(ids.lost_work(&shared, seq, all), handles.lost_work(&shared, seq, all));
                    let (a, b) = (ids.look(id(raw)), handles.look(id(raw)));
                    prop_assert_eq!(a, b, "item {}", raw);
                    // Records in flight that carried it, bits or entries.
                    let flying = |views: &Views| views.rest(id(raw)).map(|rest| rest.in_flight);
                    prop_assert_eq!(flying(&ids), flying(&handles), "item {}", raw);
                    prop_assert_eq!(ids.contains(id(raw)), handles.contains(id(raw)));
                    prop_assert_eq!(
                        ids.get(id(raw)).map(|view| view.holding),
                        handles.get(id(raw)).map(|view| view.holding)
                    );
                }
                prop_assert_eq!(
                    (ids.len(), ids.staying(), ids.adds_known()),
                    (handles.len(), handles.staying(), handles.adds_known())
                );
                // The count of items on their way out is every entry's.
                for views in [&ids, &handles] {
                    let leaving = (0..16)
                        .filter(|&raw| views.get(id(raw)).is_some_and(|view| !view.is_held()))
                        .count();
                    prop_assert_eq!(views.staying(), views.len() - leaving);
                }
                let held: BTreeSet<ReplicationId> = ids.ids().collect();
                prop_assert_eq!(held, handles.ids().collect::<BTreeSet<_>>());
                for (entry, &seq) in in_flight.iter().zip(&seqs) {
                    prop_assert_eq!(
                        ids.lost_work(entry, seq, all),
                        handles.lost_work(entry, seq, all)
                    );
                }
                // An item at rest has no entry on the connection by ids.
                prop_assert!(ids.map.iter().all(|(_, rest)| !rest.at_rest()));
            }
        }
    }

    /// The sizes `WIRE.md` states: an item at rest costs its id and an
    /// 8-byte [`Rest`]; one in flight adds an id and a [`Flight`].
    #[test]
    fn documented_sizes_hold() {
        assert_eq!(core::mem::size_of::<(ReplicationId, Rest)>(), 16);
        assert_eq!(core::mem::size_of::<(ReplicationId, Flight)>(), 48);
    }

    /// No place known: the view looks the id up.
    const UNKNOWN: Place = Place::MAX;

    fn id(n: u64) -> ReplicationId {
        ReplicationId::from_raw(n)
    }

    /// An item's flight lasts while a record that carried it is in flight,
    /// lost or acknowledged, and no longer.
    #[test]
    fn a_flight_ends_with_the_last_record_that_carried_the_item() {
        let mut views = Views {
            scoped: true,
            ..Views::default()
        };
        let all = FieldMask::all(3);
        views.written(id(1), Work::Add { structural: true }, 1, all);
        views.written(id(1), Work::Fields(FieldMask::EMPTY), 2, all);
        assert_eq!(views.flights.len(), 1);
        let add = Work::Add { structural: true };
        let dropped = views.acknowledged((id(1), UNKNOWN), add, ReplicationKey::default(), 1, 0);
        assert!(!dropped, "an add leaves the item held");
        assert_eq!(views.get(id(1)).unwrap().holding, Holding::Known);
        assert_eq!(views.flights.len(), 1, "record 2 is still in flight");
        views.lost(id(1), 2);
        assert!(views.flights.is_empty(), "no record of an earlier stay");
        views.trim(3);
        assert_eq!(views.get(id(1)).unwrap().holding, Holding::Known);
        assert!(views.map.get(id(1)).is_none(), "at rest: a plain item");
        assert!(views.bits.known.contains(id(1)));
    }

    /// An add has an earlier stay to guard against only for an id that
    /// left a scope while older records, which may have carried it, were
    /// in flight: without a scope ids never come back, and an id that
    /// left once every older record was resolved has no record left of
    /// its stay. Only that one makes a flight, which ends as guards do.
    #[test]
    fn an_add_makes_a_flight_only_where_an_earlier_stay_may_be_in_flight() {
        let mut views = Views::default();
        let all = FieldMask::all(3);
        let (add, key) = (Work::Add { structural: true }, ReplicationKey::default());
        views.written(id(1), add, 1, all);
        assert!(views.flights.is_empty());
        views.acknowledged((id(1), UNKNOWN), add, key, 1, 0);
        assert_eq!(views.get(id(1)).unwrap().holding, Holding::Known);
        // In a scope: a new id, and one that left with nothing older in
        // flight, come with no flight.
        for raw in [2, 3] {
            views.enter_scope(id(raw), Seen::default());
        }
        views.written(id(2), add, 2, all);
        views.written(id(3), add, 3, all);
        assert!(views.flights.is_empty());
        views.acknowledged((id(2), UNKNOWN), add, key, 2, 0);
        views.written(id(2), Work::Exit, 4, all);
        assert!(views.acknowledged((id(2), UNKNOWN), Work::Exit, key, 4, 0));
        views.departed(id(2), 4, 3);
        views.acknowledged((id(3), UNKNOWN), add, key, 3, 0);
        views.written(id(3), Work::Exit, 5, all);
        assert!(views.acknowledged((id(3), UNKNOWN), Work::Exit, key, 5, 0));
        views.departed(id(3), 5, 6);
        assert_eq!(views.flights.len(), 1, "record 3 was in flight as 2 left");
        views.written(id(3), add, 6, all);
        assert_eq!(
            views.flights.len(),
            1,
            "3 left with nothing older in flight"
        );
        views.written(id(2), add, 7, all);
        assert_eq!(views.flights.get(&id(2)).map(|flight| flight.born), Some(7));
        // The guard ends once no record older than 7 is in flight, the
        // flight once record 7 lands.
        views.trim(6);
        assert_eq!(views.flights.get(&id(2)).map(|flight| flight.born), Some(7));
        views.trim(7);
        assert_eq!(views.flights.get(&id(2)).map(|flight| flight.born), Some(0));
        views.acknowledged((id(2), UNKNOWN), add, key, 7, 0);
        assert!(views.flights.is_empty());
    }

    /// An item written once per acknowledgement (the common tick) never
    /// touches the flights: one record in flight needs none.
    #[test]
    fn one_record_in_flight_keeps_no_flight() {
        let mut views = Views::default();
        let all = FieldMask::all(3);
        views.insert_known(id(3), ReplicationKey::default());
        let fields = FieldMask::from_bits(0b100);
        for seq in 1..=5 {
            views.written(id(3), Work::Fields(fields), seq, all);
            assert!(views.flights.is_empty());
            let entry =
                RecordEntry::new(id(3), Work::Fields(fields), ReplicationKey::default(), 1, 1);
            if seq % 2 == 0 {
                assert_eq!(
                    views.lost_work(&entry, seq, all),
                    Some(Work::Fields(fields))
                );
                views.lost(id(3), seq);
            } else {
                views.acknowledged(
                    (id(3), UNKNOWN),
                    Work::Fields(fields),
                    ReplicationKey::default(),
                    seq,
                    0,
                );
            }
        }
        assert_eq!(views.get(id(3)).unwrap().holding, Holding::Known);
        assert!(views.map.get(id(3)).is_none(), "at rest: a plain item");
    }

    /// While a record that carried an item is in flight its entry keeps
    /// the acknowledged key; at rest the item is a plain one, which keeps
    /// none, unless the connection names items by handles.
    #[test]
    fn an_item_at_rest_is_plain_on_a_connection_by_ids() {
        let all = FieldMask::all(3);
        let key = ReplicationKey::from_raw(7);
        let fields = Work::Fields(FieldMask::from_bits(0b100));
        for by_handles in [false, true] {
            let mut views = Views::default();
            if by_handles {
                views.start_handles();
            }
            views.written(id(3), Work::Add { structural: true }, 1, all);
            views.written(id(3), fields, 2, all);
            views.acknowledged((id(3), UNKNOWN), Work::Add { structural: true }, key, 1, 0);
            let view = views.get(id(3)).unwrap();
            assert_eq!(view.holding, Holding::Known);
            assert_eq!(view.acked, !by_handles, "record 2 is in flight");
            views.acknowledged((id(3), UNKNOWN), fields, key, 2, 0);
            assert_eq!(views.bits.known.contains(id(3)), !by_handles);
            assert_eq!(views.map.get(id(3)).is_some(), by_handles);
            let view = views.get(id(3)).unwrap();
            assert_eq!((view.holding, view.acked), (Holding::Known, false));
            assert_eq!((views.len(), views.adds_known()), (1, true));
            // Written again, it has an entry again, known.
            views.written(id(3), Work::Remove, 3, all);
            assert!(!views.bits.known.contains(id(3)));
            assert_eq!(views.get(id(3)).unwrap().holding, Holding::RemoveInFlight);
            assert!(views.acknowledged((id(3), UNKNOWN), Work::Remove, key, 3, 0));
            assert_eq!((views.len(), views.ids().count()), (0, 0));
        }
    }

    /// An item that left and came back: the records of its earlier stay
    /// still in flight neither make the new entry known nor count as its
    /// own.
    #[test]
    fn records_of_an_earlier_stay_do_not_touch_the_new_entry() {
        let mut views = Views {
            scoped: true,
            ..Views::default()
        };
        let all = FieldMask::all(3);
        let key = ReplicationKey::default();
        views.written(id(9), Work::Add { structural: true }, 1, all);
        views.written(id(9), Work::Exit, 2, all);
        assert!(
            views.acknowledged((id(9), UNKNOWN), Work::Exit, key, 2, 0),
            "the exit drops it"
        );
        views.departed(id(9), 2, 1);
        // Back in scope while record 1 is still in flight.
        views.written(id(9), Work::Add { structural: true }, 3, all);
        assert!(!views.acknowledged((id(9), UNKNOWN), Work::Add { structural: true }, key, 1, 0));
        assert_eq!(views.get(id(9)).unwrap().holding, Holding::AddInFlight);
        let entry = RecordEntry::new(id(9), Work::Add { structural: true }, key, 1, 1);
        assert_eq!(views.lost_work(&entry, 1, all), None);
        views.lost(id(9), 1);
        assert_eq!(
            views.map.get(id(9)).expect("an entry").in_flight,
            1,
            "record 3 is still in flight"
        );
        views.acknowledged((id(9), UNKNOWN), Work::Add { structural: true }, key, 3, 0);
        assert_eq!(views.get(id(9)).unwrap().holding, Holding::Known);
        views.trim(4);
        assert!(views.flights.is_empty());
    }

    /// The scope's marks share the view's entry: an item in scope that
    /// was never sent is not held, the item keeps how it is seen through
    /// its removal being acknowledged, and an entry goes once it is
    /// neither held nor in scope.
    #[test]
    fn scope_marks_share_the_entry() {
        let mut views = Views::default();
        let all = FieldMask::all(3);
        let key = ReplicationKey::default();
        let far = Seen::unpack(2, Seen::default().pack().1 - 0x200);
        assert!(views.enter_scope(id(4), far));
        assert!(!views.enter_scope(id(4), Seen::default()), "in already");
        assert_eq!(views.seen(id(4)), Some(far));
        assert!(views.get(id(4)).is_none() && !views.contains(id(4)));
        assert_eq!(
            (views.len(), views.ids().count(), views.map.len()),
            (0, 0, 1)
        );
        assert!(views.adds_known());

        views.written(id(4), Work::Add { structural: true }, 1, all);
        assert_eq!(views.len(), 1);
        views.acknowledged((id(4), UNKNOWN), Work::Add { structural: true }, key, 1, 0);
        assert!(views.adds_known());
        views.written(id(4), Work::Remove, 2, all);
        assert!(views.acknowledged((id(4), UNKNOWN), Work::Remove, key, 2, 0));
        assert_eq!(views.seen(id(4)), Some(far), "still in scope");
        assert!(views.get(id(4)).is_none());
        assert_eq!((views.len(), views.map.len()), (0, 1));
        // A record of the stay that ended changes nothing.
        views.lost(id(4), 1);
        assert!(!views.acknowledged((id(4), UNKNOWN), Work::Fields(all), key, 1, 0));
        assert!(views.get(id(4)).is_none());

        assert!(views.leave_scope(id(4)));
        assert!(!views.leave_scope(id(4)));
        assert!(views.map.is_empty(), "neither held nor in scope");

        // Held and out of scope: the view keeps it, as a plain item once
        // at rest.
        views.insert_known(id(5), key);
        assert!(views.enter_scope(id(5), Seen::default()));
        assert!(views.map.get(id(5)).is_some(), "in scope: an entry");
        assert!(views.leave_scope(id(5)));
        assert_eq!(views.get(id(5)).unwrap().holding, Holding::Known);
        assert_eq!(views.seen(id(5)), None);
        assert!(views.map.get(id(5)).is_none() && views.bits.known.contains(id(5)));
        views.enter_scope(id(5), Seen::default());
        views.enter_scope(id(6), Seen::default());
        views.clear_scope();
        assert_eq!(views.map.len(), 0);
        assert_eq!(views.scope_ids().count(), 0);
        assert_eq!(views.get(id(5)).unwrap().holding, Holding::Known);
    }

    /// A handle taken for an item that left the scope before any message
    /// named it goes back at once, ahead of handles given back after a
    /// message named them (which wait for a later frame).
    #[test]
    fn a_handle_never_written_goes_back_first() {
        let mut views = Views::default();
        views.start_handles();
        let all = FieldMask::all(3);
        let key = ReplicationKey::default();
        views.enter_scope(id(1), Seen::default());
        assert_eq!(views.for_write(id(1), 4).wire, id(0));
        views.written(id(1), Work::Add { structural: true }, 1, all);
        views.written(id(1), Work::Exit, 2, all);
        views.leave_scope(id(1));
        assert!(views.acknowledged((id(1), UNKNOWN), Work::Exit, key, 2, 5));
        // Handle 0 waits for frame 6. Item 2 takes handle 1, is never
        // written, and leaves.
        views.enter_scope(id(2), Seen::default());
        assert_eq!(views.for_write(id(2), 5).wire, id(1));
        views.leave_scope(id(2));
        views.enter_scope(id(3), Seen::default());
        assert_eq!(views.for_write(id(3), 5).wire, id(1), "free at once");
        views.enter_scope(id(4), Seen::default());
        assert_eq!(views.for_write(id(4), 6).wire, id(0));
    }

    /// A lost record older than one still in flight needs no repair of
    /// what the newer one carries; once the item is at rest, a new flight
    /// starts from nothing.
    #[test]
    fn a_newer_record_in_flight_covers_a_lost_older_one() {
        let mut views = Views::default();
        let all = FieldMask::all(3);
        views.insert_known(id(7), ReplicationKey::default());
        let fields = FieldMask::from_bits(0b011);
        views.written(id(7), Work::Fields(fields), 5, all);
        views.written(id(7), Work::Fields(fields), 6, all);
        let entry = RecordEntry::new(id(7), Work::Fields(fields), ReplicationKey::default(), 1, 1);
        assert_eq!(views.lost_work(&entry, 5, all), None);
        views.lost(id(7), 5);
        let entry = RecordEntry::new(id(7), Work::Fields(fields), ReplicationKey::default(), 1, 1);
        assert_eq!(views.lost_work(&entry, 6, all), Some(Work::Fields(fields)));
        views.lost(id(7), 6);
        assert!(views.flights.is_empty());
    }
}
