//! A [`SendState`]'s scope: which items its client sees, at which detail
//! level and priority, how it names them on the wire (handles), and what
//! entering and leaving the scope makes due.

use super::SendState;
use super::pending::{Pending, Work};
use super::scope::{Scope, ScopeExit};
use super::view::Holding;
use crate::id::ReplicationId;
use crate::mask::FieldMask;

impl SendState {
    /// Whether the connection names items by handles.
    pub(crate) fn uses_handles(&self) -> bool {
        self.views.uses_handles()
    }

    /// How many frames before `frame` the handle `wire` was taken.
    pub(crate) fn handle_age(&self, wire: ReplicationId, frame: u64) -> u64 {
        self.views.handle_age(wire, frame)
    }

    // The scope.

    /// The connection's scope, if it has one.
    pub(crate) fn scope(&self) -> Option<&Scope> {
        self.scope.as_deref()
    }

    /// Whether item `id` is in the connection's scope (every item is,
    /// without one).
    pub(crate) fn sees(&self, id: ReplicationId) -> bool {
        self.scope.is_none() || self.views.seen(id).is_some()
    }

    /// Items in the connection's scope (none without one).
    pub(crate) fn scope_len(&self) -> usize {
        self.scope.as_deref().map_or(0, Scope::len)
    }

    /// The ids in the connection's scope, in no order (none without one).
    pub(crate) fn scope_ids(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.views.scope_ids()
    }

    /// The priority of item `id` for this connection (1 without a scope).
    pub(crate) fn priority(&self, id: ReplicationId) -> f32 {
        match self.scope {
            Some(_) => Scope::priority(&self.views, id),
            None => 1.0,
        }
    }

    /// Sets the priority of item `id`, if in scope; returns whether it is.
    pub(crate) fn set_priority(&mut self, id: ReplicationId, priority: f32) -> bool {
        self.scope.is_some() && Scope::set_priority(&mut self.views, id, priority)
    }

    /// Catches a connection that never wrote and holds nothing up to
    /// `frame` at once: its client needs nothing of the array's past, so
    /// a scope given to it next starts empty in O(1), however many items
    /// the array holds. Returns whether the connection was such a one.
    pub(crate) fn skip_history(&mut self, frame: u64) -> bool {
        let fresh = self.is_fresh() && !self.has_work_due();
        if fresh {
            self.cursor = frame + 1;
        }
        fresh
    }

    /// Gives the connection a scope, empty: every item its client may hold
    /// leaves it as the scope's exit says (and unsent adds are dropped).
    /// The connection is caught up to `frame`. Returns the items frozen
    /// ([`ScopeExit::Persist`]), which the array must keep watching.
    pub(crate) fn set_scope(&mut self, scope: Scope, frame: u64) -> Vec<ReplicationId> {
        self.replay();
        let persist = scope.exit() == ScopeExit::Persist;
        self.scope = Some(Box::new(scope));
        self.views.clear_scope();
        let unsent: Vec<ReplicationId> = self
            .pending
            .iter()
            .map(|&(id, _)| id)
            .filter(|&id| !self.views.contains(id))
            .collect();
        for id in unsent {
            self.forget(id);
        }
        let held: Vec<ReplicationId> = self
            .views
            .ids()
            .filter(|&id| self.views.get(id).is_some_and(|view| view.is_held()))
            .collect();
        for &id in &held {
            if persist {
                self.freeze(id, frame);
            } else {
                self.pending.queue(id, Work::Exit, frame);
            }
        }
        if persist { held } else { Vec::new() }
    }

    /// Puts item `id` in scope at `frame` (the connection caught up to
    /// it): the client gets it whole. Returns whether it was out of scope
    /// (`false` as well for a connection without a scope).
    pub(crate) fn include(&mut self, id: ReplicationId, frame: u64) -> bool {
        let Some(scope) = self.scope.as_deref_mut() else {
            return false;
        };
        if self.views.seen(id).is_some() {
            return false;
        }
        if scope.is_frozen(id) {
            // The client kept its copy: it gets what changed meanwhile.
            let thawed = scope.thaw(id);
            scope.insert(&mut self.views, id);
            if let Some((mask, since)) = thawed {
                let work = if mask.covers(self.all_fields) {
                    Work::Add { structural: true }
                } else {
                    self.views.fields_work(id, mask)
                };
                self.queue_seen(id, work, since);
            }
            if self.inner.contains_key(&id) {
                // Its arrays catch up in an entry of their own.
                self.pending
                    .queue(id, Work::Fields(FieldMask::EMPTY), frame);
            }
            return true;
        }
        scope.insert(&mut self.views, id);
        match self.views.get(id).map(|view| view.holding) {
            // Its exit was acknowledged in this frame: it returns in a
            // later one.
            None if scope.is_returning(id) => {}
            None => self
                .pending
                .queue(id, Work::Add { structural: true }, frame),
            // Its exit is in flight: it comes back whole once the client
            // is known to have dropped it.
            Some(Holding::RemoveInFlight) => {}
            Some(_) => {
                // The client still holds it, and its exit was not written:
                // what changed meanwhile was not followed, so it goes
                // whole.
                self.pending.remove(&id);
                self.pending
                    .queue(id, Work::Add { structural: false }, frame);
            }
        }
        true
    }

