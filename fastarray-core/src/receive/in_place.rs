//! The delta most ticks bring, decoded in place: changed fields of items
//! the mirror holds, nothing else (no removal, no whole value, no array
//! inside the items). Its entries are read twice from the
//! message's bits: once to check every one, keeping nothing, then again
//! to apply each in turn. The general path ([`decode`](super::decode))
//! keeps each entry in a list and reads its fields again from where the
//! list says they start; here the second pass walks the same bits in the
//! same order, so nothing is listed, nothing is sought, and each entry's
//! events go as it is applied.
//!
//! A message the first pass finds anything else in (any other entry, a
//! bit it cannot read, an entry for an item the mirror does not hold or
//! drops) is decoded the general way from its first entry on, which
//! applies the same rules and reports the same errors: this path only
//! ever takes messages that the general one would apply as it does.

use crate::bits::{BitReader, prealloc};
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::receive_state::early::FieldBits;
use crate::receive_state::events::{ApplyReport, Callbacks};
use crate::receive_state::mirror::{Mirror, Named};
use crate::replicate::Replicate;
use crate::store::take_newer;
use crate::store::{Near, Store};
use crate::wire::field_set::read_field_set;
use crate::wire::id_list::IdReader;

#[cfg(test)]
thread_local! {
    /// Set while a test makes every message go the general way
    /// ([`general_only`]).
    static GENERAL_ONLY: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Whether a message may apply in place: always, but where a test compares
/// the two paths ([`general_only`]).
#[inline]
pub(super) fn allowed() -> bool {
    #[cfg(test)]
    if GENERAL_ONLY.get() {
        return false;
    }
    true
}

/// Runs `run` with every message decoded and applied the general way, for
/// the tests that compare the two paths.
#[cfg(test)]
pub(crate) fn general_only<R>(run: impl FnOnce() -> R) -> R {
    GENERAL_ONLY.set(true);
    let result = run();
    GENERAL_ONLY.set(false);
    result
}

/// A message's entries, checked by [`check`] to apply in place: how to
/// read them again from the copy of their bits ([`FieldBits`], from the
/// first entry's id on), and where each one's item is.
#[derive(Clone)]
pub(crate) struct InPlace {
    /// The item list's reader, as it stood before its first id.
    ids: IdReader,
    /// The message's bit the first id starts at.
    at: u64,
    /// The changed fields every entry carries, if the message states them
    /// once.
    common: Option<FieldMask>,
    /// Per entry, in order, the position of its item in the store: the
    /// message removes and adds nothing, so the second pass finds each
    /// item where the first did, with no lookup (of a handle, nor of an
    /// id).
    positions: Vec<u32>,
}

/// The first pass: reads the `count` entries of a message of `frame` from
/// `reader` (with `ids`, before the first), each of them changed fields
/// (the same `common` ones, if the message states them) of an item
/// `store` holds that `mirror` does not drop, named by its handle if
/// `handles`. Returns what the second pass needs, the reader past the last
/// entry; `None` at the first entry that is anything else or does not
/// read, the reader somewhere inside the list (the caller reads it again
/// from the start).
pub(super) fn check<T: Replicate>(
    reader: &mut BitReader<'_>,
    ids: &IdReader,
    count: usize,
    common: Option<FieldMask>,
    handles: bool,
    (mirror, store, frame): (&Mirror, &Store<T>, u64),
) -> Option<InPlace> {
    debug_assert_eq!(T::ARRAY_FIELDS, 0, "an entry may carry only its arrays");
    let at = reader.bit_offset();
    let (mut list, mut near) = (ids.clone(), Near::default());
    // Every entry takes 2 bits or more: `count` was checked against them.
    let mut positions = Vec::with_capacity(prealloc::<u32>(count));
    for _ in 0..count {
        let (wire, mask) = read_head::<T>(reader, &mut list, common)?;
        let id = named(mirror, wire, handles, frame)?;
        T::check_fields(mask, reader).ok()?;
        let pos = store.locate(id, &mut near)?;
        if mirror.drops_entry(id, frame, store.slot(pos).returned_after()) {
            return None;
        }
        positions.push(u32::try_from(pos).ok()?);
    }
    Some(InPlace {
        ids: ids.clone(),
        at,
        common,
        positions,
    })
}

/// The second pass: applies the entries `in_place` found, read again from
/// `bits`, to `store`'s items, a message of `frame`: each field newer than
/// the one its item holds takes its value, and the entry's `post_change`
/// goes to `callbacks` at once (a message with no removal and no add has
/// no other event to order them after).
pub(super) fn apply<T: Replicate>(
    store: &mut Store<T>,
    in_place: InPlace,
    bits: &FieldBits,
    frame: u64,
    callbacks: &mut impl Callbacks<T>,
    report: &mut ApplyReport,
) {
    let InPlace {
        mut ids,
        at,
        common,
        positions,
    } = in_place;
    let (mut reader, base) = bits.reader();
    reader.seek(at - base);
    for pos in positions {
        // The head is read again only to reach the fields.
        let Some((_, mask)) = read_head::<T>(&mut reader, &mut ids, common) else {
            debug_assert!(false, "a checked entry failed to read again");
            return;
        };
        let (slot, frames) = store.slot_and_frames_mut(pos as usize);
        // Each field takes the value only if it is newer than the one it
        // holds (see `Mirror::apply`); the others are read past.
        let newer = take_newer(frames, mask, frame);
        let applied = slot.value.apply_fields(mask, newer, &mut reader);
        debug_assert!(applied.is_ok(), "checked fields failed to decode again");
        let changed = applied.unwrap_or(FieldMask::EMPTY);
        if changed.is_empty() {
            report.skipped += 1;
        } else {
            callbacks.post_change(slot.id, &slot.value, changed);
            report.changed += 1;
        }
    }
}

/// Reads the head of an entry of changed fields: its id and its changed
/// fields (`common`, if the message states them once); `None` if it does
/// not read, or is whole. In line, always: called from both passes, it
/// was left as a call, and a hot tick's apply took a fifth more
/// instructions.
#[inline(always)]
fn read_head<T: Replicate>(
    reader: &mut BitReader<'_>,
    ids: &mut IdReader,
    common: Option<FieldMask>,
) -> Option<(ReplicationId, FieldMask)> {
    let id = ids.read(reader).ok()?;
    if reader.read_bool().ok()? {
        return None;
    }
    let mask = match common {
        Some(mask) => mask,
        None => read_field_set(reader, T::FIELD_COUNT).ok()?,
    };
    Some((id, mask))
}

/// The item an entry of a message of `frame` names as `wire`: its id, or
/// the item its handle names (`None` if it names none: the general path
/// reads such an entry past, or refuses it).
#[inline]
fn named(mirror: &Mirror, wire: ReplicationId, handles: bool, frame: u64) -> Option<ReplicationId> {
    if !handles {
        return Some(wire);
    }
    match mirror.named(wire.to_raw(), frame) {
        Named::Item(id) => Some(id),
        Named::Gone | Named::Unknown => None,
    }
}
