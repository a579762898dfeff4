//! Following: a scoped connection sends the changed fields the array
//! handed it for items its client knows as they were handed, without
//! their work going through the pending list or the view.
//!
//! A scoped connection's tick is its scope's changes: at 1 000 viewers
//! each seeing 1 000 of 100 000 agents, about 95 changed items and 25
//! scope entries and exits a tick. Taken one by one through the pending
//! list, the view's bookkeeping of each record, and each record's
//! acknowledgement, a changed item cost about four lookups of the view
//! and two of the pending list. A followed one costs one of each: the
//! write asks whether the item may go as it is (the client knows it, it
//! is in scope, its level sends those fields now and has no interval,
//! nothing else is due for it), and the record keeps an entry the view
//! never hears of ([`RecordEntry::followed`]). Its acknowledgement does
//! nothing: the client knew the item before, and knows it still. Its loss
//! sends the fields again if the client still knows the item, but for
//! what later records the view took carried (a whole value, which a new
//! shape of the item goes as: a field of its old shape must not follow
//! it; or the same fields): later followed records may have carried
//! them too, and they go again all the same (the mirror keeps each
//! field's newest frame, so a field sent again, current, is never older
//! than one it holds). That is the trade: a loss may resend a field a
//! later packet carried too, for no per-item work while packets arrive.
//!
//! What could not go as it was handed goes through the pending list as
//! before ([`merge_routed`](SendState::merge_routed)), so every rule of a
//! write (withheld fields, detail intervals, audiences, budgets) stays
//! where it is written.
//!
//! [`RecordEntry::followed`]: super::retirement::RecordEntry::followed

use super::audience::Audience;
use super::pending::Work;
use super::routed::Routed;
use super::{LOOKAHEAD, SendState, visible};
use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// Changed fields of an item its client knows, to send as they were
/// handed: what a write takes of them ([`SendState::take_followed`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Follow {
    pub(crate) id: ReplicationId,
    /// Its name on the wire.
    pub(crate) wire: ReplicationId,
    pub(crate) fields: FieldMask,
    /// The fields a whole entry for it would carry: those the connection
    /// may see (all of `fields` among them).
    pub(crate) whole: FieldMask,
    /// The frame that changed them.
    pub(crate) since: u64,
    /// Their place among that frame's changed items (see
    /// [`Routed::index`]).
    pub(crate) index: u32,
}

/// Whether `routed`, a change the array handed a scoped connection, may
/// be followed at frame `frame`: plain fields changed by the newest frame
/// (one change per item per frame, so an item is followed once), none of
/// which changes the item's shape (`structure`).
#[inline]
pub(super) fn followable(routed: &Routed, frame: u64, structure: FieldMask) -> bool {
    match routed.work() {
        Work::Fields(mask) => {
            routed.frame == frame && !mask.is_empty() && !mask.intersects(structure)
        }
        _ => false,
    }
}

