//! [`QuicServer`]: a quinn endpoint accepting clients, one fastarray
//! [`Connection`] per QUIC connection.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use fastarray_core::{AckConfig, Connection, ConnectionError, Outgoing};
use tokio::runtime::Handle;
use tokio::sync::mpsc;

use crate::error::ServerError;
use crate::{INBOUND_QUEUE, packet_size};

/// What the endpoint's tasks hand the game loop.
pub(crate) enum Inbound {
    Connected(u64, quinn::Connection),
    Datagram(u64, Bytes),
    Closed(u64, quinn::ConnectionError),
}

/// What happened since the last [`QuicServer::poll`], in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A client completed its handshake: it has a [`Connection`] from
    /// now on, and is sent packets by [`QuicServer::send`].
    Connected {
        /// Its id: the order it connected in, from 0, never reused. Use it
        /// as its [`InterestGrid`](fastarray_core::InterestGrid) viewer.
        client: u64,
    },
    /// A client's QUIC connection closed (it closed it, timed out, or
    /// was lost): its [`Connection`] is gone.
    Disconnected {
        /// The client.
        client: u64,
        /// Why, as quinn says.
        reason: quinn::ConnectionError,
    },
    /// A client's packet: its acknowledgements reached every channel, and
    /// this is what the game put after the header (inputs, commands, its
    /// view point; often empty).
    Received {
        /// The client.
        client: u64,
        /// The packet's number.
        packet: u32,
        /// The game's data.
        payload: Bytes,
    },
    /// A client's datagram that its [`Connection`] refused for a reason
    /// that is not the network's doing (a malformed header, an
    /// acknowledgement of a packet never sent): QUIC authenticated the
    /// peer, so its program is broken or hostile. Nothing changed; the
    /// game may [`disconnect`](QuicServer::disconnect) it.
    Refused {
        /// The client.
        client: u64,
        /// Why.
        error: ConnectionError,
    },
}

/// What [`QuicServer::send`] sent a client this time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Datagrams sent.
    pub packets: usize,
    /// Their bytes (fastarray's header and sections; QUIC's own overhead
    /// is not counted).
    pub bytes: usize,
    /// The packet size used: the connection's current maximum datagram
    /// size, at most [`MAX_PACKET`](fastarray_core::MAX_PACKET).
    pub packet_size: usize,
    /// Entries still deferred after the last packet (sent in the next
    /// calls).
    pub deferred: usize,
    /// quinn still held a datagram from an earlier call, unsent (QUIC's
    /// congestion control holds them back on a lossy or slow path):
    /// nothing was written, and the work waits in the connection, where
    /// newer changes merge into it, rather than in quinn's queue, where it
    /// would go stale.
    pub held: bool,
}

/// What a client was sent and sent back, since it connected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Datagrams sent to it.
    pub packets_sent: u64,
    /// Their bytes (as [`Sent::bytes`]).
    pub bytes_sent: u64,
    /// Its datagrams received and read.
    pub packets_received: u64,
    /// Its datagrams read past as harmless (duplicates, too old).
    pub harmless: u64,
    /// Calls to [`QuicServer::send`] that wrote nothing because quinn
    /// still held an earlier datagram ([`Sent::held`]).
    pub held: u64,
}

struct Client {
    quic: quinn::Connection,
    conn: Connection,
    traffic: Traffic,
    /// The most room quinn's datagram queue ever had: its room when empty.
    queue_room: usize,
}

impl Client {
    /// The bytes quinn holds in its datagram queue, unsent.
    fn queued(&mut self) -> usize {
        let room = self.quic.datagram_send_buffer_space();
        self.queue_room = self.queue_room.max(room);
        self.queue_room - room
    }
}

/// The server's side: a quinn endpoint that accepts clients and keeps a
/// fastarray [`Connection`] per QUIC connection, with a non-blocking
/// façade the game loop calls each tick.
///
/// Each tick, in order: [`poll`](Self::poll) until `None` (clients that
/// joined or left, their packets: their acknowledgements reach the
/// channels there), the game's changes and `commit`s, scopes through
/// [`connection_mut`](Self::connection_mut), then [`send`](Self::send) to
/// every client in [`clients`](Self::clients).
///
/// Background tasks on the runtime given accept connections and read
/// their datagrams into a queue; [`send`](Self::send) hands datagrams to
/// quinn without waiting. Dropping the server closes the endpoint and
/// every connection.
pub struct QuicServer {
    endpoint: quinn::Endpoint,
    inbound: mpsc::Receiver<Inbound>,
    clients: BTreeMap<u64, Client>,
    channels: usize,
    config: AckConfig,
}

