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
//! | `FastArray<T>` | `frame`, `array_key`, `next_id`, `items`: a sequence of `{ id, key, key_frame, value }` |
//! | `Replicated<T>` | `frame`, `array_key`, `key`, `key_frame`, `value` |
//! | `ReplicationId`, `ReplicationKey` | their raw numbers (`u64`, `u32`) |
//!
//! Fields that are not saved (BigWorld's `Persistent` false: caches,
//! derived state) take serde's own `#[serde(skip)]` on the item type: a
//! restored item has them at `Default`, and clients that join by snapshot
//! receive that value.

use core::fmt;
use core::marker::PhantomData;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, SerializeSeq, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::array::FastArray;
use crate::id::{ReplicationId, ReplicationKey};
use crate::replicate::Replicate;
use crate::replicated::Replicated;
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

/// Refuses what a save cannot hold: a mirror, or uncommitted work.
fn check_savable<E: ser::Error>(mirror: bool, uncommitted: bool, what: &str) -> Result<(), E> {
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

const ARRAY_FIELDS: &[&str] = &["frame", "array_key", "next_id", "items"];
const ITEM_FIELDS: &[&str] = &["id", "key", "key_frame", "value"];
const OBJECT_FIELDS: &[&str] = &["frame", "array_key", "key", "key_frame", "value"];

/// A server's array, with its ids, keys and id counter. A mirror, or an
/// array with uncommitted work, is refused with the format's error. What
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
        check_savable(self.is_mirror(), self.has_uncommitted_work(), "array")?;
        let store = self.store();
        let array = store.saved_array();
        let mut out = serializer.serialize_struct("FastArray", ARRAY_FIELDS.len())?;
        out.serialize_field("frame", &array.frame)?;
        out.serialize_field("array_key", &array.array_key)?;
        out.serialize_field("next_id", &array.next_id)?;
        out.serialize_field("items", &Items(store))?;
        out.end()
    }
}

/// A server's array from a save: every id, key and the id counter as
/// saved, nothing uncommitted. A save that would reuse an id or contradict
/// itself is refused with the format's error.
impl<'de, T: Deserialize<'de> + Replicate> Deserialize<'de> for FastArray<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (array, items) = deserializer.deserialize_struct(
            "FastArray",
            ARRAY_FIELDS,
            ArrayVisitor(PhantomData),
        )?;
        let store = Store::restore(array, items).map_err(de::Error::custom)?;
        Ok(FastArray::restored(store))
    }
}

/// A server's object, with its key and frame (as [`FastArray`]'s save). A mirror, or
/// an object with uncommitted work, is refused with the format's error.
impl<T: Serialize + Replicate> Serialize for Replicated<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let array = self.as_array();
        check_savable(array.is_mirror(), array.has_uncommitted_work(), "object")?;
        let store = array.store();
        let counters = store.saved_array();
        let Some(item) = store.saved_items().next() else {
            unreachable!("a Replicated always holds its object");
        };
        let mut out = serializer.serialize_struct("Replicated", OBJECT_FIELDS.len())?;
        out.serialize_field("frame", &counters.frame)?;
        out.serialize_field("array_key", &counters.array_key)?;
        out.serialize_field("key", &item.key)?;
        out.serialize_field("key_frame", &item.key_frame)?;
        out.serialize_field("value", item.value)?;
        out.end()
    }
}

/// A server's object from a save, its key and frame as saved.
impl<'de, T: Deserialize<'de> + Replicate> Deserialize<'de> for Replicated<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (array, item) = deserializer.deserialize_struct(
            "Replicated",
            OBJECT_FIELDS,
            ObjectVisitor(PhantomData),
        )?;
        let store = Store::restore(array, vec![item]).map_err(de::Error::custom)?;
        Ok(Replicated::from_array(FastArray::restored(store)))
    }
}

/// The items of a store, as a sequence.
struct Items<'a, T>(&'a Store<T>);

impl<T: Serialize> Serialize for Items<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let items = self.0.saved_items();
        let mut out = serializer.serialize_seq(Some(items.len()))?;
        for item in items {
            out.serialize_element(&Item(item))?;
        }
        out.end()
    }
}

/// One saved item.
struct Item<T>(SavedItem<T>);

impl<T: Serialize> Serialize for Item<&T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let item = &self.0;
        let mut out = serializer.serialize_struct("Item", ITEM_FIELDS.len())?;
        out.serialize_field("id", &item.id)?;
        out.serialize_field("key", &item.key)?;
        out.serialize_field("key_frame", &item.key_frame)?;
        out.serialize_field("value", item.value)?;
        out.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Item<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct("Item", ITEM_FIELDS, ItemVisitor(PhantomData))
    }
}

/// Which field of a saved struct a key names: its position in the list.
struct Field(usize);

/// Reads a field's name (or, in formats that write positions, its index)
/// from the names of one struct.
struct FieldSeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Field;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Field, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for FieldSeed {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of the fields {:?}", self.0)
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
        match self.0.iter().position(|field| *field == name) {
            Some(index) => Ok(Field(index)),
            None => Err(E::unknown_field(name, self.0)),
        }
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<Field, E> {
        match usize::try_from(index) {
            Ok(index) if index < self.0.len() => Ok(Field(index)),
            _ => Err(E::invalid_value(de::Unexpected::Unsigned(index), &self)),
        }
    }
}

