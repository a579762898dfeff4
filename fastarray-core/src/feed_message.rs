//! Feed messages: what a server sends its relays (see the "Relays" section
//! of [`FastArray`](crate::FastArray) and `WIRE.md`). A feed is written
//! once a frame for every relay, with every field of every item, owners
//! included: a relay is trusted, and serves each of its clients what the
//! audience and detail rules let that client see.
//!
//! Layout. Every message starts with its kind in 4 bits (9 a frame, 10 a
//! snapshot), the item type's 64-bit `SCHEMA_HASH` (a relay of another
//! type refuses it), the stream's 64-bit epoch, the frame as a varint and
//! the server's [shard](ShardId) as a varint (0 when not sharded).
//! Each list of ids is written as a delta's lists are ([`IdWriter`]: the
//! count, then the gaps between ascending ids in the code that costs
//! least); an owner is one bit, then the client as a varint if set.
//!
//! - A frame: the ids removed (count, ids); the items handed off to
//!   another shard (count, then per item its id, the shard and its
//!   tenure, varints); the items added (count, then per item its id,
//!   owner and every field); those of them adopted from another shard
//!   (count, then per item its id and tenure); the items changed (count,
//!   then per item its id, the set of fields changed — `initial_only`
//!   ones included, which no delta carries — and those fields); the items
//!   whose owner moved (count, then id and owner).
//! - A snapshot: the id the server's next push takes (varint), then the
//!   items (count, then per item its id, owner and every field), the
//!   tenures of those that changed shards (count, then id and tenure),
//!   and the items handed off in the frames the history holds and not
//!   held again (as a frame's).
//!
//! The handoff of one item from shard to shard is a message of its own:
//! kind 11, the schema hash, its id and tenure (varints), its owner and
//! every field.
//!
//! An item type with `#[replicate(array)]` fields writes, wherever an item
//! goes whole, each of its arrays after its fields ([`write_array`]: the
//! id the array's next push takes, then its items, each with its owner,
//! every field and its own arrays); a change has a bit before its field
//! set (fields changed) and one after its fields (its arrays changed:
//! then, per array, what its last commit changed, [`write_array_changes`],
//! its changed items whole).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::bits::{BitReader, BitWriter, prealloc};
use crate::changeset::Changeset;
use crate::error::{DecodeError, EncodeError};
use crate::history::History;
use crate::id::ReplicationId;
use crate::inner_array::{Follower, InnerDelta};
use crate::limits::ArrayLimits;
use crate::mask::FieldMask;
use crate::replicate::{Replicate, encode_whole, wire_schema};
use crate::send_state::audience::Owners;
use crate::send_state::tenures::Tenures;
use crate::shard::ShardId;
use crate::snapshot_message::read_schema_hash;
use crate::store::{Slot, Store};
use crate::wire::field_set::{read_field_set, write_field_set};
use crate::wire::id_list::{IdReader, IdWriter};

pub(crate) mod ghost;

const FRAME: u64 = 0b1001;
const SNAPSHOT: u64 = 0b1010;
const HANDOFF: u64 = 0b1011;
const KIND_BITS: u32 = 4;

/// The head of every feed message: which stream, which frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) epoch: u64,
    pub(crate) frame: u64,
    pub(crate) shard: ShardId,
}

/// The stream a server's feed is: its epoch and shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stream {
    pub(crate) epoch: u64,
    pub(crate) shard: ShardId,
}

/// One frame's changes, decoded.
pub(crate) struct Frame<T: Replicate> {
    pub(crate) head: Head,
    pub(crate) removed: Vec<ReplicationId>,
    pub(crate) handed: Vec<(ReplicationId, ShardId, u32)>,
    pub(crate) added: Vec<(ReplicationId, Option<u64>, T)>,
    pub(crate) adopted: Vec<(ReplicationId, u32)>,
    pub(crate) changed: Vec<Change<T>>,
    pub(crate) moved: Vec<(ReplicationId, Option<u64>)>,
}

