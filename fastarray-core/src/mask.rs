//! [`FieldMask`]: which replicated fields of a struct changed.

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign};

/// One bit per replicated field of a struct, bit `i` for the `i`-th
/// replicated field in declaration order (skipped fields have no bit).
/// A struct has at most 64 replicated fields; the derive refuses more.
///
/// ```
/// use fastarray_core::FieldMask;
///
/// let m = FieldMask::EMPTY.with(0) | FieldMask::single(3);
/// assert!(m.contains(3) && !m.contains(1));
/// assert_eq!(m.iter().collect::<Vec<_>>(), [0, 3]);
/// assert_eq!(FieldMask::all(3).bits(), 0b111);
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FieldMask(u64);

impl FieldMask {
    /// No field.
    pub const EMPTY: Self = Self(0);

    /// The mask with exactly these bits.
    #[inline]
    pub const fn from_bits(bits: u64) -> Self {
        Self(bits)
    }

    /// The raw bits.
    #[inline]
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Every field of a struct with `field_count` fields (≤ 64).
    #[inline]
    pub const fn all(field_count: u32) -> Self {
        if field_count >= 64 {
            Self(u64::MAX)
        } else {
            Self((1u64 << field_count) - 1)
        }
    }

    /// Only field `index` (< 64).
    #[inline]
    pub const fn single(index: u32) -> Self {
        Self(1u64 << index)
    }

    /// This mask plus field `index` (< 64).
    #[inline]
    #[must_use]
    pub const fn with(self, index: u32) -> Self {
        Self(self.0 | (1u64 << index))
    }

    /// Whether field `index` is in the mask (`false` for `index` ≥ 64).
    #[inline]
    pub const fn contains(self, index: u32) -> bool {
        index < 64 && self.0 & (1u64 << index) != 0
    }

    /// Whether no field is in the mask.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many fields are in the mask.
    #[inline]
    pub const fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether every field of `other` is also in `self`.
    #[inline]
    pub const fn covers(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The mask moved `by` fields up: field `i` becomes field `i + by`
    /// (fields pushed past 63 are dropped). A flattened struct's mask inside
    /// its parent's.
    #[inline]
    #[must_use]
    pub const fn shifted_up(self, by: u32) -> Self {
        Self(match self.0.checked_shl(by) {
            Some(bits) => bits,
            None => 0,
        })
    }

    /// Fields `from..from + width` of the mask, moved down to start at 0: a
    /// flattened struct's own mask, out of its parent's.
    #[inline]
    #[must_use]
    pub const fn window(self, from: u32, width: u32) -> Self {
        let shifted = match self.0.checked_shr(from) {
            Some(bits) => bits,
            None => 0,
        };
        Self(shifted & Self::all(width).0)
    }

    /// Whether `self` and `other` share a field: with a derived field
    /// constant, whether a changed-field mask names that field (any of its
    /// leaves, for a flattened field).
    ///
    /// ```
    /// use fastarray_core::FieldMask;
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate)]
    /// #[replicate(crate = "fastarray_core")]
    /// struct Agent { position: [f32; 3], health: u8 }
    ///
    /// let changed = FieldMask::single(1);
    /// assert!(changed.intersects(Agent::HEALTH));
    /// assert!(!changed.intersects(Agent::POSITION));
    /// ```
    #[inline]
    #[must_use]
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// The fields in `self` that are not in `other`.
    #[inline]
    #[must_use]
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// The field indices in the mask, ascending.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        let mut rest = self.0;
        core::iter::from_fn(move || {
            if rest == 0 {
                None
            } else {
                let index = rest.trailing_zeros();
                rest &= rest - 1;
                Some(index)
            }
        })
    }
}

impl BitOr for FieldMask {
    type Output = Self;
    #[inline]
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl BitAnd for FieldMask {
    type Output = Self;
    #[inline]
    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

impl BitOrAssign for FieldMask {
    #[inline]
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for FieldMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}
