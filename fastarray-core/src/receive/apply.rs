//! Applying a decoded delta to a mirror: removals (leaving tombstones),
//! adds, then each field that is newer than the one the mirror holds, with
//! the events in Unreal's order, and the events of the arrays inside the
//! items beside their owners' (see [`Callbacks`]).

use std::sync::Arc;

use super::decode::{ArrayDelta, Decoded, Entry, FieldReader};
use super::in_place;
use crate::id::ReplicationId;
use crate::inner_array::InnerArray;
use crate::mask::FieldMask;
use crate::receive_state::early::EarlyChange;
use crate::receive_state::events::{
    ApplyReport, ArrayOwner, ArrayPath, Callbacks, InnerChange, InnerEvent,
};
use crate::receive_state::mirror::Mirror;
use crate::replicate::Replicate;
use crate::store::{Near, Store, take_newer};

impl Mirror {
    /// Applies a message decoded by [`decode`](Mirror::decode) to this
    /// mirror and its items, `store`, reporting to `callbacks`. `up` is the
    /// array this mirror is, if it is an array inside an item: the path
    /// the inner events of its items' arrays name.
    pub(crate) fn apply<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        mut decoded: Decoded<T>,
        callbacks: &mut impl Callbacks<T>,
        up: Option<&ArrayPath<'_>>,
    ) -> ApplyReport {
        let mut report = ApplyReport {
            frame: decoded.frame,
            stale: decoded.stale,
            skipped: decoded.skipped,
            ..ApplyReport::default()
        };
        let Some(frame) = decoded.frame else {
            callbacks.post_receive(&report);
            return report;
        };
        if decoded.stale {
            callbacks.post_receive(&report);
            return report;
        }
        let advanced = self.advance(frame);
        for &(handle, id, start) in &decoded.bindings {
            self.bind(handle, id, start);
        }
        for &handle in &decoded.vacated {
            self.vacate(handle, frame);
        }

        self.reserve_exits(decoded.exits.iter().filter(|&&exit| exit).count());
        let exits = core::mem::take(&mut decoded.exits);
        let exits = exits.into_iter().chain(core::iter::repeat(false));
        for (id, exit) in core::mem::take(&mut decoded.removals)
            .into_iter()
            .zip(exits)
        {
            if exit {
                // An exit older than a value the mirror holds is a late
                // copy from before the item came back: nothing to do.
                if !store.exit_applies(id, frame) {
                    continue;
                }
                self.record_exit(id, frame);
            } else {
                self.tombstone(id, frame);
            }
            let Some(item) = store.get(id) else {
                continue;
            };
            each_array(id, item, up, &mut |array, at| {
                array.retire(at, &mut |event| callbacks.inner_event(event));
            });
            if exit {
                callbacks.pre_leave_scope(id, item);
                report.left_scope += 1;
            } else {
                callbacks.pre_remove(id, item);
                report.removed += 1;
            }
            store.remove_replicated(id);
        }

        match decoded.in_place.take() {
            Some(found) => {
                in_place::apply(store, found, &decoded.fields, frame, callbacks, &mut report);
            }
            None => self.apply_entries(store, decoded, frame, callbacks, up, &mut report),
        }

        if advanced {
            self.expire(frame);
        }
        callbacks.post_receive(&report);
        report
    }

    /// Applies the entries of `decoded` (a message of `frame`), its
    /// removals applied: adds, then the changed fields of the items held,
    /// then their arrays' deltas, with their events.
    fn apply_entries<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        mut decoded: Decoded<T>,
        frame: u64,
        callbacks: &mut impl Callbacks<T>,
        up: Option<&ArrayPath<'_>>,
        report: &mut ApplyReport,
    ) {
        // Held items whose entry applied: their changed plain fields, and
        // (in `later`, by index in `held`) their arrays' deltas, applied
        // once every add has been reported.
        let mut held = Vec::with_capacity(decoded.entries.len());
        let mut later = Vec::new();
        let mut inner = decoded.inner.into_iter().peekable();
        let mut near = Near::default();
        // Changes that wait for their items keep the message's bits.
        let early = (decoded.early > 0).then(|| {
            self.reserve_early(decoded.early);
            Arc::new(core::mem::take(&mut decoded.fields))
        });
        let mut fields = FieldReader::new(early.as_deref().unwrap_or(&decoded.fields));
        for (index, (id, entry)) in decoded.entries.into_iter().enumerate() {
            let mut deltas = core::iter::from_fn(|| inner.next_if(|delta| delta.entry == index));
            let Some(pos) = store.locate(id, &mut near) else {
                // Validation let through only whole items for unknown ids,
                // and, in a shared delta, changes that wait for their adds.
                if let (Entry::Fields(fields, at), Some(bits)) = (&entry, &early) {
                    let change = EarlyChange {
                        frame,
                        fields: *fields,
                        at: *at,
                        bits: Arc::clone(bits),
                    };
                    self.keep_early(id, change);
                    report.early += 1;
                }
                if let Entry::Whole(mut value, carried) = entry {
                    // Its arrays fill from empty: reported after its add.
                    for delta in &mut deltas {
                        apply_array(&mut *value, id, delta, up, &mut |_| {});
                    }
                    store.insert_replicated(id, frame, *value, carried);
                    let exit = self.take_exit(id);
                    if exit > 0 {
                        store.set_returned_after(id, exit);
                    }
                    // Changes that came before it, if newer.
                    if let Some(changes) = self.take_early(id) {
                        apply_early(store, id, changes);
                    }
                    if let Some(item) = store.get(id) {
                        callbacks.post_add(id, item);
                        each_array(id, item, up, &mut |array, at| {
                            array.announce(at, &mut |event| callbacks.inner_event(event));
                        });
                    }
                    report.added += 1;
                }
                continue;
            };
            if T::ARRAY_FIELDS > 0 {
                later.extend(deltas.map(|delta| ArrayDelta {
                    entry: held.len(),
                    ..delta
                }));
            }
            let (slot, frames) = store.slot_and_frames_mut(pos);
            // Every item a mirror holds came whole, with its fields' frames.
            debug_assert_eq!(frames.len(), T::FIELD_COUNT as usize);
            // What the entry sends, looked at in place: a whole value moves
            // once, into `apply_patch`; changed fields are read into the
            // item from the message's bits.
            let (sent, reshapes) = match &entry {
                Entry::Whole(value, fields) => {
                    // Only a change of shape (enum variant) has to be known
                    // before applying.
                    let reshapes = if T::STRUCTURE.is_empty() {
                        FieldMask::EMPTY
                    } else {
                        value.diff(&slot.value) & T::STRUCTURE & *fields
                    };
                    // The fields it carries: a detail level may have
                    // withheld some, and those stay as they are.
                    (*fields, reshapes)
                }
                Entry::Fields(mask, _) => (*mask, FieldMask::EMPTY),
                Entry::Arrays => (FieldMask::EMPTY, FieldMask::EMPTY),
            };
            // Each field takes the value only if it is newer than the one it
            // holds: duplicates and late copies change nothing. The newer
            // ones date from this frame.
            let newer = take_newer(frames, sent, frame);
            // Newer is not different: a field that went A → B → A while the
            // packet with B was lost arrives newer and unchanged. Only the
            // newer fields are kept: a whole value's patch holds every
            // field (a field withheld from it holds its `Default`, not
            // sent), and changed fields are read past when not newer.
            let whole = matches!(entry, Entry::Whole(..));
            let changed = match entry {
                _ if newer.is_empty() => FieldMask::EMPTY,
                Entry::Whole(value, _) if !(reshapes & newer).is_empty() => {
                    // A newer, different shape (enum variant): the whole
                    // value replaces the old one, and every field dates from
                    // this frame. (No field can hold newer data: changed
                    // fields are only sent once a whole value of the new
                    // shape is known to have arrived.)
                    frames.fill(frame);
                    slot.value.apply_patch(value.into_patch())
                }
                Entry::Whole(value, _) => {
                    let mut patch = value.into_patch();
                    if newer != FieldMask::all(T::FIELD_COUNT) {
                        T::retain_fields(&mut patch, newer);
                    }
                    slot.value.apply_patch(patch)
                }
                Entry::Fields(_, at) => fields.apply(at, &mut slot.value, sent, newer),
                Entry::Arrays => FieldMask::EMPTY,
            };
            held.push((id, pos, changed, whole));
        }

        // The arrays' deltas carry frames of their own, and apply whatever
        // happened to the entry's plain fields; their events come before
        // their owner's `post_change`.
        let mut later = later.into_iter().peekable();
        // Adds only push slots: the held items are where they were.
        for (index, (id, pos, changed, whole)) in held.into_iter().enumerate() {
            let mut arrays_changed = false;
            while let Some(delta) = later.next_if(|delta| delta.entry == index) {
                let slot = store.slot_at_mut(pos);
                let mut sink = |event: &InnerEvent<'_>| callbacks.inner_event(event);
                arrays_changed |= apply_array(&mut slot.value, id, delta, up, &mut sink);
            }
            if !changed.is_empty() || arrays_changed {
                let item = &store.slot(pos).value;
                if whole {
                    callbacks.post_change_whole(id, item, changed);
                } else {
                    callbacks.post_change(id, item, changed);
                }
                report.changed += 1;
            } else {
                report.skipped += 1;
            }
        }
    }
}

