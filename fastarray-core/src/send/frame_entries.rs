//! The entries of a frame's shared message (see `shared_message`): the
//! newest frame's changes as they are, in id order. The changed fields of
//! the items a caught-up client knows, and whole the items it must be sent
//! whole: the adds (a server's come after its changes, a relay's or a
//! shard's may not) and the changes of shape (an enum's variant). Nothing
//! here depends on the connection.

use crate::changeset::Changeset;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::send_state::pending::Work;

/// A frame's entries, in two lists ascending by id.
pub(crate) struct FrameEntries {
    /// The items sent by their changed fields, with those fields: also
    /// what every connection that takes the message records (see
    /// `SharedMessage::keep`).
    pub(crate) changed: Vec<(ReplicationId, FieldMask)>,
    /// The items sent whole.
    pub(crate) whole: Vec<ReplicationId>,
}

impl FrameEntries {
    /// The entries of `changes`, each carrying only the changed fields in
    /// `allowed` (an entry left with none goes), the changed fields
    /// gathered into `changed` (emptied first: a list kept to reuse).
    pub(crate) fn of<T: Replicate>(
        changes: &Changeset,
        allowed: FieldMask,
        mut changed: Vec<(ReplicationId, FieldMask)>,
    ) -> Self {
        changed.clear();
        if changed.capacity() > 4 * changes.changed.len().max(64) {
            // Kept from a burst: not for good.
            changed = Vec::new();
        }
        let mut whole = Vec::new();
        if allowed == FieldMask::all(T::FIELD_COUNT) && T::STRUCTURE.is_empty() {
            // Every change goes as it is: a copy, not a test per entry.
            changed.extend_from_slice(&changes.changed);
        } else {
            changed.reserve(changes.changed.len());
            for &(id, mask) in &changes.changed {
                if mask.intersects(T::STRUCTURE) {
                    whole.push(id);
                } else if !(mask & allowed).is_empty() {
                    changed.push((id, mask & allowed));
                }
            }
        }
        // An item added this frame is not among its changes.
        if whole.is_empty() {
            whole.extend_from_slice(&changes.added);
        } else if !changes.added.is_empty() {
            whole.extend_from_slice(&changes.added);
            whole.sort_unstable();
        }
        Self { changed, whole }
    }

    /// The entries in id order, with their work: a changed item's fields,
    /// or its whole value.
    pub(crate) fn iter(&self) -> Entries<'_> {
        Entries {
            changed: &self.changed,
            whole: &self.whole,
        }
    }
}

/// The entries of a [`FrameEntries`] in id order: its two lists merged.
#[derive(Clone)]
pub(crate) struct Entries<'a> {
    changed: &'a [(ReplicationId, FieldMask)],
    whole: &'a [ReplicationId],
}

impl Iterator for Entries<'_> {
    type Item = (ReplicationId, Work);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let whole = self.whole.first();
        match self.changed.split_first() {
            Some((&(id, mask), rest)) if whole.is_none_or(|&whole| id < whole) => {
                self.changed = rest;
                Some((id, Work::Fields(mask)))
            }
            _ => {
                let (&id, rest) = self.whole.split_first()?;
                self.whole = rest;
                Some((id, Work::Add { structural: true }))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.changed.len() + self.whole.len();
        (len, Some(len))
    }
}

impl ExactSizeIterator for Entries<'_> {}