/// One item's change, decoded: its fields that changed, and its arrays
/// whole if they changed (only a type with `#[replicate(array)]` fields
/// has a change of arrays, or one of no field).
pub(crate) struct Change<T: Replicate> {
    pub(crate) id: ReplicationId,
    pub(crate) patch: Option<T::Patch>,
    pub(crate) arrays: Option<Arrays>,
}

/// An item's arrays as a change carries them: what each of its
/// `#[replicate(array)]` fields' last commit changed, in declaration order
/// (`None`: nothing), as [`InnerArray::read_follow_changes`] reads it.
pub(crate) type Arrays = Vec<Option<InnerDelta>>;

/// What the last commit of an array inside an item changed, decoded for a
/// relay ([`write_array_changes`]). Changed items come whole: a relay's
/// array writes them over its own (no guard, so the item type need not be
/// `Clone`), and its commit finds which fields changed.
pub(crate) struct ArrayChanges<U> {
    /// The limits the array is held to.
    pub(crate) limits: ArrayLimits,
    pub(crate) removed: Vec<ReplicationId>,
    pub(crate) added: Vec<(ReplicationId, Option<u64>, U)>,
    pub(crate) changed: Vec<(ReplicationId, U)>,
    pub(crate) moved: Vec<(ReplicationId, Option<u64>)>,
}

/// A whole array, decoded.
pub(crate) struct Snapshot<T> {
    pub(crate) head: Head,
    pub(crate) next_id: u64,
    pub(crate) items: Vec<(ReplicationId, Option<u64>, T)>,
    pub(crate) counts: Vec<(ReplicationId, u32)>,
    pub(crate) handed: Vec<(ReplicationId, ShardId, u32)>,
}

/// One item handed off from shard to shard, decoded.
pub(crate) struct Handoff<T> {
    pub(crate) id: ReplicationId,
    pub(crate) count: u32,
    pub(crate) owner: Option<u64>,
    pub(crate) value: T,
}

/// A feed message, decoded.
pub(crate) enum Message<T: Replicate> {
    Frame(Frame<T>),
    Snapshot(Snapshot<T>),
}

/// Writes the start every stream's message has (a feed's, a ghost
/// feed's): its kind, the type's schema hash, the stream's epoch and the
/// message's place in it (a frame, a number).
fn write_stream_head<T: Replicate>(writer: &mut BitWriter<'_>, kind: u64, epoch: u64, at: u64) {
    writer.write_bits(kind, KIND_BITS);
    writer.write_bits(wire_schema::<T>(), 64);
    writer.write_bits(epoch, 64);
    writer.write_varint(at);
}

/// Reads what [`write_stream_head`] wrote, refusing a kind that is not one
/// of `kinds` (which `expected` names): the kind, the epoch and the place.
fn read_stream_head<T: Replicate>(
    reader: &mut BitReader<'_>,
    kinds: [u64; 2],
    expected: &'static str,
) -> Result<(u64, u64, u64), DecodeError> {
    let bit_offset = reader.bit_offset();
    let kind = reader.read_bits(KIND_BITS)?;
    if !kinds.contains(&kind) {
        return Err(DecodeError::UnexpectedMessageKind {
            bit_offset,
            expected,
            found: "another kind",
        });
    }
    read_schema_hash::<T>(reader)?;
    let epoch = reader.read_bits(64)?;
    let at = reader.read_varint()?;
    Ok((kind, epoch, at))
}

fn write_head<T: Replicate>(writer: &mut BitWriter<'_>, kind: u64, head: Head) {
    write_stream_head::<T>(writer, kind, head.epoch, head.frame);
    writer.write_varint(head.shard.get().into());
}

fn write_owner(writer: &mut BitWriter<'_>, owner: Option<u64>) {
    writer.write_bool(owner.is_some());
    if let Some(client) = owner {
        writer.write_varint(client);
    }
}

fn read_owner(reader: &mut BitReader<'_>) -> Result<Option<u64>, DecodeError> {
    Ok(if reader.read_bool()? {
        Some(reader.read_varint()?)
    } else {
        None
    })
}

/// The committed owner of `id`.
fn owner_of(owners: Option<&Owners>, id: ReplicationId) -> Option<u64> {
    owners.and_then(|owners| owners.committed_owner(id))
}

