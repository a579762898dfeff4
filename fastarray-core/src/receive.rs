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

use crate::array::FastArray;
use crate::bits::{BitReader, prealloc};
use crate::error::DecodeError;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::tombstones::Tombstones;
use crate::wire::id_list::IdReader;
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
    /// Removed ids, for a window of frames.
    tombstones: Tombstones,
    /// Whether this mirror is a replicated object's: item `#0` alone,
    /// never removed.
    pub(crate) object: bool,
    /// The frame of the snapshot this mirror was loaded from: it holds
    /// everything up to it, so older messages have nothing to add (and
    /// their adds could bring back items removed before it).
    floor: Option<u64>,
}

/// One sent item, decoded.
pub(crate) enum Entry<T: Replicate> {
    /// The whole item, boxed: a message's entries then take a few words
    /// each whatever the size of the item type (an item with array fields
    /// holds a `FastArray` per field), and a whole value, which costs at
    /// least the type's `MIN_BITS`, is the only one that pays for its size.
    Whole(Box<T>),
    /// Some of its plain fields.
    Fields(FieldMask, T::Patch),
    /// None of its plain fields: only its arrays changed.
    Arrays,
}

/// A whole message, decoded and validated, not yet applied.
pub(crate) struct Decoded<T: Replicate> {
    /// `None` for an empty message.
    frame: Option<u64>,
    /// Whether the message is a window older than the mirror: it is read
    /// past, and nothing of it is kept.
    stale: bool,
    removals: Vec<ReplicationId>,
    /// The entries for items that are not tombstoned, in id order.
    entries: Vec<(ReplicationId, Entry<T>)>,
    /// The array deltas of those entries that have something to apply,
    /// in entry order.
    inner: Vec<InnerDelta>,
    /// Entries read past: for tombstoned items, or all of a stale message.
    skipped: usize,
}

/// The decoded delta of one `#[replicate(array)]` field of an entry.
pub(crate) struct InnerDelta {
    /// The entry's index in [`Decoded::entries`].
    entry: usize,
    /// The array field's index, in declaration order.
    field: usize,
    delta: Box<dyn Any>,
}

impl<T: Replicate> Decoded<T> {
    fn empty() -> Self {
        Self {
            frame: None,
            stale: false,
            removals: Vec::new(),
            entries: Vec::new(),
            inner: Vec::new(),
            skipped: 0,
        }
    }