/// Applies to item `id`, just added to `store`, the `changes` that came
/// before its add (oldest first): each field takes the newer values, as
/// from any message.
fn apply_early<T: Replicate>(store: &mut Store<T>, id: ReplicationId, changes: Vec<EarlyChange>) {
    let Some(pos) = store.position(id) else {
        return;
    };
    let (slot, frames) = store.slot_and_frames_mut(pos);
    for change in changes {
        let newer = take_newer(frames, change.fields, change.frame);
        if !newer.is_empty() {
            FieldReader::new(&change.bits).apply(change.at, &mut slot.value, change.fields, newer);
        }
    }
}

/// Reports to `callbacks` what replacing a mirror's items, `old`, with a
/// snapshot's, `new` (of `frame`), does, as the delta that made the same
/// change would: removals (`pre_remove`) of the items the snapshot does not
/// hold, then adds (`post_add`) of the items new to the mirror, then the
/// changes of the items kept (`post_change_whole`: a snapshot holds whole
/// values), each with the events of the arrays inside them; then
/// `post_receive`. `up`: the path of the array, if it is inside an item.
pub(crate) fn report_snapshot<T: Replicate>(
    old: &Store<T>,
    new: &Store<T>,
    frame: u64,
    callbacks: &mut impl Callbacks<T>,
    up: Option<&ArrayPath<'_>>,
) -> ApplyReport {
    let mut report = ApplyReport {
        frame: Some(frame),
        ..ApplyReport::default()
    };
    for slot in old.slots() {
        if new.position(slot.id).is_none() {
            each_array(slot.id, &slot.value, up, &mut |array, at| {
                array.retire(at, &mut |event| callbacks.inner_event(event));
            });
            callbacks.pre_remove(slot.id, &slot.value);
            report.removed += 1;
        }
    }
    for slot in new.slots() {
        if old.position(slot.id).is_none() {
            callbacks.post_add(slot.id, &slot.value);
            each_array(slot.id, &slot.value, up, &mut |array, at| {
                array.announce(at, &mut |event| callbacks.inner_event(event));
            });
            report.added += 1;
        }
    }
    for slot in new.slots() {
        let Some(before) = old.get(slot.id) else {
            continue;
        };
        let changed = slot.value.diff(before);
        let arrays = replace_arrays(slot.id, before, &slot.value, up, &mut |event| {
            callbacks.inner_event(event);
        });
        if !changed.is_empty() || arrays {
            callbacks.post_change_whole(slot.id, &slot.value, changed);
            report.changed += 1;
        }
    }
    callbacks.post_receive(&report);
    report
}

