//! QUIC as the transport of fastarray's Bevy plugins (feature `bevy`):
//! [`QuicServerTransport`] and [`QuicClientTransport`] carry the plugins'
//! packets as QUIC datagrams, each at most the connection's current
//! maximum datagram size, and a join's snapshot on a unidirectional
//! stream (reliable, ordered). Tasks on the runtime you give accept, read
//! and write; the plugins' systems never wait for them.
//!
//! ```no_run
//! use bevy_app::App;
//! use fastarray_bevy::{Join, ReplicationServer, ServerPlugin};
//! use fastarray_quinn::DevCertificate;
//! use fastarray_quinn::bevy::QuicServerTransport;
//!
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! let certificate = DevCertificate::generate(["localhost"]).unwrap();
//! let transport = QuicServerTransport::bind(
//!     runtime.handle(),
//!     "127.0.0.1:5000".parse().unwrap(),
//!     certificate.server_config().unwrap(),
//! )
//! .unwrap();
//! let mut app = App::new();
//! app.add_plugins(ServerPlugin::default());
//! app.insert_resource(ReplicationServer::new(transport).with_join(Join::Snapshot));
//! ```

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use fastarray_bevy::{ClientId, ClientTransport, DEFAULT_MAX_PACKET, ServerEvent, ServerTransport};
use tokio::runtime::Handle;
use tokio::sync::mpsc;

use crate::error::ClientError;
use crate::server::{Inbound, accept};
use crate::{INBOUND_QUEUE, packet_size};

/// The largest reliable message a client takes (a join's snapshot): a
/// longer claim closes the stream rather than reserving memory for it.
pub const MAX_RELIABLE_MESSAGE: usize = 64 << 20;

/// A client of the server: its QUIC connection and the queue of its
/// reliable stream's writer.
struct Peer {
    quic: quinn::Connection,
    reliable: mpsc::UnboundedSender<Vec<u8>>,
}

/// A quinn endpoint as the [`ServerPlugin`](fastarray_bevy::ServerPlugin)'s
/// transport: each QUIC connection a client (numbered from 0 in the order
/// they connect, never reused), its datagrams the plugin's packets.
///
/// QUIC's congestion control may hold datagrams back; when quinn's send
/// buffer is full, a datagram is dropped, as the network may drop it, and
/// fastarray's acknowledgements send its work again.
pub struct QuicServerTransport {
    endpoint: quinn::Endpoint,
    heard: mpsc::Receiver<Inbound>,
    clients: BTreeMap<u64, Peer>,
    runtime: Handle,
}

impl QuicServerTransport {
    /// A server on a new endpoint bound to `address`, presenting
    /// `config`'s certificate; its tasks run on `runtime` (a multi-thread
    /// runtime, making progress on its own).
    pub fn bind(
        runtime: &Handle,
        address: SocketAddr,
        config: quinn::ServerConfig,
    ) -> io::Result<Self> {
        let endpoint = {
            let _entered = runtime.enter();
            quinn::Endpoint::server(config, address)?
        };
        Ok(Self::new(runtime, endpoint))
    }

    /// A server accepting clients on `endpoint` (made with a server
    /// configuration).
    pub fn new(runtime: &Handle, endpoint: quinn::Endpoint) -> Self {
        let (sender, heard) = mpsc::channel(INBOUND_QUEUE);
        runtime.spawn(accept(endpoint.clone(), sender, runtime.clone()));
        Self {
            endpoint,
            heard,
            clients: BTreeMap::new(),
            runtime: runtime.clone(),
        }
    }

    /// The endpoint's address (where clients connect).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.endpoint.local_addr()
    }

    /// Client `client`'s QUIC connection (its address, round trip,
    /// statistics).
    pub fn quic(&self, client: ClientId) -> Option<&quinn::Connection> {
        self.clients.get(&client).map(|peer| &peer.quic)
    }
}

impl Drop for QuicServerTransport {
    fn drop(&mut self) {
        self.endpoint.close(0u32.into(), b"server closed");
    }
}

/// Writes a client's reliable messages, each after its `u32` length, on
/// one unidirectional stream, in order.
async fn write_reliable(quic: quinn::Connection, mut messages: mpsc::UnboundedReceiver<Vec<u8>>) {
    let Ok(mut stream) = quic.open_uni().await else {
        return;
    };
    while let Some(message) = messages.recv().await {
        let length = (message.len() as u32).to_le_bytes();
        if stream.write_all(&length).await.is_err() || stream.write_all(&message).await.is_err() {
            return;
        }
    }
    let _ = stream.finish();
}

impl ServerTransport for QuicServerTransport {
    fn poll(&mut self, _now: Instant, events: &mut Vec<ServerEvent>) {
        while let Ok(heard) = self.heard.try_recv() {
            match heard {
                Inbound::Connected(client, quic) => {
                    let (reliable, messages) = mpsc::unbounded_channel();
                    self.runtime.spawn(write_reliable(quic.clone(), messages));
                    self.clients.insert(client, Peer { quic, reliable });
                    events.push(ServerEvent::Connected { client });
                }
                Inbound::Datagram(client, datagram) => {
                    if self.clients.contains_key(&client) {
                        events.push(ServerEvent::Packet {
                            client,
                            packet: datagram.to_vec(),
                        });
                    }
                }
                Inbound::Closed(client, _) => {
                    if self.clients.remove(&client).is_some() {
                        events.push(ServerEvent::Disconnected { client });
                    }
                }
            }
        }
    }