impl std::fmt::Debug for QuicServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicServer")
            .field("endpoint", &self.endpoint.local_addr())
            .field("clients", &self.clients.keys().collect::<Vec<_>>())
            .field("channels", &self.channels)
            .finish_non_exhaustive()
    }
}

impl QuicServer {
    /// A server on a new endpoint bound to `address`, presenting
    /// `config`'s certificate (see
    /// [`DevCertificate::server_config`](crate::DevCertificate::server_config)),
    /// whose clients mirror `channels` arrays and objects. Its tasks run on
    /// `runtime`, which must make progress on its own (a multi-thread
    /// runtime): the game loop never waits for it.
    pub fn bind(
        runtime: &Handle,
        address: SocketAddr,
        config: quinn::ServerConfig,
        channels: usize,
    ) -> io::Result<Self> {
        let endpoint = {
            let _entered = runtime.enter();
            quinn::Endpoint::server(config, address)?
        };
        Ok(Self::with_endpoint(runtime, endpoint, channels))
    }

    /// A server accepting clients on `endpoint` (made with a server
    /// configuration: a socket of your own, a
    /// [`lossy_endpoint`](crate::loss::lossy_endpoint)), as
    /// [`bind`](Self::bind) says.
    pub fn with_endpoint(runtime: &Handle, endpoint: quinn::Endpoint, channels: usize) -> Self {
        Self::with_config(runtime, endpoint, channels, AckConfig::default())
    }

    /// As [`with_endpoint`](Self::with_endpoint), each client's
    /// [`Connection`] acknowledging packets as `config` says.
    pub fn with_config(
        runtime: &Handle,
        endpoint: quinn::Endpoint,
        channels: usize,
        config: AckConfig,
    ) -> Self {
        let (sender, inbound) = mpsc::channel(INBOUND_QUEUE);
        runtime.spawn(accept(endpoint.clone(), sender, runtime.clone()));
        Self {
            endpoint,
            inbound,
            clients: BTreeMap::new(),
            channels,
            config,
        }
    }