impl SendState {
    /// Keeps the changed fields of `routed` for the next write to send as
    /// they are (see [`take_followed`](Self::take_followed)).
    #[inline]
    pub(super) fn follow(&mut self, routed: &Routed) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.followed.push(*routed);
        }
    }

    /// Whether changes are kept to follow.
    pub(super) fn follows_any(&self) -> bool {
        self.scope
            .as_deref()
            .is_some_and(|scope| !scope.followed.is_empty())
    }

    /// The items with changes kept to follow and no other work pending.
    pub(super) fn followed_items(&self) -> usize {
        let followed = self.scope.as_deref().map(|scope| scope.followed.as_slice());
        let followed = followed.unwrap_or_default().iter();
        followed
            .filter(|routed| !self.pending.contains(routed.id))
            .count()
    }

    /// The frames of the changes kept to follow.
    pub(super) fn followed_frames(&self) -> impl Iterator<Item = u64> + '_ {
        let followed = self.scope.as_deref().map(|scope| scope.followed.as_slice());
        followed
            .unwrap_or_default()
            .iter()
            .map(|routed| routed.frame)
    }

    /// Puts the changes kept to follow into the pending list, as if they
    /// had been merged when they were handed: before a write under a
    /// budget (which chooses among all the work due), before more changes
    /// are handed (an item must not be followed twice), before a
    /// comparison with the items.
    pub(crate) fn unfollow(&mut self, structure: FieldMask) {
        let Some(scope) = self.scope.as_deref_mut() else {
            return;
        };
        if scope.followed.is_empty() {
            return;
        }
        let followed = core::mem::take(&mut scope.followed);
        for routed in &followed {
            self.merge_routed(routed.id, routed.work(), routed.frame, structure);
        }
        self.give_back_followed(followed);
    }

    /// Takes the changes kept to follow for a write without a budget: into
    /// `out`, each that may go as it was handed (the client knows the
    /// item, which is in scope; its level has no interval and sends every
    /// changed field, and `audience` lets the connection see them; nothing
    /// else is due for it); the others into the pending list, where the
    /// write's plan takes them as any other work.
    pub(crate) fn take_followed(
        &mut self,
        structure: FieldMask,
        audience: &Audience<'_>,
        out: &mut Vec<Follow>,
    ) {
        let Some(scope) = self.scope.as_deref_mut() else {
            return;
        };
        if scope.followed.is_empty() {
            return;
        }
        let followed = core::mem::take(&mut scope.followed);
        out.reserve(followed.len());
        for chunk in followed.chunks(LOOKAHEAD) {
            self.views.warm(chunk.iter().map(|routed| routed.id));
            for routed in chunk {
                match self.as_handed(routed.id, routed.fields, audience) {
                    Some((wire, whole)) => out.push(Follow {
                        id: routed.id,
                        wire,
                        fields: routed.fields,
                        whole,
                        since: routed.frame,
                        index: routed.index,
                    }),
                    None => self.merge_routed(routed.id, routed.work(), routed.frame, structure),
                }
            }
        }
        self.give_back_followed(followed);
    }

    /// Puts back the changes of `follows`, taken for a write that failed,
    /// into the pending list.
    pub(crate) fn untake_followed(&mut self, follows: &[Follow], structure: FieldMask) {
        for follow in follows {
            self.merge_routed(
                follow.id,
                Work::Fields(follow.fields),
                follow.since,
                structure,
            );
        }
    }

    /// Makes the connection plan every change, as if it followed none:
    /// for the tests that compare the two.
    #[cfg(test)]
    pub(crate) fn plan_every_change(&mut self) {
        if let Some(scope) = self.scope.as_deref_mut() {
            scope.plans_every_change = true;
        }
    }

    /// Whether the connection may follow changes (see
    /// [`plan_every_change`](Self::plan_every_change)).
    #[inline]
    pub(super) fn may_follow(&self) -> bool {
        #[cfg(test)]
        if self
            .scope
            .as_deref()
            .is_some_and(|scope| scope.plans_every_change)
        {
            return false;
        }
        true
    }

    /// Whether changed fields `mask` of `id` may go as they were handed,
    /// and if so its name on the wire and the fields the connection may
    /// see of it: what [`due`](Self::due) would make of the same work,
    /// when that is the fields as they are.
    #[inline]
    fn as_handed(
        &self,
        id: ReplicationId,
        mask: FieldMask,
        audience: &Audience<'_>,
    ) -> Option<(ReplicationId, FieldMask)> {
        let scope = self.scope.as_deref()?;
        if self.pending.contains(id) {
            return None;
        }
        // Only an item in scope has a level (a frozen copy is out of it).
        let (seen, wire) = self.views.for_follow(id)?;
        if scope.interval(Some(seen)) > 1 {
            return None;
        }
        let whole = visible(Some(scope), Some(seen), audience.fields(self.client, id));
        whole.covers(mask).then_some((wire, whole))
    }

    /// Gives the list of changes to follow its room back, emptied.
    fn give_back_followed(&mut self, mut followed: Vec<Routed>) {
        if let Some(scope) = self.scope.as_deref_mut() {
            followed.clear();
            if scope.followed.is_empty() && followed.capacity() <= 4 * scope.len().max(64) {
                scope.followed = followed;
            }
        }
    }
}