/// Writes the frame `changes` of `store` (its newest commit, nothing
/// written since) for the stream `epoch`. On error, names the item that
/// failed.
pub(crate) fn write_frame<T: Replicate>(
    store: &Store<T>,
    owners: Option<&Owners>,
    changes: &Changeset,
    stream: Stream,
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    let head = Head {
        epoch: stream.epoch,
        frame: changes.frame,
        shard: stream.shard,
    };
    write_head::<T>(writer, FRAME, head);
    let handed = |id: &ReplicationId| {
        (changes.handed)
            .binary_search_by_key(id, |&(id, ..)| id)
            .is_ok()
    };
    let removed: Cow<'_, [ReplicationId]> = if changes.handed.is_empty() {
        Cow::Borrowed(&changes.removed)
    } else {
        let plain = changes.removed.iter().filter(|id| !handed(id));
        Cow::Owned(plain.copied().collect())
    };
    write_ids(writer, &removed);
    write_handed(writer, &changes.handed);
    let mut ids = IdWriter::start(writer, changes.added.iter().copied());
    for &id in &changes.added {
        let value = store.get(id).expect("a committed add is held");
        ids.write(writer, id);
        write_owner(writer, owner_of(owners, id));
        write_value(value, Follower::Relay, writer).map_err(|error| (id, error))?;
    }
    write_counts(writer, &changes.adopted);
    let changed = merged(&changes.changed, &changes.initial);
    write_changes(store, &changed, &changes.arrays_changed, writer)?;
    write_moved(store, owners, changes, writer);
    Ok(())
}

/// Writes the items whose owner `changes` moved, with their owners: those
/// held and not added (an add carries its owner; an item removed since
/// has none).
fn write_moved<T>(
    store: &Store<T>,
    owners: Option<&Owners>,
    changes: &Changeset,
    writer: &mut BitWriter<'_>,
) {
    let moved: Vec<ReplicationId> = changes
        .moved
        .iter()
        .copied()
        .filter(|&id| store.get(id).is_some() && changes.added.binary_search(&id).is_err())
        .collect();
    let mut ids = IdWriter::start(writer, moved.iter().copied());
    for &id in &moved {
        ids.write(writer, id);
        write_owner(writer, owner_of(owners, id));
    }
}

