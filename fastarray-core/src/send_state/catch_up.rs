//! Catching up: a [`SendState`] brought to the array's frame, from the
//! history ring (O(changes)), from what the array routed to its scope,
//! or by comparing with the items when the ring no longer reaches back.

use super::follow::followable;
use super::pending::Work;
use super::routed::Routed;
use super::view::{Holding, View, fields_work};
use super::{Holdings, LOOKAHEAD, SendState};
use crate::error::SendError;
use crate::history::History;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::wire::frame::short_frame;

impl SendState {
    // Joining with a snapshot.

    /// The state of a connection whose client holds exactly what a snapshot
    /// taken at `frame` held, for `client`: [`hold`](Self::hold) each of
    /// its items next.
    pub(crate) fn after_snapshot(frame: u64, all_fields: FieldMask, client: Option<u64>) -> Self {
        Self {
            cursor: frame + 1,
            // The client applied the snapshot, so short frames resolve.
            acked_frame: Some(frame),
            written_frame: frame,
            all_fields,
            client,
            ..Self::new()
        }
    }

    /// Records that the client holds item `id` at key `key` (from a
    /// snapshot), with `inner` the states of its arrays, if it has any.
    pub(crate) fn hold(&mut self, id: ReplicationId, key: ReplicationKey, inner: Vec<SendState>) {
        self.replay();
        self.views.insert_known(id, key);
        if !inner.is_empty() {
            self.inner.insert(id, inner);
        }
    }

    /// Whether this connection can take frame `frame`'s shared message: it
    /// wrote everything up to the last frame (nothing due, no repair), its
    /// client holds, or has on its way, every one of the `live_before`
    /// items the array held before `frame` and nothing else (but items
    /// whose removals are in flight), and the frame goes in short form.
    /// Such a connection's message is the same bits as every other one's;
    /// one whose client may not hold every item yet takes it only if its
    /// changes may come before their item's add
    /// ([`adds_known`](Self::adds_known)).
    #[inline]
    pub(crate) fn in_sync(&self, frame: u64, live_before: usize) -> bool {
        self.cursor == frame
            && !self.has_work_due()
            && self.staying() == live_before
            && self.inner.is_empty()
            && self.scope.is_none()
            && short_frame(frame, self.acked_frame)
    }

    /// Whether no packet in flight carries an add (a whole value): then the
    /// client holds every item it may hold, and no change can reach it
    /// before its item. (An add whose item's removal is in flight too
    /// counts: the answer is the same whether or not the view took the
    /// records of frames' shared messages yet.)
    #[inline]
    pub(crate) fn adds_known(&self) -> bool {
        !self.retirement.carries_adds()
    }

    /// Items the client holds or will once their adds arrive, counting
    /// the records the view has not taken yet (a few, on a link that
    /// acknowledges a round trip later): a shared message's entries are
    /// its adds, each an item more, and its removals, each one leaving.
    #[inline]
    fn staying(&self) -> usize {
        let Some(untaken) = self.untaken else {
            return self.views.staying();
        };
        let (mut adds, mut entries) = (0, 0);
        for record in self.retirement.since_seq(untaken.first.get()) {
            adds += record.adds() as usize;
            entries += record.entries.len();
        }
        let removals = entries - adds;
        (self.views.staying() + adds).saturating_sub(removals)
    }

    /// Brings the pending work up to `frame`: from the history ring when it
    /// reaches back to the cursor (O(changes)), else by comparing what the
    /// client may hold against `items` (O(items)). Returns whether it had
    /// to compare. `structure` is the item type's `Replicate::STRUCTURE`.
    pub(crate) fn catch_up(
        &mut self,
        history: &History,
        frame: u64,
        structure: FieldMask,
        items: &dyn Holdings,
    ) -> bool {
        self.replay();
        // Losses first, as if reported at the last write.
        let lost_resolved = self.resolve_lost_shared(history, structure);
        let resynced = match history.since(self.cursor) {
            Some(frames) if lost_resolved => {
                frames.for_each(|changes| self.merge_frame(changes, structure));
                false
            }
            _ => {
                self.resync(items);
                true
            }
        };
        self.lost_shared.clear();
        self.cursor = frame + 1;
        self.resolve_lost_fields((!resynced).then_some(history));
        resynced
    }

