//! [`Changeset`]: what one commit found.

use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::shard::ShardId;

/// What one [`commit`](crate::FastArray::commit) found had happened since
/// the previous one: ids added, ids removed, and ids changed with the mask
/// of the replicated fields that really changed and go as changes (not
/// `#[replicate(initial_only)]` fields; an ownership move counts as a
/// change of the item's `owner_only` and `skip_owner` fields). Each list
/// is sorted by id.
///
/// An item added and removed within one frame appears nowhere; an item added
/// and then modified within a frame is only "added"; a touch that left every
/// replicated field equal appears nowhere. Reordering never appears.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changeset {
    pub(crate) frame: u64,
    pub(crate) added: Vec<ReplicationId>,
    pub(crate) removed: Vec<ReplicationId>,
    pub(crate) changed: Vec<(ReplicationId, FieldMask)>,
    pub(crate) arrays_changed: Vec<ReplicationId>,
    /// Ids pushed and removed within the frame (appearing nowhere above):
    /// a connection's scope may have taken one in before it went.
    pub(crate) vanished: Vec<ReplicationId>,
    /// Items whose `#[replicate(initial_only)]` fields changed, with those
    /// fields: no delta carries them (whole values do), a relay's feed
    /// does. Empty for a type without such fields.
    pub(crate) initial: Vec<(ReplicationId, FieldMask)>,
    /// Items whose owner the commit moved, ascending.
    pub(crate) moved: Vec<ReplicationId>,
    /// Items handed off to another shard (listed as removed too), with
    /// the shard and their tenure, ascending.
    pub(crate) handed: Vec<(ReplicationId, ShardId, u32)>,
    /// Items adopted from another shard (listed as added too), with their
    /// tenure here, ascending.
    pub(crate) adopted: Vec<(ReplicationId, u32)>,
}

impl Changeset {
    /// No change, at frame 0.
    pub(crate) const EMPTY: Changeset = Changeset {
        frame: 0,
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
        arrays_changed: Vec::new(),
        vanished: Vec::new(),
        initial: Vec::new(),
        moved: Vec::new(),
        handed: Vec::new(),
        adopted: Vec::new(),
    };

    /// The frame (commit number, starting at 1) this changeset ends.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Ids pushed this frame and still present, ascending.
    pub fn added(&self) -> &[ReplicationId] {
        &self.added
    }

    /// Ids present at the previous commit and removed this frame, ascending.
    pub fn removed(&self) -> &[ReplicationId] {
        &self.removed
    }

    /// Ids whose replicated fields changed, with the changed fields, ascending.
    pub fn changed(&self) -> &[(ReplicationId, FieldMask)] {
        &self.changed
    }

    /// Ids, ascending, of items that were there before this frame and whose
    /// `#[replicate(array)]` fields changed (items added, removed or
    /// changed inside them); their plain fields may not have.
    pub fn arrays_changed(&self) -> &[ReplicationId] {
        &self.arrays_changed
    }

    /// Whether nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.arrays_changed.is_empty()
    }

    pub(crate) fn reset(&mut self, frame: u64) {
        self.frame = frame;
        self.added.clear();
        self.removed.clear();
        self.changed.clear();
        self.arrays_changed.clear();
        self.vanished.clear();
        self.initial.clear();
        self.moved.clear();
        self.handed.clear();
        self.adopted.clear();
    }
}