/// Reads what [`write_moved`] wrote.
fn read_moved(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Vec<(ReplicationId, Option<u64>)>, DecodeError> {
    let (mut ids, count) = read_ids(reader, 2, limits)?;
    let mut moved = Vec::with_capacity(prealloc::<(ReplicationId, Option<u64>)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        moved.push((id, read_owner(reader)?));
    }
    Ok(moved)
}

/// Writes what the last commit of an array inside an item, `store` (owned
/// by `owners`, its newest changeset `changes`), changed, for a relay: a
/// bit (whether it changed: its newest changeset is of its last commit and
/// not empty), then the ids removed, the items added (id, owner,
/// [`write_value`]), the items changed, whole (id, [`write_value`]: their
/// own arrays whole too), and the owners moved (id, owner).
pub(crate) fn write_array_changes<U: Replicate>(
    store: &Store<U>,
    owners: Option<&Owners>,
    changes: Option<&Changeset>,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    let changes = changes.filter(|changes| {
        let something = !changes.is_empty() || !changes.initial.is_empty();
        changes.frame == store.frame() && (something || !changes.moved.is_empty())
    });
    writer.write_bool(changes.is_some());
    let Some(changes) = changes else {
        return Ok(());
    };
    write_ids(writer, &changes.removed);
    let mut ids = IdWriter::start(writer, changes.added.iter().copied());
    for &id in &changes.added {
        let value = store.get(id).expect("a committed add is held");
        ids.write(writer, id);
        write_owner(writer, owner_of(owners, id));
        write_value(value, Follower::Relay, writer)?;
    }
    let fields = merged(&changes.changed, &changes.initial);
    let changed = with_arrays(&fields, &changes.arrays_changed);
    let mut ids = IdWriter::start(writer, changed.iter().map(|&(id, _)| id));
    for &(id, _) in changed.iter() {
        let value = store.get(id).expect("a change is of an item held");
        ids.write(writer, id);
        write_value(value, Follower::Relay, writer)?;
    }
    write_moved(store, owners, changes, writer);
    Ok(())
}

/// Reads what [`write_array_changes`] wrote (`None`: nothing changed),
/// refusing more entries than `limits` allow.
pub(crate) fn read_array_changes<U: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Option<ArrayChanges<U>>, DecodeError> {
    if !reader.read_bool()? {
        return Ok(None);
    }
    let inner = limits.for_arrays(false);
    let removed = read_removals(reader, limits)?;
    let added = read_items(reader, limits, inner)?;
    let (mut ids, count) = read_ids(reader, 1 + U::MIN_BITS, limits)?;
    let mut changed = Vec::with_capacity(prealloc::<(ReplicationId, U)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        changed.push((id, read_value(reader, Follower::Relay, inner)?));
    }
    let moved = read_moved(reader, limits)?;
    Ok(Some(ArrayChanges {
        limits,
        removed,
        added,
        changed,
        moved,
    }))
}

/// Refuses `changes` unless they apply to `store`, the array they were
/// written for as it was: every item removed, changed or given an owner
/// is held (and not removed), no item added is, and the array stays
/// within its limits.
pub(crate) fn check_array_changes<U>(
    store: &Store<U>,
    changes: &ArrayChanges<U>,
) -> Result<(), DecodeError> {
    let held = |id: ReplicationId| store.position(id).is_some();
    let removed = |id: &ReplicationId| changes.removed.binary_search(id).is_ok();
    if let Some(&id) = changes.removed.iter().find(|&&id| !held(id)) {
        return Err(DecodeError::UnknownItem { id });
    }
    if let Some(&(id, ..)) = changes.added.iter().find(|&&(id, ..)| held(id)) {
        return Err(DecodeError::DuplicateId { id });
    }
    let kept = store.len() - changes.removed.len();
    changes.limits.check_items(kept + changes.added.len())?;
    let named =
        (changes.changed.iter().map(|(id, _)| id)).chain(changes.moved.iter().map(|(id, _)| id));
    let added = |id: &ReplicationId| {
        (changes.added)
            .binary_search_by_key(id, |&(id, ..)| id)
            .is_ok()
    };
    for id in named {
        if !held(*id) || removed(id) || added(id) {
            return Err(DecodeError::UnknownItem { id: *id });
        }
    }
    Ok(())
}

/// Writes a list of ids (ascending).
fn write_ids(writer: &mut BitWriter<'_>, ids: &[ReplicationId]) {
    let mut list = IdWriter::start(writer, ids.iter().copied());
    for &id in ids {
        list.write(writer, id);
    }
}

/// Writes a list of changes of items of `store` (ascending by id): those
/// of fields `changed`, and of the arrays of the items `arrays` (for a
/// relay). Per item its id, the set of fields and those fields; for a
/// type with `#[replicate(array)]` fields, a bit before the set (whether
/// fields changed) and one after the fields (whether its arrays changed,
/// then what each array's last commit changed,
/// [`InnerArray::write_follow_changes`]). On error, names the item.
fn write_changes<T: Replicate>(
    store: &Store<T>,
    changed: &[(ReplicationId, FieldMask)],
    arrays: &[ReplicationId],
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    let entries = with_arrays(changed, arrays);
    let mut ids = IdWriter::start(writer, entries.iter().map(|&(id, _)| id));
    for &(id, fields) in entries.iter() {
        let value = store.get(id).expect("a change is of an item held");
        ids.write(writer, id);
        let has_arrays = T::ARRAY_FIELDS > 0;
        if has_arrays {
            writer.write_bool(!fields.is_empty());
        }
        if !fields.is_empty() {
            write_field_set(writer, fields, T::FIELD_COUNT);
            (value.encode_fields(fields, writer)).map_err(|error| (id, error))?;
        }
        if has_arrays {
            let inside = arrays.binary_search(&id).is_ok();
            writer.write_bool(inside);
            if inside {
                let mut result = Ok(());
                value.for_each_array(&mut |array| {
                    if result.is_ok() {
                        result = array.write_follow_changes(writer);
                    }
                });
                result.map_err(|error| (id, error))?;
            }
        }
    }
    Ok(())
}

/// The entries of a list of changes: `changed`, and the items `arrays`
/// (ascending) not in it, with no field.
fn with_arrays<'a>(
    changed: &'a [(ReplicationId, FieldMask)],
    arrays: &[ReplicationId],
) -> Cow<'a, [(ReplicationId, FieldMask)]> {
    if arrays.is_empty() {
        return Cow::Borrowed(changed);
    }
    let listed = |id: &ReplicationId| changed.binary_search_by_key(id, |&(id, _)| id).is_ok();
    let only = arrays.iter().filter(|id| !listed(id));
    let mut all: Vec<_> = (changed.iter().copied())
        .chain(only.map(|&id| (id, FieldMask::EMPTY)))
        .collect();
    all.sort_unstable_by_key(|&(id, _)| id);
    Cow::Owned(all)
}