    /// Takes item `id` out of scope at `frame` (the connection caught up
    /// to it): the client is told to drop it, if it may hold it. Returns
    /// whether it was in scope.
    pub(crate) fn exclude(&mut self, id: ReplicationId, frame: u64) -> bool {
        let Some(scope) = self.scope.as_deref_mut() else {
            return false;
        };
        if !scope.remove(&mut self.views, id) {
            return false;
        }
        let persist = scope.exit() == ScopeExit::Persist;
        if !persist {
            scope.forget(id);
        }
        match self.views.get(id) {
            None => {
                scope.forget(id);
                self.forget(id);
            }
            Some(view) if view.is_held() && persist => self.freeze(id, frame),
            Some(view) if view.is_held() => self.pending.queue(id, Work::Exit, frame),
            Some(_) => scope.forget(id),
        }
        true
    }

    /// Freezes item `id`, which the client holds and which left the scope
    /// at `frame`: what was due for it waits for it to come back.
    pub(super) fn freeze(&mut self, id: ReplicationId, frame: u64) {
        let (mask, since) = match self.pending.remove(&id) {
            Some(Pending {
                work: Work::Fields(mask),
                since,
            }) => (mask, since),
            Some(pending) => (self.all_fields, pending.since),
            None => (FieldMask::EMPTY, frame),
        };
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.freeze(&self.views, id, mask, since);
        }
    }

    /// Reads the view's entries of `ids` ahead of a run of
    /// [`include`](Self::include) and [`exclude`](Self::exclude) calls
    /// (see `Views::warm`).
    pub(crate) fn warm_views(&self, ids: impl IntoIterator<Item = ReplicationId>) {
        self.views.warm(ids);
    }

    /// Whether item `id` is out of scope with its copy kept by the client
    /// ([`ScopeExit::Persist`]).
    pub(crate) fn is_frozen(&self, id: ReplicationId) -> bool {
        self.scope
            .as_deref()
            .is_some_and(|scope| scope.is_frozen(id))
    }

    /// What an item leaving the scope leaves the client.
    pub(crate) fn scope_exit(&self) -> ScopeExit {
        self.scope
            .as_deref()
            .map_or_else(ScopeExit::default, Scope::exit)
    }

    /// Sets what items leaving the scope from now on leave the client.
    pub(crate) fn set_scope_exit(&mut self, exit: ScopeExit) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.set_exit(exit);
        }
    }

    /// Item `id`, in scope or frozen, is gone from the array (since
    /// `since`): it leaves the scope, a frozen copy included, and the
    /// client is told if it may hold it.
    pub(super) fn lose_scoped(&mut self, id: ReplicationId, since: u64) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.forget(id);
            scope.remove(&mut self.views, id);
        }
        if self.views.contains(id) {
            self.pending.queue(id, Work::Remove, since);
        } else {
            self.forget(id);
        }
    }

    /// Queues `work` for `id`, due since `since`, as the connection's
    /// scope sees the item: changed fields above its detail level are
    /// withheld until the level rises.
    pub(super) fn queue_seen(&mut self, id: ReplicationId, work: Work, since: u64) {
        let work = match (work, self.scope.as_deref_mut()) {
            (work, Some(scope)) if !work.drops() && scope.is_frozen(id) => {
                // Frozen: everything waits for the item to come back (a
                // whole value as every field).
                let mask = match work {
                    Work::Fields(mask) => mask,
                    _ => self.all_fields,
                };
                scope.withhold(&self.views, id, mask, since);
                return;
            }
            (Work::Fields(mask), Some(scope)) if !mask.is_empty() => {
                let sent = scope.withhold(&self.views, id, mask, since);
                if sent.is_empty() {
                    return;
                }
                Work::Fields(sent)
            }
            _ => work,
        };
        self.pending.queue(id, work, since);
    }

    /// Sets the detail level item `id` is seen at, if in scope: changed
    /// fields withheld until now that the level sends become due. Returns
    /// whether `id` is in scope.
    pub(crate) fn set_detail(&mut self, id: ReplicationId, level: u8) -> bool {
        let Some(scope) = self.scope.as_deref_mut() else {
            return false;
        };
        if let Some((mask, since)) = scope.set_level(&mut self.views, id, level) {
            let work = self.views.fields_work(id, mask);
            self.pending.queue(id, work, since);
        }
        true
    }

    /// The detail level item `id` is seen at.
    pub(crate) fn detail(&self, id: ReplicationId) -> u8 {
        self.scope
            .as_deref()
            .map_or(super::scope::MAX_DETAIL, |_| Scope::level(&self.views, id))
    }

    /// Sets the fewest frames between two writes of the changed fields of
    /// items seen at detail level `level`.
    pub(crate) fn set_interval(&mut self, level: u8, frames: u32) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.set_interval(level, frames);
        }
    }
}
