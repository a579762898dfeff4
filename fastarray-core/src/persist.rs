//! Saving and restoring (feature `serde`): a server's [`FastArray`] or
//! [`Replicated`] object serializes with its ids, keys and id counter, and
//! deserializes into an authority that keeps every id and never gives one
//! again, so ids held in fields (references between items) and by clients
//! stay valid across a restart. What connections keep is not saved: a
//! client joins the restored server by snapshot
//! ([`FastArray::write_snapshot_for`], then
//! [`FastArray::apply_snapshot`] on its mirror).
//!
//! A save is of committed state: an array with uncommitted work, or a
//! mirror (whose ids are its server's), refuses to serialize. A save that
//! would make an array reuse an id or contradict itself (an item twice, an
//! id at or above the id counter, a key changed after the array's frame)
//! refuses to deserialize, with the format's error saying which.
//!
//! The saved form, in any serde format (the field names are those a
//! self-describing format such as JSON shows):
//!
//! | type | fields |
//! |---|---|
//! | `FastArray<T>` | `frame`, `array_key`, `next_id`, `shard` (a shard's number, or none for an array not made as one), `departed` (a shard's items that left in its last 1 024 frames: a sequence of `(id, tenure, frame)`), `items`: a sequence of `{ id, key, key_frame, owner, tenure, value }` |
//! | `Replicated<T>` | `frame`, `array_key`, `key`, `key_frame`, `owner`, `value` |
//!
//! `owner` is the client that owns the item ([`FastArray::set_owner`]), or
//! none; a self-describing format may leave it out (none). `tenure` is how
//! many times the item changed shards ([`FastArray::hand_off`]). A
//! self-describing format may leave `shard`, `departed` and `tenure` out
//! (none, empty, 0), as in saves made before shards. `departed` lets a
//! restarted shard refuse a late copy of a handoff that brought an item it
//! has handed on since ([`DecodeError::StaleHandoff`](crate::DecodeError::StaleHandoff)),
//! as it did before. A shard's save may hold items of other shards' ranges (it
//! adopted them); it keeps its shard and their tenures, so a relay orders
//! what the restored shard says of them as before.
//! | `ReplicationId`, `ReplicationKey` | their raw numbers (`u64`, `u32`) |
//!
//! Fields that are not saved (BigWorld's `Persistent` false: caches,
//! derived state) take serde's own `#[serde(skip)]` on the item type: a
//! restored item has them at `Default`, and clients that join by snapshot
//! receive that value.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::array::FastArray;
use crate::id::{ReplicationId, ReplicationKey};
use crate::replicate::Replicate;
use crate::replicated::Replicated;
use crate::shard::ShardId;
use crate::store::Store;
use crate::store::saved::{SavedArray, SavedItem};

/// A replication id as its raw number.
impl Serialize for ReplicationId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.to_raw())
    }
}

/// A replication id from its raw number.
impl<'de> Deserialize<'de> for ReplicationId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u64::deserialize(deserializer).map(ReplicationId::from_raw)
    }
}

/// A replication key as its raw number.
impl Serialize for ReplicationKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.to_raw())
    }
}

/// A replication key from its raw number.
impl<'de> Deserialize<'de> for ReplicationKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u32::deserialize(deserializer).map(ReplicationKey::from_raw)
    }
}

/// An array's saved form (the items are [`SavedItem`]s).
#[derive(Serialize, Deserialize)]
#[serde(rename = "FastArray", deny_unknown_fields)]
struct ArrayForm<I> {
    frame: u64,
    array_key: ReplicationKey,
    next_id: u64,
    #[serde(default)]
    shard: Option<u16>,
    /// A shard's recent departures: id, tenure, frame.
    #[serde(default)]
    departed: Vec<(ReplicationId, u32, u64)>,
    items: I,
}

/// An object's saved form: its one item's, without the id (`#0`).
#[derive(Serialize, Deserialize)]
#[serde(rename = "Replicated", deny_unknown_fields)]
struct ObjectForm<V> {
    frame: u64,
    array_key: ReplicationKey,
    key: ReplicationKey,
    key_frame: u64,
    #[serde(default)]
    owner: Option<u64>,
    value: V,
}

/// An array's items as a sequence, written as they are read from it, each
/// with its owner.
struct Items<'a, T>(&'a FastArray<T>);

impl<T: Serialize> Serialize for Items<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let array = self.0;
        serializer.collect_seq(array.store().saved_items().map(|item| SavedItem {
            owner: array.owner(item.id),
            tenure: array.tenure(item.id),
            ..item
        }))
    }
}

/// The id of a [`Replicated`]'s object in its one-item array.
const OBJECT_ID: ReplicationId = ReplicationId::from_raw(0);

/// Refuses what a save cannot hold: a mirror, or uncommitted work.
fn check_savable<E: serde::ser::Error>(
    mirror: bool,
    uncommitted: bool,
    what: &str,
) -> Result<(), E> {
    if mirror {
        return Err(E::custom(format_args!(
            "a mirror {what} is not saved: its ids are its server's; save the server's"
        )));
    }
    if uncommitted {
        return Err(E::custom(format_args!(
            "the {what} has uncommitted work: a save is of committed state; commit first"
        )));
    }
    Ok(())
}

