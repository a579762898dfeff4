//! [`Rest`]: what a connection keeps of each item at rest, packed in 8
//! bytes (the holding, whether acknowledged, whether a flight is kept, the
//! scope's mark and detail level, and the item's handle).

use super::Holding;
use crate::send_state::seen::Seen;

/// What is kept of every item the client may hold, or the connection's
/// scope holds: 8 bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rest {
    /// The holding (its two low bits, [`ABSENT`] for an item in scope the
    /// client holds nothing of), [`ACKED`], [`FLIGHT`], [`IN_SCOPE`], and
    /// the scope's detail level (the three high bits).
    pub(super) flags: u8,
    /// Records in flight that carried the item; `u8::MAX`: too many to
    /// count, and its [`Flight`] is kept for good.
    pub(super) in_flight: u8,
    /// The scope's priority, as [`Seen`] keeps it.
    pub(super) priority: u16,
    /// For a connection naming items by ids: the item's key when the
    /// newest acknowledged record carrying it was written. By handles: the
    /// item's handle plus one, 0 for none (and the acknowledged key is not
    /// kept: see [`Views::acknowledged`]).
    pub(super) word: u32,
}

/// The holding bits of an item in scope that the client holds nothing of.
pub(super) const ABSENT: u8 = 3;
/// The two bits of the holding.
pub(super) const HOLDING: u8 = 3;
/// A record that carried the item was acknowledged (its key is
/// `acked_key`).
pub(super) const ACKED: u8 = 4;
/// The item has a [`Flight`] in [`Views::flights`].
pub(super) const FLIGHT: u8 = 8;
/// The item is in the connection's scope (its [`Seen`] is kept here).
pub(super) const IN_SCOPE: u8 = 16;
/// Where the detail level starts.
pub(super) const LEVEL_SHIFT: u8 = 5;

impl Rest {
    /// An entry for an item in scope that the client holds nothing of.
    pub(super) fn absent() -> Self {
        Self {
            flags: ABSENT,
            in_flight: 0,
            priority: 0,
            word: 0,
        }
    }

    /// An item the client knows at rest, in no scope, with no handle (and
    /// no acknowledged key kept): what a plain item's entry is.
    pub(super) fn known() -> Self {
        Self {
            flags: super::Holding::Known as u8,
            in_flight: 0,
            priority: 0,
            word: 0,
        }
    }

    /// An item that one record in flight carried, leaving it as
    /// `holding`, in no scope, with no handle, flight or acknowledged key:
    /// what an item of [`Bits`](super::bits::Bits) in flight is.
    pub(super) fn once(holding: super::Holding) -> Self {
        Self {
            flags: holding as u8,
            in_flight: 1,
            priority: 0,
            word: 0,
        }
    }

    /// Whether the client knows the item at rest: no record in flight
    /// carries it, no flight is kept, no scope marks it. On a connection
    /// naming items by ids, such an entry says no more than a plain item.
    pub(super) fn at_rest(&self) -> bool {
        self.flags & (HOLDING | FLIGHT | IN_SCOPE) == super::Holding::Known as u8
            && self.in_flight == 0
    }

    /// What the client holds, `None` for an item only in scope.
    pub(super) fn holding(&self) -> Option<Holding> {
        match self.flags & HOLDING {
            0 => Some(Holding::AddInFlight),
            1 => Some(Holding::Known),
            2 => Some(Holding::RemoveInFlight),
            _ => None,
        }
    }

    pub(super) fn is(&self, holding: Holding) -> bool {
        self.flags & HOLDING == holding as u8
    }

    pub(super) fn set_holding(&mut self, holding: Holding) {
        self.flags = (self.flags & !HOLDING) | holding as u8;
    }

    /// One record that carried the item is resolved; returns whether it
    /// was the last in flight (then its flight can go, unless it guards
    /// the entry). A count that saturated stays, and so does the flight.
    pub(super) fn land(&mut self) -> bool {
        match self.in_flight {
            0 | u8::MAX => false,
            1 => {
                self.in_flight = 0;
                true
            }
            _ => {
                self.in_flight -= 1;
                false
            }
        }
    }

    /// Out of scope: the scope's marks go.
    pub(super) fn clear_seen(&mut self) {
        self.flags &= !(IN_SCOPE | (7 << LEVEL_SHIFT));
        self.priority = 0;
    }

    /// The client holds nothing of it: what the view kept is reset, the
    /// scope's marks stay.
    pub(super) fn clear_view(&mut self) {
        self.flags = (self.flags & (IN_SCOPE | (7 << LEVEL_SHIFT))) | ABSENT;
        self.in_flight = 0;
        self.word = 0;
    }

    /// The item's handle, on a connection naming items by handles.
    pub(super) fn handle(&self) -> Option<u32> {
        self.word.checked_sub(1)
    }

    pub(super) fn seen(&self) -> Option<Seen> {
        (self.flags & IN_SCOPE != 0).then(|| Seen::unpack(self.flags >> LEVEL_SHIFT, self.priority))
    }

    pub(super) fn set_seen(&mut self, seen: Seen) {
        let (level, priority) = seen.pack();
        self.flags = (self.flags & !(7 << LEVEL_SHIFT)) | IN_SCOPE | ((level & 7) << LEVEL_SHIFT);
        self.priority = priority;
    }
}
