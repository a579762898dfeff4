//! Applying deltas on a mirror: decode and validate the whole message,
//! then apply it and report events through [`Callbacks`].
//!
//! Packets may arrive late, twice, or out of order. The mirror keeps, per
//! field of each item, the frame of the newest value applied to it, and a
//! field takes a value only from a newer frame; a removal leaves a
//! tombstone (id → frame) so a late add cannot bring the item back; a message more than [`HISTORY_LEN`](crate::HISTORY_LEN)
//! frames older than the newest one applied is ignored whole (its sender
//! has counted it as lost), which also bounds how long tombstones are kept.

use core::any::Any;

use hashbrown::HashMap;

use crate::array::FastArray;
use crate::bits::{BitReader, prealloc};
use crate::error::DecodeError;
use crate::id::ReplicationId;
use crate::id_list::IdReader;
use crate::mask::FieldMask;
use crate::object::ArrayField;
use crate::replicate::Replicate;
use crate::wire::{self, MessageKind, WINDOW};

/// Events of applying a delta, called in Unreal's order: every
/// `pre_remove`, then every `post_add`, then every `post_change`, then
/// `post_receive` once. Every method does nothing by default; `()` is the
/// callbacks value that wants no events.
///
/// ```
/// use fastarray_core::{Callbacks, FieldMask, ReplicationId};
///
/// #[derive(Default)]
/// struct Log(Vec<String>);
///
/// impl Callbacks<u32> for Log {
///     fn post_add(&mut self, id: ReplicationId, item: &u32) {
///         self.0.push(format!("spawn {id} = {item}"));
///     }
///     fn pre_remove(&mut self, id: ReplicationId, _item: &u32) {
///         self.0.push(format!("despawn {id}"));
///     }
/// }
/// ```
pub trait Callbacks<T> {
    /// An item is about to be removed.
    fn pre_remove(&mut self, id: ReplicationId, item: &T) {
        let _ = (id, item);
    }

    /// An item was added.
    fn post_add(&mut self, id: ReplicationId, item: &T) {
        let _ = (id, item);
    }

    /// Fields of an item changed: `changed` names exactly the fields whose
    /// value on the mirror is now different, compared as
    /// [`Replicate::diff`] compares them (a field that arrived from a newer
    /// frame with the value the mirror held is not named, nor a `quantize`
    /// field whose new value quantizes the same). An empty `changed` means
    /// only the item's `#[replicate(array)]` fields did. An entry that
    /// changed nothing makes no call.
    fn post_change(&mut self, id: ReplicationId, item: &T, changed: FieldMask) {
        let _ = (id, item, changed);
    }

    /// The whole message was applied.
    fn post_receive(&mut self, report: &ApplyReport) {
        let _ = report;
    }
}

impl<T> Callbacks<T> for () {}

/// What one [`apply_delta`](FastArray::apply_delta) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// The server frame the message described (`None` for an empty message).
    pub frame: Option<u64>,
    /// Items added.
    pub added: usize,
    /// Items changed: those with a `post_change` call (a field's value or
    /// an array field changed, including whole items that replaced a
    /// different copy).
    pub changed: usize,
    /// Items removed.
    pub removed: usize,
    /// Entries for held or removed items that changed nothing: the item was
    /// removed, the mirror already had newer data for every field the
    /// entry carried, or every value it carried was the one the mirror held
    /// (and none of its arrays changed).
    pub skipped: usize,
    /// Whether the whole message was older than the mirror's window and
    /// ignored.
    pub stale: bool,
}

/// The receiving side's memory of the stream: newest frame and tombstones.
#[derive(Clone, Debug, Default)]
pub(crate) struct MirrorState {
    /// The newest frame of a delta or snapshot applied.
    pub(crate) newest: Option<u64>,
    /// Removed ids and the frame of their removal, for `WINDOW` frames.
    tombstones: HashMap<ReplicationId, u64>,
}

/// One sent item, decoded.
pub(crate) enum Entry<T: Replicate> {
    Whole(T),
    Fields(FieldMask, T::Patch),
}

/// A whole message, decoded and validated, not yet applied.
pub(crate) struct Decoded<T: Replicate> {
    frame: Option<u64>,
    stale: bool,
    removals: Vec<ReplicationId>,
    entries: Vec<(ReplicationId, Entry<T>, Inner)>,
}

/// The decoded deltas of one entry's `#[replicate(array)]` fields, in
/// field order (empty for types without them).
type Inner = Vec<Box<dyn Any>>;

impl<T: Replicate> FastArray<T> {
    /// Applies a delta that fills all of `bytes` (up to zero padding) to
    /// this mirror, calling `callbacks` for what changed. The whole message
    /// is decoded and checked first: on error the mirror is unchanged.
    ///
    /// A mirror is a `FastArray` that only receives: ids come from the
    /// server, and it should not be mutated locally.
    pub fn apply_delta(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        let mut reader = BitReader::new(bytes);
        let decoded = self.decode_delta_checked(&mut reader, true)?;
        reader.expect_end()?;
        Ok(self.apply_decoded(decoded, callbacks))
    }

