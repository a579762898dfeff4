//! Connections: everything one client is sent, in the same packets. On the
//! server a [`Connection`] per client groups the send states of every
//! array and object it mirrors (its channels), so that one packet's
//! acknowledgement or loss reaches all of them, and fills each packet up
//! to an MTU across them; on the client a [`MirrorConnection`] applies
//! each packet to every mirror at once. Both acknowledge packets with
//! [`Acks`](crate::Acks), whose header starts every packet.

mod channel;
mod client;
mod delivery;
mod error;
mod server;

pub use channel::{Incoming, Outgoing, WithCallbacks};
pub use client::{MirrorConnection, PacketReport};
pub use delivery::Delivery;
pub use error::ConnectionError;
pub use server::{Connection, MAX_PACKET, MAX_VERDICTS, PacketStats};