/// Writes `value` as a follower takes it whole: its fields (every one
/// for a relay, the ghost fields for a ghost), then each of its arrays
/// ([`InnerArray::write_follow`]).
pub(crate) fn write_value<T: Replicate>(
    value: &T,
    follower: Follower,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    encode_whole(value, follower_fields::<T>(follower), writer)?;
    write_arrays(value, follower, writer)
}

/// Writes each array of `value` whole, for `follower`.
fn write_arrays<T: Replicate>(
    value: &T,
    follower: Follower,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    let mut result = Ok(());
    value.for_each_array(&mut |array| {
        if result.is_ok() {
            result = array.write_follow(follower, writer);
        }
    });
    result
}

/// The fields of a `T` a follower holds.
fn follower_fields<T: Replicate>(follower: Follower) -> FieldMask {
    match follower {
        Follower::Relay => FieldMask::all(T::FIELD_COUNT),
        Follower::Ghost => ghost::ghost_fields::<T>(),
    }
}

/// Reads what [`write_value`] wrote, the arrays inside it within `inner`.
pub(crate) fn read_value<T: Replicate>(
    reader: &mut BitReader<'_>,
    follower: Follower,
    inner: ArrayLimits,
) -> Result<T, DecodeError> {
    let fields = follower_fields::<T>(follower);
    let mut value = if fields == FieldMask::all(T::FIELD_COUNT) {
        T::decode(reader)?
    } else {
        T::decode_visible(fields, reader)?
    };
    let mut result = Ok(());
    value.for_each_array_mut(&mut |array| {
        if result.is_ok() {
            result = array.read_follow(follower, reader, inner);
        }
    });
    result.map(|()| value)
}

/// Reads the changes of the arrays of a `T` written by [`write_changes`],
/// each within `inner`.
fn read_arrays<T: Replicate>(
    reader: &mut BitReader<'_>,
    inner: ArrayLimits,
) -> Result<Arrays, DecodeError> {
    let mut arrays: Arrays = Vec::with_capacity(T::ARRAY_FIELDS as usize);
    let mut result = Ok(());
    T::for_each_empty_array(&mut |array| {
        if result.is_ok() {
            match array.read_follow_changes(reader, inner) {
                Ok(changes) => arrays.push(changes),
                Err(error) => result = Err(error),
            }
        }
    });
    result.map(|()| arrays)
}

/// Writes the whole of an array inside an item, `store` (owned by
/// `owners`), for `follower`: the id its next push takes, then its items
/// (count, then per item its id, its owner for a relay, and
/// [`write_value`]).
pub(crate) fn write_array<U: Replicate>(
    store: &Store<U>,
    owners: Option<&Owners>,
    follower: Follower,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    writer.write_varint(store.next_id());
    let mut order: Vec<&Slot<U>> = store.slots().iter().collect();
    order.sort_unstable_by_key(|slot| slot.id);
    let mut ids = IdWriter::start(writer, order.iter().map(|slot| slot.id));
    for slot in order {
        ids.write(writer, slot.id);
        if follower == Follower::Relay {
            write_owner(writer, owner_of(owners, slot.id));
        }
        write_value(&slot.value, follower, writer)?;
    }
    Ok(())
}

