//! [`MirrorLimits`]: how much a mirror accepts from its server — items per
//! array, bytes per message, items per array inside an item, removals per
//! message — checked while a message is decoded, before the memory it
//! would take is allocated (see `WIRE.md`, "Limits").

use crate::error::{DecodeError, Limit};

/// The most a mirror ([`FastArray`](crate::FastArray) or
/// [`Replicated`](crate::Replicated)) accepts from its server, set by the
/// game. A message that would take the mirror past one is refused whole
/// with [`DecodeError::LimitExceeded`], and changes nothing.
///
/// A genuine message is cheap on the wire and dear in memory: an item of a
/// few bits costs a mirror about a hundred bytes (`WIRE.md`, "Limits"), so
/// without a cap a server — or anyone who can send as it — decides how much
/// a client allocates. The [defaults](Self::DEFAULT) are far above what an
/// ordinary game holds; a game that knows its sizes sets its own, and
/// bounds a mirror's memory at about [`items`](Self::items) times the cost
/// of an item.
///
/// ```
/// use fastarray_core::{DecodeError, FastArray, Limit, MirrorLimits, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Shot { x: u8 }
///
/// let mut server = FastArray::new();
/// for x in 0..3 {
///     server.push(Shot { x });
/// }
/// server.commit();
/// let mut packet = Vec::new();
/// server.write_delta(&mut SendState::new(), 1, &mut packet).unwrap();
///
/// let limits = MirrorLimits { items: 2, ..MirrorLimits::DEFAULT };
/// let mut client = FastArray::<Shot>::mirror_with_limits(limits);
/// let refused = client.apply_delta(&packet, &mut ()).unwrap_err();
/// assert_eq!(
///     refused,
///     DecodeError::LimitExceeded { limit: Limit::Items, max: 2, would_be: 3 }
/// );
/// assert!(client.is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MirrorLimits {
    /// Items the array may hold once a message is applied (a replicated
    /// object's arrays count as arrays here, not as arrays inside an
    /// item); also the changes it keeps waiting for their items' adds
    /// (a frame's shared message may bring them before the add). Default 262 144 (2¹⁸): an MMO's 100 000 agents in one array
    /// fit two and a half times.
    pub items: usize,
    /// Bytes one message may take: a delta, a snapshot, or one channel's
    /// section of a packet. A longer message given whole is refused before
    /// it is decoded; one read from a shared bit stream is refused at the
    /// first read past this many bytes from its start. Default 16 MiB: a
    /// snapshot of 262 144 items of 64 bytes (deltas sent in datagrams are
    /// at most [`MAX_PACKET`](crate::MAX_PACKET), 65 507 bytes).
    pub message_bytes: usize,
    /// Items each array inside an item (a `#[replicate(array)]` field) may
    /// hold, checked the same way; arrays inside those inherit it too.
    /// Default 65 536 (2¹⁶): no inventory, squad or buff list comes near.
    pub inner_items: usize,
    /// Ids one message may remove or take out of scope. A removal costs one
    /// bit on the wire and 8 bytes while the message is decoded, plus its
    /// tombstone. A message removes at most what its client may hold, so
    /// the default is [`items`](Self::items)' default, 262 144.
    pub removals: usize,
}

impl MirrorLimits {
    /// The defaults: items 262 144 (2¹⁸), message bytes 16 MiB, inner items
    /// 65 536 (2¹⁶), removals 262 144 per message. See each field for why.
    pub const DEFAULT: Self = Self {
        items: 1 << 18,
        message_bytes: 16 << 20,
        inner_items: 1 << 16,
        removals: 1 << 18,
    };
}

impl Default for MirrorLimits {
    /// [`MirrorLimits::DEFAULT`].
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The limits one array is decoded under: the mirror's, and whether the
/// array is inside an item (its items count against
/// [`MirrorLimits::inner_items`]). Plumbing of the arrays inside items
/// (see `InnerArray`), not an API.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct ArrayLimits {
    limits: MirrorLimits,
    inner: bool,
}

impl ArrayLimits {
    /// A mirror's own array (or a replicated object's).
    pub(crate) fn top(limits: MirrorLimits) -> Self {
        Self {
            limits,
            inner: false,
        }
    }

    /// The limits of the arrays inside this array's items: inner arrays,
    /// unless this is a replicated object's array (`object`), whose item
    /// is the object and whose arrays are the game's arrays.
    pub(crate) fn for_arrays(self, object: bool) -> Self {
        Self {
            inner: self.inner || !object,
            ..self
        }
    }

    /// The mirror's limits.
    pub(crate) fn limits(self) -> MirrorLimits {
        self.limits
    }

    /// The most items this array may hold.
    pub(crate) fn items(self) -> usize {
        self.item_limit().1
    }

    /// Refuses `would_be` items in this array if that is over its limit.
    pub(crate) fn check_items(self, would_be: usize) -> Result<(), DecodeError> {
        let (limit, max) = self.item_limit();
        check(limit, max, would_be)
    }

    /// Which limit holds this array's items, and its value.
    fn item_limit(self) -> (Limit, usize) {
        if self.inner {
            (Limit::InnerItems, self.limits.inner_items)
        } else {
            (Limit::Items, self.limits.items)
        }
    }

    /// Refuses a message that removes `count` ids if that is over the limit.
    pub(crate) fn check_removals(self, count: usize) -> Result<(), DecodeError> {
        check(Limit::Removals, self.limits.removals, count)
    }
}

/// Refuses a message of `bytes` bytes if that is over `limits`.
pub(crate) fn check_message_bytes(limits: &MirrorLimits, bytes: usize) -> Result<(), DecodeError> {
    check(Limit::MessageBytes, limits.message_bytes, bytes)
}

fn check(limit: Limit, max: usize, would_be: usize) -> Result<(), DecodeError> {
    if would_be > max {
        return Err(DecodeError::LimitExceeded {
            limit,
            max: max as u64,
            would_be: would_be as u64,
        });
    }
    Ok(())
}
