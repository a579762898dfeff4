//! A store as a save holds it, and a store rebuilt from a save: the items
//! with their ids, keys and the frames of their keys, the array's frame,
//! key and id counter. What a connection or a mirror keeps is not saved:
//! connections do not outlive the process, and their clients join the
//! restored array by snapshot.

use core::fmt;

use super::{Slot, SlotState, Store};
use crate::id::{ReplicationId, ReplicationKey};

/// One item of a save, in its saved form.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename = "Item", deny_unknown_fields)]
pub(crate) struct SavedItem<T> {
    pub(crate) id: ReplicationId,
    pub(crate) key: ReplicationKey,
    /// The frame that added the item or last bumped its key.
    pub(crate) key_frame: u64,
    /// The client that owns it (the array's, not the store's: the store
    /// neither writes nor reads it).
    #[serde(default)]
    pub(crate) owner: Option<u64>,
    /// How many times it changed shards (the array's, as `owner`).
    #[serde(default)]
    pub(crate) tenure: u32,
    pub(crate) value: T,
}

/// What a save's counters say of the array.
#[derive(Clone)]
pub(crate) struct SavedArray {
    pub(crate) frame: u64,
    pub(crate) array_key: ReplicationKey,
    /// The id the next push takes: above every id the array ever gave.
    pub(crate) next_id: u64,
    /// The ids the array gives: a shard's range, or all of them.
    pub(crate) own_ids: core::ops::Range<u64>,
}

/// Why a save does not make an array: each would let the restored array
/// reuse an id or contradict itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RestoreError {
    /// Two items with one id.
    DuplicateId(ReplicationId),
    /// An item whose id the next push would give again.
    IdNotBelowNext { id: ReplicationId, next_id: u64 },
    /// An item whose key changed after the array's frame.
    KeyFrameAhead {
        id: ReplicationId,
        key_frame: u64,
        frame: u64,
    },
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateId(id) => write!(f, "the save holds item {id} twice"),
            Self::IdNotBelowNext { id, next_id } => write!(
                f,
                "the save holds item {id} but gives the next push id #{next_id}: ids would be reused"
            ),
            Self::KeyFrameAhead {
                id,
                key_frame,
                frame,
            } => write!(
                f,
                "item {id}'s key changed at frame {key_frame}, after the array's frame {frame}"
            ),
        }
    }
}

impl<T> Store<T> {
    /// The counters a save keeps.
    pub(crate) fn saved_array(&self) -> SavedArray {
        SavedArray {
            frame: self.frame,
            array_key: self.array_key,
            next_id: self.next_id,
            own_ids: 0..u64::MAX,
        }
    }

    /// The items as a save keeps them, in the array's order.
    pub(crate) fn saved_items(&self) -> impl ExactSizeIterator<Item = SavedItem<&T>> {
        self.slots.iter().map(|slot| SavedItem {
            id: slot.id,
            key: slot.key,
            key_frame: slot.key_frame(),
            owner: None,
            tenure: 0,
            value: &slot.value,
        })
    }

    /// A server's store holding `items`, in that order, at the counters of
    /// `array`, with nothing uncommitted: the next commit announces only
    /// what changes after it, and the next push takes `array.next_id`.
    pub(crate) fn restore(
        array: SavedArray,
        items: Vec<SavedItem<T>>,
    ) -> Result<Self, RestoreError> {
        let mut store = Self::with_capacity(items.len());
        store.frame = array.frame;
        store.array_key = array.array_key;
        store.next_id = array.next_id;
        for item in items {
            // An item a shard adopted has an id of another's range.
            let own = array.own_ids.contains(&item.id.to_raw());
            if own && item.id.to_raw() >= array.next_id {
                return Err(RestoreError::IdNotBelowNext {
                    id: item.id,
                    next_id: array.next_id,
                });
            }
            if item.key_frame > array.frame {
                return Err(RestoreError::KeyFrameAhead {
                    id: item.id,
                    key_frame: item.key_frame,
                    frame: array.frame,
                });
            }
            if store.index.insert(item.id, store.slots.len()).is_some() {
                return Err(RestoreError::DuplicateId(item.id));
            }
            store.slots.push(Slot {
                id: item.id,
                key: item.key,
                frame_mark: item.key_frame,
                state: SlotState::Clean,
                value: item.value,
            });
        }
        Ok(store)
    }
}
