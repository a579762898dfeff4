//! A connection's scope: the items of an array its client is allowed to
//! see (interest management). The connection keeps the set and the items
//! waiting to come back; the array keeps, per item, which connections see
//! it, and hands each connection the changes of its items only (see
//! `send::interest`).

use std::sync::Arc;

use hashbrown::HashMap;

use crate::id::ReplicationId;

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
    /// The ids in scope, with their priority for this connection.
    ids: HashMap<ReplicationId, f32>,
    /// Ids whose exit the client acknowledged, with the exit's frame, kept
    /// until a later frame: one in scope by then is sent whole again (a
    /// message of the exit's own frame could not be told apart from one
    /// written before it).
    returning: Vec<(ReplicationId, u64)>,
}

impl Scope {
    /// The scope of a connection registered in slot `slot` of array
    /// `array`: nothing in it yet.
    pub(crate) fn new(array: u64, slot: u32, token: Arc<()>) -> Self {
        Self {
            array,
            slot,
            token,
            ids: HashMap::new(),
            returning: Vec::new(),
        }
    }

    /// Whether `id` is in scope.
    pub(crate) fn contains(&self, id: ReplicationId) -> bool {
        self.ids.contains_key(&id)
    }

    /// The priority of `id` for this connection (1 unless set, and for ids
    /// out of scope).
    pub(crate) fn priority(&self, id: ReplicationId) -> f32 {
        self.ids.get(&id).copied().unwrap_or(1.0)
    }

    /// Sets the priority of `id`, if in scope (see
    /// [`clamp_priority`]); returns whether it is.
    pub(crate) fn set_priority(&mut self, id: ReplicationId, priority: f32) -> bool {
        match self.ids.get_mut(&id) {
            Some(slot) => {
                *slot = clamp_priority(priority);
                true
            }
            None => false,
        }
    }

    /// Items in scope.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The ids in scope, in no order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.ids.keys().copied()
    }

    /// Puts `id` in scope; returns whether it was out.
    pub(crate) fn insert(&mut self, id: ReplicationId) -> bool {
        self.ids.insert(id, 1.0).is_none()
    }

    /// Takes `id` out of scope; returns whether it was in.
    pub(crate) fn remove(&mut self, id: ReplicationId) -> bool {
        self.ids.remove(&id).is_some()
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
    pub(crate) fn take_returning(&mut self, frame: u64, back: &mut impl FnMut(ReplicationId)) {
        let ids = &self.ids;
        self.returning.retain(|&(id, exit)| {
            let past = exit < frame;
            if past && ids.contains_key(&id) {
                back(id);
            }
            !past
        });
    }

    /// Whether an id in scope waits to return.
    pub(crate) fn has_returning(&self) -> bool {
        self.returning
            .iter()
            .any(|(id, _)| self.ids.contains_key(id))
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

/// The highest detail level: a connection sees an item at a level from 0
/// (only the fields without `#[replicate(detail = N)]`) to `MAX_DETAIL`
/// (every field), which is where every item starts.
pub const MAX_DETAIL: u8 = 7;
