//! [`ReplicationId`] and [`ReplicationKey`].

use core::fmt;

/// The identity of an item in a [`FastArray`](crate::FastArray).
///
/// Assigned by the array when the item is pushed, from a 64-bit counter that
/// never goes back: an id is never reused, so no delta meant for a removed
/// item can reach a new one. Items are always found by id, never by position.
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

    /// The next version.
    #[inline]
    #[must_use]
    pub const fn next(self) -> Self {
        Self(self.0.wrapping_add(1))
    }
}
