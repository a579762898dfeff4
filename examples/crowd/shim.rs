//! A seeded fault injector at the socket boundary: datagrams sent through
//! a [`Shim`] are dropped, duplicated and delayed (so reordered) before
//! they reach the real `UdpSocket`. Receiving is the socket's own.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What a shim does to the datagrams it sends.
#[derive(Clone, Copy, Debug)]
pub struct Faults {
    /// Chance a datagram is dropped.
    pub loss: f64,
    /// Chance a datagram is sent twice (the copy with its own delay).
    pub duplicate: f64,
    /// Each datagram is held for a delay drawn from this range, so that
    /// later ones may overtake it.
    pub delay: (Duration, Duration),
}

impl Faults {
    /// A perfect link.
    pub const NONE: Self = Self {
        loss: 0.0,
        duplicate: 0.0,
        delay: (Duration::ZERO, Duration::ZERO),
    };

    /// A link losing `loss` of its datagrams, duplicating 2% and delaying
    /// each by 5 to 40 ms.
    pub fn lossy(loss: f64) -> Self {
        Self {
            loss,
            duplicate: 0.02,
            delay: (Duration::from_millis(5), Duration::from_millis(40)),
        }
    }
}

/// What a shim did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShimStats {
    pub sent: u64,
    pub dropped: u64,
    pub duplicated: u64,
}

/// A datagram held back: when it is due, its place in send order (for
/// ties), where it goes, its bytes.
type Held = (Instant, u64, SocketAddr, Vec<u8>);

/// A socket's sending side, with faults.
pub struct Shim {
    socket: UdpSocket,
    faults: Faults,
    rng: ChaCha8Rng,
    /// Datagrams held back: when each is due, in send order for ties.
    held: BinaryHeap<Reverse<Held>>,
    order: u64,
    stats: ShimStats,
}

impl Shim {
    /// Sends through `socket` with `faults`, drawn from `seed`.
    pub fn new(socket: UdpSocket, faults: Faults, seed: u64) -> Self {
        Self {
            socket,
            faults,
            rng: ChaCha8Rng::seed_from_u64(seed),
            held: BinaryHeap::new(),
            order: 0,
            stats: ShimStats::default(),
        }
    }

    /// Changes the faults from now on (datagrams held keep their delay).
    pub fn set_faults(&mut self, faults: Faults) {
        self.faults = faults;
    }

    /// What it did so far.
    pub fn stats(&self) -> ShimStats {
        self.stats
    }

    /// Sends `bytes` to `to`, or not, once or twice, later.
    pub fn send_to(&mut self, now: Instant, bytes: &[u8], to: SocketAddr) -> io::Result<()> {
        self.stats.sent += 1;
        if self.rng.random_bool(self.faults.loss) {
            self.stats.dropped += 1;
            return Ok(());
        }
        let copies = if self.rng.random_bool(self.faults.duplicate) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let (low, high) = self.faults.delay;
            let delay = if high > low {
                self.rng.random_range(low..high)
            } else {
                low
            };
            self.order += 1;
            self.held
                .push(Reverse((now + delay, self.order, to, bytes.to_vec())));
        }
        self.flush(now)
    }

    /// Sends what is due by `now`.
    pub fn flush(&mut self, now: Instant) -> io::Result<()> {
        while self
            .held
            .peek()
            .is_some_and(|Reverse((due, ..))| *due <= now)
        {
            let Some(Reverse((_, _, to, bytes))) = self.held.pop() else {
                break;
            };
            // A full socket buffer drops the datagram, as a network would.
            match self.socket.send_to(&bytes, to) {
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Whether datagrams are still held back.
    pub fn holding(&self) -> bool {
        !self.held.is_empty()
    }
}
