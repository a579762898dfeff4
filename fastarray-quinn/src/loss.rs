//! Datagram loss at the socket, for tests and demos: QUIC on loopback
//! loses nothing, and the library's repair is what there is to see.
//!
//! A [`LossySocket`] wraps the UDP socket under a quinn endpoint and drops
//! a share of the UDP datagrams it sends, decided per datagram by a seeded
//! generator, as a real network would: QUIC then sees its packets lost
//! (the handshake, its acknowledgements and the DATAGRAM frames alike),
//! and so does fastarray's own header. The share is set per destination
//! through a [`Loss`] handle, and can change at any time (to heal the
//! links at the end of a run). Only sending is touched: put one on both
//! ends for loss both ways.
//!
//! Not for production: a game has all the loss it needs from the network.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime, TokioRuntime, UdpPoller};
use tokio::runtime::Handle;

/// The share of datagrams a [`LossySocket`] drops, per destination, and
/// what it dropped. Cloning gives another handle to the same settings.
#[derive(Clone, Debug)]
pub struct Loss {
    state: Arc<Mutex<LossState>>,
}

#[derive(Debug)]
struct LossState {
    /// For destinations without a rate of their own.
    default: f64,
    to: HashMap<SocketAddr, f64>,
    /// splitmix64's state.
    rng: u64,
    sent: u64,
    dropped: u64,
}

/// What a [`Loss`] has seen: UDP datagrams sent and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossStats {
    /// Datagrams that went out.
    pub sent: u64,
    /// Datagrams dropped.
    pub dropped: u64,
}

impl Loss {
    /// Drops `rate` (0 to 1) of the datagrams to every destination, as a
    /// generator seeded with `seed` decides.
    pub fn new(rate: f64, seed: u64) -> Self {
        Self {
            state: Arc::new(Mutex::new(LossState {
                default: rate.clamp(0.0, 1.0),
                to: HashMap::new(),
                rng: seed,
                sent: 0,
                dropped: 0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LossState> {
        // A panic elsewhere leaves the rates usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drops `rate` of the datagrams to destinations without a rate of
    /// their own.
    pub fn set_rate(&self, rate: f64) {
        self.lock().default = rate.clamp(0.0, 1.0);
    }

    /// Drops `rate` of the datagrams to `destination` (a client's address,
    /// on a server's socket).
    pub fn set_rate_to(&self, destination: SocketAddr, rate: f64) {
        self.lock().to.insert(destination, rate.clamp(0.0, 1.0));
    }

    /// Drops nothing any more, to any destination.
    pub fn heal(&self) {
        let mut state = self.lock();
        state.default = 0.0;
        state.to.clear();
    }

    /// Datagrams sent and dropped so far.
    pub fn stats(&self) -> LossStats {
        let state = self.lock();
        LossStats {
            sent: state.sent,
            dropped: state.dropped,
        }
    }

    /// Whether the next datagram to `destination` is dropped (and counts
    /// it).
    fn drops(&self, destination: SocketAddr) -> bool {
        let mut state = self.lock();
        let rate = state.to.get(&destination).copied().unwrap_or(state.default);
        let dropped = rate > 0.0 && unit(&mut state.rng) < rate;
        if dropped {
            state.dropped += 1;
        } else {
            state.sent += 1;
        }
        dropped
    }
}

/// A number in `[0, 1)` from splitmix64.
fn unit(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// A UDP socket (tokio's, as quinn wraps it) that drops a share of the
/// datagrams it sends, as its [`Loss`] says. See the [module](self).
pub struct LossySocket {
    inner: Arc<dyn AsyncUdpSocket>,
    loss: Loss,
}

impl fmt::Debug for LossySocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LossySocket")
            .field("inner", &self.inner)
            .field("loss", &self.loss.stats())
            .finish()
    }
}

impl LossySocket {
    /// Binds a UDP socket to `address` and wraps it; must run inside a
    /// tokio runtime (`Handle::enter`).
    pub fn bind(address: SocketAddr, loss: Loss) -> io::Result<Self> {
        let socket = std::net::UdpSocket::bind(address)?;
        Ok(Self {
            inner: TokioRuntime.wrap_udp_socket(socket)?,
            loss,
        })
    }
}

impl AsyncUdpSocket for LossySocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Arc::clone(&self.inner).create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        // One decision per UDP datagram: a batch (GSO) is split.
        let size = transmit
            .segment_size
            .unwrap_or(transmit.contents.len())
            .max(1);
        for contents in transmit.contents.chunks(size) {
            if self.loss.drops(transmit.destination) {
                continue;
            }
            self.inner.try_send(&Transmit {
                destination: transmit.destination,
                ecn: transmit.ecn,
                contents,
                segment_size: None,
                src_ip: transmit.src_ip,
            })?;
        }
        Ok(())
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// One datagram per transmit, so each is dropped or sent alone.
    fn max_transmit_segments(&self) -> usize {
        1
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// A quinn endpoint on a [`LossySocket`] bound to `address`, a server if
/// `server` is given (clients connect from any endpoint, with
/// [`QuicClient::connect`](crate::QuicClient::connect)).
pub fn lossy_endpoint(
    runtime: &Handle,
    address: SocketAddr,
    server: Option<quinn::ServerConfig>,
    loss: &Loss,
) -> io::Result<quinn::Endpoint> {
    let _entered = runtime.enter();
    let socket = LossySocket::bind(address, loss.clone())?;
    quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        server,
        Arc::new(socket),
        Arc::new(TokioRuntime),
    )
}
