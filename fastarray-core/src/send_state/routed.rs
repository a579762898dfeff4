//! [`Routed`]: a change the array hands a connection with a scope, as its
//! registry (`scopes`) writes one into the connection's inbox and the
//! connection's scope (`scope`) keeps one to follow.

use super::pending::Work;
use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// A change the array handed a connection with a scope: item `id`
/// changed `fields` (none: only its arrays), or went, at `frame`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Routed {
    pub(crate) id: ReplicationId,
    pub(crate) fields: FieldMask,
    pub(crate) frame: u64,
    /// Its place among the frame's changed items (see
    /// `Changeset::changed`), [`NOT_CHANGED`] for a removal or a change of
    /// its arrays only: the writes of that frame keep its encoding there.
    pub(crate) index: u32,
    removed: bool,
}

/// [`Routed::index`] of a change that is not among the frame's changed
/// items.
pub(crate) const NOT_CHANGED: u32 = u32::MAX;

impl Routed {
    /// Item `id` changed `fields` (none: only its arrays), or (`removed`)
    /// went, at `frame`, at place `index` among the frame's changed items.
    #[inline]
    pub(crate) fn new(
        id: ReplicationId,
        fields: FieldMask,
        frame: u64,
        index: u32,
        removed: bool,
    ) -> Self {
        Self {
            id,
            fields,
            frame,
            index,
            removed,
        }
    }

    /// What the change makes due.
    #[inline]
    pub(crate) fn work(&self) -> Work {
        if self.removed {
            Work::Remove
        } else {
            Work::Fields(self.fields)
        }
    }
}
