//! Ghost feed messages: what a shard sends a neighbour about the items near
//! their border (see the "Ghosts" section of [`FastArray`](crate::FastArray)
//! and `WIRE.md`). A ghost carries the fields every client that does not
//! own the item may see — all but the `owner_only` ones, the audience rule
//! of a client that owns nothing — and no owner: BigWorld's ghosted
//! properties.
//!
//! Layout. Every message starts with its kind in 4 bits (12 a frame, 13 a
//! snapshot), the item type's 64-bit `SCHEMA_HASH`, the ghost stream's
//! 64-bit epoch and the message's number in it (a varint). Lists of ids are
//! written as a delta's are ([`IdWriter`]). An item's ghost fields are
//! written as a whole value carries them.
//!
//! - A frame: the ids that left (count, ids: removed, handed off, or out
//!   of the neighbour's reach); the items that came in (count, then per
//!   item its id and ghost fields); the items changed (count, then per
//!   item its id, the set of ghost fields changed and those fields); the
//!   ids adopted since the last message that are not ghosted (count, ids:
//!   a shard that handed one off and kept a ghost of it drops that ghost).
//! - A snapshot: every item in reach (count, then per item its id and
//!   ghost fields).
//!
//! A type with `#[replicate(array)]` fields writes after an item's ghost
//! fields each of its arrays whole, as a relay's feed does but with no
//! owners and the ghost fields of the arrays' items; its changes have the
//! feed's two bits (fields, arrays), the second always 0. An item whose
//! arrays changed leaves and enters again in the same frame.

use super::{
    read_changes, read_ids, read_removals, read_stream_head, read_value, write_changes, write_ids,
    write_stream_head, write_value,
};
use crate::bits::{BitReader, BitWriter, prealloc};
use crate::error::{DecodeError, EncodeError};
use crate::id::ReplicationId;
use crate::inner_array::Follower;
use crate::limits::ArrayLimits;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::store::Store;
use crate::wire::id_list::IdWriter;

const FRAME: u64 = 0b1100;
const SNAPSHOT: u64 = 0b1101;

/// The fields a ghost of a `T` holds: every field but the `owner_only`
/// ones (a ghost is nobody's).
pub(crate) fn ghost_fields<T: Replicate>() -> FieldMask {
    FieldMask::all(T::FIELD_COUNT).without(T::OWNER_ONLY)
}

/// The head of a ghost message: which stream, which message of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) epoch: u64,
    pub(crate) seq: u64,
}

/// What one ghost frame says, by id (each list ascending).
pub(crate) struct FrameLists<'a> {
    pub(crate) left: &'a [ReplicationId],
    pub(crate) entered: &'a [ReplicationId],
    pub(crate) changed: &'a [(ReplicationId, FieldMask)],
    pub(crate) settled: &'a [ReplicationId],
}

/// One ghost frame, decoded.
pub(crate) struct Frame<T: Replicate> {
    pub(crate) head: Head,
    pub(crate) left: Vec<ReplicationId>,
    pub(crate) entered: Vec<(ReplicationId, T)>,
    pub(crate) changed: Vec<(ReplicationId, T::Patch)>,
    pub(crate) settled: Vec<ReplicationId>,
}

/// Every ghost of a stream, decoded.
pub(crate) struct Snapshot<T> {
    pub(crate) head: Head,
    pub(crate) items: Vec<(ReplicationId, T)>,
}

/// A ghost message, decoded.
pub(crate) enum Message<T: Replicate> {
    Frame(Frame<T>),
    Snapshot(Snapshot<T>),
}

fn write_head<T: Replicate>(writer: &mut BitWriter<'_>, kind: u64, head: Head) {
    write_stream_head::<T>(writer, kind, head.epoch, head.seq);
}

/// Writes the ghost fields of the items `ids` of `store`.
fn write_items<T: Replicate>(
    store: &Store<T>,
    ids: &[ReplicationId],
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    let mut list = IdWriter::start(writer, ids.iter().copied());
    for &id in ids {
        let value = store.get(id).expect("a ghost is of an item held");
        list.write(writer, id);
        write_value(value, Follower::Ghost, writer).map_err(|error| (id, error))?;
    }
    Ok(())
}

/// Writes a ghost frame of `store` (every id it names that came in or
/// changed is held). On error, names the item that failed.
pub(crate) fn write_frame<T: Replicate>(
    store: &Store<T>,
    head: Head,
    lists: FrameLists<'_>,
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    write_head::<T>(writer, FRAME, head);
    write_ids(writer, lists.left);
    write_items(store, lists.entered, writer)?;
    write_changes(store, lists.changed, &[], writer)?;
    write_ids(writer, lists.settled);
    Ok(())
}

/// Writes a ghost snapshot: the items `ids` (ascending) of `store`.
pub(crate) fn write_snapshot<T: Replicate>(
    store: &Store<T>,
    head: Head,
    ids: &[ReplicationId],
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    write_head::<T>(writer, SNAPSHOT, head);
    write_items(store, ids, writer)
}

/// Reads the ghosts of a frame's entries or a snapshot: id, ghost fields.
fn read_items<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Vec<(ReplicationId, T)>, DecodeError> {
    let fields = ghost_fields::<T>();
    let whole = fields == FieldMask::all(T::FIELD_COUNT);
    // A value without its owner-only fields may take fewer bits than the
    // type's least.
    let least = if whole { T::MIN_BITS } else { 0 };
    let (mut ids, count) = read_ids(reader, 1 + least, limits)?;
    let inner = limits.for_arrays(false);
    let mut items = Vec::with_capacity(prealloc::<(ReplicationId, T)>(count));
    for _ in 0..count {
        let id = ids.read(reader)?;
        items.push((id, read_value(reader, Follower::Ghost, inner)?));
    }
    Ok(items)
}

/// Reads a ghost message, refusing more entries than `limits` allow
/// before reading them, and changes of fields a ghost does not hold.
pub(crate) fn read<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
) -> Result<Message<T>, DecodeError> {
    let expected = "ghost frame or ghost snapshot";
    let (kind, epoch, seq) = read_stream_head::<T>(reader, [FRAME, SNAPSHOT], expected)?;
    let head = Head { epoch, seq };
    if kind == SNAPSHOT {
        let items = read_items(reader, limits)?;
        return Ok(Message::Snapshot(Snapshot { head, items }));
    }
    let left = read_removals(reader, limits)?;
    let entered = read_items(reader, limits)?;
    // A ghost's change carries no arrays, so it names fields.
    let changed = read_changes::<T>(reader, limits, ghost_fields::<T>(), None)?;
    let changed = (changed.into_iter())
        .filter_map(|change| Some((change.id, change.patch?)))
        .collect();
    let settled = read_removals(reader, limits)?;
    Ok(Message::Frame(Frame {
        head,
        left,
        entered,
        changed,
        settled,
    }))
}