/// A server's array, with its ids, keys and id counter. A mirror, a ghost
/// array, or an array with uncommitted work, is refused with the format's
/// error. What
/// connections keep is not saved: clients join the restored array by
/// snapshot. Fields marked `#[serde(skip)]` are not saved, and come back
/// as `Default`.
///
/// ```
/// use fastarray_core::{FastArray, ReplicationId, SendState};
/// use fastarray_derive::Replicate;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Replicate, Serialize, Deserialize, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit {
///     hp: u16,
///     target: Option<ReplicationId>, // another unit
///     #[serde(skip)]
///     path_cache: u32, // derived: not saved
/// }
///
/// let mut server = FastArray::new();
/// let a = server.push(Unit { hp: 10, target: None, path_cache: 3 });
/// let b = server.push(Unit { hp: 20, target: Some(a), path_cache: 3 });
/// server.remove(a);
/// server.commit();
/// let mut client = FastArray::<Unit>::mirror();
/// let mut bytes = Vec::new();
/// server.write_delta(&mut SendState::new(), 1, &mut bytes).unwrap();
/// client.apply_delta(&bytes, &mut ()).unwrap();
///
/// let save = serde_json::to_string(&server).unwrap();
/// drop(server); // the process restarts
/// let mut server: FastArray<Unit> = serde_json::from_str(&save).unwrap();
/// assert_eq!(server.get(b).unwrap().target, Some(a));
/// assert_eq!(server.get(b).unwrap().path_cache, 0);
/// assert!(server.push(Unit { hp: 5, target: None, path_cache: 0 }) > b); // no id again
/// server.commit();
///
/// // The client joins the restarted server by snapshot, on a new connection.
/// let mut state = SendState::new();
/// let mut bytes = Vec::new();
/// server.write_snapshot_for(&mut state, &mut bytes).unwrap();
/// client.apply_snapshot(&bytes).unwrap();
/// assert!(client.wire_eq(&server));
/// ```
impl<T: Serialize> Serialize for FastArray<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.is_ghost() {
            return Err(<S::Error as serde::ser::Error>::custom(
                "a ghost array is not saved: its items are a neighbour shard's, which saves them",
            ));
        }
        check_savable(self.is_mirror(), self.has_uncommitted_work(), "array")?;
        let store = self.store();
        let array = store.saved_array();
        ArrayForm {
            frame: array.frame,
            array_key: array.array_key,
            next_id: array.next_id,
            shard: self.is_shard().then(|| self.shard_id().get()),
            departed: self.departed(),
            items: Items(self),
        }
        .serialize(serializer)
    }
}

/// A server's array from a save: every id, key and the id counter as
/// saved, nothing uncommitted. A save that would reuse an id or contradict
/// itself is refused with the format's error.
impl<'de, T: Deserialize<'de> + Replicate> Deserialize<'de> for FastArray<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = ArrayForm::<Vec<SavedItem<T>>>::deserialize(deserializer)?;
        let shard = form.shard.map(ShardId::new);
        let array = SavedArray {
            frame: form.frame,
            array_key: form.array_key,
            next_id: form.next_id,
            own_ids: shard.map_or(0..u64::MAX, ShardId::ids),
        };
        let owned: Vec<(ReplicationId, u64)> = form
            .items
            .iter()
            .filter_map(|item| Some((item.id, item.owner?)))
            .collect();
        let tenures: Vec<(ReplicationId, u32)> = (form.items.iter())
            .filter(|item| item.tenure > 0)
            .map(|item| (item.id, item.tenure))
            .collect();
        if let Some(&(id, _, frame)) = form.departed.iter().find(|d| d.2 > form.frame) {
            return Err(D::Error::custom(format_args!(
                "item {id} departed at frame {frame}, after the array's frame {}",
                form.frame
            )));
        }
        let store = Store::restore(array, form.items).map_err(D::Error::custom)?;
        let mut array = FastArray::restored(store, owned.into_iter());
        match shard {
            Some(shard) => array.restore_shard(shard, tenures, form.departed),
            None if !form.departed.is_empty() => {
                return Err(D::Error::custom(
                    "departures in the save of an array that is no shard",
                ));
            }
            None => {}
        }
        Ok(array)
    }
}

/// A server's object, with its key and frame (as [`FastArray`]'s save). A
/// mirror, or an object with uncommitted work, is refused with the
/// format's error.
impl<T: Serialize + Replicate> Serialize for Replicated<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let array = self.as_array();
        check_savable(array.is_mirror(), array.has_uncommitted_work(), "object")?;
        let store = array.store();
        let counters = store.saved_array();
        let Some(item) = store.saved_items().next() else {
            unreachable!("a Replicated always holds its object");
        };
        ObjectForm {
            frame: counters.frame,
            array_key: counters.array_key,
            key: item.key,
            key_frame: item.key_frame,
            owner: array.owner(OBJECT_ID),
            value: item.value,
        }
        .serialize(serializer)
    }
}

/// A server's object from a save, its key and frame as saved.
impl<'de, T: Deserialize<'de> + Replicate> Deserialize<'de> for Replicated<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let form = ObjectForm::<T>::deserialize(deserializer)?;
        let array = SavedArray {
            frame: form.frame,
            array_key: form.array_key,
            next_id: OBJECT_ID.to_raw() + 1,
            own_ids: 0..u64::MAX,
        };
        let item = SavedItem {
            id: OBJECT_ID,
            tenure: 0,
            key: form.key,
            key_frame: form.key_frame,
            owner: form.owner,
            value: form.value,
        };
        let store = Store::restore(array, vec![item]).map_err(D::Error::custom)?;
        let owned = form.owner.map(|owner| (OBJECT_ID, owner));
        Ok(Replicated::from_array(FastArray::restored(
            store,
            owned.into_iter(),
        )))
    }
}
