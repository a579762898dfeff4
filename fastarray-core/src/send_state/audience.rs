//! Who owns which items of an array, and the one rule of the audience
//! attributes (`#[replicate(owner_only)]`, `#[replicate(skip_owner)]`): the
//! fields of an item a connection may be sent, by whether its client owns
//! the item. A connection's scope narrows that further by detail level
//! (`send_state::scope`); every path that writes a message for a
//! connection (its own delta, loss repair, a resync, the frame's shared
//! message, a snapshot) asks this rule.
//!
//! Ownership is the array's: per item at most one client, named by the
//! number the application gives each connection
//! ([`SendState::set_client`](crate::SendState::set_client)). A move takes
//! effect at the array's next commit, where it counts as a change of the
//! item's audience fields: every connection that sees the item is sent
//! those of them it may now see (the new owner its owner-only fields, the
//! old owner the fields it was skipped), through the same history, routing
//! and loss repair as any change.

use hashbrown::HashMap;

use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// The owners of an array's items.
#[derive(Clone, Debug, Default)]
pub(crate) struct Owners {
    /// Per owned item, its owner, as of the last commit.
    owner_of: HashMap<ReplicationId, u64>,
    /// Moves asked since the last commit, in the order asked.
    staged: Vec<(ReplicationId, Option<u64>)>,
}

impl Owners {
    /// The owner of `id`: the last one asked, even if the move has not
    /// been committed yet.
    pub(crate) fn owner(&self, id: ReplicationId) -> Option<u64> {
        match self.staged.iter().rev().find(|&&(staged, _)| staged == id) {
            Some(&(_, owner)) => owner,
            None => self.committed_owner(id),
        }
    }

    /// The owner of `id` as of the last commit: the one the rule asks.
    pub(crate) fn committed_owner(&self, id: ReplicationId) -> Option<u64> {
        if self.owner_of.is_empty() {
            return None;
        }
        self.owner_of.get(&id).copied()
    }

    /// Whether a move was asked since the last commit.
    pub(crate) fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    /// Makes `id` owned by `owner` at once, as a save restored says it was
    /// at its last commit.
    #[cfg(feature = "serde")]
    pub(crate) fn restore(&mut self, id: ReplicationId, owner: u64) {
        self.owner_of.insert(id, owner);
    }

    /// Asks that `id` be owned by `owner` (`None`: by nobody) from the next
    /// commit.
    pub(crate) fn stage(&mut self, id: ReplicationId, owner: Option<u64>) {
        self.staged.push((id, owner));
    }

    /// At a commit: applies the moves asked since the last one, and
    /// returns the ids whose owner changed (each once, ascending).
    pub(crate) fn commit(&mut self) -> Vec<ReplicationId> {
        if self.staged.is_empty() {
            return Vec::new();
        }
        let mut touched: Vec<ReplicationId> = self.staged.iter().map(|&(id, _)| id).collect();
        touched.sort_unstable();
        touched.dedup();
        let before: Vec<Option<u64>> = touched
            .iter()
            .map(|id| self.owner_of.get(id).copied())
            .collect();
        for (id, owner) in self.staged.drain(..) {
            match owner {
                Some(owner) => self.owner_of.insert(id, owner),
                None => self.owner_of.remove(&id),
            };
        }
        touched
            .into_iter()
            .zip(before)
            .filter(|&(id, before)| self.owner_of.get(&id).copied() != before)
            .map(|(id, _)| id)
            .collect()
    }

    /// Items `gone` were removed: they have no owner any more.
    pub(crate) fn forget(&mut self, gone: &[ReplicationId]) {
        if self.owner_of.is_empty() {
            return;
        }
        for id in gone {
            self.owner_of.remove(id);
        }
    }

    /// The owners of the items among `ids` (as of the last commit), each
    /// once: the clients to whom a frame's changes of those items are not
    /// what everyone else is sent (see `send::shared_message`).
    pub(crate) fn owners_among(&self, ids: impl Iterator<Item = ReplicationId>) -> Vec<u64> {
        if self.owner_of.is_empty() {
            return Vec::new();
        }
        let mut owners: Vec<u64> = ids.filter_map(|id| self.committed_owner(id)).collect();
        owners.sort_unstable();
        owners.dedup();
        owners
    }