    /// The endpoint's address (where clients connect).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.endpoint.local_addr()
    }

    /// The quinn endpoint.
    pub fn endpoint(&self) -> &quinn::Endpoint {
        &self.endpoint
    }

    /// The connected clients' ids, ascending.
    pub fn clients(&self) -> impl Iterator<Item = u64> + '_ {
        self.clients.keys().copied()
    }

    /// Client `client`'s fastarray connection: its channels' send states
    /// (for [`FastArray::scope`](fastarray_core::FastArray::scope) and
    /// `is_settled`), its link statistics, its verdicts.
    pub fn connection(&self, client: u64) -> Option<&Connection> {
        self.clients.get(&client).map(|client| &client.conn)
    }

    /// Client `client`'s fastarray connection, to change (its scope).
    pub fn connection_mut(&mut self, client: u64) -> Option<&mut Connection> {
        self.clients.get_mut(&client).map(|client| &mut client.conn)
    }

    /// Client `client`'s QUIC connection (its address, QUIC's round trip
    /// and statistics).
    pub fn quic(&self, client: u64) -> Option<&quinn::Connection> {
        self.clients.get(&client).map(|client| &client.quic)
    }

    /// What client `client` was sent and sent back.
    pub fn traffic(&self, client: u64) -> Option<Traffic> {
        self.clients.get(&client).map(|client| client.traffic)
    }

    /// The next thing that happened, oldest first, or `None` when nothing
    /// more has (never waits). A client's duplicate or late packets are
    /// read past here ([`Traffic::harmless`]).
    pub fn poll(&mut self, now: Instant) -> Option<ServerEvent> {
        loop {
            match self.inbound.try_recv().ok()? {
                Inbound::Connected(client, quic) => {
                    let conn = Connection::with_config(self.channels, self.config);
                    self.clients.insert(
                        client,
                        Client {
                            quic,
                            conn,
                            traffic: Traffic::default(),
                            queue_room: 0,
                        },
                    );
                    return Some(ServerEvent::Connected { client });
                }
                Inbound::Closed(client, reason) => {
                    if self.clients.remove(&client).is_some() {
                        return Some(ServerEvent::Disconnected { client, reason });
                    }
                }
                Inbound::Datagram(id, datagram) => {
                    // A client removed by `disconnect` may still have some
                    // in the queue.
                    let Some(client) = self.clients.get_mut(&id) else {
                        continue;
                    };
                    client.traffic.packets_received += 1;
                    match client.conn.receive(now, &datagram) {
                        Ok((packet, payload)) => {
                            let start = datagram.len() - payload.len();
                            return Some(ServerEvent::Received {
                                client: id,
                                packet,
                                payload: datagram.slice(start..),
                            });
                        }
                        Err(error) if error.is_harmless() => client.traffic.harmless += 1,
                        Err(error) => {
                            return Some(ServerEvent::Refused { client: id, error });
                        }
                    }
                }
            }
        }
    }

    /// Sends client `client` what `sources` have for it (channel `n` is
    /// `sources[n]`, the same arrays and objects every time): packets of
    /// the connection's current maximum datagram size ([`packet_size`]),
    /// one datagram each, until nothing is deferred or `max_packets` went
    /// (at least one goes: its header acknowledges the client's packets),
    /// unless quinn still holds a datagram of an earlier call
    /// ([`Sent::held`]). Never waits: quinn queues the datagrams, and
    /// QUIC's congestion control paces them; a lost one is declared lost
    /// by the header, and its work goes again.
    pub fn send(
        &mut self,
        now: Instant,
        client: u64,
        sources: &mut [&mut dyn Outgoing],
        max_packets: usize,
    ) -> Result<Sent, ServerError> {
        let id = client;
        let client = self
            .clients
            .get_mut(&id)
            .ok_or(ServerError::UnknownClient(id))?;
        let mut sent = Sent::default();
        let size = packet_size(client.quic.max_datagram_size())
            .ok_or(ServerError::DatagramsUnsupported { client: id })?;
        sent.packet_size = size;
        if client.queued() >= size {
            client.traffic.held += 1;
            sent.held = true;
            return Ok(sent);
        }
        for _ in 0..max_packets.max(1) {
            // Written straight into the datagram's buffer, handed to quinn
            // as it is.
            let mut packet = Vec::with_capacity(size);
            let stats = client
                .conn
                .write_packet(now, size, sources, &mut packet)
                .map_err(|error| ServerError::Write { client: id, error })?;
            client.traffic.packets_sent += 1;
            client.traffic.bytes_sent += packet.len() as u64;
            sent.packets += 1;
            sent.bytes += packet.len();
            sent.deferred = stats.totals.deferred;
            client
                .quic
                .send_datagram(Bytes::from(packet))
                .map_err(|error| ServerError::Datagram { client: id, error })?;
            if stats.totals.deferred == 0 {
                break;
            }
        }
        Ok(sent)
    }

    /// Closes client `client`'s QUIC connection with `reason` and forgets
    /// it (no [`ServerEvent::Disconnected`] follows). Returns whether it
    /// was connected.
    pub fn disconnect(&mut self, client: u64, reason: &[u8]) -> bool {
        match self.clients.remove(&client) {
            Some(client) => {
                client.quic.close(0u32.into(), reason);
                true
            }
            None => false,
        }
    }
}

impl Drop for QuicServer {
    fn drop(&mut self) {
        self.endpoint.close(0u32.into(), b"server closed");
    }
}

/// Accepts connections on `endpoint` until it closes, each read by a task
/// of its own.
pub(crate) async fn accept(
    endpoint: quinn::Endpoint,
    sender: mpsc::Sender<Inbound>,
    runtime: Handle,
) {
    let next = Arc::new(AtomicU64::new(0));
    while let Some(incoming) = endpoint.accept().await {
        let (sender, next) = (sender.clone(), Arc::clone(&next));
        runtime.spawn(async move {
            // A handshake that fails concerns no client yet.
            let Ok(quic) = incoming.await else {
                return;
            };
            let client = next.fetch_add(1, Ordering::Relaxed);
            if sender
                .send(Inbound::Connected(client, quic.clone()))
                .await
                .is_err()
            {
                return;
            }
            loop {
                let inbound = match quic.read_datagram().await {
                    Ok(datagram) => Inbound::Datagram(client, datagram),
                    Err(reason) => Inbound::Closed(client, reason),
                };
                let closed = matches!(inbound, Inbound::Closed(..));
                // The server is gone: nobody reads.
                if sender.send(inbound).await.is_err() || closed {
                    return;
                }
            }
        });
    }
}
