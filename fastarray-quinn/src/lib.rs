//! fastarray over QUIC datagrams, with [quinn].
//!
//! A [`QuicServer`] accepts QUIC connections and keeps one fastarray
//! [`Connection`](fastarray_core::Connection) per client; a
//! [`QuicClient`] applies what arrives with a
//! [`MirrorConnection`](fastarray_core::MirrorConnection). Each packet
//! is one QUIC datagram, as large as the connection's current maximum
//! datagram size allows ([`packet_size`]): QUIC's path MTU discovery
//! raises it, and fastarray fills it.
//!
//! With the `bevy` feature, `bevy::QuicServerTransport` and
//! `bevy::QuicClientTransport` carry fastarray-bevy's plugins over QUIC:
//! the packets as datagrams, a join's snapshot on a unidirectional stream
//! (`fastarray_bevy::Join::Snapshot`).
//!
//! QUIC datagrams are unreliable, and QUIC does not tell the application
//! which arrived, so the packets carry fastarray's own 8-byte header
//! ([`Delivery::Header`](fastarray_core::Delivery::Header)): the client
//! acknowledges what it applied in a reply every tick
//! ([`QuicClient::send_reply`]), and the server repairs what was lost.
//! QUIC authenticates and encrypts every packet (TLS 1.3), so the
//! connections are the plain kind, with no session of fastarray's.
//!
//! # Why a non-blocking façade over tasks
//!
//! A game's loop is a synchronous tick (a Bevy system, a fixed-step
//! loop), while quinn lives on an async runtime. So the I/O runs in tokio
//! tasks (accepting, the handshake, reading datagrams into a bounded
//! queue), and the game calls plain methods that never wait:
//! [`QuicServer::poll`] and [`QuicClient::receive`] drain the queue,
//! [`QuicServer::send`] and [`QuicClient::send_reply`] hand datagrams to
//! quinn, which queues them itself (`send_datagram` is synchronous). The
//! game keeps its arrays and their connections on its own thread, with no
//! lock around them: only datagrams cross, through the queue one way and
//! quinn's the other. The runtime is the caller's (a `Handle`): a game
//! that already runs tokio shares it; one that does not makes a
//! multi-thread runtime at start and keeps it.
//!
//! QUIC's congestion control still paces the datagrams: while quinn holds
//! one of an earlier tick unsent, [`QuicServer::send`] writes nothing
//! ([`Sent::held`]), so the work waits in the
//! [`Connection`](fastarray_core::Connection), where newer changes merge
//! into it, instead of going stale in quinn's queue.
//!
//! # Certificates
//!
//! [`DevCertificate`] generates a self-signed certificate at start, and
//! the configurations of a server that presents it and of a client that
//! trusts it alone: a real TLS handshake, for tests, examples and
//! development. A game with real certificates passes its own
//! [`quinn::ServerConfig`] and [`quinn::ClientConfig`] (with
//! [`transport_config`] if it likes).
//!
//! # Loss
//!
//! Loopback loses nothing; [`loss`] drops a seeded share of the UDP
//! datagrams under an endpoint, for tests and demos.
//!
//! # Example
//!
//! A server and a client in one program, over QUIC on 127.0.0.1:
//!
//! ```
//! use std::time::{Duration, Instant};
//! use fastarray::{FastArray, Replicate};
//! use fastarray_quinn::{DevCertificate, QuicClient, QuicServer, ServerEvent, client_endpoint};
//!
//! #[derive(Replicate, Clone, Debug, PartialEq)]
//! struct Unit { hp: u8 }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The I/O's runtime, running on threads of its own.
//! let runtime = tokio::runtime::Runtime::new()?;
//! let certificate = DevCertificate::generate(["localhost"])?;
//! let mut server = QuicServer::bind(
//!     runtime.handle(),
//!     "127.0.0.1:0".parse()?,
//!     certificate.server_config()?,
//!     1, // one channel: the units
//! )?;
//! let mut client = QuicClient::connect(
//!     runtime.handle(),
//!     client_endpoint(runtime.handle(), "127.0.0.1:0".parse()?)?,
//!     certificate.client_config()?,
//!     server.local_addr()?,
//!     "localhost",
//!     1,
//! )?;
//!
//! let mut units = FastArray::new();
//! for hp in 0..100 {
//!     units.push(Unit { hp });
//! }
//! let mut mirror = FastArray::<Unit>::mirror();
//! for _tick in 0..1_000 {
//!     let now = Instant::now();
//!     // The server's tick: who joined, their acknowledgements, then send.
//!     while let Some(event) = server.poll(now) {
//!         if let ServerEvent::Connected { client } = event {
//!             println!("client {client} joined");
//!         }
//!     }
//!     units.commit();
//!     let clients: Vec<u64> = server.clients().collect();
//!     for id in clients {
//!         server.send(now, id, &mut [&mut units], 4)?;
//!     }
//!     // The client's tick: apply what came, acknowledge it.
//!     client.receive(now, &mut [&mut mirror])?;
//!     client.send_reply(now, &[])?;
//!     if mirror.wire_eq(&units) {
//!         break;
//!     }
//!     std::thread::sleep(Duration::from_millis(5));
//! }
//! assert!(mirror.wire_eq(&units));
//! # Ok(())
//! # }
//! ```
//!
//! [quinn]: https://docs.rs/quinn

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "bevy")]
pub mod bevy;
mod client;
mod dev;
mod error;
pub mod loss;
mod server;

pub use client::{ClientStats, QuicClient, Received, client_endpoint};
pub use dev::{DevCertificate, SetupError, transport_config};
pub use error::{ClientError, ServerError};
pub use server::{QuicServer, Sent, ServerEvent, Traffic};

use fastarray_core::MAX_PACKET;

/// Datagrams the tasks queue for the game loop, per server or client:
/// past this, reading waits (and quinn's own buffer, then the network,
/// drops the oldest).
const INBOUND_QUEUE: usize = 4096;

/// The size of the packets written for a QUIC connection whose
/// `max_datagram_size()` is `max_datagram_size`: all of it, at most
/// [`MAX_PACKET`]; `None` when the connection carries no datagrams.
///
/// ```
/// use fastarray_quinn::packet_size;
///
/// assert_eq!(packet_size(Some(1_162)), Some(1_162));
/// assert_eq!(packet_size(Some(100_000)), Some(fastarray_core::MAX_PACKET));
/// assert_eq!(packet_size(None), None);
/// ```
pub fn packet_size(max_datagram_size: Option<usize>) -> Option<usize> {
    max_datagram_size.map(|size| size.min(MAX_PACKET))
}