    /// Whether applying it can change anything (a message with a frame that
    /// is not stale: even with every entry skipped it moves the window).
    pub(crate) fn has_effect(&self) -> bool {
        self.frame.is_some() && !self.stale
    }
}

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
        let decoded = self.decode_delta(&mut reader)?;
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
        let decoded = self.decode_delta(reader)?;
        Ok(self.apply_decoded(decoded, callbacks))
    }

    /// The receiving side's state, made on first use.
    fn mirror_mut(&mut self) -> &mut MirrorState {
        self.mirror.get_or_insert_with(Box::default)
    }

    /// Starts this mirror at a snapshot of `frame`: messages of that frame
    /// or older are ignored whole, like stale ones.
    pub(crate) fn receive_from_snapshot(&mut self, frame: u64) {
        let mirror = self.mirror_mut();
        mirror.newest = Some(frame);
        mirror.floor = Some(frame);
    }

    /// Makes this mirror a replicated object's: a message that removes an
    /// item or names one other than `#0` is refused.
    pub(crate) fn receive_as_object(&mut self) {
        self.mirror_mut().object = true;
    }

    /// Decodes one delta and validates it against this mirror.
    pub(crate) fn decode_delta(
        &self,
        reader: &mut BitReader<'_>,
    ) -> Result<Decoded<T>, DecodeError> {
        let mut decoded = Decoded::empty();
        if !read_kind(reader)? {
            return Ok(decoded);
        }
        let state = self.mirror.as_deref();
        let newest = state.and_then(|state| state.newest);
        let frame = wire::frame::FrameField::read(reader)?.resolve(newest)?;
        decoded.frame = Some(frame);
        decoded.stale = newest.is_some_and(|newest| frame.saturating_add(WINDOW) <= newest)
            || state
                .and_then(|state| state.floor)
                .is_some_and(|floor| frame <= floor);
        Self::read_body(reader, Some((self, &mut decoded)))?;
        Ok(decoded)
    }

    /// Reads past one delta whose contents will be dropped (the entry that
    /// carries it is for a removed item, or its message is stale): every
    /// value is decoded and dropped at once, nothing is checked against a
    /// mirror, and a short frame needs no reference.
    pub(crate) fn skip_delta(reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
        if read_kind(reader)? {
            wire::frame::FrameField::read(reader)?;
            Self::read_body(reader, None)?;
        }
        Ok(())
    }

    /// Reads a delta's removals and items. With a mirror, checks them
    /// against it and keeps in `decoded` what there is to apply (nothing
    /// of a stale message); without, only reads past them.
    fn read_body(
        reader: &mut BitReader<'_>,
        check: Option<(&Self, &mut Decoded<T>)>,
    ) -> Result<(), DecodeError> {
        let (mirror, mut into) = match check {
            Some((mirror, decoded)) => (Some(mirror), Some(decoded)),
            None => (None, None),
        };
        let state = mirror.and_then(|mirror| mirror.mirror.as_deref());
        let object = state.is_some_and(|state| state.object);
        // Each removal takes at least one bit; each item at least two, plus
        // one per array field.
        let (mut ids, count) = IdReader::start(reader, 1)?;
        let mut removals = Vec::new();
        if into.is_some() {
            removals.reserve(prealloc::<ReplicationId>(count));
        }
        for _ in 0..count {
            let id = ids.read(reader)?;
            if object {
                return Err(DecodeError::NotAnObjectChange { id });
            }
            if into.is_some() {
                removals.push(id);
            }
        }
        let (mut ids, count) = IdReader::start(reader, 2 + u64::from(T::ARRAY_FIELDS))?;
        let keep = into.as_deref().is_some_and(|decoded| !decoded.stale);
        if let Some(decoded) = into.as_deref_mut() {
            if keep {
                decoded
                    .entries
                    .reserve(prealloc::<(ReplicationId, Entry<T>)>(count));
            } else {
                decoded.skipped = removals.len() + count;
            }
        }
        let mut removed = removals.iter().peekable();
        for _ in 0..count {
            let id = ids.read(reader)?;
            let entry = if reader.read_bool()? {
                Entry::Whole(Box::new(T::decode(reader)?))
            } else if T::ARRAY_FIELDS > 0 && !reader.read_bool()? {
                Entry::Arrays
            } else {
                let mask = wire::field_set::read_field_set(reader, T::FIELD_COUNT)?;
                Entry::Fields(mask, T::decode_fields(mask, reader)?)
            };
            let (Some(mirror), Some(decoded)) = (mirror, into.as_deref_mut()) else {
                if T::ARRAY_FIELDS > 0 {
                    skip_arrays::<T>(reader)?;
                }
                continue;
            };
            // Checks that need no other entry: removals and items are both
            // ascending, so a duplicate is found walking them together.
            while removed.next_if(|&&r| r < id).is_some() {}
            if removed.peek() == Some(&&id) {
                return Err(DecodeError::DuplicateId { id });
            }
            if object && id != OBJECT {
                return Err(DecodeError::NotAnObjectChange { id });
            }
            let tombstoned = state.is_some_and(|state| state.tombstones.contains(id));
            let held = mirror.get(id);
            if !matches!(entry, Entry::Whole(_)) && !decoded.stale && !tombstoned && held.is_none()
            {
                return Err(DecodeError::UnknownItem { id });
            }
            if !keep || tombstoned {
                if keep {
                    decoded.skipped += 1;
                }
                if T::ARRAY_FIELDS > 0 {
                    skip_arrays::<T>(reader)?;
                }
                continue;
            }
            if T::ARRAY_FIELDS > 0 {
                // Checked against the arrays they will be applied to: the
                // mirror's item, or the new item the entry carries.
                let target = match (held, &entry) {
                    (Some(held), _) => held,
                    (None, Entry::Whole(value)) => value,
                    (None, _) => unreachable!("refused above: a partial entry for an unknown item"),
                };
                let index = decoded.entries.len();
                let mut field = 0;
                let mut failure = None;
                target.for_each_array(&mut |array| {
                    if failure.is_none() {
                        match array.decode_delta_from(reader) {
                            Ok(Some(delta)) => decoded.inner.push(InnerDelta {
                                entry: index,
                                field,
                                delta,
                            }),
                            Ok(None) => {}
                            Err(error) => failure = Some(error),
                        }
                    }
                    field += 1;
                });
                if let Some(error) = failure {
                    return Err(error);
                }
            }
            decoded.entries.push((id, entry));
        }
        if let Some(decoded) = into {
            decoded.removals = removals;
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
        let mirror = self.mirror_mut();
        let advanced = mirror.newest.is_none_or(|newest| frame > newest);
        if advanced {
            mirror.newest = Some(frame);
        }

        for id in decoded.removals {
            if let Some(item) = self.get(id) {
                callbacks.pre_remove(id, item);
                self.remove_replicated(id);
                report.removed += 1;
            }
            self.mirror_mut().tombstones.insert(id, frame);
        }

        let mut changes = Vec::new();
        let mut inner = decoded.inner.into_iter().peekable();
        for (index, (id, entry)) in decoded.entries.into_iter().enumerate() {
            let mut deltas = core::iter::from_fn(|| inner.next_if(|delta| delta.entry == index));
            let Some(slot) = self.slot_mut(id) else {
                // Validation let through only whole items for unknown ids.
                if let Entry::Whole(mut value) = entry {
                    apply_inner(&mut *value, &mut deltas);
                    self.insert_replicated(id, frame, *value);
                    if let Some(item) = self.get(id) {
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
            if let Some(item) = self.get(id) {
                callbacks.post_change(id, item, mask);
            }
            report.changed += 1;
        }

        if advanced {
            self.mirror_mut().tombstones.expire(frame);
        }
        callbacks.post_receive(&report);
        report
    }
}

/// The item of a replicated object's array.
const OBJECT: ReplicationId = ReplicationId::from_raw(0);

/// Reads a message's kind: `true` for a delta, `false` for an empty one.
fn read_kind(reader: &mut BitReader<'_>) -> Result<bool, DecodeError> {
    let bit_offset = reader.bit_offset();
    match MessageKind::read(reader)? {
        MessageKind::Empty => Ok(false),
        MessageKind::Delta => Ok(true),
        MessageKind::Snapshot => Err(DecodeError::UnexpectedMessageKind {
            bit_offset,
            expected: MessageKind::Delta.name(),
            found: MessageKind::Snapshot.name(),
        }),
    }
}

/// Reads past the array deltas of an entry whose contents are dropped.
fn skip_arrays<T: Replicate>(reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
    let mut result = Ok(());
    T::for_each_empty_array(&mut |array| {
        if result.is_ok() {
            result = array.skip_delta_from(reader);
        }
    });
    result
}

/// Applies the decoded deltas of an item's array fields (in field
/// order); returns whether any of them added, changed or removed something.
fn apply_inner<T: Replicate>(value: &mut T, deltas: &mut impl Iterator<Item = InnerDelta>) -> bool {
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