/// Reports the arrays of item `id` that differ between `before` and
/// `after` as replaced: their old items removed, then their new items
/// added. Returns whether any differed.
fn replace_arrays<T: Replicate>(
    id: ReplicationId,
    before: &T,
    after: &T,
    up: Option<&ArrayPath<'_>>,
    sink: &mut dyn FnMut(&InnerEvent<'_>),
) -> bool {
    if T::ARRAY_FIELDS == 0 {
        return false;
    }
    let mut field = 0;
    let mut any = false;
    after.for_each_array(&mut |array| {
        // The same field of `before` (a type has a few array fields).
        let mut index = 0;
        before.for_each_array(&mut |was| {
            if index == field && !was.wire_eq_array(array) {
                let at = ArrayPath {
                    owner: owner::<T>(id, field),
                    up,
                };
                was.retire(&at, sink);
                array.announce(&at, sink);
                any = true;
            }
            index += 1;
        });
        field += 1;
    });
    any
}

/// Applies the decoded delta of one of the array fields of item `id`,
/// `value`, telling `sink` what it did; returns whether it added, changed
/// or removed something.
fn apply_array<T: Replicate>(
    value: &mut T,
    id: ReplicationId,
    delta: ArrayDelta,
    up: Option<&ArrayPath<'_>>,
    sink: &mut dyn FnMut(&InnerEvent<'_>),
) -> bool {
    let at = ArrayPath {
        owner: owner::<T>(id, delta.field),
        up,
    };
    let mut field = 0;
    let mut changed = false;
    let mut delta = Some(delta);
    value.for_each_array_mut(&mut |array| {
        if let Some(delta) = delta.take_if(|delta| delta.field == field) {
            let report = array.apply_decoded_delta(delta.delta, &at, sink);
            changed |= report.added + report.changed + report.removed > 0;
        }
        field += 1;
    });
    changed
}

/// Calls `visit` with each array field of item `id`, `value`, and its
/// path (inside `up`, if the item is itself an inner item).
pub(crate) fn each_array<T: Replicate>(
    id: ReplicationId,
    value: &T,
    up: Option<&ArrayPath<'_>>,
    visit: &mut dyn FnMut(&dyn InnerArray, &ArrayPath<'_>),
) {
    if T::ARRAY_FIELDS == 0 {
        return;
    }
    let mut field = 0;
    value.for_each_array(&mut |array| {
        let at = ArrayPath {
            owner: owner::<T>(id, field),
            up,
        };
        visit(array, &at);
        field += 1;
    });
}

/// Array field `field` of item `id`, a `T`.
fn owner<T: Replicate>(id: ReplicationId, field: usize) -> ArrayOwner {
    ArrayOwner {
        id,
        field: T::ARRAY_FIELD_NAMES.get(field).copied().unwrap_or_default(),
    }
}

/// Tells `sink` about item `id`, `value`, of the array at `at` (`Added`
/// or `Removed`), and about the items of the arrays inside it: an added
/// item before them, a removed one after them.
pub(crate) fn report_whole<T: Replicate + 'static>(
    id: ReplicationId,
    value: &T,
    at: &ArrayPath<'_>,
    change: InnerChange,
    sink: &mut dyn FnMut(&InnerEvent<'_>),
) {
    if change == InnerChange::Added {
        sink(&InnerEvent::new(at, id, change, value));
    }
    each_array(id, value, Some(at), &mut |array, inner| match change {
        InnerChange::Removed => array.retire(inner, sink),
        _ => array.announce(inner, sink),
    });
    if change == InnerChange::Removed {
        sink(&InnerEvent::new(at, id, change, value));
    }
}
