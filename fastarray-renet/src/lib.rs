//! fastarray over [renet](https://docs.rs/renet) 2.x: a
//! [`Connection`](fastarray_core::Connection) per renet client on the
//! server, a [`MirrorConnection`](fastarray_core::MirrorConnection) on the
//! client, their packets carried by one of renet's unreliable channels.
//!
//! renet does not tell the application which of its packets arrived, so
//! fastarray numbers and acknowledges its own
//! ([`Delivery::Header`](fastarray_core::Delivery::Header)): each packet
//! starts with fastarray's 8-byte header and rides in renet's channel as
//! one message. This crate does what a user otherwise learns from renet's
//! source:
//!
//! - **the channel and the packet size**: [`connection_config`] (renet's
//!   defaults plus an unreliable channel, [`CHANNEL_ID`], both ways) and
//!   packets of at most [`MTU`] = 1 198 bytes, header included, so each
//!   fits in one of renet's 1 200-byte slices with the 2-byte length renet
//!   puts before it: one datagram, lost or delivered whole. A larger
//!   message would be sliced by renet and lost whenever any slice is;
//! - **renet's client ids as keys**: [`RenetReplicationServer`] keeps a
//!   connection per [`ClientId`](renet::ClientId), made on
//!   `ServerEvent::ClientConnected` and dropped on `ClientDisconnected`,
//!   and [`update_scope`](RenetReplicationServer::update_scope) drives each
//!   client's scope from an [`InterestGrid`](fastarray_core::InterestGrid)
//!   whose viewers are keyed by the same ids;
//! - **the harmless refusals**: a packet the network duplicated, or one
//!   too late to acknowledge, changes nothing and is counted
//!   ([`Received`]), not returned ([`harmless`]); what is returned is a
//!   real error;
//! - **netcode's handshake**: nothing goes to a client before its first
//!   packet arrives. renet_netcode's server completes a client's
//!   connection with a keep-alive it repeats only when nothing else was
//!   sent to that client for 100 ms; a server that sends every tick from
//!   `ClientConnected` on leaves a client whose keep-alive was lost
//!   stuck until netcode's timeout disconnects it (see
//!   [`send`](RenetReplicationServer::send)).
//!
//! The names follow renet's: a renet game calls `update`, then
//! `receive_message` for each channel, then `send_message`, then the
//! transport's `send_packets`; here [`receive`](RenetReplicationServer::receive)
//! drains fastarray's channel and [`send`](RenetReplicationServer::send)
//! fills it, between the same calls, on the same
//! [`RenetServer`](renet::RenetServer) and
//! [`RenetClient`](renet::RenetClient) the game already holds (borrowed
//! per call, never owned, so the game keeps using its other channels). The
//! transport (renet_netcode, Steam, in-memory) is the game's: without
//! features, this crate depends on renet alone.
//!
//! With the `bevy` feature, `bevy::RenetServerTransport` and
//! `bevy::RenetClientTransport` carry fastarray-bevy's plugins over
//! renet and renet_netcode, a join's snapshot in renet's reliable ordered
//! channel (`fastarray_bevy::Join::Snapshot`).
//!
//! The connections are plain ones, without fastarray's own
//! [`Session`](fastarray_core::Session): renet_netcode seals every
//! datagram with the keys of the client's connect token, which only your
//! backend and the client know when the server runs in its secure mode
//! (`ServerAuthentication::Secure`). In its unsecure mode, as in the
//! example, anyone can connect: for development only.
//!
//! # Example
//!
//! A server and one client, over renet's in-memory local client (over UDP
//! the only difference is the transport's `update` and `send_packets`
//! around the same calls: see `examples/loopback`):
//!
//! ```
//! use std::time::{Duration, Instant};
//! use fastarray::{FastArray, Replicate};
//! use fastarray_renet::{RenetReplicationClient, RenetReplicationServer, connection_config};
//! use renet::RenetServer;
//!
//! #[derive(Replicate, Clone, Debug, PartialEq)]
//! struct Unit { name: String, hp: u8 }
//!
//! let mut server = RenetServer::new(connection_config());
//! let mut replication = RenetReplicationServer::new(1); // one channel: the units
//! let mut units = FastArray::new();
//! for n in 0..500 {
//!     units.push(Unit { name: format!("unit {n}"), hp: 100 });
//! }
//!
//! let mut client = server.new_local_client(42);
//! let mut mirror = RenetReplicationClient::new(1);
//! let mut mirror_units = FastArray::<Unit>::mirror();
//!
//! let dt = Duration::from_millis(16);
//! let mut now = Instant::now();
//! for tick in 0..30 {
//!     now += dt;
//!     // The server's tick.
//!     server.update(dt);
//!     while let Some(event) = server.get_event() {
//!         replication.handle_event(&event);
//!     }
//!     replication.receive(now, &mut server, |_client, _data| {}).unwrap();
//!     if let Some(id) = units.ids().nth(tick) {
//!         units.get_mut(id).unwrap().hp -= 1;
//!     }
//!     units.commit();
//!     replication.send(now, &mut server, &mut [&mut units]).unwrap();
//!     // renet's transport carries the packets (here, in memory).
//!     server.process_local_client(42, &mut client).unwrap();
//!     // The client's tick.
//!     client.update(dt);
//!     mirror.receive(now, &mut client, &mut [&mut mirror_units]).unwrap();
//!     mirror.send(now, &mut client).unwrap();
//!     server.process_local_client(42, &mut client).unwrap();
//! }
//! // 500 units do not fit in one packet: the join took several.
//! assert_eq!(mirror_units, units);
//! // Once the server reads the client's last acknowledgements, it knows.
//! replication.receive(now, &mut server, |_client, _data| {}).unwrap();
//! assert!(units.is_settled(replication.connection(42).unwrap().state(0)));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "bevy")]
pub mod bevy;
mod client;
mod config;
mod harmless;
mod server;

pub use client::RenetReplicationClient;
pub use config::{CHANNEL_ID, CHANNEL_MEMORY, MTU, RENET_SLICE, channel_config, connection_config};
pub use harmless::{Harmless, harmless};
pub use server::{ClientError, PACKETS_PER_TICK, Received, RenetReplicationServer, Sent};
