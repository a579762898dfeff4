//! The transport under the plugins: a small pair of traits you implement
//! for yours ([`ServerTransport`], [`ClientTransport`]), the built-in UDP
//! one ([`UdpServerTransport`], [`UdpClientTransport`]) and a link
//! conditioner that loses, duplicates and delays packets on top of any
//! transport ([`Conditioned`]), to see your game under a bad link.
//!
//! A transport moves unreliable, unordered datagrams, each whole or not at
//! all, and names each client by a `u64` ([`ClientId`]): the same number
//! the game uses for the client's views and interest. The plugins write
//! fastarray's own header in every packet: its acknowledgements tell the
//! server what arrived, so the transport reports nothing but what it
//! received.
//!
//! ```
//! use std::time::Instant;
//! use fastarray_bevy::{ClientId, ServerEvent, ServerTransport};
//!
//! /// Datagrams in a queue, for a game that relays them itself.
//! #[derive(Default)]
//! struct Relay {
//!     inbox: Vec<(ClientId, Vec<u8>)>,
//!     outbox: Vec<(ClientId, Vec<u8>)>,
//! }
//!
//! impl ServerTransport for Relay {
//!     fn poll(&mut self, _now: Instant, events: &mut Vec<ServerEvent>) {
//!         for (client, packet) in self.inbox.drain(..) {
//!             events.push(ServerEvent::Packet { client, packet });
//!         }
//!     }
//!     fn send(&mut self, client: ClientId, packet: &[u8]) {
//!         self.outbox.push((client, packet.to_vec()));
//!     }
//! }
//! ```

mod conditioner;
mod udp;

use std::any::Any;
use std::time::Instant;

pub use conditioner::{Conditioned, LinkConditioner};
pub use udp::{UdpClientTransport, UdpServerTransport};

/// How a transport names a client: renet's client id, a QUIC connection's
/// number, the built-in UDP transport's counter.
pub type ClientId = u64;

/// The size of the packets a transport takes when it does not say: a
/// datagram that crosses the Internet unfragmented.
pub const DEFAULT_MAX_PACKET: usize = 1200;

/// What a server's transport heard since it was last polled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// A client connected. A transport that has no connections of its own
    /// may report a client when its first packet arrives, or not at all:
    /// a packet from a client the server does not know connects it.
    Connected {
        /// The client.
        client: ClientId,
    },
    /// A client is gone: its connection's state is dropped.
    Disconnected {
        /// The client.
        client: ClientId,
    },
    /// A datagram from a client.
    Packet {
        /// The client.
        client: ClientId,
        /// The datagram, as it arrived.
        packet: Vec<u8>,
    },
}

/// The server's side of a transport.
pub trait ServerTransport: Any + Send + Sync {
    /// Appends what happened since the last call to `events`: new and
    /// departed clients, and datagrams. Never blocks.
    fn poll(&mut self, now: Instant, events: &mut Vec<ServerEvent>);

    /// Sends one datagram to `client` (unreliable: it may be lost).
    fn send(&mut self, client: ClientId, packet: &[u8]);

    /// The largest datagram `client` takes now, in bytes.
    fn max_packet(&self, client: ClientId) -> usize {
        let _ = client;
        DEFAULT_MAX_PACKET
    }

    /// Hands what [`send`](Self::send) and
    /// [`send_reliable`](Self::send_reliable) queued this tick to the
    /// network, for a transport that packs messages into datagrams
    /// (renet's `send_packets`). Called once a tick, after the sends.
    fn flush(&mut self) {}

    /// Whether [`send_reliable`](Self::send_reliable) works: the
    /// transport has a reliable, ordered channel (renet's, a QUIC stream).
    /// Joins by snapshot need one. `false` unless implemented.
    fn has_reliable(&self) -> bool {
        false
    }

    /// Sends `message` to `client` on the reliable channel: it arrives
    /// whole, once, in order with the other reliable messages. Does
    /// nothing on a transport without one.
    fn send_reliable(&mut self, client: ClientId, message: &[u8]) {
        let _ = (client, message);
    }
}

/// The client's side of a transport.
pub trait ClientTransport: Any + Send + Sync {
    /// Appends the datagrams that arrived since the last call to
    /// `packets`. Never blocks.
    fn poll(&mut self, now: Instant, packets: &mut Vec<Vec<u8>>);

    /// Sends one datagram to the server (unreliable: it may be lost).
    fn send(&mut self, packet: &[u8]);

    /// Hands what [`send`](Self::send) queued to the network (see
    /// [`ServerTransport::flush`]). Called once a tick, after the send.
    fn flush(&mut self) {}

    /// Whether the transport has the server's reliable, ordered channel
    /// ([`poll_reliable`](Self::poll_reliable)): then the client waits
    /// for the server's join message before it applies packets (see
    /// [`Join`](crate::Join)). `false` unless implemented; a transport
    /// that implements `poll_reliable` says `true` here.
    fn has_reliable(&self) -> bool {
        false
    }

    /// Appends the messages of the reliable channel that arrived since
    /// the last call (see [`ServerTransport::send_reliable`]). Nothing on
    /// a transport without one.
    fn poll_reliable(&mut self, now: Instant, messages: &mut Vec<Vec<u8>>) {
        let _ = (now, messages);
    }
}
