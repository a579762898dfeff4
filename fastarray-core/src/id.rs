//! [`ReplicationId`] and [`ReplicationKey`].

use core::fmt;

/// The identity of an item in a [`FastArray`](crate::FastArray).
///
/// Assigned by the array when the item is pushed, from a 64-bit counter that
/// never goes back: an id is never reused, so no delta meant for a removed
/// item can reach a new one. Items are always found by id, never by position.
///
/// # Ids as fields: references between items
///
/// A mirror holds every item under the id the server gave it, so an id
/// sent as a field (`owner: ReplicationId`, `target: Option<ReplicationId>`)
/// resolves on the client with `mirror.get(id)`, exactly as on the server.
/// On the wire an id is a [varint](crate::BitWriter::write_varint) of its
/// raw value (ids count up from 0: `#3` takes 5 bits). Each array counts
/// its own ids, so an id means something only in the array that assigned
/// it and that array's mirrors; a reference to an item that has been
/// removed (or has not reached this mirror yet) finds `None`.
///
/// ```
/// use fastarray_core::{FastArray, ReplicationId, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { hp: u8, target: Option<ReplicationId> }
///
/// let mut server = FastArray::new();
/// let ann = server.push(Unit { hp: 10, target: None });
/// let bob = server.push(Unit { hp: 20, target: Some(ann) });
/// server.commit();
///
/// let (mut state, mut mirror) = (SendState::new(), FastArray::<Unit>::new());
/// let mut packet = Vec::new();
/// server.write_delta(&mut state, 0, &mut packet).unwrap();
/// mirror.apply_delta(&packet, &mut ()).unwrap();
///
/// let target = mirror.get(bob).unwrap().target.unwrap();
/// assert_eq!(mirror.get(target).unwrap().hp, 10); // the client's copy of `ann`
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplicationId(u64);

impl ReplicationId {
    /// The id with this raw value, as read from the wire or a log.
    #[inline]
    pub const fn from_raw(raw: u64) -> Self {
        Self(raw)
    }

    /// The raw value, as written on the wire.
    #[inline]
    pub const fn to_raw(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for ReplicationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

impl fmt::Display for ReplicationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A version number: bumped on an item when a commit finds one of its
/// replicated fields really changed, and on the array when a commit finds
/// any add, remove or change. Wraps around; compare keys for equality only.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct ReplicationKey(u32);

impl ReplicationKey {
    /// The raw value.
    #[inline]
    pub const fn to_raw(self) -> u32 {
        self.0
    }

    /// The key of raw value `raw`.
    #[inline]
    pub(crate) const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The next version.
    #[inline]
    #[must_use]
    pub const fn next(self) -> Self {
        Self(self.0.wrapping_add(1))
    }
}
