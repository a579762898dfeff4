//! A bad link on top of any transport: [`Conditioned`].

use std::time::Instant;

use super::{ClientId, ClientTransport, ServerEvent, ServerTransport};

/// How bad a link [`Conditioned`] makes: each datagram, in each
/// direction, is lost with probability `loss`, else sent twice with
/// probability `duplicate`, and held back with probability `delay` for
/// 1 to `max_delay` polls (so that later ones overtake it). Seeded: the
/// same seed and traffic make the same fates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConditioner {
    /// The chance a datagram is lost, in `0.0..=1.0`.
    pub loss: f64,
    /// The chance a datagram that is not lost arrives twice.
    pub duplicate: f64,
    /// The chance a datagram is held back.
    pub delay: f64,
    /// The most polls a held datagram waits.
    pub max_delay: u32,
    /// The seed of the fates.
    pub seed: u64,
}

impl LinkConditioner {
    /// A link that loses `loss` of the datagrams, duplicates 2% and
    /// reorders 10% of them.
    pub fn lossy(loss: f64, seed: u64) -> Self {
        Self {
            loss,
            duplicate: 0.02,
            delay: 0.1,
            max_delay: 3,
            seed,
        }
    }

    /// A link that loses, duplicates and delays nothing.
    pub fn perfect() -> Self {
        Self {
            loss: 0.0,
            duplicate: 0.0,
            delay: 0.0,
            max_delay: 0,
            seed: 0,
        }
    }
}

/// A datagram held back, with its client (0 on a client's side).
type Datagram = (ClientId, Vec<u8>);

/// A transport whose datagrams go through a [`LinkConditioner`] both
/// ways. [`heal`](Self::heal) makes the link perfect from then on.
///
/// ```
/// use fastarray_bevy::{Conditioned, LinkConditioner, UdpServerTransport};
///
/// let udp = UdpServerTransport::bind("127.0.0.1:0").unwrap();
/// let lossy = Conditioned::new(udp, LinkConditioner::lossy(0.2, 7));
/// # let _ = lossy;
/// ```
#[derive(Debug)]
pub struct Conditioned<T> {
    inner: T,
    link: LinkConditioner,
    state: u64,
    /// Datagrams held back, each with the polls it still waits.
    held_out: Vec<(u32, Datagram)>,
    held_in: Vec<(u32, Datagram)>,
}

impl<T> Conditioned<T> {
    /// `inner` under `link`.
    pub fn new(inner: T, link: LinkConditioner) -> Self {
        Self {
            inner,
            link,
            state: link.seed ^ 0x9e37_79b9_7f4a_7c15,
            held_out: Vec::new(),
            held_in: Vec::new(),
        }
    }

    /// The transport underneath.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The transport underneath, to change.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The link from now on is perfect (held datagrams still arrive).
    pub fn heal(&mut self) {
        self.link = LinkConditioner {
            seed: self.link.seed,
            ..LinkConditioner::perfect()
        };
    }

    /// The link now.
    pub fn link(&self) -> LinkConditioner {
        self.link
    }

    /// A uniform number in `0.0..1.0` (splitmix64).
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// How many copies of a datagram go, and after how many polls.
    fn fate(&mut self) -> (u32, u32) {
        if self.uniform() < self.link.loss {
            return (0, 0);
        }
        let copies = if self.uniform() < self.link.duplicate {
            2
        } else {
            1
        };
        let wait = if self.link.max_delay > 0 && self.uniform() < self.link.delay {
            1 + (self.uniform() * f64::from(self.link.max_delay)) as u32
        } else {
            0
        };
        (copies, wait.min(self.link.max_delay))
    }

    /// Counts the held datagrams down a poll; returns those due.
    fn due(held: &mut Vec<(u32, Datagram)>) -> Vec<Datagram> {
        let mut due = Vec::new();
        held.retain_mut(|(wait, datagram)| {
            if *wait <= 1 {
                due.push(std::mem::take(datagram));
                return false;
            }
            *wait -= 1;
            true
        });
        due
    }
}

impl<T: ServerTransport> ServerTransport for Conditioned<T> {
    fn poll(&mut self, now: Instant, events: &mut Vec<ServerEvent>) {
        for (client, packet) in Self::due(&mut self.held_in) {
            events.push(ServerEvent::Packet { client, packet });
        }
        let mut heard = Vec::new();
        self.inner.poll(now, &mut heard);
        for event in heard {
            let ServerEvent::Packet { client, packet } = event else {
                events.push(event);
                continue;
            };
            let (copies, wait) = self.fate();
            for _ in 0..copies {
                if wait == 0 {
                    events.push(ServerEvent::Packet {
                        client,
                        packet: packet.clone(),
                    });
                } else {
                    self.held_in.push((wait, (client, packet.clone())));
                }
            }
        }
        for (client, packet) in Self::due(&mut self.held_out) {
            self.inner.send(client, &packet);
        }
    }

    fn send(&mut self, client: ClientId, packet: &[u8]) {
        let (copies, wait) = self.fate();
        for _ in 0..copies {
            if wait == 0 {
                self.inner.send(client, packet);
            } else {
                self.held_out.push((wait, (client, packet.to_vec())));
            }
        }
    }

    fn max_packet(&self, client: ClientId) -> usize {
        self.inner.max_packet(client)
    }

    fn flush(&mut self) {
        self.inner.flush();
    }

    /// The reliable channel is the inner transport's, untouched: it
    /// repairs its own losses.
    fn has_reliable(&self) -> bool {
        self.inner.has_reliable()
    }

    fn send_reliable(&mut self, client: ClientId, message: &[u8]) {
        self.inner.send_reliable(client, message);
    }
}

impl<T: ClientTransport> ClientTransport for Conditioned<T> {
    fn poll(&mut self, now: Instant, packets: &mut Vec<Vec<u8>>) {
        packets.extend(
            Self::due(&mut self.held_in)
                .into_iter()
                .map(|(_, packet)| packet),
        );
        let mut heard = Vec::new();
        self.inner.poll(now, &mut heard);
        for packet in heard {
            let (copies, wait) = self.fate();
            for _ in 0..copies {
                if wait == 0 {
                    packets.push(packet.clone());
                } else {
                    self.held_in.push((wait, (0, packet.clone())));
                }
            }
        }
        for (_, packet) in Self::due(&mut self.held_out) {
            self.inner.send(&packet);
        }
    }

    fn send(&mut self, packet: &[u8]) {
        let (copies, wait) = self.fate();
        for _ in 0..copies {
            if wait == 0 {
                self.inner.send(packet);
            } else {
                self.held_out.push((wait, (0, packet.to_vec())));
            }
        }
    }

    fn has_reliable(&self) -> bool {
        self.inner.has_reliable()
    }

    fn poll_reliable(&mut self, now: Instant, messages: &mut Vec<Vec<u8>>) {
        self.inner.poll_reliable(now, messages);
    }

    fn flush(&mut self) {
        self.inner.flush();
    }
}