    fn send(&mut self, client: ClientId, packet: &[u8]) {
        if let Some(peer) = self.clients.get(&client) {
            // Too large (the path's datagram size shrank), or the
            // connection closing: lost, as on the network.
            let _ = peer.quic.send_datagram(Bytes::copy_from_slice(packet));
        }
    }

    fn max_packet(&self, client: ClientId) -> usize {
        self.clients
            .get(&client)
            .and_then(|peer| packet_size(peer.quic.max_datagram_size()))
            .unwrap_or(DEFAULT_MAX_PACKET)
    }

    fn has_reliable(&self) -> bool {
        true
    }

    fn send_reliable(&mut self, client: ClientId, message: &[u8]) {
        if let Some(peer) = self.clients.get(&client) {
            let _ = peer.reliable.send(message.to_vec());
        }
    }
}

/// What the client's tasks hand the game loop.
enum ClientHeard {
    Connected(quinn::Connection),
    Datagram(Bytes),
    Reliable(Vec<u8>),
    Closed,
}

/// A QUIC connection to a [`QuicServerTransport`] as the
/// [`ClientPlugin`](fastarray_bevy::ClientPlugin)'s transport.
pub struct QuicClientTransport {
    heard: mpsc::Receiver<ClientHeard>,
    quic: Option<quinn::Connection>,
    closed: bool,
    datagrams: Vec<Vec<u8>>,
    reliable: Vec<Vec<u8>>,
    _endpoint: quinn::Endpoint,
}

impl QuicClientTransport {
    /// Starts connecting from `endpoint` (see
    /// [`client_endpoint`](crate::client_endpoint)) to the server at
    /// `server`, whose certificate must name `server_name` and be trusted
    /// by `config`. Returns at once: the handshake runs on `runtime`.
    pub fn connect(
        runtime: &Handle,
        endpoint: quinn::Endpoint,
        config: quinn::ClientConfig,
        server: SocketAddr,
        server_name: &str,
    ) -> Result<Self, ClientError> {
        let connecting = {
            let _entered = runtime.enter();
            endpoint
                .connect_with(config, server, server_name)
                .map_err(ClientError::Connect)?
        };
        let (sender, heard) = mpsc::channel(INBOUND_QUEUE);
        let tasks = runtime.clone();
        runtime.spawn(async move {
            let Ok(quic) = connecting.await else {
                let _ = sender.send(ClientHeard::Closed).await;
                return;
            };
            if sender
                .send(ClientHeard::Connected(quic.clone()))
                .await
                .is_err()
            {
                return;
            }
            tasks.spawn(read_reliable(quic.clone(), sender.clone()));
            loop {
                let heard = match quic.read_datagram().await {
                    Ok(datagram) => ClientHeard::Datagram(datagram),
                    Err(_) => ClientHeard::Closed,
                };
                let closed = matches!(heard, ClientHeard::Closed);
                if sender.send(heard).await.is_err() || closed {
                    return;
                }
            }
        });
        Ok(Self {
            heard,
            quic: None,
            closed: false,
            datagrams: Vec::new(),
            reliable: Vec::new(),
            _endpoint: endpoint,
        })
    }

    /// Whether the handshake completed and the connection is open (as of
    /// the last poll).
    pub fn is_connected(&self) -> bool {
        self.quic.is_some() && !self.closed
    }

    /// The QUIC connection, once open.
    pub fn quic(&self) -> Option<&quinn::Connection> {
        self.quic.as_ref()
    }

    /// Takes in what the tasks heard.
    fn drain(&mut self) {
        while let Ok(heard) = self.heard.try_recv() {
            match heard {
                ClientHeard::Connected(quic) => self.quic = Some(quic),
                ClientHeard::Datagram(datagram) => self.datagrams.push(datagram.to_vec()),
                ClientHeard::Reliable(message) => self.reliable.push(message),
                ClientHeard::Closed => self.closed = true,
            }
        }
    }
}

/// Reads the server's reliable messages (each after its `u32` length)
/// from the first unidirectional stream it opens. A length over
/// [`MAX_RELIABLE_MESSAGE`] ends the reading; a message's memory grows
/// with what arrives, not with what its length claims.
async fn read_reliable(quic: quinn::Connection, sender: mpsc::Sender<ClientHeard>) {
    let Ok(mut stream) = quic.accept_uni().await else {
        return;
    };
    loop {
        let mut length = [0; 4];
        if stream.read_exact(&mut length).await.is_err() {
            return;
        }
        let length = u32::from_le_bytes(length) as usize;
        if length > MAX_RELIABLE_MESSAGE {
            return;
        }
        let mut message = Vec::with_capacity(length.min(64 << 10));
        let mut chunk = [0; 16 << 10];
        while message.len() < length {
            let want = (length - message.len()).min(chunk.len());
            match stream.read(&mut chunk[..want]).await {
                Ok(Some(read)) => message.extend_from_slice(&chunk[..read]),
                _ => return,
            }
        }
        if sender.send(ClientHeard::Reliable(message)).await.is_err() {
            return;
        }
    }
}

impl ClientTransport for QuicClientTransport {
    fn poll(&mut self, _now: Instant, packets: &mut Vec<Vec<u8>>) {
        self.drain();
        packets.append(&mut self.datagrams);
    }

    fn send(&mut self, packet: &[u8]) {
        if let Some(quic) = &self.quic {
            let _ = quic.send_datagram(Bytes::copy_from_slice(packet));
        }
    }

    fn has_reliable(&self) -> bool {
        true
    }

    fn poll_reliable(&mut self, _now: Instant, messages: &mut Vec<Vec<u8>>) {
        self.drain();
        messages.append(&mut self.reliable);
    }
}