    /// Owned items, as of the last commit.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.owner_of.len()
    }
}

/// The audience rule for one item type on one array: which fields of an
/// item a connection may be sent, by ownership.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Audience<'a> {
    /// Every field of the type.
    all: FieldMask,
    /// Its `Replicate::OWNER_ONLY` fields.
    owner_only: FieldMask,
    /// Its `Replicate::SKIP_OWNER` fields.
    skip_owner: FieldMask,
    owners: Option<&'a Owners>,
}

impl<'a> Audience<'a> {
    /// The rule for a type of `all` fields, `owner_only` and `skip_owner`
    /// among them, on an array whose items `owners` owns (`None`: nobody
    /// owns anything, as for a snapshot read by anyone).
    pub(crate) fn new(
        all: FieldMask,
        owner_only: FieldMask,
        skip_owner: FieldMask,
        owners: Option<&'a Owners>,
    ) -> Self {
        Self {
            all,
            owner_only,
            skip_owner,
            owners,
        }
    }

    /// Whether the type has audience fields at all (else every connection
    /// may be sent every field, and nothing is looked up).
    pub(crate) fn applies(&self) -> bool {
        !(self.owner_only.is_empty() && self.skip_owner.is_empty())
    }

    /// The fields that move with an item's ownership: the owner's and the
    /// others'.
    pub(crate) fn moving(&self) -> FieldMask {
        self.owner_only | self.skip_owner
    }

    /// Whether the connection serving `client` owns item `id`.
    pub(crate) fn owns(&self, client: Option<u64>, id: ReplicationId) -> bool {
        client.is_some()
            && self
                .owners
                .is_some_and(|owners| owners.committed_owner(id) == client)
    }

    /// The fields of an item a connection may be sent, by whether its
    /// client owns it: every field but the owner's if not, every field but
    /// the others' if it does. This is the rule, written once.
    pub(crate) fn fields_for(&self, owns: bool) -> FieldMask {
        self.all.without(if owns {
            self.skip_owner
        } else {
            self.owner_only
        })
    }

    /// The fields of item `id` the connection serving `client` may be sent.
    pub(crate) fn fields(&self, client: Option<u64>, id: ReplicationId) -> FieldMask {
        if !self.applies() {
            return self.all;
        }
        self.fields_for(self.owns(client, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(raw: u64) -> ReplicationId {
        ReplicationId::from_raw(raw)
    }

    /// A move counts once per commit, and only if the owner really changed;
    /// removal forgets the owner.
    #[test]
    fn moves_take_effect_at_commit() {
        let mut owners = Owners::default();
        owners.stage(id(1), Some(7));
        assert_eq!(owners.owner(id(1)), Some(7));
        assert_eq!(owners.committed_owner(id(1)), None);
        owners.stage(id(2), Some(7));
        owners.stage(id(2), None);
        assert_eq!(owners.commit(), vec![id(1)]);
        assert_eq!(owners.committed_owner(id(1)), Some(7));
        owners.stage(id(1), Some(7));
        assert!(owners.commit().is_empty(), "the same owner is no move");
        owners.stage(id(1), Some(8));
        assert_eq!(owners.commit(), vec![id(1)]);
        owners.forget(&[id(1)]);
        assert_eq!((owners.owner(id(1)), owners.len()), (None, 0));
    }

    /// The rule: a non-owner is denied the owner's fields, the owner the
    /// others'; a connection with no client owns nothing.
    #[test]
    fn the_rule_splits_by_ownership() {
        let mut owners = Owners::default();
        owners.stage(id(1), Some(3));
        owners.commit();
        let all = FieldMask::all(4);
        let (mine, theirs) = (FieldMask::single(0), FieldMask::single(1));
        let audience = Audience::new(all, mine, theirs, Some(&owners));
        assert_eq!(audience.fields(Some(3), id(1)), all.without(theirs));
        assert_eq!(audience.fields(Some(4), id(1)), all.without(mine));
        assert_eq!(audience.fields(None, id(1)), all.without(mine));
        assert_eq!(audience.fields(Some(3), id(2)), all.without(mine));
        let plain = Audience::new(all, FieldMask::EMPTY, FieldMask::EMPTY, Some(&owners));
        assert_eq!(plain.fields(Some(3), id(1)), all);
    }
}
