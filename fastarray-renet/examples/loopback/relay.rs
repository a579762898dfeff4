//! A lossy relay between one client and the server: two UDP sockets on
//! 127.0.0.1 that pass datagrams both ways, dropping a seeded share of
//! them, holding each one 0 to 2 ticks (so they reorder) and sending 2%
//! twice. The client connects to the relay's front as if it were the
//! server; the server sees the relay's back as the client.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What a relay passed and dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct RelayStats {
    /// Datagrams and bytes from the server to the client, dropped ones
    /// included (what the server put on the wire).
    pub to_client: u64,
    pub to_client_bytes: u64,
    /// The largest datagram from the server.
    pub largest_to_client: usize,
    /// Datagrams from the client to the server.
    pub to_server: u64,
    /// Datagrams dropped, both ways.
    pub dropped: u64,
    /// Datagrams sent twice, both ways.
    pub duplicated: u64,
}

/// The share of datagrams sent twice.
const DUPLICATES: f64 = 0.02;
/// The most ticks a datagram is held.
const MAX_DELAY: u32 = 2;

/// A datagram held until its tick.
struct Held {
    tick: u32,
    to_server: bool,
    bytes: Vec<u8>,
}

/// One client's relay.
pub struct Relay {
    /// The client's side: the address it connects to.
    front: UdpSocket,
    /// The server's side: the address the server sees.
    back: UdpSocket,
    server: SocketAddr,
    /// The client's address, once it sent something.
    client: Option<SocketAddr>,
    loss: f64,
    rng: ChaCha8Rng,
    buffer: Vec<u8>,
    held: Vec<Held>,
    pub stats: RelayStats,
}

impl Relay {
    /// A relay to `server` dropping `loss` of the datagrams each way.
    pub fn new(server: SocketAddr, loss: f64, seed: u64) -> std::io::Result<Self> {
        let front = UdpSocket::bind("127.0.0.1:0")?;
        let back = UdpSocket::bind("127.0.0.1:0")?;
        front.set_nonblocking(true)?;
        back.set_nonblocking(true)?;
        Ok(Self {
            front,
            back,
            server,
            client: None,
            loss,
            rng: ChaCha8Rng::seed_from_u64(seed),
            buffer: vec![0; 2048],
            held: Vec::new(),
            stats: RelayStats::default(),
        })
    }

    /// The address the client connects to.
    pub fn front(&self) -> std::io::Result<SocketAddr> {
        self.front.local_addr()
    }

    /// Heals (or breaks) the link.
    pub fn set_loss(&mut self, loss: f64) {
        self.loss = loss;
    }

    /// Takes every datagram waiting, both ways, drops its share, holds
    /// the others, and passes on those due at `tick`.
    pub fn pump(&mut self, tick: u32) -> std::io::Result<()> {
        loop {
            match self.front.recv_from(&mut self.buffer) {
                Ok((len, from)) => {
                    self.client = Some(from);
                    self.stats.to_server += 1;
                    self.hold(tick, true, len);
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) => return Err(error),
            }
        }
        loop {
            match self.back.recv_from(&mut self.buffer) {
                Ok((len, _)) => {
                    self.stats.to_client += 1;
                    self.stats.to_client_bytes += len as u64;
                    self.stats.largest_to_client = self.stats.largest_to_client.max(len);
                    self.hold(tick, false, len);
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) => return Err(error),
            }
        }
        let mut index = 0;
        while index < self.held.len() {
            if self.held[index].tick > tick {
                index += 1;
                continue;
            }
            let held = self.held.swap_remove(index);
            match (held.to_server, self.client) {
                (true, _) => self.back.send_to(&held.bytes, self.server)?,
                (false, Some(client)) => self.front.send_to(&held.bytes, client)?,
                (false, None) => 0,
            };
        }
        Ok(())
    }

    /// Drops the datagram in the buffer, or holds it (twice, sometimes).
    fn hold(&mut self, tick: u32, to_server: bool, len: usize) {
        if self.rng.random_bool(self.loss) {
            self.stats.dropped += 1;
            return;
        }
        let copies = if self.rng.random_bool(DUPLICATES) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            self.held.push(Held {
                tick: tick + self.rng.random_range(0..=MAX_DELAY),
                to_server,
                bytes: self.buffer[..len].to_vec(),
            });
        }
    }
}
