//! [`ShardId`]: which server of a world split across several an array
//! belongs to, and the range of ids it hands out.

use core::fmt;
use core::ops::Range;

use crate::id::ReplicationId;

/// One server of a world split across several (a *shard*), as
/// BigWorld splits its space into cells: each shard is the authority of
/// the items in its region, and hands out ids from a range of its own, so
/// ids never collide across shards and an item keeps its id when it is
/// [handed off](crate::FastArray::hand_off) to another shard.
///
/// Shard `n` pushes ids from `n << 40` on: each shard has 2^40 ids (a
/// million pushes a second for twelve days), and shard 0's are those of
/// an array that is not sharded. A relay that follows several shards
/// serves one world with every shard's ids.
///
/// ```
/// use fastarray_core::{ReplicationId, ShardId};
///
/// let east = ShardId::new(1);
/// assert_eq!(east.first_id(), ReplicationId::from_raw(1 << 40));
/// assert_eq!(ShardId::of(ReplicationId::from_raw((1 << 40) + 7)), east);
/// assert_eq!(ShardId::of(ReplicationId::from_raw(7)), ShardId::default());
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShardId(u16);

/// Bits of an id below its shard's number.
const ID_BITS: u32 = 40;

impl ShardId {
    /// Shard number `n`.
    pub const fn new(n: u16) -> Self {
        Self(n)
    }

    /// The shard's number.
    pub const fn get(self) -> u16 {
        self.0
    }

    /// The first id the shard pushes.
    pub const fn first_id(self) -> ReplicationId {
        ReplicationId::from_raw((self.0 as u64) << ID_BITS)
    }

    /// The raw ids the shard pushes.
    pub const fn ids(self) -> Range<u64> {
        let first = (self.0 as u64) << ID_BITS;
        first..first + (1 << ID_BITS)
    }

    /// The shard whose range `id` is in: the shard that pushed it (ids
    /// above every shard's range are counted as the last shard's).
    pub const fn of(id: ReplicationId) -> Self {
        let n = id.to_raw() >> ID_BITS;
        if n > u16::MAX as u64 {
            Self(u16::MAX)
        } else {
            Self(n as u16)
        }
    }
}

impl fmt::Debug for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard {}", self.0)
    }
}

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard {}", self.0)
    }
}
