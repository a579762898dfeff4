//! [`Scopes`]: the array's side of scoping (interest management): per item, the
//! connections that have it in scope; per such connection, the changes of
//! its items since it last caught up, handed over at each commit. A
//! connection's catch-up then costs what changed in its scope, not what
//! changed in the array, and an item nobody sees costs one failed lookup
//! per change.

use std::sync::{Arc, Weak};

use super::LOOKAHEAD;
use super::routed::{NOT_CHANGED, Routed};
use super::scope::{MAX_DETAIL, Scope};
use super::watchers::Watchers;
use crate::changeset::Changeset;
use crate::history::HISTORY_LEN;
use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// The connections with a scope on one array.
#[derive(Debug, Default)]
pub(crate) struct Scopes {
    /// Registered connections; a freed slot is reused.
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Per item in some scope: the slots of the connections that see it.
    watchers: Watchers,
}

/// One registered connection.
#[derive(Debug)]
struct Slot {
    /// Alive while the connection's state is.
    token: Weak<()>,
    /// Whether the slot holds a connection (not freed).
    used: bool,
    /// The changes of its items since its last catch-up.
    inbox: Vec<Routed>,
    /// A window of frames went by without a catch-up: the inbox was
    /// dropped, and the connection compares its scope instead.
    overflowed: bool,
}

impl Scopes {
    /// Registers a connection with the array of origin `array`, whose
    /// item type sends `masks[level]` at each detail level: its scope,
    /// empty.
    pub(crate) fn register(
        &mut self,
        array: u64,
        masks: [FieldMask; MAX_DETAIL as usize + 1],
    ) -> Scope {
        let token = Arc::new(());
        let slot = Slot {
            token: Arc::downgrade(&token),
            used: true,
            inbox: Vec::new(),
            overflowed: false,
        };
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = slot;
                index
            }
            None => {
                self.slots.push(slot);
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 connections")
            }
        };
        Scope::new(array, index, token, masks)
    }

    /// Whether `scope` is a live registration here.
    pub(crate) fn is_registered(&self, scope: &Scope) -> bool {
        self.slots
            .get(scope.slot as usize)
            .is_some_and(|slot| Weak::ptr_eq(&slot.token, &Arc::downgrade(&scope.token)))
    }

    /// The connection in `slot` sees `id` from now on.
    pub(crate) fn watch(&mut self, slot: u32, id: ReplicationId) {
        self.watchers.add(id, slot);
    }

    /// Reads the watchers of `ids` ahead of a run of
    /// [`watch`](Self::watch) and [`unwatch`](Self::unwatch) calls (see
    /// `Views::warm`).
    pub(crate) fn warm(&self, ids: impl IntoIterator<Item = ReplicationId>) {
        self.watchers.warm(ids);
    }

    /// The connection in `slot` no longer sees `id`.
    pub(crate) fn unwatch(&mut self, slot: u32, id: ReplicationId) {
        self.watchers.remove(id, slot);
    }

    /// The changes handed to the connection in `slot` since its last
    /// catch-up, or `None` if a window of frames went by and they were
    /// dropped.
    pub(crate) fn inbox(&self, slot: u32) -> Option<&[Routed]> {
        let slot = &self.slots[slot as usize];
        (!slot.overflowed).then_some(slot.inbox.as_slice())
    }

    /// The connection in `slot` caught up: its inbox empties.
    pub(crate) fn clear_inbox(&mut self, slot: u32) {
        let slot = &mut self.slots[slot as usize];
        slot.overflowed = false;
        let used = slot.inbox.len();
        slot.inbox.clear();
        if slot.inbox.capacity() > 4 * used.max(64) {
            slot.inbox.shrink_to(2 * used);
        }
    }

    /// Hands the changes of a commit to the connections that see the
    /// items: O(changes) lookups, plus one entry per (change, watcher).
    /// Frees the slots of connections that are gone, and drops the inbox
    /// of a connection that has not caught up for a window of frames.
    pub(crate) fn route(&mut self, changes: &Changeset) {
        if self.slots.is_empty() {
            return;
        }
        self.collect_gone();
        if self.watchers.is_empty() {
            return;
        }
        let frame = changes.frame;
        let (slots, watchers) = (&mut self.slots, &mut self.watchers);
        let hand = |slots: &mut [Slot], slot: u32, routed: Routed| {
            let slot = &mut slots[slot as usize];
            if !slot.overflowed {
                slot.inbox.push(routed);
            }
        };
        let change = |id, fields, index, removed| Routed::new(id, fields, frame, index, removed);
        for (run_at, run) in changes.changed.chunks(LOOKAHEAD).enumerate() {
            watchers.for_each_of_run(run, |at, id, mask, slot| {
                // Its place among the frame's changed items.
                let index = u32::try_from(run_at * LOOKAHEAD + at).unwrap_or(NOT_CHANGED);
                hand(slots, slot, change(id, mask, index, false));
            });
        }
        for &id in &changes.arrays_changed {
            let routed = change(id, FieldMask::EMPTY, NOT_CHANGED, false);
            watchers.for_each(id, |slot| hand(slots, slot, routed));
        }
        // An item pushed and removed within the frame may have been put
        // in a scope meanwhile: it goes as a removal would.
        for &id in changes.removed.iter().chain(&changes.vanished) {
            let routed = change(id, FieldMask::EMPTY, NOT_CHANGED, true);
            watchers.take(id, |slot| hand(slots, slot, routed));
        }
        for slot in &mut self.slots {
            let stale = slot
                .inbox
                .first()
                .is_some_and(|routed| routed.frame + HISTORY_LEN as u64 <= frame);
            if stale {
                slot.overflowed = true;
                slot.inbox = Vec::new();
            }
        }
    }

    /// Frees the slots whose connection state was dropped, and their
    /// watches.
    fn collect_gone(&mut self) {
        let mut gone = Vec::new();
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.used && slot.token.strong_count() == 0 {
                gone.push(index as u32);
                slot.used = false;
                slot.inbox = Vec::new();
                slot.overflowed = false;
            }
        }
        if gone.is_empty() {
            return;
        }
        self.watchers.forget_slots(&gone);
        self.free.extend(gone);
    }

    /// How many items some connection's scope holds.
    pub(crate) fn watched(&self) -> usize {
        self.watchers.len()
    }

    /// Registered connections that are still alive.
    pub(crate) fn connections(&self) -> usize {
        self.slots
            .iter()
            .filter(|slot| slot.used && slot.token.strong_count() > 0)
            .count()
    }
}