    /// Applies one delta read from a shared bit stream (several arrays can
    /// share one packet). On error the mirror is unchanged.
    pub fn apply_delta_bits(
        &mut self,
        reader: &mut BitReader<'_>,
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        let decoded = self.decode_delta_checked(reader, true)?;
        Ok(self.apply_decoded(decoded, callbacks))
    }

    /// Decodes one delta. With `check`, it is validated against this
    /// mirror; without, it is only read past (its contents will be dropped,
    /// so a short frame needs no reference and unknown ids are fine).
    pub(crate) fn decode_delta_checked(
        &self,
        reader: &mut BitReader<'_>,
        check: bool,
    ) -> Result<Decoded<T>, DecodeError> {
        let kind_offset = reader.bit_offset();
        let mut decoded = Decoded {
            frame: None,
            stale: false,
            removals: Vec::new(),
            entries: Vec::new(),
        };
        match MessageKind::read(reader)? {
            MessageKind::Empty => return Ok(decoded),
            MessageKind::Delta => {}
            MessageKind::Snapshot => {
                return Err(DecodeError::UnexpectedMessageKind {
                    bit_offset: kind_offset,
                    expected: MessageKind::Delta.name(),
                    found: MessageKind::Snapshot.name(),
                });
            }
        }
        let reference = match (check, self.mirror.newest) {
            (false, None) => Some(0),
            (_, newest) => newest,
        };
        let frame = wire::read_frame(reader, reference)?;
        decoded.frame = Some(frame);
        decoded.stale = self
            .mirror
            .newest
            .is_some_and(|newest| frame.saturating_add(WINDOW) <= newest);

        // Each removal takes at least one bit; each item at least two, plus
        // one per array field.
        let (mut ids, count) = IdReader::start(reader, 1)?;
        decoded.removals.reserve(prealloc::<ReplicationId>(count));
        for _ in 0..count {
            let id = ids.read(reader)?;
            decoded.removals.push(id);
        }
        let (mut ids, count) = IdReader::start(reader, 2 + u64::from(T::ARRAY_FIELDS))?;
        decoded
            .entries
            .reserve(prealloc::<(ReplicationId, Entry<T>, Inner)>(count));
        for _ in 0..count {
            let id = ids.read(reader)?;
            let entry = if reader.read_bool()? {
                Entry::Whole(T::decode(reader)?)
            } else if T::ARRAY_FIELDS > 0 && !reader.read_bool()? {
                // Only the arrays changed.
                Entry::Fields(
                    FieldMask::EMPTY,
                    T::decode_fields(FieldMask::EMPTY, reader)?,
                )
            } else {
                let mask = wire::read_field_set(reader, T::FIELD_COUNT)?;
                Entry::Fields(mask, T::decode_fields(mask, reader)?)
            };
            let inner = if T::ARRAY_FIELDS > 0 {
                self.decode_inner(reader, id, &entry, check && !decoded.stale)?
            } else {
                Vec::new()
            };
            decoded.entries.push((id, entry, inner));
        }
        if check {
            self.validate(&decoded)?;
        }
        Ok(decoded)
    }

    /// Decodes the deltas of an entry's array fields, checked against the
    /// arrays they will be applied to: the mirror's item, or the new item
    /// the entry carries. Those of an entry that will be dropped (removed
    /// item, stale message) are only read past.
    fn decode_inner(
        &self,
        reader: &mut BitReader<'_>,
        id: ReplicationId,
        entry: &Entry<T>,
        check: bool,
    ) -> Result<Inner, DecodeError> {
        let target = match (self.get(id), entry) {
            _ if !check || self.mirror.tombstones.contains_key(&id) => None,
            (Some(held), _) => Some(held),
            (None, Entry::Whole(value)) => Some(value),
            // A partial entry for an unknown item: refused by `validate`.
            (None, Entry::Fields(..)) => None,
        };
        let mut inner = Vec::with_capacity(T::ARRAY_FIELDS as usize);
        let mut failure = None;
        let mut read = |array: &dyn ArrayField| {
            if failure.is_none() {
                match array.decode_delta_from(reader, target.is_some()) {
                    Ok(decoded) => inner.push(decoded),
                    Err(error) => failure = Some(error),
                }
            }
        };
        match target {
            Some(value) => value.for_each_array(&mut read),
            None => T::for_each_empty_array(&mut read),
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(inner),
        }
    }

    /// Checks what decoding alone cannot: no id both removed and sent, and
    /// no partial change for an item this mirror never held.
    fn validate(&self, decoded: &Decoded<T>) -> Result<(), DecodeError> {
        let mut removals = decoded.removals.iter().peekable();
        for (id, entry, _) in &decoded.entries {
            while removals.next_if(|&&r| r < *id).is_some() {}
            if removals.peek() == Some(&id) {
                return Err(DecodeError::DuplicateId { id: *id });
            }
            let partial = matches!(entry, Entry::Fields(..));
            if partial
                && !decoded.stale
                && !self.contains(*id)
                && !self.mirror.tombstones.contains_key(id)
            {
                return Err(DecodeError::UnknownItem { id: *id });
            }
        }
        Ok(())
    }

