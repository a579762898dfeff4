//! The view: what a connection's client may hold of each item, and the
//! rules that follow from it: which form changed fields go in, and what a
//! lost record makes due again.

use hashbrown::HashMap;

use super::pending::Work;
use super::retirement::RecordEntry;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;

/// What the client may hold of one item: its [`Rest`], with its
/// [`Flight`] while a record that carried it is in flight (the defaults of
/// a fresh flight otherwise).
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub(crate) holding: Holding,
    /// Whether a record that carried this id was acknowledged, its key
    /// then [`acked_key`](Self::acked_key).
    pub(crate) acked: bool,
    /// The item's key when the newest acknowledged record carrying it was
    /// written.
    pub(crate) acked_key: ReplicationKey,
    pub(crate) flight: Flight,
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

/// What is kept of every item the client may hold: 8 bytes.
#[derive(Clone, Copy, Debug)]
struct Rest {
    holding: Holding,
    acked: bool,
    /// Records in flight that carried the item; `u16::MAX`: too many to
    /// count, and its [`Flight`] is kept for good.
    in_flight: u16,
    acked_key: ReplicationKey,
}

/// What the records in flight say of an item, kept while one is: which
/// lost record needs repair depends on the records written after it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Flight {
    /// The newest record that carried this id (0: none since the item was
    /// last at rest).
    pub(crate) last_seq: u64,
    /// The newest acknowledged record that carried this id (0: none).
    pub(crate) acked_seq: u64,
    /// The newest record that carried a structural whole value (the add,
    /// or a change of an enum's variant): the client's copy is `Known`
    /// again only once a whole value at least that new is acknowledged.
    pub(crate) structural_seq: u64,
    /// The fields the newest record carried for this id: a lost older
    /// record's fields among these need no resend, since that newer
    /// record's own ack or loss takes care of them.
    pub(crate) last_fields: FieldMask,
}

/// The view of every item the client may hold, with a count of the ones it
/// knows (kept with every change of a holding, so that "the client knows
/// every item" is one comparison).
///
/// An item at rest (no record that carried it in flight, the common case
/// for a large scope) costs an 8-byte entry; the 32 bytes of its
/// [`Flight`] are kept only while records that carried it are in flight.
#[derive(Clone, Debug, Default)]
pub(crate) struct Views {
    map: HashMap<ReplicationId, Rest>,
    flights: HashMap<ReplicationId, Flight>,
    known: usize,
}

impl Views {
    /// The view of `id`, if the client may hold it.
    pub(crate) fn get(&self, id: ReplicationId) -> Option<View> {
        let rest = self.map.get(&id)?;
        let flight = if rest.in_flight == 0 {
            Flight::default()
        } else {
            self.flights.get(&id).copied().unwrap_or_default()
        };
        Some(View {
            holding: rest.holding,
            acked: rest.acked,
            acked_key: rest.acked_key,
            flight,
        })
    }

    /// Whether the client may hold `id`.
    pub(crate) fn contains(&self, id: ReplicationId) -> bool {
        self.map.contains_key(&id)
    }

    /// Items the client may hold.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the client knows every item it may hold.
    pub(crate) fn all_known(&self) -> bool {
        self.known == self.map.len()
    }

