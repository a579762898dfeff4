//! Connections: everything one client is sent, in the same packets. On the
//! server a [`Connection`] per client groups the send states of every
//! array and object it mirrors (its channels), so that one packet's
//! acknowledgement or loss reaches all of them, and fills each packet up
//! to an MTU across them; on the client a [`MirrorConnection`] applies
//! each packet to every mirror at once.
//!
//! # Which path for which transport
//!
//! A connection runs in one of two [`Delivery`] modes, with one set of
//! rules for the packets' sections (channels, MTU packing, budgets, an
//! oversized item alone, joins over several packets): only who numbers
//! each packet, who writes a header and who reports its fate differ.
//!
//! - [`Delivery::Header`], for transports that report nothing per
//!   message (bare UDP, renet and netcode, QUIC datagrams,
//!   GameNetworkingSockets' and ENet's unreliable messages, WebTransport
//!   datagrams): both sides acknowledge
//!   packets with [`Acks`](crate::Acks), whose 8-byte header starts every
//!   packet ([`Connection::write_packet`], [`MirrorConnection::apply`],
//!   [`MirrorConnection::write_header`], [`Connection::receive`]);
//!   optionally [`secure`](Connection::secure).
//! - [`Delivery::Reports`], for transports that deliver every message
//!   (a reliable stream: TCP, WebSocket, a QUIC stream) or report each
//!   one's fate: no
//!   header; the caller gives each payload the transport's number
//!   ([`Connection::write_payload`]) and passes on the transport's
//!   verdicts ([`Connection::delivered`], [`Connection::lost`]); the client
//!   applies the payload as it is ([`MirrorConnection::apply_payload`]).
//!   The transport authenticates its peer: no session applies.
//!
//! A payload is byte for byte what a header packet carries after its
//! header, for the same channels' work:
//!
//! ```
//! use std::time::Instant;
//! use fastarray_core::{AckHeader, Connection, FastArray};
//! use fastarray_derive::Replicate;
//!
//! #[derive(Replicate, Clone, Debug, PartialEq)]
//! #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
//! struct Unit { hp: u8 }
//!
//! let world = || {
//!     let mut units = FastArray::new();
//!     for hp in 0..200 {
//!         units.push(Unit { hp });
//!     }
//!     units.commit();
//!     units
//! };
//! let (mut one, mut two) = (world(), world());
//! let mut header = Connection::new(1);
//! let mut reports = Connection::with_delivery_reports(1);
//! let (mut packet, mut payload) = (Vec::new(), Vec::new());
//! let stats = header.write_packet(Instant::now(), 108, &mut [&mut one], &mut packet).unwrap();
//! reports.write_payload(stats.packet, 100, &mut [&mut two], &mut payload).unwrap();
//! assert_eq!(&packet[AckHeader::BYTES..], &payload[..]);
//! assert!(stats.totals.deferred > 0); // the rest goes in the next packets
//! ```

mod channel;
mod client;
mod delivery;
mod error;
mod observe;
mod server;
mod stats;

pub use channel::{Incoming, Outgoing, WithCallbacks};
pub use client::{MirrorConnection, PacketReport};
pub use delivery::Delivery;
pub use error::ConnectionError;
pub use server::{Connection, MAX_PACKET, MAX_VERDICTS, PacketStats};
pub use stats::ChannelStats;