/// What [`write_array`] wrote: the id the next push takes, and the items
/// (id, owner, value), refusing more than `limits` allow before reading
/// them.
pub(crate) type ArrayCopy<U> = (u64, Vec<(ReplicationId, Option<u64>, U)>);

/// Reads what [`write_array`] wrote.
pub(crate) fn read_array<U: Replicate>(
    reader: &mut BitReader<'_>,
    follower: Follower,
    limits: ArrayLimits,
) -> Result<ArrayCopy<U>, DecodeError> {
    let next_id = reader.read_varint()?;
    let relay = follower == Follower::Relay;
    let whole = follower_fields::<U>(follower) == FieldMask::all(U::FIELD_COUNT);
    let least = 1 + u64::from(relay) + if whole { U::MIN_BITS } else { 0 };
    let (mut ids, count) = read_ids(reader, least, limits)?;
    let inner = limits.for_arrays(false);
    let mut items = Vec::with_capacity(prealloc::<(ReplicationId, Option<u64>, U)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        let owner = if relay { read_owner(reader)? } else { None };
        items.push((id, owner, read_value(reader, follower, inner)?));
    }
    Ok((next_id, items))
}

/// Reads a list of ids removed, refusing more than `limits` allow.
fn read_removals(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Vec<ReplicationId>, DecodeError> {
    let (mut ids, count) = IdReader::start(reader, 1)?;
    limits.check_removals(count)?;
    let mut removed = Vec::with_capacity(prealloc::<ReplicationId>(count));
    for _ in 0..count {
        removed.push(ids.read(reader)?);
    }
    Ok(removed)
}

/// Reads what [`write_changes`] wrote, refusing a set of fields that is
/// not within `allowed`, and arrays unless `arrays` gives their limits
/// (a ghost's change carries none: its item enters again).
fn read_changes<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
    allowed: FieldMask,
    arrays: Option<ArrayLimits>,
) -> Result<Vec<Change<T>>, DecodeError> {
    let (mut ids, count) = read_ids(reader, 2, limits)?;
    let mut changed = Vec::with_capacity(prealloc::<Change<T>>(count));
    let has_arrays = T::ARRAY_FIELDS > 0;
    for _ in 0..count {
        let id = ids.read(reader)?;
        let bit_offset = reader.bit_offset();
        let invalid = DecodeError::InvalidFieldSet {
            bit_offset,
            field_count: T::FIELD_COUNT,
        };
        let patch = if !has_arrays || reader.read_bool()? {
            let bit_offset = reader.bit_offset();
            let fields = read_field_set(reader, T::FIELD_COUNT)?;
            if !allowed.covers(fields) {
                return Err(DecodeError::InvalidFieldSet {
                    bit_offset,
                    field_count: T::FIELD_COUNT,
                });
            }
            Some(T::decode_fields(fields, reader)?)
        } else {
            None
        };
        let arrays = match (has_arrays && reader.read_bool()?, arrays) {
            (false, _) => None,
            (true, Some(inner)) => Some(read_arrays::<T>(reader, inner)?),
            (true, None) => return Err(invalid),
        };
        if patch.is_none() && arrays.is_none() {
            return Err(invalid);
        }
        changed.push(Change { id, patch, arrays });
    }
    Ok(changed)
}

/// Writes a list of items handed off: id, shard, tenure.
fn write_handed(writer: &mut BitWriter<'_>, handed: &[(ReplicationId, ShardId, u32)]) {
    let mut ids = IdWriter::start(writer, handed.iter().map(|&(id, ..)| id));
    for &(id, to, count) in handed {
        ids.write(writer, id);
        writer.write_varint(to.get().into());
        writer.write_varint(count.into());
    }
}

/// Writes a list of tenures: id, tenure.
fn write_counts(writer: &mut BitWriter<'_>, counts: &[(ReplicationId, u32)]) {
    let mut ids = IdWriter::start(writer, counts.iter().map(|&(id, _)| id));
    for &(id, count) in counts {
        ids.write(writer, id);
        writer.write_varint(count.into());
    }
}

