//! Full snapshots: the whole array in one message, ids included.
//!
//! Layout (after the 2-bit snapshot kind, see [`crate::wire`]): the item
//! type's 64-bit `SCHEMA_HASH`, the frame as a varint, the item count as a
//! varint, then per item in ascending id order the gap to the previous id
//! (`id - previous - 1`, the first id as is) as a varint and every
//! replicated field, then each of the item's `#[replicate(array)]` fields
//! in the same layout from the frame on (no kind, no hash: the owner's hash
//! covers the arrays' item types). Consecutive ids cost one bit each.
//!
//! An item type with audience fields (`#[replicate(owner_only)]`,
//! `#[replicate(skip_owner)]`) gives each item one bit more before its
//! fields: whether the snapshot's reader owns it. Its fields are then those
//! the audience rule sends an owner or everyone else (`send_state::audience`;
//! the schema hash covers which fields those are).
//!
//! The public methods are `FastArray`'s; here are the body's formats and
//! the send state of a client that holds a snapshot.

use crate::bits::{BitReader, BitWriter, prealloc};
use crate::error::{DecodeError, EncodeError};
use crate::id::ReplicationId;
use crate::limits::ArrayLimits;
use crate::mask::FieldMask;
use crate::replicate::{Replicate, audience, encode_whole, wire_schema};
use crate::send_state::SendState;
use crate::send_state::audience::Owners;
use crate::store::{Slot, Store};
use crate::wire::MessageKind;
use crate::wire::frame::read_long_frame;
use crate::wire::id_list::{read_id, write_id};

/// Writes a snapshot's kind and the item type's schema hash.
pub(crate) fn write_header<T: Replicate>(writer: &mut BitWriter<'_>) {
    MessageKind::Snapshot.write(writer);
    writer.write_bits(wire_schema::<T>(), 64);
}

/// Reads a snapshot's kind and schema hash, refusing another item type's.
pub(crate) fn read_header<T: Replicate>(reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
    MessageKind::expect(reader, MessageKind::Snapshot)?;
    read_schema_hash::<T>(reader)
}

/// Reads a 64-bit schema hash, refusing another item type's (a snapshot's,
/// a relay's feed's).
pub(crate) fn read_schema_hash<T: Replicate>(
    reader: &mut BitReader<'_>,
) -> Result<(), DecodeError> {
    let found = reader.read_bits(64)?;
    let expected = wire_schema::<T>();
    if found != expected {
        return Err(DecodeError::SchemaMismatch {
            type_name: T::TYPE_NAME,
            expected,
            found,
        });
    }
    Ok(())
}

/// Writes the frame, count and items of a snapshot of `store`, for the
/// connection serving `client` (`None`: anyone, who owns nothing) on an
/// array whose items `owners` owns; also how an item's `#[replicate(array)]`
/// fields are written inside one. On error, names the item that failed to
/// encode.
pub(crate) fn encode_body<T: Replicate>(
    store: &Store<T>,
    owners: Option<&Owners>,
    client: Option<u64>,
    writer: &mut BitWriter<'_>,
) -> Result<(), (ReplicationId, EncodeError)> {
    writer.write_varint(store.frame());
    writer.write_varint(store.len() as u64);
    let mut order: Vec<&Slot<T>> = store.slots().iter().collect();
    order.sort_unstable_by_key(|slot| slot.id);
    let audience = audience::<T>(owners);
    let mut next = 0u64;
    for slot in order {
        write_id(writer, slot.id, &mut next);
        let mut result = if audience.applies() {
            let owns = audience.owns(client, slot.id);
            writer.write_bool(owns);
            encode_whole(&slot.value, audience.fields_for(owns), writer)
        } else {
            slot.value.encode(writer)
        };
        slot.value.for_each_array(&mut |array| {
            if result.is_ok() {
                result = array.encode_snapshot_body(client, writer);
            }
        });
        result.map_err(|error| (slot.id, error))?;
    }
    Ok(())
}

/// Reads what [`encode_body`] wrote: the items, and the snapshot's frame.
/// Refuses more items than `limits` allow before reading them, and checks
/// the arrays inside them against their limits (`items` for a replicated
/// object's arrays, if `object`; else `inner_items`).
pub(crate) fn decode_body<T: Replicate>(
    reader: &mut BitReader<'_>,
    limits: ArrayLimits,
    object: bool,
) -> Result<(Store<T>, u64), DecodeError> {
    let frame = read_long_frame(reader)?;
    let claimed = reader.read_varint()?;
    let all = FieldMask::all(T::FIELD_COUNT);
    let audience = audience::<T>(None);
    // Each item costs at least a one-bit id gap plus its fields (with
    // audience fields, one bit saying which of them it carries, and maybe
    // none of its fields' minimum), and two bits (frame and count) per
    // array field.
    let fields = if audience.applies() { 1 } else { T::MIN_BITS };
    let count = reader.check_len(claimed, 1 + fields + 2 * u64::from(T::ARRAY_FIELDS))?;
    limits.check_items(count)?;
    let inner = limits.for_arrays(object);
    let mut store = Store::with_capacity(prealloc::<Slot<T>>(count));
    store.set_frame(frame);
    let mut next = 0u64;
    for _ in 0..count {
        let id = read_id(reader, &mut next)?;
        let (mut value, fields) = if audience.applies() {
            let fields = audience.fields_for(reader.read_bool()?);
            if fields == all {
                (T::decode(reader)?, fields)
            } else {
                (T::decode_visible(fields, reader)?, fields)
            }
        } else {
            (T::decode(reader)?, all)
        };
        let mut result = Ok(());
        value.for_each_array_mut(&mut |array| {
            if result.is_ok() {
                result = array.decode_snapshot_body(reader, inner);
            }
        });
        result?;
        store.insert_replicated(id, frame, value, fields);
    }
    Ok((store, frame))
}

/// The send state of a client that holds `store` as a snapshot of it now
/// would give it (arrays inside items included), serving `client`.
pub(crate) fn snapshot_state<T: Replicate>(store: &Store<T>, client: Option<u64>) -> SendState {
    let mut state =
        SendState::after_snapshot(store.frame(), FieldMask::all(T::FIELD_COUNT), client);
    for slot in store.slots() {
        let mut inner = Vec::new();
        slot.value
            .for_each_array(&mut |array| inner.push(array.snapshot_state(client)));
        // Arrays that were empty need no state yet: one made when the
        // item is first written brings the client what was added since.
        if inner.iter().all(|inner| inner.client_items() == 0) {
            inner.clear();
        }
        state.hold(slot.id, slot.key, inner);
    }
    state
}
