//! Pending work: what a connection still has to write, per item, and since
//! which frame it has been due.

use crate::id::ReplicationId;
use crate::id_map::IdMap;
use crate::mask::FieldMask;

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
    /// Tell the client the item left its scope: it still exists, and
    /// comes back whole if it enters again.
    Exit,
}

impl Work {
    /// Whether the work tells the client to drop the item (a removal or a
    /// scope exit).
    pub(crate) fn drops(self) -> bool {
        matches!(self, Work::Remove | Work::Exit)
    }

    /// The work that does both `self` and `other`.
    pub(crate) fn merge(self, other: Work) -> Work {
        match (self, other) {
            (Work::Remove, _) | (_, Work::Remove) => Work::Remove,
            // Leaving scope drops what was due for the item: it is sent
            // whole if it comes back.
            (Work::Exit, _) | (_, Work::Exit) => Work::Exit,
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
    positions: IdMap<usize>,
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

    /// The work of every id, oldest first, as a slice.
    pub(crate) fn as_slice(&self) -> &[(ReplicationId, Pending)] {
        &self.entries
    }

    /// Adds work for `id`, merged with any already due.
    pub(crate) fn queue(&mut self, id: ReplicationId, work: Work, since: u64) {
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

    /// Makes the work of `id`, if it has any, due since `since` at the
    /// latest.
    pub(crate) fn hasten(&mut self, id: ReplicationId, since: u64) {
        if let Some(&pos) = self.positions.get(&id) {
            let pending = &mut self.entries[pos].1;
            pending.since = pending.since.min(since);
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
    #[inline]
    pub(crate) fn clear(&mut self) {
        let used = self.entries.len();
        let oversized = self.positions.capacity() > 4 * used.max(64);
        if used == 0 && !oversized {
            // Nothing to clear nor to give back (a caught-up connection's
            // every write).
            return;
        }
        self.entries.clear();
        self.positions.clear();
        if oversized {
            self.positions.shrink_to(2 * used);
            self.entries.shrink_to(2 * used);
        }
    }
}
