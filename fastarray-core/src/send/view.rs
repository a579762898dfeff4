//! The view: what a connection's client may hold of each item, and the
//! rules that follow from it: which form changed fields go in, and what a
//! lost record makes due again.

use hashbrown::HashMap;

use super::pending::Work;
use super::retirement::RecordEntry;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;

/// What the client may hold of one item.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub(crate) holding: Holding,
    /// The newest record that carried this id.
    pub(crate) last_seq: u64,
    /// The newest acknowledged record that carried this id (0: none).
    pub(crate) acked_seq: u64,
    /// The newest record that carried a structural whole value (the add,
    /// or a change of an enum's variant): the client's copy is `Known`
    /// again only once a whole value at least that new is acknowledged.
    pub(crate) structural_seq: u64,
    /// The item's key when that record was written.
    pub(crate) acked_key: ReplicationKey,
    /// The fields the newest record carried for this id: a lost older
    /// record's fields among these need no resend, since that newer
    /// record's own ack or loss takes care of them.
    pub(crate) last_fields: FieldMask,
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
pub(crate) enum Holding {
    /// A packet with the whole item was written; none acknowledged yet.
    AddInFlight,
    /// The client acknowledged a packet with the whole item.
    Known,
    /// A removal or a scope exit was written; not acknowledged yet.
    RemoveInFlight,
}

/// The view of every item the client may hold, with a count of the ones it
/// knows (kept with every change of a holding, so that "the client knows
/// every item" is one comparison).
#[derive(Clone, Debug, Default)]
pub(crate) struct Views {
    map: HashMap<ReplicationId, View>,
    known: usize,
}

impl Views {
    /// The view of `id`, if the client may hold it.
    pub(crate) fn get(&self, id: ReplicationId) -> Option<&View> {
        self.map.get(&id)
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
        let view = View {
            holding: Holding::Known,
            last_seq: 0,
            acked_seq: 0,
            structural_seq: 0,
            acked_key: key,
            last_fields: FieldMask::EMPTY,
        };
        if let Some(old) = self.map.insert(id, view) {
            self.known -= usize::from(old.holding == Holding::Known);
        }
        self.known += 1;
    }

    /// Updates the view of `id` for record `seq`, which carried `work`
    /// (`all_fields` being every field of a whole value).
    pub(crate) fn written(
        &mut self,
        id: ReplicationId,
        work: Work,
        seq: u64,
        all_fields: FieldMask,
    ) {
        let view = self.map.entry(id).or_insert(View {
            holding: Holding::AddInFlight,
            last_seq: 0,
            acked_seq: 0,
            structural_seq: seq,
            acked_key: ReplicationKey::default(),
            last_fields: FieldMask::EMPTY,
        });
        view.last_seq = seq;
        let was_known = view.holding == Holding::Known;
        view.last_fields = match work {
            Work::Add { structural } => {
                if structural {
                    view.structural_seq = seq;
                    view.holding = Holding::AddInFlight;
                }
                all_fields
            }
            Work::Fields(mask) => mask,
            Work::Remove | Work::Exit => {
                view.holding = Holding::RemoveInFlight;
                FieldMask::EMPTY
            }
        };
        if was_known && view.holding != Holding::Known {
            self.known -= 1;
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
        let Some(view) = self.map.get_mut(&id) else {
            return false;
        };
        match work {
            Work::Remove | Work::Exit => {
                if view.holding == Holding::Known {
                    self.known -= 1;
                }
                self.map.remove(&id);
                return true;
            }
            Work::Add { .. } => {
                if view.holding == Holding::AddInFlight && seq >= view.structural_seq {
                    view.holding = Holding::Known;
                    self.known += 1;
                }
            }
            Work::Fields(_) => {}
        }
        if seq > view.acked_seq {
            view.acked_seq = seq;
            view.acked_key = key;
        }
        false
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
        if !entry.work.drops() && view.structural_seq > seq {
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
