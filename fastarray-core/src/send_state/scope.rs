//! A connection's scope: the items of an array its client is allowed to
//! see (interest management). The connection keeps the set (in its view
//! table, one entry per item for both) and the items waiting to come
//! back; the array keeps, per item, which connections see it, and hands
//! each connection the changes of its items only (see `send_state::scopes`).

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

pub use super::seen::MAX_DETAIL;
use super::seen::Seen;
use super::view::Views;
use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// The scope of one connection on one array.
#[derive(Clone, Debug)]
pub(crate) struct Scope {
    /// The array the connection is registered with (its store's origin).
    pub(crate) array: u64,
    /// The connection's slot in that array's registry.
    pub(crate) slot: u32,
    /// Held while the connection lives: the registry frees the slot once
    /// every holder is gone.
    pub(crate) token: Arc<()>,
    /// Items in scope (their marks are in the connection's view table).
    len: usize,
    /// Ids whose exit the client acknowledged, with the exit's frame, kept
    /// until a later frame: one in scope by then is sent whole again (a
    /// message of the exit's own frame could not be told apart from one
    /// written before it).
    returning: Vec<(ReplicationId, u64)>,
    /// Per detail level, the fields sent at it (the item type's
    /// `Replicate::detail_mask`).
    masks: [FieldMask; LEVELS],
    /// The fields sent at every level, if every level sends the same (a
    /// type without detail levels): then what an item's level lets
    /// through needs no look at its view.
    uniform: Option<FieldMask>,
    /// Per detail level, the fewest frames between two writes of an item's
    /// changed fields.
    intervals: [u32; LEVELS],
    /// Changed fields above an item's detail level (or of a frozen item),
    /// and the frame they first became due: sent when its level rises (or
    /// it comes back).
    withheld: HashMap<ReplicationId, (FieldMask, u64)>,
    /// What an item leaving the scope leaves the client.
    exit: ScopeExit,
    /// Items out of scope whose copy the client keeps
    /// ([`ScopeExit::Persist`]): their changes are withheld, and their
    /// destruction is sent.
    frozen: HashSet<ReplicationId>,
    /// Changed fields the array handed the connection for its newest
    /// frame that its next write may send as they are, without their
    /// items' work going through the pending list (see
    /// `SendState::take_followed`): each item once, with its frame.
    pub(super) followed: Vec<super::routed::Routed>,
    /// Whether the connection follows no change (for the tests that
    /// compare following with planning every change).
    #[cfg(test)]
    pub(super) plans_every_change: bool,
}

/// What an item leaving a connection's scope leaves its client
/// ([`ScopeMut::set_exit`](crate::ScopeMut::set_exit)), as naia's
/// `ScopeExit`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ScopeExit {
    /// The client drops its copy (told by a scope exit, which its events
    /// tell from destruction); coming back sends the item whole. The
    /// default.
    #[default]
    Despawn,
    /// The client keeps its copy, frozen: nothing is sent when the item
    /// leaves, nothing while it is out, and coming back sends only the
    /// fields that changed meanwhile. Its destruction is still sent, so
    /// no frozen copy outlives its item. The connection keeps its view of
    /// the item (and the array its watch) while it is out.
    Persist,
}

/// Detail levels: `0..=MAX_DETAIL`.
const LEVELS: usize = MAX_DETAIL as usize + 1;

impl Scope {
    /// The scope of a connection registered in slot `slot` of array
    /// `array`, whose item type sends `masks[level]` at each detail
    /// level: nothing in it yet.
    pub(crate) fn new(array: u64, slot: u32, token: Arc<()>, masks: [FieldMask; LEVELS]) -> Self {
        Self {
            array,
            slot,
            token,
            len: 0,
            returning: Vec::new(),
            masks,
            uniform: masks
                .iter()
                .all(|&mask| mask == masks[0])
                .then_some(masks[0]),
            intervals: [1; LEVELS],
            withheld: HashMap::new(),
            exit: ScopeExit::Despawn,
            frozen: HashSet::new(),
            followed: Vec::new(),
            #[cfg(test)]
            plans_every_change: false,
        }
    }

    /// What an item leaving the scope leaves the client.
    pub(crate) fn exit(&self) -> ScopeExit {
        self.exit
    }