    /// [`catch_up`](Self::catch_up) for a connection with a scope: from
    /// `routed`, the changes of its items the array handed it since its
    /// last catch-up (O(changes in scope)), or, if the array dropped them
    /// (`None`: a window of frames went by), by comparing the items in
    /// scope against `items` (O(scope)). Items whose exit the client
    /// acknowledged before `frame` and that are in scope again become due
    /// whole.
    ///
    /// With `follow`, the changed fields of the newest frame are kept to
    /// send as they were handed (see `follow`), not merged: for an item
    /// type without arrays inside its items, whose entries carry nothing
    /// else.
    pub(crate) fn catch_up_scoped(
        &mut self,
        routed: Option<&[Routed]>,
        frame: u64,
        structure: FieldMask,
        items: &dyn Holdings,
        follow: bool,
    ) -> bool {
        self.replay();
        // A lost shared message (taken before the scope was set) names
        // its changes only in the history ring, which this path does not
        // read: compare instead.
        let routed = routed.filter(|_| self.lost_shared.is_empty());
        let resynced = match routed {
            Some([]) => false,
            Some(entries) => {
                // What an earlier catch-up kept to follow goes first: an
                // item is followed once.
                self.unfollow(structure);
                let follow = follow && self.may_follow();
                let taken = |routed: &Routed| follow && followable(routed, frame, structure);
                let mut merged = entries.len();
                if follow {
                    for routed in entries.iter().filter(|routed| taken(routed)) {
                        self.follow(routed);
                        merged -= 1;
                    }
                }
                self.pending.warm(merged);
                for chunk in entries.chunks(LOOKAHEAD) {
                    let ahead = chunk.iter().filter(|routed| !taken(routed));
                    self.views.warm(ahead.map(|routed| routed.id));
                    for routed in chunk.iter().filter(|routed| !taken(routed)) {
                        self.merge_routed(routed.id, routed.work(), routed.frame, structure);
                    }
                }
                false
            }
            None => {
                self.unfollow(structure);
                self.resync(items);
                true
            }
        };
        self.lost_shared.clear();
        self.cursor = frame + 1;
        self.resolve_lost_fields(None);
        if let Some(scope) = self.scope.as_deref_mut() {
            let pending = &mut self.pending;
            scope.take_returning(&self.views, frame, &mut |id| {
                pending.queue(id, Work::Add { structural: true }, frame);
            });
        }
        resynced
    }

    /// Whether the connection's client may join by a snapshot, which
    /// holds every item with every field: not with a scope (see
    /// [`SendError::ScopedSnapshot`]).
    pub(crate) fn may_join_by_snapshot(&self) -> Result<(), SendError> {
        match self.scope {
            Some(_) => Err(SendError::ScopedSnapshot),
            None => Ok(()),
        }
    }

    /// Merges one frame of the history ring into the pending work.
    pub(super) fn merge_frame(
        &mut self,
        changes: &crate::changeset::Changeset,
        structure: FieldMask,
    ) {
        let frame = changes.frame;
        for &id in &changes.added {
            self.pending
                .queue(id, Work::Add { structural: true }, frame);
        }
        for chunk in changes.changed.chunks(LOOKAHEAD) {
            // The view of a large array is far bigger than the caches: look
            // a run of ids up before queueing any, so the cache misses of
            // these independent lookups overlap instead of taking turns.
            let mut works = [Work::Remove; LOOKAHEAD];
            for (work, &(id, mask)) in works.iter_mut().zip(chunk) {
                *work = if (mask & structure).is_empty() {
                    self.views.fields_work(id, mask)
                } else {
                    // A new shape (an enum's variant) goes whole.
                    Work::Add { structural: true }
                };
            }
            for (&work, &(id, _)) in works.iter().zip(chunk) {
                self.pending.queue(id, work, frame);
            }
        }
        for &id in &changes.arrays_changed {
            // Only the item's arrays changed: an entry with no fields, which
            // carries their deltas.
            self.pending
                .queue(id, Work::Fields(FieldMask::EMPTY), frame);
        }
        for &id in &changes.removed {
            if self.views.contains(id) {
                self.pending.queue(id, Work::Remove, frame);
            } else {
                // Never sent (or only in a write that failed): forget it.
                self.forget(id);
            }
        }
    }

