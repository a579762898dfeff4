//! A lossy relay between one client and the server: two UDP sockets on
//! 127.0.0.1 that pass datagrams both ways, dropping a seeded share of
//! them. The client connects to the relay's front as if it were the
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

    /// Passes on every datagram waiting, both ways, but the ones it drops.
    pub fn pump(&mut self) -> std::io::Result<()> {
        loop {
            match self.front.recv_from(&mut self.buffer) {
                Ok((len, from)) => {
                    self.client = Some(from);
                    self.stats.to_server += 1;
                    if self.rng.random_bool(self.loss) {
                        self.stats.dropped += 1;
                    } else {
                        self.back.send_to(&self.buffer[..len], self.server)?;
                    }
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
                    match self.client {
                        Some(client) if !self.rng.random_bool(self.loss) => {
                            self.front.send_to(&self.buffer[..len], client)?;
                        }
                        _ => self.stats.dropped += 1,
                    }
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}