    /// Sets what items leaving the scope from now on leave the client.
    pub(crate) fn set_exit(&mut self, exit: ScopeExit) {
        self.exit = exit;
    }

    /// Whether `id` is out of scope with its copy kept by the client.
    pub(crate) fn is_frozen(&self, id: ReplicationId) -> bool {
        !self.frozen.is_empty() && self.frozen.contains(&id)
    }

    /// Freezes `id`, which leaves the scope (`remove` it first), with
    /// changed fields `mask` still due since `since`.
    pub(crate) fn freeze(&mut self, views: &Views, id: ReplicationId, mask: FieldMask, since: u64) {
        self.frozen.insert(id);
        self.withhold(views, id, mask, since);
    }

    /// Thaws `id`, back in scope (`insert` it after): the fields that
    /// changed while it was out and the frame they became due, if any.
    pub(crate) fn thaw(&mut self, id: ReplicationId) -> Option<(FieldMask, u64)> {
        self.frozen.remove(&id);
        self.withheld.remove(&id)
    }

    /// Forgets what is kept for `id` outside the scope: its frozen copy
    /// and its withheld fields (it was destroyed, or left for good).
    pub(crate) fn forget(&mut self, id: ReplicationId) {
        if !self.frozen.is_empty() {
            self.frozen.remove(&id);
        }
        if !self.withheld.is_empty() {
            self.withheld.remove(&id);
        }
    }

    /// The frozen ids, in no order.
    pub(crate) fn frozen(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.frozen.iter().copied()
    }

    /// How `id` is seen (as a new item is, if out of scope).
    fn seen(views: &Views, id: ReplicationId) -> Seen {
        views.seen(id).unwrap_or_default()
    }

    /// The priority of `id` for this connection (1 unless set, and for ids
    /// out of scope), to 8 significant bits.
    pub(crate) fn priority(views: &Views, id: ReplicationId) -> f32 {
        Self::seen(views, id).priority
    }

    /// Sets the priority of `id`, if in scope (see
    /// [`clamp_priority`]); returns whether it is.
    pub(crate) fn set_priority(views: &mut Views, id: ReplicationId, priority: f32) -> bool {
        let Some(seen) = views.seen(id) else {
            return false;
        };
        views.set_seen(
            id,
            Seen {
                priority: clamp_priority(priority),
                ..seen
            },
        )
    }

    /// The detail level `id` is seen at ([`MAX_DETAIL`] unless set).
    pub(crate) fn level(views: &Views, id: ReplicationId) -> u8 {
        Self::seen(views, id).level
    }

    /// Sets the detail level of `id`, if in scope (above [`MAX_DETAIL`]
    /// counts as it). Returns the changed fields withheld until now that
    /// the new level sends, with the frame they became due, if any; `None`
    /// as well if `id` is out of scope.
    pub(crate) fn set_level(
        &mut self,
        views: &mut Views,
        id: ReplicationId,
        level: u8,
    ) -> Option<(FieldMask, u64)> {
        let mut seen = views.seen(id)?;
        seen.level = level.min(MAX_DETAIL);
        views.set_seen(id, seen);
        let allowed = self.masks[usize::from(seen.level)];
        let (mask, since) = self.withheld.get_mut(&id)?;
        let released = *mask & allowed;
        *mask = mask.without(allowed);
        let since = *since;
        if mask.is_empty() {
            self.withheld.remove(&id);
        }
        (!released.is_empty()).then_some((released, since))
    }

    /// Splits changed fields `mask` of `id`, due since `since`: returns
    /// those its detail level sends, and keeps the others until the level
    /// rises (all of them, for a frozen item, until it comes back).
    pub(crate) fn withhold(
        &mut self,
        views: &Views,
        id: ReplicationId,
        mask: FieldMask,
        since: u64,
    ) -> FieldMask {
        let allowed = if self.is_frozen(id) {
            FieldMask::EMPTY
        } else if let Some(every) = self.uniform {
            every
        } else {
            self.visible(views.seen(id))
        };
        let held = mask.without(allowed);
        if !held.is_empty() {
            let entry = self.withheld.entry(id).or_insert((FieldMask::EMPTY, since));
            entry.0 |= held;
            entry.1 = entry.1.min(since);
        }
        mask & allowed
    }

