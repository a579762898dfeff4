//! What is due for a [`SendState`]'s next message: the work the writer
//! plans from, in which form each item goes, and the arrays inside items.

use super::audience::Audience;
use super::pending::Work;
use super::view::fields_work;
use super::{Due, LOOKAHEAD, Removal, SendState, visible};
use crate::id::ReplicationId;
use crate::mask::FieldMask;

impl SendState {
    /// The send states of the arrays inside items the client may hold: per
    /// item, one per array field (none for an item whose arrays were empty
    /// when it joined with a snapshot).
    pub(crate) fn each_inner(&self) -> impl Iterator<Item = (ReplicationId, &[SendState])> {
        self.inner
            .iter()
            .map(|(&id, states)| (id, states.as_slice()))
    }

    /// The work due at `frame`, sorted into removals (with the frame each
    /// became due) and live items (`position` finds an item in the array's
    /// storage), each in the form the view allows. Work for items that are
    /// gone and that the client never held is dropped. `has_arrays`:
    /// whether the item type has array fields; `audience`: the type's
    /// audience rule on the array. Each item's work carries only the
    /// fields the connection may see (the audience rule's, then
    /// [`Scope::visible`]'s), whatever made it due: changed fields its
    /// audience denies it are dropped (a change of ownership sends them
    /// again), those its level no longer sends (it dropped since they were
    /// queued) are withheld again, and a whole value is only those fields.
    /// Returns how many items wait for their detail level's interval (they
    /// stay pending).
    pub(crate) fn due(
        &mut self,
        frame: u64,
        position: impl Fn(ReplicationId) -> Option<usize>,
        has_arrays: bool,
        audience: &Audience<'_>,
        removals: &mut Vec<Removal>,
        items: &mut Vec<Due>,
    ) -> usize {
        let mut dropped = Vec::new();
        let mut withheld = Vec::new();
        let mut waiting = 0;
        let all = self.pending.as_slice();
        // The places of the run being worked on, looked up ahead.
        let mut places = [None; LOOKAHEAD];
        for (i, &(id, ref pending)) in all.iter().enumerate() {
            if i % LOOKAHEAD == 0 {
                // The view's entries and the items' places of the next
                // run, read ahead so that their cache misses overlap.
                let ahead = &all[i..all.len().min(i + LOOKAHEAD)];
                self.views.warm(ahead.iter().map(|&(id, _)| id));
                for (place, &(id, _)) in places.iter_mut().zip(ahead) {
                    *place = position(id);
                }
            }
            let entry = self.views.for_write(id, frame);
            let held = entry.holding.is_some();
            let pos = match places[i % LOOKAHEAD] {
                Some(pos) if !pending.work.drops() => pos,
                pos => {
                    if held {
                        removals.push(Removal {
                            id,
                            wire: entry.wire,
                            since: pending.since,
                            // An item gone since it left the scope is
                            // simply gone.
                            exit: pending.work == Work::Exit && pos.is_some(),
                        });
                    } else {
                        dropped.push(id);
                    }
                    continue;
                }
            };
            if let (Work::Fields(_), Some(scope)) = (pending.work, self.scope.as_deref()) {
                // An item seen at a level with an interval waits until
                // its changes have been due that many frames.
                let interval = u64::from(scope.interval(entry.seen));
                if interval > 1 && frame + 1 < pending.since + interval {
                    waiting += 1;
                    continue;
                }
            }
            let allowed = audience.fields(self.client, id);
            let whole = visible(self.scope.as_deref(), entry.seen, allowed);
            let (work, arrays_only) = match pending.work {
                Work::Fields(changed) => {
                    let mask = changed & allowed;
                    let sent = match self.scope.as_deref_mut() {
                        Some(scope) if !whole.covers(mask) || scope.is_frozen(id) => {
                            scope.withhold(&self.views, id, mask, pending.since)
                        }
                        _ => mask,
                    };
                    if sent.is_empty() && !changed.is_empty() && !has_arrays {
                        // All withheld again: nothing to write.
                        withheld.push(id);
                        continue;
                    }
                    let work = fields_work(entry.holding, sent);
                    // A whole value for a client that holds nothing of
                    // the item is real work, not a carrier.
                    (work, sent.is_empty() && held)
                }
                work => (work, false),
            };
            items.push(Due {
                id,
                wire: entry.wire,
                pos,
                work,
                whole,
                since: pending.since,
                arrays_only: arrays_only && has_arrays,
            });
        }
        for id in dropped {
            self.forget(id);
        }
        for id in withheld {
            self.pending.remove(&id);
        }
        waiting
    }

    /// Readies the connection for a message written for `frame`, before
    /// the writer asks what is due: packets a whole window older than
    /// `frame` count as lost (the mirror ignores them if they ever
    /// arrive), and, before the connection's first message, it chooses how
    /// it names items on the wire: by handles if it has a scope (see
    /// `handles`), by ids otherwise. Once anything was written (or the
    /// client joined with a snapshot) that choice stays. If the item type
    /// `reshapes` (has shapes, an enum's variants), the view takes the
    /// records of frames' shared messages it has not taken yet: a whole
    /// value in them may be of a new shape, not an add. Else they may wait
    /// for their acknowledgements (see [`record_shared`](Self::record_shared)).
    #[inline]
    pub(crate) fn start_write(&mut self, frame: u64, reshapes: bool) {
        if reshapes {
            self.replay();
        }
        while let Some(record) = self.retirement.take_expired(frame) {
            self.retire_lost(record);
        }
        if self.is_fresh() && self.scope.is_some() && !self.views.uses_handles() {
            self.views.start_handles();
        }
    }

    /// The frame a message's frame is coded against: the newest frame
    /// the client acknowledged (`None`: none yet). The writer writes the
    /// frame short once that is less than a window older (see
    /// `wire::frame`).
    pub(crate) fn acked_frame(&self) -> Option<u64> {
        self.acked_frame
    }

    /// The send states of item `id`'s `count` array fields, serving this
    /// connection's client.
    pub(crate) fn inner_states(&mut self, id: ReplicationId, count: u32) -> &mut Vec<SendState> {
        let client = self.client;
        let states = self.inner.entry(id).or_default();
        if states.len() < count as usize {
            states.resize_with(count as usize, || SendState {
                client,
                ..SendState::new()
            });
        }
        states
    }

    /// Drops the due work of `id`: nothing needs writing for it.
    pub(crate) fn drop_due(&mut self, id: ReplicationId) {
        self.pending.remove(&id);
    }

    /// The arrays of item `id` have work left for a later packet (the
    /// budget ran out), due since `since`: an entry for the item carries it.
    pub(super) fn queue_inner_work(&mut self, id: ReplicationId, since: u64) {
        // Not for a frozen copy: its arrays catch up when it comes back.
        self.queue_seen(id, Work::Fields(FieldMask::EMPTY), since);
    }
}
