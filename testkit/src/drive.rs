//! Drives one server → client replication session over a lossy [`Link`]
//! until the link heals and the sender settles: the loop the convergence
//! tests share, and ready-made sessions for a `FastArray`
//! ([`ArraySession`]) and a `Replicated` object ([`ObjectSession`]).

use fastarray::{Callbacks, DeltaStats, FastArray, Replicate, Replicated, SendState};
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
    seeds_or(100)
}

/// The number of seeds per profile of a suite that runs `default` unless
/// `FASTARRAY_SEEDS` says otherwise.
pub fn seeds_or(default: u64) -> u64 {
    std::env::var("FASTARRAY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// What a session's server does besides committing and writing: game
/// logic each tick, and, for the tests that need them, scope changes
/// between the commit and the write and checks of what each write did. A
/// closure `FnMut(&mut A, &mut ChaCha8Rng)` is the game logic alone.
pub trait Logic<A> {
    /// One tick of game logic on `server`, whose send state for the client
    /// is `state`.
    fn mutate(&mut self, server: &mut A, state: &mut SendState, rng: &mut ChaCha8Rng, tick: u32);

    /// After the commit, before the write.
    fn before_write(&mut self, server: &mut A, state: &mut SendState, rng: &mut ChaCha8Rng) {
        let _ = (server, state, rng);
    }

    /// What the write did; panics if it is wrong.
    fn written(&mut self, server: &A, state: &SendState, stats: &DeltaStats) {
        let _ = (server, state, stats);
    }
}

impl<A, F: FnMut(&mut A, &mut ChaCha8Rng)> Logic<A> for F {
    fn mutate(&mut self, server: &mut A, _: &mut SendState, rng: &mut ChaCha8Rng, _: u32) {
        self(server, rng);
    }
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
    /// What failures name.
    pub label: String,
    rng: ChaCha8Rng,
    logic: L,
}

impl<T, L, C> ArraySession<T, L, C>
where
    T: Replicate + Clone,
    L: FnMut(&mut FastArray<T>, &mut ChaCha8Rng),
    C: Callbacks<T>,
{
    /// A session over `server`, with game logic `logic` seeded by `seed`.
    pub fn new(server: FastArray<T>, seed: u64, label: String, logic: L, callbacks: C) -> Self {
        Self::with_logic(server, seed, label, logic, callbacks)
    }
}

impl<T, L, C> ArraySession<T, L, C>
where
    T: Replicate + Clone,
    L: Logic<FastArray<T>>,
    C: Callbacks<T>,
{
    /// A session over `server`, with `logic` seeded by `seed`.
    pub fn with_logic(
        server: FastArray<T>,
        seed: u64,
        label: String,
        logic: L,
        callbacks: C,
    ) -> Self {
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
    L: Logic<FastArray<T>>,
    C: Callbacks<T>,
{
    fn mutate(&mut self, tick: u32) {
        let (server, state, rng) = (&mut self.server, &mut self.conn, &mut self.rng);
        self.logic.mutate(server, state, rng, tick);
    }

    fn write(&mut self, packet: u32) -> Vec<u8> {
        self.server.commit();
        (self.logic).before_write(&mut self.server, &mut self.conn, &mut self.rng);
        let mut bytes = Vec::new();
        let stats = self
            .server
            .write_delta(&mut self.conn, packet, &mut bytes)
            .unwrap_or_else(|e| panic!("{}: write failed: {e}", self.label));
        self.logic.written(&self.server, &self.conn, &stats);
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
    /// What failures name.
    pub label: String,
    rng: ChaCha8Rng,
    logic: L,
}

impl<T, L, C> ObjectSession<T, L, C>
where
    T: Replicate + Clone,
    L: FnMut(&mut Replicated<T>, &mut ChaCha8Rng),
    C: Callbacks<T>,
{
    /// A session from `server` to `client` over `conn` (see
    /// [`with_logic`](Self::with_logic)), with game logic `logic`.
    pub fn new(
        session: (Replicated<T>, SendState, Replicated<T>),
        seed: u64,
        label: String,
        logic: L,
        callbacks: C,
    ) -> Self {
        Self::with_logic(session, seed, label, logic, callbacks)
    }
}

impl<T, L, C> ObjectSession<T, L, C>
where
    T: Replicate + Clone,
    L: Logic<Replicated<T>>,
    C: Callbacks<T>,
{
    /// A session from `server` to `client` over `conn` (a new connection
    /// and a new mirror, or a snapshot's), with `logic` seeded by `seed`.
    pub fn with_logic(
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
    L: Logic<Replicated<T>>,
    C: Callbacks<T>,
{
    fn mutate(&mut self, tick: u32) {
        let (server, state, rng) = (&mut self.server, &mut self.conn, &mut self.rng);
        self.logic.mutate(server, state, rng, tick);
    }

    fn write(&mut self, packet: u32) -> Vec<u8> {
        self.server.commit();
        (self.logic).before_write(&mut self.server, &mut self.conn, &mut self.rng);
        let mut bytes = Vec::new();
        let written = match self.budget {
            Some(bits) => {
                self.server
                    .write_delta_with_budget(&mut self.conn, packet, &mut bytes, bits)
            }
            None => self.server.write_delta(&mut self.conn, packet, &mut bytes),
        };
        let stats = written.unwrap_or_else(|e| panic!("{}: write failed: {e}", self.label));
        self.logic.written(&self.server, &self.conn, &stats);
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
