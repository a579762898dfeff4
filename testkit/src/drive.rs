//! Drives one server → client replication session over a lossy [`Link`]
//! until the link heals and the sender settles: the loop the convergence
//! tests share, and ready-made sessions for a `FastArray`
//! ([`ArraySession`]) and a `Replicated` object ([`ObjectSession`]).

use fastarray::{Callbacks, FastArray, Replicate, Replicated, SendState};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::link::{Link, LinkProfile, Report};

/// One replication session under test.
pub trait Session {
    /// One tick of game logic on the server (only while the link is lossy).
    fn mutate(&mut self, tick: u32);
    /// Commits and writes the delta for packet `packet`.
    fn write(&mut self, packet: u32) -> Vec<u8>;
    /// Applies a delivered message on the client; panics on a decode error.
    fn apply(&mut self, bytes: &[u8]);
    /// Reports a packet's fate to the sender.
    fn report(&mut self, report: Report);
    /// Commits without writing (the sender has nothing in flight or due).
    fn idle_commit(&mut self);
    /// Whether the client holds everything the server committed, every
    /// packet that carried it acknowledged (`FastArray::is_settled`).
    fn settled(&self) -> bool;
}

/// Runs `session` over a link with `profile` and `seed`: `heal_at` lossy
/// ticks of mutations, then a healed link until everything is delivered
/// and acknowledged. Packet ids are the tick, as a wrapping `u16` starting
/// near the wrap. Panics if the session has not settled 400 ticks after
/// healing.
pub fn drive(profile: &LinkProfile, seed: u64, heal_at: u32, session: &mut impl Session) {
    let mut link = Link::new(profile.clone(), seed);
    for now in 0.. {
        if now < heal_at {
            session.mutate(now);
        } else if now == heal_at {
            link.heal();
        }
        if now < heal_at || !session.settled() {
            let packet = u32::from((65_500 + now) as u16);
            let bytes = session.write(packet);
            link.send(now, packet, bytes);
        } else {
            session.idle_commit();
        }
        for bytes in link.deliver(now) {
            session.apply(&bytes);
        }
        for report in link.reports(now) {
            session.report(report);
        }
        if now > heal_at && link.idle() && session.settled() {
            return;
        }
        assert!(
            now < heal_at + 400,
            "{} seed {seed}: not settled 400 ticks after healing",
            profile.name
        );
    }
}

/// The number of seeds per profile: 100, or `FASTARRAY_SEEDS`.
pub fn seeds() -> u64 {
    std::env::var("FASTARRAY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100)
}

/// A `FastArray` replicated to one mirror, with game logic `logic` and
/// client callbacks `callbacks`.
pub struct ArraySession<T, L, C = ()> {
    /// The server's array.
    pub server: FastArray<T>,
    /// The server's state for the client.
    pub conn: SendState,
    /// The client's mirror.
    pub client: FastArray<T>,
    /// What the mirror's callbacks saw.
    pub callbacks: C,
    rng: ChaCha8Rng,
    logic: L,
    label: String,
}

impl<T, L, C> ArraySession<T, L, C>
where
    T: Replicate + Clone,
    L: FnMut(&mut FastArray<T>, &mut ChaCha8Rng),
    C: Callbacks<T>,
{
    /// A session over `server`, with logic seeded by `seed`.
    pub fn new(server: FastArray<T>, seed: u64, label: String, logic: L, callbacks: C) -> Self {
        Self {
            server,
            conn: SendState::new(),
            client: FastArray::mirror(),
            callbacks,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xa5a5),
            logic,
            label,
        }
    }
}

impl<T, L, C> Session for ArraySession<T, L, C>
where
    T: Replicate + Clone,
    L: FnMut(&mut FastArray<T>, &mut ChaCha8Rng),
    C: Callbacks<T>,
{
    fn mutate(&mut self, _tick: u32) {
        (self.logic)(&mut self.server, &mut self.rng);
    }

    fn write(&mut self, packet: u32) -> Vec<u8> {
        self.server.commit();
        let mut bytes = Vec::new();
        self.server
            .write_delta(&mut self.conn, packet, &mut bytes)
            .unwrap_or_else(|e| panic!("{}: write failed: {e}", self.label));
        bytes
    }

    fn apply(&mut self, bytes: &[u8]) {
        self.client
            .apply_delta(bytes, &mut self.callbacks)
            .unwrap_or_else(|e| panic!("{}: {e}", self.label));
    }

    fn report(&mut self, report: Report) {
        report.tell(&mut self.conn);
    }

    fn idle_commit(&mut self) {
        self.server.commit();
    }

    fn settled(&self) -> bool {
        self.server.is_settled(&self.conn)
    }
}

/// A `Replicated` object replicated to one mirror, with game logic `logic`
/// and client callbacks `callbacks`, each delta within `budget` bits if
/// set.
pub struct ObjectSession<T, L, C = ()> {
    /// The server's object.
    pub server: Replicated<T>,
    /// The server's state for the client.
    pub conn: SendState,
    /// The client's mirror.
    pub client: Replicated<T>,
    /// What the mirror's callbacks saw.
    pub callbacks: C,
    /// The bit budget of every delta, if any.
    pub budget: Option<u64>,
    rng: ChaCha8Rng,
    logic: L,
    label: String,
}

impl<T, L, C> ObjectSession<T, L, C>
where
    T: Replicate + Clone,
    L: FnMut(&mut Replicated<T>, &mut ChaCha8Rng),
    C: Callbacks<T>,
{
    /// A session from `server` to `client` over `conn` (a new connection
    /// and a new mirror, or a snapshot's), with logic seeded by `seed`.
    pub fn new(
        (server, conn, client): (Replicated<T>, SendState, Replicated<T>),
        seed: u64,
        label: String,
        logic: L,
        callbacks: C,
    ) -> Self {
        Self {
            server,
            conn,
            client,
            callbacks,
            budget: None,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5a5a),
            logic,
            label,
        }
    }
}

impl<T, L, C> Session for ObjectSession<T, L, C>
where
    T: Replicate + Clone,
    L: FnMut(&mut Replicated<T>, &mut ChaCha8Rng),
    C: Callbacks<T>,
{
    fn mutate(&mut self, _tick: u32) {
        (self.logic)(&mut self.server, &mut self.rng);
    }

    fn write(&mut self, packet: u32) -> Vec<u8> {
        self.server.commit();
        let mut bytes = Vec::new();
        let written = match self.budget {
            Some(bits) => {
                self.server
                    .write_delta_with_budget(&mut self.conn, packet, &mut bytes, bits)
            }
            None => self.server.write_delta(&mut self.conn, packet, &mut bytes),
        };
        written.unwrap_or_else(|e| panic!("{}: write failed: {e}", self.label));
        bytes
    }

    fn apply(&mut self, bytes: &[u8]) {
        self.client
            .apply_delta(bytes, &mut self.callbacks)
            .unwrap_or_else(|e| panic!("{}: {e}", self.label));
    }

    fn report(&mut self, report: Report) {
        report.tell(&mut self.conn);
    }

    fn idle_commit(&mut self) {
        self.server.commit();
    }

    fn settled(&self) -> bool {
        self.server.is_settled(&self.conn)
    }
}
