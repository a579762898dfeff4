//! Who numbers a connection's packets and who learns their fate: the
//! connection's own [`AckHeader`](crate::AckHeader) ([`Delivery::Header`]),
//! or the transport ([`Delivery::Reports`]), whose packets the connection
//! then awaits a report for.

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
    /// transports that say nothing of each message's delivery (bare UDP,
    /// renet, QUIC datagrams, GameNetworkingSockets' and ENet's unreliable
    /// messages). Written by
    /// [`Connection::write_packet`](crate::Connection::write_packet),
    /// applied by [`MirrorConnection::apply`](crate::MirrorConnection::apply).
    Header,
    /// No header: the transport numbers the packets and reports each one
    /// delivered or lost. For a reliable stream (TCP, WebSocket, a QUIC
    /// stream: each payload delivered once handed over), or a transport
    /// that reports each message's fate. Written by
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
