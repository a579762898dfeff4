//! Who numbers a connection's packets and who learns their fate: the
//! connection's own [`AckHeader`](crate::AckHeader) ([`Delivery::Header`]),
//! or the transport ([`Delivery::Reports`]), whose packets the connection
//! then awaits a report for ([`Awaited`]).

use std::collections::HashSet;

/// How a [`Connection`](crate::Connection) and its
/// [`MirrorConnection`](crate::MirrorConnection) number packets and learn
/// their fate. The packets' sections (channels, MTU packing, budgets,
/// oversized items, joins) are the same in both: only the numbering, the
/// header and the verdicts differ.
///
/// ```
/// use fastarray_core::{Connection, Delivery, MirrorConnection};
///
/// assert_eq!(Connection::new(2).delivery(), Delivery::Header);
/// assert_eq!(Connection::with_delivery_reports(2).delivery(), Delivery::Reports);
/// assert_eq!(MirrorConnection::with_delivery_reports(2).delivery(), Delivery::Reports);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Delivery {
    /// Every packet starts with the connection's 8-byte
    /// [`AckHeader`](crate::AckHeader): the connection numbers its
    /// packets, and learns their fate from the peer's headers. For
    /// transports that say nothing of delivery (bare UDP, renet's
    /// unreliable channels). Written by
    /// [`Connection::write_packet`](crate::Connection::write_packet),
    /// applied by [`MirrorConnection::apply`](crate::MirrorConnection::apply).
    Header,
    /// No header: the transport numbers the packets and reports each one
    /// delivered or lost. For transports that do (GameNetworkingSockets,
    /// ENet, a reliable stream). Written by
    /// [`Connection::write_payload`](crate::Connection::write_payload),
    /// reported by [`Connection::delivered`](crate::Connection::delivered)
    /// and [`Connection::lost`](crate::Connection::lost), applied by
    /// [`MirrorConnection::apply_payload`](crate::MirrorConnection::apply_payload).
    Reports,
}

impl Delivery {
    /// The mode's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Header => "its own header",
            Self::Reports => "the transport's delivery reports",
        }
    }
}

/// How many awaited packets trigger a pass forgetting those no channel
/// still has in flight (see [`Awaited::forget_unless`]).
const PRUNE_AT: usize = 1_024;

/// The packets written in [`Delivery::Reports`] mode whose report has not
/// come: a report for any other number is ignored.
#[derive(Debug)]
pub(crate) struct Awaited {
    packets: HashSet<u32>,
    /// The count that triggers the next pass (see
    /// [`forget_unless`](Self::forget_unless)).
    prune_at: usize,
}

impl Default for Awaited {
    fn default() -> Self {
        Self {
            packets: HashSet::new(),
            prune_at: PRUNE_AT,
        }
    }
}

impl Awaited {
    /// Whether `packet` awaits its report.
    pub(crate) fn contains(&self, packet: u32) -> bool {
        self.packets.contains(&packet)
    }

    /// Records that `packet` was written and awaits its report.
    pub(crate) fn insert(&mut self, packet: u32) {
        self.packets.insert(packet);
    }

    /// Takes `packet`'s report: whether it was awaited.
    pub(crate) fn remove(&mut self, packet: u32) -> bool {
        self.packets.remove(&packet)
    }

    /// How many packets await their report.
    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }

    /// Once more packets await than a threshold (at least [`PRUNE_AT`]),
    /// forgets those for which
    /// `in_flight` is false: packets every channel already counted as lost
    /// because their report never came within a window of frames. So a
    /// transport that never reports a packet costs a bounded set, not a
    /// leak (amortised: a pass per `PRUNE_AT` packets written at most).
    pub(crate) fn forget_unless(&mut self, in_flight: impl Fn(u32) -> bool) {
        if self.packets.len() > self.prune_at {
            self.packets.retain(|&packet| in_flight(packet));
            // Packets genuinely in flight stay: the next pass waits for as
            // many again.
            self.prune_at = PRUNE_AT.max(2 * self.packets.len());
        }
    }
}
