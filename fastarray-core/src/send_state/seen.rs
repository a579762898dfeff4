//! [`Seen`]: how a connection sees one item in its scope (its detail
//! level and priority), in the few bits the view entry keeps it in. The
//! rules that use them are `send_state::scope`'s.

/// The highest detail level: a connection sees an item at a level from 0
/// (only the fields without `#[replicate(detail = N)]`) to `MAX_DETAIL`
/// (every field), which is where every item starts.
pub const MAX_DETAIL: u8 = 7;

/// How a connection sees one item in its scope: kept in the 8-byte view
/// entry, as a detail level (3 bits) and a priority to 8 significant bits
/// (a bfloat16: the `f32`'s upper half, rounded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Seen {
    /// Within `MIN_PRIORITY..=MAX_PRIORITY` (see `send_state::scope`).
    pub(crate) priority: f32,
    /// `0..=MAX_DETAIL`.
    pub(crate) level: u8,
}

impl Default for Seen {
    fn default() -> Self {
        Self {
            priority: 1.0,
            level: MAX_DETAIL,
        }
    }
}

impl Seen {
    /// The level and the priority's bits, as the view entry keeps them.
    pub(crate) fn pack(self) -> (u8, u16) {
        let bits = self.priority.to_bits();
        // Round to nearest, ties to even; a kept priority is finite and
        // far from the largest `f32`, so this cannot carry into infinity.
        let rounded = bits + 0x7FFF + ((bits >> 16) & 1);
        (self.level, (rounded >> 16) as u16)
    }

    /// The inverse of [`pack`](Self::pack).
    pub(crate) fn unpack(level: u8, priority: u16) -> Self {
        Self {
            priority: f32::from_bits(u32::from(priority) << 16),
            level,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::send_state::scope::{MAX_PRIORITY, MIN_PRIORITY, clamp_priority};

    /// A priority is kept to 8 significant bits, rounded to nearest; the
    /// ones a user is likely to write as powers of two come back exactly.
    #[test]
    fn priorities_keep_eight_significant_bits() {
        for priority in [
            MIN_PRIORITY,
            0.001,
            0.1,
            0.3,
            1.0,
            2.0,
            7.5,
            1000.0,
            MAX_PRIORITY,
        ] {
            let seen = Seen {
                priority: clamp_priority(priority),
                level: 3,
            };
            let (level, bits) = seen.pack();
            let back = Seen::unpack(level, bits);
            assert_eq!(back.level, 3);
            let error = (back.priority - priority).abs() / priority;
            assert!(
                error <= 1.0 / 256.0,
                "{priority} came back as {}",
                back.priority
            );
        }
        for exact in [0.25, 0.5, 1.0, 4.0, 0.75] {
            let (_, bits) = Seen {
                priority: exact,
                level: 0,
            }
            .pack();
            assert_eq!(Seen::unpack(0, bits).priority, exact);
        }
        assert_eq!(
            Seen::unpack(MAX_DETAIL, Seen::default().pack().1),
            Seen::default()
        );
    }
}