/// The union of two lists of changes ascending by id, one entry an id:
/// `changed` itself for a type without `initial_only` fields.
fn merged<'a>(
    changed: &'a [(ReplicationId, FieldMask)],
    initial: &[(ReplicationId, FieldMask)],
) -> Cow<'a, [(ReplicationId, FieldMask)]> {
    if initial.is_empty() {
        return Cow::Borrowed(changed);
    }
    let mut all: Vec<_> = changed.iter().chain(initial).copied().collect();
    all.sort_unstable_by_key(|&(id, _)| id);
    all.dedup_by(|later, first| {
        let same = later.0 == first.0;
        if same {
            first.1 |= later.1;
        }
        same
    });
    Cow::Owned(all)
}

/// What a server's snapshot says of handoffs: its items' tenures, and
/// the handoffs its history holds.
pub(crate) struct Handoffs<'a> {
    pub(crate) tenures: Option<&'a Tenures>,
    pub(crate) history: &'a History,
}

/// Writes the whole of `store` for `stream`, at its frame.
pub(crate) fn write_snapshot<T: Replicate>(
    store: &Store<T>,
    owners: Option<&Owners>,
    handoffs: Handoffs<'_>,
    stream: Stream,
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    let head = Head {
        epoch: stream.epoch,
        frame: store.frame(),
        shard: stream.shard,
    };
    write_head::<T>(writer, SNAPSHOT, head);
    writer.write_varint(store.next_id());
    let mut order: Vec<&Slot<T>> = store.slots().iter().collect();
    order.sort_unstable_by_key(|slot| slot.id);
    let mut ids = IdWriter::start(writer, order.iter().map(|slot| slot.id));
    for slot in order {
        ids.write(writer, slot.id);
        write_owner(writer, owner_of(owners, slot.id));
        write_value(&slot.value, Follower::Relay, writer).map_err(|error| (slot.id, error))?;
    }
    let mut counts: Vec<_> = (handoffs.tenures.into_iter())
        .flat_map(Tenures::counts)
        .collect();
    counts.sort_unstable_by_key(|&(id, _)| id);
    write_counts(writer, &counts);
    // The last handoff of each item that left in the frames held, oldest
    // first, so a later one wins; an item adopted back since left no
    // handoff (should it be gone now, it was removed here).
    let mut handed = BTreeMap::new();
    let oldest = handoffs.history.oldest_frame().unwrap_or(0);
    for changes in handoffs.history.since(oldest).into_iter().flatten() {
        for &(id, _) in &changes.adopted {
            handed.remove(&id);
        }
        for &(id, to, count) in &changes.handed {
            handed.insert(id, (to, count));
        }
    }
    let handed: Vec<_> = (handed.into_iter())
        .filter(|(id, _)| store.get(*id).is_none())
        .map(|(id, (to, count))| (id, to, count))
        .collect();
    write_handed(writer, &handed);
    Ok(())
}

/// Writes item `id`'s handoff: its tenure `count`, owner and `value`.
pub(crate) fn write_handoff<T: Replicate>(
    writer: &mut BitWriter<'_>,
    id: ReplicationId,
    count: u32,
    owner: Option<u64>,
    value: &T,
) -> Result<(), EncodeError> {
    writer.write_bits(HANDOFF, KIND_BITS);
    writer.write_bits(wire_schema::<T>(), 64);
    writer.write_varint(id.to_raw());
    writer.write_varint(count.into());
    write_owner(writer, owner);
    write_value(value, Follower::Relay, writer)
}

/// Reads a handoff message.
pub(crate) fn read_handoff<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Handoff<T>, DecodeError> {
    let bit_offset = reader.bit_offset();
    if reader.read_bits(KIND_BITS)? != HANDOFF {
        return Err(DecodeError::UnexpectedMessageKind {
            bit_offset,
            expected: "handoff",
            found: "another kind",
        });
    }
    read_schema_hash::<T>(reader)?;
    let id = ReplicationId::from_raw(reader.read_varint()?);
    let count = read_count(reader)?;
    let owner = read_owner(reader)?;
    let value = read_value(reader, Follower::Relay, limits.for_arrays(false))?;
    Ok(Handoff {
        id,
        count,
        owner,
        value,
    })
}