    /// The fields of an item seen as `seen` (as a new item is, if out of
    /// scope) that the connection is sent: those of its detail level. This
    /// is the rule "withheld means never sent": every entry written for the
    /// connection, a whole value included, carries only these.
    pub(crate) fn visible(&self, seen: Option<Seen>) -> FieldMask {
        self.masks[usize::from(seen.unwrap_or_default().level)]
    }

    /// A whole value of `id` was written for `frame`, carrying the fields
    /// its level sends: every other field of the type (`all`) is withheld
    /// from then on, since the client holds it as it was, or as its
    /// `Default` if the item is new to it. They go when the level rises.
    pub(crate) fn sent_whole(
        &mut self,
        views: &Views,
        id: ReplicationId,
        all: FieldMask,
        frame: u64,
    ) {
        // Every level sends every field (no `detail` field): no lookup.
        let held = if self.masks[0].covers(all) {
            FieldMask::EMPTY
        } else {
            all.without(self.visible(views.seen(id)))
        };
        if held.is_empty() {
            if !self.withheld.is_empty() {
                self.withheld.remove(&id);
            }
        } else {
            self.withheld.insert(id, (held, frame));
        }
    }

    /// The fewest frames between two writes of the changed fields of an
    /// item seen as `seen` (as a new item is, if out of scope).
    pub(crate) fn interval(&self, seen: Option<Seen>) -> u32 {
        self.intervals[usize::from(seen.unwrap_or_default().level)]
    }

    /// Sets the fewest frames between two writes of the changed fields of
    /// an item seen at detail level `level` (at least 1).
    pub(crate) fn set_interval(&mut self, level: u8, frames: u32) {
        self.intervals[usize::from(level.min(MAX_DETAIL))] = frames.max(1);
    }

    /// Puts `id` in scope, seen at priority 1 and every detail; returns
    /// whether it was out.
    pub(crate) fn insert(&mut self, views: &mut Views, id: ReplicationId) -> bool {
        let entered = views.enter_scope(id, Seen::default());
        self.len += usize::from(entered);
        entered
    }

    /// Items in scope.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Takes `id` out of scope; returns whether it was in. What was
    /// withheld stays, for [`freeze`](Self::freeze) or
    /// [`forget`](Self::forget).
    pub(crate) fn remove(&mut self, views: &mut Views, id: ReplicationId) -> bool {
        let left = views.leave_scope(id);
        self.len -= usize::from(left);
        left
    }

    /// The client dropped `id` by the exit it acknowledged, written at
    /// `frame`: if `id` is in scope after that frame, it returns.
    pub(crate) fn exit_acknowledged(&mut self, id: ReplicationId, frame: u64) {
        self.returning.push((id, frame));
    }

    /// Whether `id`'s exit was acknowledged and its frame is not past:
    /// then it can only come back after that frame.
    pub(crate) fn is_returning(&self, id: ReplicationId) -> bool {
        self.returning.iter().any(|&(other, _)| other == id)
    }

    /// Calls `back` with each id in scope whose acknowledged exit is older
    /// than `frame`, and forgets every such exit.
    pub(crate) fn take_returning(
        &mut self,
        views: &Views,
        frame: u64,
        back: &mut impl FnMut(ReplicationId),
    ) {
        self.returning.retain(|&(id, exit)| {
            let past = exit < frame;
            if past && views.seen(id).is_some() {
                back(id);
            }
            !past
        });
    }

    /// Whether an id in scope waits to return.
    pub(crate) fn has_returning(&self, views: &Views) -> bool {
        self.returning
            .iter()
            .any(|&(id, _)| views.seen(id).is_some())
    }
}

/// The lowest priority kept: lower ones (zero, negative) would starve.
pub(crate) const MIN_PRIORITY: f32 = 1e-6;
/// The highest priority kept.
pub(crate) const MAX_PRIORITY: f32 = 1e6;

/// A priority as kept: within [`MIN_PRIORITY`]..=[`MAX_PRIORITY`], and 1
/// for NaN.
pub(crate) fn clamp_priority(priority: f32) -> f32 {
    if priority.is_nan() {
        1.0
    } else {
        priority.clamp(MIN_PRIORITY, MAX_PRIORITY)
    }
}
