//! [`QuicClient`]: a QUIC connection to a [`QuicServer`](crate::QuicServer)
//! and the [`MirrorConnection`] its datagrams are applied with.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use fastarray_core::{AckConfig, Incoming, MirrorConnection};
use tokio::runtime::Handle;
use tokio::sync::mpsc;

use crate::INBOUND_QUEUE;
use crate::error::ClientError;

/// What the connection's task hands the game loop.
enum Inbound {
    Connected(quinn::Connection),
    Datagram(Bytes),
    Closed(quinn::ConnectionError),
}

/// Where the QUIC connection is.
enum State {
    Connecting,
    Open(quinn::Connection),
    Closed(quinn::ConnectionError),
}

/// What one [`QuicClient::receive`] applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// The server's packets applied to the mirrors.
    pub applied: usize,
    /// Datagrams read past as harmless: duplicates, and packets older
    /// than the header's window (their news came since).
    pub harmless: usize,
    /// The bytes of both.
    pub bytes: usize,
}

/// What the client received and sent, since it connected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Packets applied.
    pub applied: u64,
    /// Datagrams read past as harmless.
    pub harmless: u64,
    /// Bytes received (fastarray's packets, QUIC's overhead not counted).
    pub bytes_received: u64,
    /// Replies sent.
    pub replies: u64,
    /// Their bytes.
    pub bytes_sent: u64,
}

/// The client's side: a QUIC connection to a
/// [`QuicServer`](crate::QuicServer) and the [`MirrorConnection`] its
/// datagrams are applied with, behind a non-blocking façade the game
/// loop calls each tick.
///
/// Each tick: [`receive`](Self::receive) (applies every datagram that
/// came to the mirrors; duplicates and packets too old are read past),
/// then [`send_reply`](Self::send_reply) (the acknowledgements of what was
/// applied, and the game's inputs after them): the server learns what
/// arrived only from these, since QUIC tells the application nothing of
/// its datagrams' fate.
///
/// [`connect`](Self::connect) returns at once: the handshake runs on the
/// runtime, and the client is [`is_connected`](Self::is_connected) once
/// `receive` has seen it complete. Dropping the client closes its
/// connection.
pub struct QuicClient {
    endpoint: quinn::Endpoint,
    state: State,
    inbound: mpsc::Receiver<Inbound>,
    mirror: MirrorConnection,
    stats: ClientStats,
}

