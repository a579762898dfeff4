//! Applying a decoded delta to a mirror: removals (leaving tombstones),
//! adds, then each field that is newer than the one the mirror holds, with
//! the events in Unreal's order.

use super::decode::{ArrayDelta, Decoded, Entry};
use super::events::{ApplyReport, Callbacks};
use super::mirror::Mirror;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::store::Store;

impl Mirror {
    /// Applies a message decoded by [`decode`](Mirror::decode) to this
    /// mirror and its items, `store`, reporting to `callbacks`.
    pub(crate) fn apply<T: Replicate>(
        &mut self,
        store: &mut Store<T>,
        decoded: Decoded<T>,
        callbacks: &mut impl Callbacks<T>,
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

        for id in decoded.removals {
            if let Some(item) = store.get(id) {
                callbacks.pre_remove(id, item);
                store.remove_replicated(id);
                report.removed += 1;
            }
            self.tombstone(id, frame);
        }

        let mut changes = Vec::new();
        let mut inner = decoded.inner.into_iter().peekable();
        for (index, (id, entry)) in decoded.entries.into_iter().enumerate() {
            let mut deltas = core::iter::from_fn(|| inner.next_if(|delta| delta.entry == index));
            let Some(slot) = store.slot_mut(id) else {
                // Validation let through only whole items for unknown ids.
                if let Entry::Whole(mut value) = entry {
                    apply_inner(&mut *value, &mut deltas);
                    store.insert_replicated(id, frame, *value);
                    if let Some(item) = store.get(id) {
                        callbacks.post_add(id, item);
                    }
                    report.added += 1;
                }
                continue;
            };
            // The arrays' deltas carry frames of their own, and apply
            // whatever happens to the entry's plain fields.
            let arrays_changed = apply_inner(&mut slot.value, &mut deltas);
            let frames = slot
                .field_frames
                .get_or_insert_with(|| vec![0; T::FIELD_COUNT as usize].into_boxed_slice());
            let (sent, patch, reshapes) = match entry {
                Entry::Whole(value) => {
                    // Only a change of shape (enum variant) has to be known
                    // before applying.
                    let reshapes = if T::STRUCTURE.is_empty() {
                        FieldMask::EMPTY
                    } else {
                        value.diff(&slot.value) & T::STRUCTURE
                    };
                    (
                        FieldMask::all(T::FIELD_COUNT),
                        Some(value.into_patch()),
                        reshapes,
                    )
                }
                Entry::Fields(mask, patch) => (mask, Some(patch), FieldMask::EMPTY),
                Entry::Arrays => (FieldMask::EMPTY, None, FieldMask::EMPTY),
            };
            // Each field takes the value only if it is newer than the one it
            // holds: duplicates and late copies change nothing.
            let newer = sent.iter().filter(|&f| frames[f as usize] < frame);
            let newer = newer.fold(FieldMask::EMPTY, FieldMask::with);
            let changed = match patch {
                None => FieldMask::EMPTY,
                Some(_) if newer.is_empty() => FieldMask::EMPTY,
                Some(patch) if !(reshapes & newer).is_empty() => {
                    // A newer, different shape (enum variant): the whole value
                    // replaces the old one, and every field dates from this
                    // frame. (No field can hold newer data: changed fields are
                    // only sent once a whole value of the new shape is known to
                    // have arrived.)
                    frames.iter_mut().for_each(|f| *f = frame);
                    slot.value.apply_patch(patch)
                }
                Some(mut patch) => {
                    for field in newer.iter() {
                        frames[field as usize] = frame;
                    }
                    T::retain_fields(&mut patch, newer);
                    // Newer is not different: a field that went A → B → A while
                    // the packet with B was lost arrives newer and unchanged.
                    slot.value.apply_patch(patch)
                }
            };
            if !changed.is_empty() || arrays_changed {
                changes.push((id, changed));
            } else {
                report.skipped += 1;
            }
        }
        for (id, mask) in changes {
            if let Some(item) = store.get(id) {
                callbacks.post_change(id, item, mask);
            }
            report.changed += 1;
        }

        if advanced {
            self.expire(frame);
        }
        callbacks.post_receive(&report);
        report
    }
}

/// Applies the decoded deltas of an item's array fields (in field
/// order); returns whether any of them added, changed or removed something.
fn apply_inner<T: Replicate>(value: &mut T, deltas: &mut impl Iterator<Item = ArrayDelta>) -> bool {
    if T::ARRAY_FIELDS == 0 {
        return false;
    }
    let mut next = deltas.next();
    if next.is_none() {
        return false;
    }
    let mut field = 0;
    let mut changed = false;
    value.for_each_array_mut(&mut |array| {
        if let Some(delta) = next.take_if(|delta| delta.field == field) {
            let report = array.apply_decoded_delta(delta.delta);
            changed |= report.added + report.changed + report.removed > 0;
            next = deltas.next();
        }
        field += 1;
    });
    changed
}