    /// The ids the client may hold, in no order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.map.keys().copied()
    }

    /// The one rule for changed fields: they go only to a client that
    /// knows the item; one that may not gets the whole item, which is
    /// structural if it holds nothing of it yet.
    pub(crate) fn fields_work(&self, id: ReplicationId, mask: FieldMask) -> Work {
        match self.get(id) {
            Some(view) if view.holding == Holding::Known => Work::Fields(mask),
            Some(_) => Work::Add { structural: false },
            None => Work::Add { structural: true },
        }
    }

    /// Records that a client holds `id` at `key`, from a snapshot.
    pub(crate) fn insert_known(&mut self, id: ReplicationId, key: ReplicationKey) {
        let rest = Rest {
            holding: Holding::Known,
            acked: false,
            in_flight: 0,
            acked_key: key,
        };
        if let Some(old) = self.map.insert(id, rest) {
            self.known -= usize::from(old.holding == Holding::Known);
            self.flights.remove(&id);
        }
        self.known += 1;
    }

    /// Updates the view of `id` for record `seq`, which carried `work`
    /// (`all_fields` being every field of a whole value). Every call is
    /// answered by one [`acknowledged`](Self::acknowledged) or
    /// [`lost`](Self::lost) for the same record.
    pub(crate) fn written(
        &mut self,
        id: ReplicationId,
        work: Work,
        seq: u64,
        all_fields: FieldMask,
    ) {
        let mut new = false;
        let rest = self.map.entry(id).or_insert_with(|| {
            new = true;
            Rest {
                holding: Holding::AddInFlight,
                acked: false,
                in_flight: 0,
                acked_key: ReplicationKey::default(),
            }
        });
        let fresh = rest.in_flight == 0;
        rest.in_flight = rest.in_flight.saturating_add(1);
        let flight = self.flights.entry(id).or_default();
        if fresh {
            // Every record written before is resolved: a structural value
            // among them is older than anything still to come.
            *flight = Flight {
                structural_seq: if new { seq } else { 0 },
                ..Flight::default()
            };
        }
        flight.last_seq = seq;
        let was_known = rest.holding == Holding::Known;
        flight.last_fields = match work {
            Work::Add { structural } => {
                if structural {
                    flight.structural_seq = seq;
                    rest.holding = Holding::AddInFlight;
                }
                all_fields
            }
            Work::Fields(mask) => mask,
            Work::Remove | Work::Exit => {
                rest.holding = Holding::RemoveInFlight;
                FieldMask::EMPTY
            }
        };
        if was_known && rest.holding != Holding::Known {
            self.known -= 1;
        }
    }

    /// One record that carried `id` is resolved: its flight ends with the
    /// last of them.
    fn landed(&mut self, id: ReplicationId) {
        let Some(rest) = self.map.get_mut(&id) else {
            return;
        };
        match rest.in_flight {
            0 | u16::MAX => {}
            1 => {
                rest.in_flight = 0;
                self.flights.remove(&id);
                // A join puts every item in flight at once: the room is
                // given back once most have landed.
                let (len, capacity) = (self.flights.len(), self.flights.capacity());
                if capacity > 64 && capacity > 8 * len {
                    self.flights.shrink_to(2 * len);
                }
            }
            _ => rest.in_flight -= 1,
        }
    }

    /// Updates the view of `id` for acknowledged record `seq`, which
    /// carried `work` at `key`. Returns whether the client no longer holds
    /// the item (its removal was acknowledged).
    pub(crate) fn acknowledged(
        &mut self,
        id: ReplicationId,
        work: Work,
        key: ReplicationKey,
        seq: u64,
    ) -> bool {
        let Some(rest) = self.map.get_mut(&id) else {
            return false;
        };
        let flight = if rest.in_flight == 0 {
            Flight::default()
        } else {
            self.flights.get(&id).copied().unwrap_or_default()
        };
        match work {
            Work::Remove | Work::Exit => {
                if rest.holding == Holding::Known {
                    self.known -= 1;
                }
                self.map.remove(&id);
                self.flights.remove(&id);
                return true;
            }
            Work::Add { .. } => {
                if rest.holding == Holding::AddInFlight && seq >= flight.structural_seq {
                    rest.holding = Holding::Known;
                    self.known += 1;
                }
            }
            Work::Fields(_) => {}
        }
        if seq > flight.acked_seq {
            rest.acked = true;
            rest.acked_key = key;
            if let Some(flight) = self.flights.get_mut(&id) {
                flight.acked_seq = seq;
            }
        }
        self.landed(id);
        false
    }

    /// Record `seq`, which carried `entry`, was lost: its flight ends with
    /// the last record that carried the item (call after
    /// [`lost_work`](Self::lost_work)).
    pub(crate) fn lost(&mut self, id: ReplicationId) {
        self.landed(id);
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
        let view = self.get(entry.id)?;
        if !entry.work.drops() && view.holding == Holding::RemoveInFlight {
            // A removal or exit written since supersedes it: the client
            // drops the item (and gets it whole if it comes back).
            return None;
        }
        if !entry.work.drops() && view.flight.structural_seq > seq {
            // A whole value written after this record carries everything
            // it did, in the item's current shape; its own fate decides.
            return None;
        }
        let later = view.flight.last_seq > seq;
        let covered = if later {
            view.flight.last_fields
        } else {
            FieldMask::EMPTY
        };
        match entry.work {
            Work::Remove | Work::Exit if later => None,
            work @ (Work::Remove | Work::Exit) => Some(work),
            Work::Add { .. } | Work::Fields(_) => {
                let lost = match entry.work {
                    Work::Fields(mask) => mask,
                    _ => all_fields,
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
                    _ => self.fields_work(entry.id, missing),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes `WIRE.md` states: an item at rest costs its id and an
    /// 8-byte [`Rest`]; one in flight adds an id and a [`Flight`].
    #[test]
    fn documented_sizes_hold() {
        assert_eq!(core::mem::size_of::<(ReplicationId, Rest)>(), 16);
        assert_eq!(core::mem::size_of::<(ReplicationId, Flight)>(), 40);
    }

    fn id(n: u64) -> ReplicationId {
        ReplicationId::from_raw(n)
    }

    /// An item's flight lasts while a record that carried it is in flight,
    /// lost or acknowledged, and no longer.
    #[test]
    fn a_flight_ends_with_the_last_record_that_carried_the_item() {
        let mut views = Views::default();
        let all = FieldMask::all(3);
        views.written(id(1), Work::Add { structural: true }, 1, all);
        views.written(id(1), Work::Fields(FieldMask::EMPTY), 2, all);
        assert_eq!(views.flights.len(), 1);
        let add = Work::Add { structural: true };
        let dropped = views.acknowledged(id(1), add, ReplicationKey::default(), 1);
        assert!(!dropped, "an add leaves the item held");
        assert_eq!(views.get(id(1)).unwrap().holding, Holding::Known);
        assert_eq!(views.flights.len(), 1, "record 2 is still in flight");
        views.lost(id(1));
        assert!(views.flights.is_empty());
        let view = views.get(id(1)).unwrap();
        assert!(view.acked && view.holding == Holding::Known);
        assert_eq!(view.flight.last_seq, 0);
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
        views.lost(id(7));
        let entry = RecordEntry::new(id(7), Work::Fields(fields), ReplicationKey::default(), 1, 1);
        assert_eq!(views.lost_work(&entry, 6, all), Some(Work::Fields(fields)));
        views.lost(id(7));
        assert!(views.flights.is_empty());
    }
}