    /// Merges one change the array handed this scoped connection: item
    /// `id` changed `work` at `frame` (fields, only its arrays as no
    /// fields, or its removal).
    pub(super) fn merge_routed(
        &mut self,
        id: ReplicationId,
        work: Work,
        frame: u64,
        structure: FieldMask,
    ) {
        let Some(scope) = self.scope.as_deref_mut() else {
            return;
        };
        // One lookup of the view for all that follows.
        let (seen, holding) = self.views.look(id);
        if seen.is_none() && !scope.is_frozen(id) {
            return;
        }
        if work == Work::Remove {
            self.lose_scoped(id, frame);
            return;
        }
        if holding == Some(Holding::RemoveInFlight) {
            // Back in scope while its exit is in flight: it returns whole.
            return;
        }
        let work = match work {
            Work::Fields(mask) if !(mask & structure).is_empty() => Work::Add { structural: true },
            // Only its arrays changed: an entry with no fields.
            Work::Fields(mask) if mask.is_empty() => work,
            Work::Fields(mask) => fields_work(holding, mask),
            work => work,
        };
        self.queue_seen(id, work, frame);
    }

    /// Works out what is due by comparing what the client may hold against
    /// the array's items: used when the history ring no longer reaches back
    /// to this connection's cursor. O(items + view). Work already due
    /// (repairs of lost packets) stays due.
    pub(super) fn resync(&mut self, items: &dyn Holdings) {
        let delivered = self.delivered_through();
        // What this finds became due at the oldest frame not merged, or
        // later: so `delivered_through` stays behind it until it is acked.
        let due = self.cursor;
        // A lost shared message whose frame left the ring names none of
        // the items it changed: any item changed since then may be one.
        let lost = self.lost_shared.iter().map(|lost| lost.frame).min();
        // Up to date: the client knows the item, and either acknowledged
        // a record with its current key, or has everything committed up
        // to a frame at or after its last change (which covers changes
        // sent in shared messages, whose acks touch no view entry); and
        // no lost shared message may have carried its last change.
        let up_to_date = |view: Option<View>, key: ReplicationKey, changed: u64| {
            lost.is_none_or(|lost| changed < lost)
                && view.is_some_and(|v| {
                    v.holding == Holding::Known
                        && ((v.acked && v.acked_key == key)
                            || delivered.is_some_and(|delivered| changed <= delivered))
                })
        };
        if let Some(scope) = self.scope.as_deref_mut() {
            // Only the items in scope: the others are the client's only
            // through exits already due or in flight.
            let mut gone = Vec::new();
            for id in self.views.scope_ids() {
                let view = self.views.get(id);
                match items.key_of(id) {
                    None => gone.push(id),
                    // It returns whole once its exit is acknowledged.
                    Some(_) if view.is_some_and(|v| v.holding == Holding::RemoveInFlight) => {}
                    Some((key, changed)) if !up_to_date(view, key, changed) => {
                        self.pending.queue(id, Work::Add { structural: true }, due);
                    }
                    Some(_) => {}
                }
            }
            // Frozen copies: a destroyed item's goes; a changed one is
            // resent whole when it comes back.
            let frozen: Vec<ReplicationId> = scope.frozen().collect();
            for id in frozen {
                match items.key_of(id) {
                    None => gone.push(id),
                    Some((key, changed)) if !up_to_date(self.views.get(id), key, changed) => {
                        scope.withhold(&self.views, id, self.all_fields, due);
                    }
                    Some(_) => {}
                }
            }
            for id in gone {
                self.lose_scoped(id, due);
            }
            return;
        }
        let (views, pending) = (&self.views, &mut self.pending);
        items.each_key(&mut |id, key, changed| {
            if !up_to_date(views.get(id), key, changed) {
                pending.queue(id, Work::Add { structural: true }, due);
            }
        });
        let gone: Vec<ReplicationId> = self.views.ids().filter(|&id| !items.holds(id)).collect();
        for id in gone {
            self.pending.queue(id, Work::Remove, due);
        }
    }
}