impl std::fmt::Debug for QuicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Connecting => "connecting",
            State::Open(_) => "open",
            State::Closed(_) => "closed",
        };
        f.debug_struct("QuicClient")
            .field("state", &state)
            .field("mirror", &self.mirror)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl QuicClient {
    /// Starts connecting from `endpoint` (see [`client_endpoint`]) to the
    /// server at `server`, whose certificate must name `server_name` and be
    /// trusted by `config` (see
    /// [`DevCertificate::client_config`](crate::DevCertificate::client_config)),
    /// to mirror `channels` arrays and objects. Returns at once; the
    /// handshake and the datagrams' reading run on `runtime`, which must
    /// make progress on its own (a multi-thread runtime).
    pub fn connect(
        runtime: &Handle,
        endpoint: quinn::Endpoint,
        config: quinn::ClientConfig,
        server: SocketAddr,
        server_name: &str,
        channels: usize,
    ) -> Result<Self, ClientError> {
        Self::connect_with_config(
            runtime,
            endpoint,
            config,
            server,
            server_name,
            channels,
            AckConfig::default(),
        )
    }

    /// As [`connect`](Self::connect), the mirror connection acknowledging
    /// packets as `acks` says.
    pub fn connect_with_config(
        runtime: &Handle,
        endpoint: quinn::Endpoint,
        config: quinn::ClientConfig,
        server: SocketAddr,
        server_name: &str,
        channels: usize,
        acks: AckConfig,
    ) -> Result<Self, ClientError> {
        let connecting = {
            let _entered = runtime.enter();
            endpoint
                .connect_with(config, server, server_name)
                .map_err(ClientError::Connect)?
        };
        let (sender, inbound) = mpsc::channel(INBOUND_QUEUE);
        runtime.spawn(async move {
            let quic = match connecting.await {
                Ok(quic) => quic,
                Err(reason) => {
                    let _ = sender.send(Inbound::Closed(reason)).await;
                    return;
                }
            };
            if sender.send(Inbound::Connected(quic.clone())).await.is_err() {
                return;
            }
            loop {
                let inbound = match quic.read_datagram().await {
                    Ok(datagram) => Inbound::Datagram(datagram),
                    Err(reason) => Inbound::Closed(reason),
                };
                let closed = matches!(inbound, Inbound::Closed(_));
                // The client is gone: nobody reads.
                if sender.send(inbound).await.is_err() || closed {
                    return;
                }
            }
        });
        Ok(Self {
            endpoint,
            state: State::Connecting,
            inbound,
            mirror: MirrorConnection::with_config(channels, acks),
            stats: ClientStats::default(),
        })
    }

    /// Whether the handshake completed (as last seen by
    /// [`receive`](Self::receive)) and the connection is not closed.
    pub fn is_connected(&self) -> bool {
        matches!(self.state, State::Open(_))
    }

    /// The QUIC connection, once the handshake completed.
    pub fn quic(&self) -> Option<&quinn::Connection> {
        match &self.state {
            State::Open(quic) => Some(quic),
            _ => None,
        }
    }

    /// The quinn endpoint the client connects from.
    pub fn endpoint(&self) -> &quinn::Endpoint {
        &self.endpoint
    }

    /// The mirror connection (its acknowledgements, link statistics).
    pub fn mirror_connection(&self) -> &MirrorConnection {
        &self.mirror
    }

    /// What the client received and sent.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Applies every datagram the server sent since the last call to
    /// `mirrors` (channel `n` is `mirrors[n]`, in the server's order),
    /// oldest first, never waiting. Duplicates and packets older than the
    /// header's window are read past ([`ConnectionError::is_harmless`](fastarray_core::ConnectionError::is_harmless)); any other packet
    /// that does not apply stops the call with
    /// [`ClientError::Apply`] (the ones after it stay queued; what the
    /// call applied before it is counted in [`stats`](Self::stats)). Errs with
    /// [`ClientError::Closed`] once the connection is closed (or its
    /// handshake failed), every call after.
    pub fn receive(
        &mut self,
        now: Instant,
        mirrors: &mut [&mut dyn Incoming],
    ) -> Result<Received, ClientError> {
        let mut received = Received::default();
        loop {
            if let State::Closed(reason) = &self.state {
                return Err(ClientError::Closed(reason.clone()));
            }
            let Ok(inbound) = self.inbound.try_recv() else {
                return Ok(received);
            };
            match inbound {
                Inbound::Connected(quic) => self.state = State::Open(quic),
                Inbound::Closed(reason) => self.state = State::Closed(reason),
                Inbound::Datagram(datagram) => {
                    received.bytes += datagram.len();
                    self.stats.bytes_received += datagram.len() as u64;
                    match self.mirror.apply(now, &datagram, mirrors) {
                        Ok(_) => {
                            received.applied += 1;
                            self.stats.applied += 1;
                        }
                        Err(error) if error.is_harmless() => {
                            received.harmless += 1;
                            self.stats.harmless += 1;
                        }
                        Err(error) => return Err(ClientError::Apply(error)),
                    }
                }
            }
        }
    }

    /// Sends the server a datagram acknowledging the packets applied so
    /// far, followed by `payload` (the game's inputs; may be empty). Call
    /// it every tick. Returns `Ok(false)` and sends nothing while the
    /// handshake is under way. Never waits.
    pub fn send_reply(&mut self, now: Instant, payload: &[u8]) -> Result<bool, ClientError> {
        let quic = match &self.state {
            State::Connecting => return Ok(false),
            State::Closed(reason) => return Err(ClientError::Closed(reason.clone())),
            State::Open(quic) => quic,
        };
        if quic.max_datagram_size().is_none() {
            return Err(ClientError::DatagramsUnsupported);
        }
        let mut reply = Vec::with_capacity(fastarray_core::AckHeader::BYTES + payload.len());
        self.mirror
            .write_reply(now, payload, &mut reply)
            .map_err(ClientError::Reply)?;
        let bytes = reply.len() as u64;
        quic.send_datagram(Bytes::from(reply))
            .map_err(ClientError::Datagram)?;
        self.stats.replies += 1;
        self.stats.bytes_sent += bytes;
        Ok(true)
    }

    /// Closes the connection with `reason`.
    pub fn close(&mut self, reason: &[u8]) {
        if let State::Open(quic) = &self.state {
            quic.close(0u32.into(), reason);
        }
    }
}

impl Drop for QuicClient {
    fn drop(&mut self) {
        self.close(b"client closed");
    }
}

/// A quinn endpoint for clients, bound to `address` (`127.0.0.1:0`,
/// `[::]:0`), its I/O on `runtime`.
pub fn client_endpoint(runtime: &Handle, address: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    let _entered = runtime.enter();
    quinn::Endpoint::client(address)
}