    pub(crate) fn apply_decoded(
        &mut self,
        decoded: Decoded<T>,
        callbacks: &mut impl Callbacks<T>,
    ) -> ApplyReport {
        let mut report = ApplyReport {
            frame: decoded.frame,
            stale: decoded.stale,
            ..ApplyReport::default()
        };
        let Some(frame) = decoded.frame else {
            callbacks.post_receive(&report);
            return report;
        };
        if decoded.stale {
            report.skipped = decoded.removals.len() + decoded.entries.len();
            callbacks.post_receive(&report);
            return report;
        }
        let advanced = self.mirror.newest.is_none_or(|newest| frame > newest);
        if advanced {
            self.mirror.newest = Some(frame);
        }

        for id in decoded.removals {
            if let Some(item) = self.get(id) {
                callbacks.pre_remove(id, item);
                self.remove_replicated(id);
                report.removed += 1;
            }
            let tombstone = self.mirror.tombstones.entry(id).or_insert(frame);
            *tombstone = (*tombstone).max(frame);
        }

        let mut changes = Vec::new();
        for (id, entry, inner) in decoded.entries {
            if self.mirror.tombstones.contains_key(&id) {
                report.skipped += 1;
                continue;
            }
            let Some(slot) = self.slot_mut(id) else {
                // Validation let through only whole items for unknown ids.
                if let Entry::Whole(value) = entry {
                    self.insert_replicated(id, frame, value);
                    if let Some(slot) = self.slot_mut(id) {
                        apply_inner(&mut slot.value, inner);
                    }
                    if let Some(item) = self.get(id) {
                        callbacks.post_add(id, item);
                    }
                    report.added += 1;
                }
                continue;
            };
            // The arrays' deltas carry frames of their own, and apply
            // whatever happens to the entry's plain fields.
            let arrays_changed = apply_inner(&mut slot.value, inner);
            let frames = slot
                .field_frames
                .get_or_insert_with(|| vec![0; T::FIELD_COUNT as usize].into_boxed_slice());
            let (sent, mut patch, reshapes) = match entry {
                Entry::Whole(value) => {
                    // Only a change of shape (enum variant) has to be known
                    // before applying.
                    let reshapes = if T::STRUCTURE.is_empty() {
                        FieldMask::EMPTY
                    } else {
                        value.diff(&slot.value) & T::STRUCTURE
                    };
                    (FieldMask::all(T::FIELD_COUNT), value.into_patch(), reshapes)
                }
                Entry::Fields(mask, patch) => (mask, patch, FieldMask::EMPTY),
            };
            // Each field takes the value only if it is newer than the one it
            // holds: duplicates and late copies change nothing.
            let newer = sent.iter().filter(|&f| frames[f as usize] < frame);
            let newer = newer.fold(FieldMask::EMPTY, FieldMask::with);
            let changed = if newer.is_empty() {
                FieldMask::EMPTY
            } else if !(reshapes & newer).is_empty() {
                // A newer, different shape (enum variant): the whole value
                // replaces the old one, and every field dates from this
                // frame. (No field can hold newer data: changed fields are
                // only sent once a whole value of the new shape is known to
                // have arrived.)
                frames.iter_mut().for_each(|f| *f = frame);
                slot.value.apply_patch(patch)
            } else {
                for field in newer.iter() {
                    frames[field as usize] = frame;
                }
                T::retain_fields(&mut patch, newer);
                // Newer is not different: a field that went A → B → A while
                // the packet with B was lost arrives newer and unchanged.
                slot.value.apply_patch(patch)
            };
            if !changed.is_empty() || arrays_changed {
                changes.push((id, changed));
            } else {
                report.skipped += 1;
            }
        }
        for (id, mask) in changes {
            if let Some(item) = self.get(id) {
                callbacks.post_change(id, item, mask);
            }
            report.changed += 1;
        }

        if advanced {
            self.mirror
                .tombstones
                .retain(|_, removed| removed.saturating_add(WINDOW) > frame);
        }
        callbacks.post_receive(&report);
        report
    }
}

/// Applies the decoded deltas of an item's array fields; returns whether
/// any of them added, changed or removed something.
fn apply_inner<T: Replicate>(value: &mut T, inner: Inner) -> bool {
    if inner.is_empty() {
        return false;
    }
    let mut deltas = inner.into_iter();
    let mut changed = false;
    value.for_each_array_mut(&mut |array| {
        if let Some(delta) = deltas.next() {
            let report = array.apply_decoded_delta(delta);
            changed |= report.added + report.changed + report.removed > 0;
        }
    });
    changed
}