fn read_shard(reader: &mut BitReader<'_>) -> Result<ShardId, DecodeError> {
    let bit_offset = reader.bit_offset();
    let value = reader.read_varint()?;
    u16::try_from(value)
        .map(ShardId::new)
        .map_err(|_| DecodeError::VarintOutOfRange {
            bit_offset,
            target: "a shard (u16)",
        })
}

fn read_count(reader: &mut BitReader<'_>) -> Result<u32, DecodeError> {
    let bit_offset = reader.bit_offset();
    let value = reader.read_varint()?;
    u32::try_from(value).map_err(|_| DecodeError::VarintOutOfRange {
        bit_offset,
        target: "a tenure (u32)",
    })
}

/// Reads a list of items handed off.
fn read_handed(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Vec<(ReplicationId, ShardId, u32)>, DecodeError> {
    let (mut ids, count) = read_ids(reader, 3, limits)?;
    let mut handed = Vec::with_capacity(prealloc::<(ReplicationId, ShardId, u32)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        handed.push((id, read_shard(reader)?, read_count(reader)?));
    }
    Ok(handed)
}

/// Reads a list of tenures.
fn read_counts(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Vec<(ReplicationId, u32)>, DecodeError> {
    let (mut ids, count) = read_ids(reader, 2, limits)?;
    let mut counts = Vec::with_capacity(prealloc::<(ReplicationId, u32)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        counts.push((id, read_count(reader)?));
    }
    Ok(counts)
}

/// Reads a feed message's kind, schema hash and head.
fn read_head<T: Replicate>(reader: &mut BitReader<'_>) -> Result<(u64, Head), DecodeError> {
    let expected = "feed frame or feed snapshot";
    let (kind, epoch, frame) = read_stream_head::<T>(reader, [FRAME, SNAPSHOT], expected)?;
    let shard = read_shard(reader)?;
    Ok((
        kind,
        Head {
            epoch,
            frame,
            shard,
        },
    ))
}

/// Starts reading a list of ids whose entries take at least `min_bits`
/// each, within what is left of the message and `limits`.
fn read_ids(
    reader: &mut BitReader<'_>,
    min_bits: u64,
    limits: ArrayLimits,
) -> Result<(IdReader, usize), DecodeError> {
    let (ids, count) = IdReader::start(reader, min_bits)?;
    limits.check_items(count)?;
    Ok((ids, count))
}

/// Reads the items of a frame's adds or a snapshot: id, owner, value.
fn read_items<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
    inner: ArrayLimits,
) -> Result<Vec<(ReplicationId, Option<u64>, T)>, DecodeError> {
    let (mut ids, count) = read_ids(reader, 2 + T::MIN_BITS, limits)?;
    let mut items = Vec::with_capacity(prealloc::<(ReplicationId, Option<u64>, T)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        let owner = read_owner(reader)?;
        items.push((id, owner, read_value(reader, Follower::Relay, inner)?));
    }
    Ok(items)
}

/// Reads a feed message, refusing more entries than `limits` allow before
/// reading them (and, in the arrays inside its items, than `inner`
/// allows).
pub(crate) fn read<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
    inner: ArrayLimits,
) -> Result<Message<T>, DecodeError> {
    let (kind, head) = read_head::<T>(reader)?;
    if kind == SNAPSHOT {
        let next_id = reader.read_varint()?;
        let items = read_items(reader, limits, inner)?;
        let counts = read_counts(reader, limits)?;
        let handed = read_handed(reader, limits)?;
        return Ok(Message::Snapshot(Snapshot {
            head,
            next_id,
            items,
            counts,
            handed,
        }));
    }
    let removed = read_removals(reader, limits)?;
    let handed = read_handed(reader, limits)?;
    let added = read_items(reader, limits, inner)?;
    let adopted = read_counts(reader, limits)?;
    let all = FieldMask::all(T::FIELD_COUNT);
    let changed = read_changes::<T>(reader, limits, all, Some(inner))?;
    let moved = read_moved(reader, limits)?;
    Ok(Message::Frame(Frame {
        head,
        removed,
        handed,
        added,
        adopted,
        changed,
        moved,
    }))
}
