//! Feed messages: what a server sends its relays (see the "Relays" section
//! of [`FastArray`](crate::FastArray) and `WIRE.md`). A feed is written
//! once a frame for every relay, with every field of every item, owners
//! included: a relay is trusted, and serves each of its clients what the
//! audience and detail rules let that client see.
//!
//! Layout. Every message starts with its kind in 4 bits (9 a frame, 10 a
//! snapshot), the item type's 64-bit `SCHEMA_HASH` (a relay of another
//! type refuses it), the stream's 64-bit epoch and the frame as a varint.
//! Each list of ids is written as a delta's lists are ([`IdWriter`]: the
//! count, then the gaps between ascending ids in the code that costs
//! least); an owner is one bit, then the client as a varint if set.
//!
//! - A frame: the ids removed (count, ids); the items added (count, then
//!   per item its id, owner and every field); the items changed (count,
//!   then per item its id, the set of fields changed — `initial_only`
//!   ones included, which no delta carries — and those fields); the items
//!   whose owner moved (count, then id and owner).
//! - A snapshot: the id the server's next push takes (varint), then the
//!   items (count, then per item its id, owner and every field).

use std::borrow::Cow;

use crate::bits::{BitReader, BitWriter, prealloc};
use crate::changeset::Changeset;
use crate::error::{DecodeError, EncodeError};
use crate::id::ReplicationId;
use crate::limits::ArrayLimits;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::send_state::audience::Owners;
use crate::snapshot_message::read_schema_hash;
use crate::store::{Slot, Store};
use crate::wire::field_set::{read_field_set, write_field_set};
use crate::wire::id_list::{IdReader, IdWriter};

const FRAME: u64 = 0b1001;
const SNAPSHOT: u64 = 0b1010;
const KIND_BITS: u32 = 4;

/// The head of every feed message: which stream, which frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) epoch: u64,
    pub(crate) frame: u64,
}

/// One frame's changes, decoded.
pub(crate) struct Frame<T: Replicate> {
    pub(crate) head: Head,
    pub(crate) removed: Vec<ReplicationId>,
    pub(crate) added: Vec<(ReplicationId, Option<u64>, T)>,
    pub(crate) changed: Vec<(ReplicationId, T::Patch)>,
    pub(crate) moved: Vec<(ReplicationId, Option<u64>)>,
}

/// A whole array, decoded.
pub(crate) struct Snapshot<T> {
    pub(crate) head: Head,
    pub(crate) next_id: u64,
    pub(crate) items: Vec<(ReplicationId, Option<u64>, T)>,
}

/// A feed message, decoded.
pub(crate) enum Message<T: Replicate> {
    Frame(Frame<T>),
    Snapshot(Snapshot<T>),
}

fn write_head<T: Replicate>(writer: &mut BitWriter<'_>, kind: u64, head: Head) {
    writer.write_bits(kind, KIND_BITS);
    writer.write_bits(T::SCHEMA_HASH, 64);
    writer.write_bits(head.epoch, 64);
    writer.write_varint(head.frame);
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
    epoch: u64,
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    let head = Head {
        epoch,
        frame: changes.frame,
    };
    write_head::<T>(writer, FRAME, head);
    let mut ids = IdWriter::start(writer, changes.removed.iter().copied());
    for &id in &changes.removed {
        ids.write(writer, id);
    }
    let mut ids = IdWriter::start(writer, changes.added.iter().copied());
    for &id in &changes.added {
        let value = store.get(id).expect("a committed add is held");
        ids.write(writer, id);
        write_owner(writer, owner_of(owners, id));
        value.encode(writer).map_err(|error| (id, error))?;
    }
    let changed = merged(&changes.changed, &changes.initial);
    let mut ids = IdWriter::start(writer, changed.iter().map(|&(id, _)| id));
    for &(id, mask) in changed.iter() {
        let value = store.get(id).expect("a committed change is held");
        ids.write(writer, id);
        write_field_set(writer, mask, T::FIELD_COUNT);
        value
            .encode_fields(mask, writer)
            .map_err(|error| (id, error))?;
    }
    // An add carries its owner; an item removed since has none.
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
    Ok(())
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

/// Writes the whole of `store` for the stream `epoch`, at its frame.
pub(crate) fn write_snapshot<T: Replicate>(
    store: &Store<T>,
    owners: Option<&Owners>,
    epoch: u64,
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    let head = Head {
        epoch,
        frame: store.frame(),
    };
    write_head::<T>(writer, SNAPSHOT, head);
    writer.write_varint(store.next_id());
    let mut order: Vec<&Slot<T>> = store.slots().iter().collect();
    order.sort_unstable_by_key(|slot| slot.id);
    let mut ids = IdWriter::start(writer, order.iter().map(|slot| slot.id));
    for slot in order {
        ids.write(writer, slot.id);
        write_owner(writer, owner_of(owners, slot.id));
        slot.value
            .encode(writer)
            .map_err(|error| (slot.id, error))?;
    }
    Ok(())
}

/// Reads a feed message's kind, schema hash and head.
fn read_head<T: Replicate>(reader: &mut BitReader<'_>) -> Result<(u64, Head), DecodeError> {
    let bit_offset = reader.bit_offset();
    let kind = reader.read_bits(KIND_BITS)?;
    if kind != FRAME && kind != SNAPSHOT {
        return Err(DecodeError::UnexpectedMessageKind {
            bit_offset,
            expected: "feed frame or feed snapshot",
            found: "another kind",
        });
    }
    read_schema_hash::<T>(reader)?;
    let epoch = reader.read_bits(64)?;
    let frame = reader.read_varint()?;
    Ok((kind, Head { epoch, frame }))
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
) -> Result<Vec<(ReplicationId, Option<u64>, T)>, DecodeError> {
    let (mut ids, count) = read_ids(reader, 2 + T::MIN_BITS, limits)?;
    let mut items = Vec::with_capacity(prealloc::<(ReplicationId, Option<u64>, T)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        let owner = read_owner(reader)?;
        items.push((id, owner, T::decode(reader)?));
    }
    Ok(items)
}

/// Reads a feed message, refusing more entries than `limits` allow before
/// reading them.
pub(crate) fn read<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Message<T>, DecodeError> {
    let (kind, head) = read_head::<T>(reader)?;
    if kind == SNAPSHOT {
        let next_id = reader.read_varint()?;
        let items = read_items(reader, limits)?;
        return Ok(Message::Snapshot(Snapshot {
            head,
            next_id,
            items,
        }));
    }
    let (mut ids, count) = IdReader::start(reader, 1)?;
    limits.check_removals(count)?;
    let mut removed = Vec::with_capacity(prealloc::<ReplicationId>(count));
    for _ in 0..count {
        removed.push(ids.read(reader)?);
    }
    let added = read_items(reader, limits)?;
    let (mut ids, count) = read_ids(reader, 2, limits)?;
    let mut changed = Vec::with_capacity(prealloc::<(ReplicationId, T::Patch)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        let mask = read_field_set(reader, T::FIELD_COUNT)?;
        changed.push((id, T::decode_fields(mask, reader)?));
    }
    let (mut ids, count) = read_ids(reader, 2, limits)?;
    let mut moved = Vec::with_capacity(prealloc::<(ReplicationId, Option<u64>)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        moved.push((id, read_owner(reader)?));
    }
    Ok(Message::Frame(Frame {
        head,
        removed,
        added,
        changed,
        moved,
    }))
}