/// Takes the value of field `names[index]` from `map` into `slot`, once.
fn take<'de, A: MapAccess<'de>, V: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<V>,
    names: &'static [&'static str],
    index: usize,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(names[index]));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// The value of field `names[index]`, or the error of its absence.
fn need<V, E: de::Error>(
    slot: Option<V>,
    names: &'static [&'static str],
    index: usize,
) -> Result<V, E> {
    slot.ok_or_else(|| E::missing_field(names[index]))
}

/// The next element of a sequence, or the error of its absence.
fn next<'de, A: SeqAccess<'de>, V: Deserialize<'de>>(
    seq: &mut A,
    index: usize,
    expecting: &dyn de::Expected,
) -> Result<V, A::Error> {
    seq.next_element()?
        .ok_or_else(|| de::Error::invalid_length(index, expecting))
}

struct ArrayVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ArrayVisitor<T> {
    type Value = (SavedArray, Vec<SavedItem<T>>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a saved FastArray (frame, array_key, next_id, items)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let frame = next(&mut seq, 0, &self)?;
        let array_key = next(&mut seq, 1, &self)?;
        let next_id = next(&mut seq, 2, &self)?;
        let items: Vec<Item<T>> = next(&mut seq, 3, &self)?;
        let array = SavedArray {
            frame,
            array_key,
            next_id,
        };
        Ok((array, items.into_iter().map(|item| item.0).collect()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let names = ARRAY_FIELDS;
        let (mut frame, mut array_key, mut next_id) = (None, None, None);
        let mut items: Option<Vec<Item<T>>> = None;
        while let Some(Field(index)) = map.next_key_seed(FieldSeed(names))? {
            match index {
                0 => take(&mut map, &mut frame, names, index)?,
                1 => take(&mut map, &mut array_key, names, index)?,
                2 => take(&mut map, &mut next_id, names, index)?,
                _ => take(&mut map, &mut items, names, index)?,
            }
        }
        let array = SavedArray {
            frame: need(frame, names, 0)?,
            array_key: need(array_key, names, 1)?,
            next_id: need(next_id, names, 2)?,
        };
        let items = need(items, names, 3)?;
        Ok((array, items.into_iter().map(|item| item.0).collect()))
    }
}

struct ItemVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ItemVisitor<T> {
    type Value = Item<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a saved item (id, key, key_frame, value)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item<T>, A::Error> {
        Ok(Item(SavedItem {
            id: next(&mut seq, 0, &self)?,
            key: next(&mut seq, 1, &self)?,
            key_frame: next(&mut seq, 2, &self)?,
            value: next(&mut seq, 3, &self)?,
        }))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<T>, A::Error> {
        let names = ITEM_FIELDS;
        let (mut id, mut key, mut key_frame, mut value) = (None, None, None, None);
        while let Some(Field(index)) = map.next_key_seed(FieldSeed(names))? {
            match index {
                0 => take(&mut map, &mut id, names, index)?,
                1 => take(&mut map, &mut key, names, index)?,
                2 => take(&mut map, &mut key_frame, names, index)?,
                _ => take(&mut map, &mut value, names, index)?,
            }
        }
        Ok(Item(SavedItem {
            id: need(id, names, 0)?,
            key: need(key, names, 1)?,
            key_frame: need(key_frame, names, 2)?,
            value: need(value, names, 3)?,
        }))
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

/// The id of a [`Replicated`]'s object in its one-item array.
const OBJECT_ID: ReplicationId = ReplicationId::from_raw(0);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = (SavedArray, SavedItem<T>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a saved Replicated object (frame, array_key, key, key_frame, value)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let array = SavedArray {
            frame: next(&mut seq, 0, &self)?,
            array_key: next(&mut seq, 1, &self)?,
            next_id: OBJECT_ID.to_raw() + 1,
        };
        let item = SavedItem {
            id: OBJECT_ID,
            key: next(&mut seq, 2, &self)?,
            key_frame: next(&mut seq, 3, &self)?,
            value: next(&mut seq, 4, &self)?,
        };
        Ok((array, item))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let names = OBJECT_FIELDS;
        let (mut frame, mut array_key, mut key, mut key_frame) = (None, None, None, None);
        let mut value = None;
        while let Some(Field(index)) = map.next_key_seed(FieldSeed(names))? {
            match index {
                0 => take(&mut map, &mut frame, names, index)?,
                1 => take(&mut map, &mut array_key, names, index)?,
                2 => take(&mut map, &mut key, names, index)?,
                3 => take(&mut map, &mut key_frame, names, index)?,
                _ => take(&mut map, &mut value, names, index)?,
            }
        }
        let array = SavedArray {
            frame: need(frame, names, 0)?,
            array_key: need(array_key, names, 1)?,
            next_id: OBJECT_ID.to_raw() + 1,
        };
        let item = SavedItem {
            id: OBJECT_ID,
            key: need(key, names, 2)?,
            key_frame: need(key_frame, names, 3)?,
            value: need(value, names, 4)?,
        };
        Ok((array, item))
    }
}
