//! [`MirrorState`]: everything a mirror holds but its items' values, to
//! compare two mirrors whole — what a refused message must leave as it
//! was.

use super::mirror::Mirror;
use crate::id::{ReplicationId, ReplicationKey};

/// Everything a mirror holds but its items' values: its ids, the items'
/// keys, the frame of the newest value applied to each field, the scope
/// exits items came back after, the arrays inside its items (the same,
/// each), and what it remembers of the stream — the newest frame applied,
/// the snapshot it started from, tombstones and exits of removed ids, the
/// items its handles name, its [limits](crate::MirrorLimits).
///
/// Two mirrors are in the same state when their states are equal and their
/// items are (`==` on the arrays): tests use it to check that a message
/// that was refused changed nothing, which `==` alone (ids and values)
/// cannot see. Made by [`FastArray::mirror_state`](crate::FastArray::mirror_state)
/// and [`Replicated::mirror_state`](crate::Replicated::mirror_state); an
/// authority's state holds its ids, keys and frame only.
///
/// ```
/// use fastarray_core::{FastArray, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { hp: u8 }
///
/// let mut server = FastArray::new();
/// server.push(Unit { hp: 1 });
/// server.commit();
/// let mut packet = Vec::new();
/// server.write_delta(&mut SendState::new(), 1, &mut packet).unwrap();
/// let mut client = FastArray::<Unit>::mirror();
/// client.apply_delta(&packet, &mut ()).unwrap();
///
/// let (before, state) = (client.clone(), client.mirror_state());
/// packet.truncate(1);
/// assert!(client.apply_delta(&packet, &mut ()).is_err());
/// assert_eq!((&client, client.mirror_state()), (&before, state));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorState {
    /// The array's frame (a snapshot's, for a mirror loaded from one).
    frame: u64,
    /// The receiving side, once there is one.
    receiver: Option<Mirror>,
    /// The items, in id order.
    items: Vec<ItemState>,
}

/// What a mirror holds of one item, but its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ItemState {
    pub(crate) id: ReplicationId,
    pub(crate) key: ReplicationKey,
    /// The exit it came back after, if any.
    pub(crate) returned_after: Option<u64>,
    /// Per field, the frame of the newest value applied.
    pub(crate) field_frames: Vec<u64>,
    /// The states of the arrays inside it, in declaration order.
    pub(crate) arrays: Vec<MirrorState>,
}

impl MirrorState {
    /// The state of an array at `frame` with receiving side `receiver` and
    /// these items, in any order.
    pub(crate) fn new(frame: u64, receiver: Option<&Mirror>, mut items: Vec<ItemState>) -> Self {
        items.sort_unstable_by_key(|item| item.id);
        Self {
            frame,
            receiver: receiver.cloned(),
            items,
        }
    }
}
