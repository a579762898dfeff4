//! fastarray-bevy against bevy_replicon inside Bevy (not published): the
//! same server `App` and client `App`s on both sides, the same seeded
//! workloads of `fastarray-bench` (sparse, hot, churn), the clients
//! connected in-process without sockets.
//!
//! * [`memory`]: an in-memory transport for fastarray-bevy, datagrams in
//!   queues moved between the apps by the caller;
//! * [`ours`]: the fastarray-bevy side, each agent one component;
//! * [`replicon`]: the bevy_replicon side, each agent five components
//!   (its best layout: it sends a changed component whole), connected by
//!   its own test harness (`bevy_replicon::test_app`).
//!
//! A [`Side`] is a server app with its clients, caught up, that runs one
//! tick at a time in three steps, so that a bench can time the server's
//! alone: [`Side::mutate`] (the game's changes), [`Side::server_update`]
//! (one `App::update` of the server) and [`Side::deliver`] (what the server
//! sent to the clients, the clients' updates, their replies back).
//!
//! ```sh
//! cargo bench -p fastarray-bench-bevy                              # server CPU (criterion)
//! cargo run --release -p fastarray-bench-bevy --bin bevy_report    # bytes; writes the section of BENCHMARKS.md
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The in-memory transport for fastarray-bevy.
pub mod memory;
/// The fastarray-bevy side.
pub mod ours;
/// The bevy_replicon side.
pub mod replicon;

use fastarray_bench::Workload;

/// Agents in the world when measuring.
pub const ITEMS: usize = 1_000;

/// Client counts.
pub const CLIENTS: [usize; 3] = [1, 16, 64];

/// The workloads.
pub const WORKLOADS: [Workload; 3] = [Workload::Sparse, Workload::Hot, Workload::Churn];

/// Seed of every workload.
pub const SEED: u64 = 0x5eed;

/// Ticks the bytes are averaged over.
pub const TICKS: u32 = 64;

/// The criterion group of the server CPU bench.
pub const GROUP: &str = "bevy_server";

/// Ticks, at most, for clients to catch up with the initial world.
const CATCH_UP_TICKS: u32 = 200;

/// A server app and its client apps, one replication library.
pub trait Side: Sized {
    /// The library's name, in bench ids and tables.
    const NAME: &'static str;

    /// `items` agents of `workload` spawned on a server with `clients`
    /// clients, every client caught up (it holds what the server holds,
    /// and the server knows it).
    fn new(workload: Workload, items: usize, clients: usize, seed: u64) -> Self;

    /// Applies the next tick's changes to the server's World.
    fn mutate(&mut self);

    /// One `App::update` of the server.
    fn server_update(&mut self);

    /// The bytes the server handed its transport or messaging for all its
    /// clients since the last [`deliver`](Self::deliver).
    fn sent_bytes(&mut self) -> u64;

    /// Moves what the server sent to its clients, updates each client,
    /// and moves their replies to the server (a perfect link without
    /// latency).
    fn deliver(&mut self);

    /// Panics unless every client's World agrees with the server's.
    fn check(&mut self);

    /// One whole tick.
    fn tick(&mut self) {
        self.mutate();
        self.server_update();
        self.deliver();
    }
}

/// Bytes per client per tick of a caught-up side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bytes {
    /// Averaged over the workload's ticks.
    pub per_tick: f64,
    /// Of one tick without changes, before them: what every tick costs.
    pub idle: f64,
}

/// Bytes per client per tick over `ticks` ticks of a caught-up side, and
/// of an idle tick before them.
pub fn bytes_per_client<S: Side>(workload: Workload, clients: usize, ticks: u32) -> Bytes {
    let mut side = S::new(workload, ITEMS, clients, SEED);
    side.server_update();
    let idle = side.sent_bytes();
    side.deliver();
    let mut bytes = 0;
    for _ in 0..ticks {
        side.mutate();
        side.server_update();
        bytes += side.sent_bytes();
        side.deliver();
    }
    side.check();
    Bytes {
        per_tick: bytes as f64 / clients as f64 / f64::from(ticks),
        idle: idle as f64 / clients as f64,
    }
}

/// A moved coordinate, as `fastarray-bench` moves it.
pub use fastarray_bench::moved;

/// Whether two positions are the same after 16-bit quantization over
/// `[-1024, 1024]` (steps of 1/32).
pub fn same_position(a: [f32; 3], b: [f32; 3]) -> bool {
    a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1.0 / 32.0)
}

/// What a client must agree on with its server, per agent: name, health,
/// ammo, position (velocity is never changed by these workloads).
pub type Summary = Vec<(String, u8, u16, [f32; 3])>;

/// Panics unless `client` holds the agents of `server` (sorted by name).
pub fn assert_same(server: &Summary, client: &Summary, who: &str) {
    assert_eq!(server.len(), client.len(), "{who}: agent count");
    for (s, c) in server.iter().zip(client) {
        assert_eq!((&s.0, s.1, s.2), (&c.0, c.1, c.2), "{who}: agent");
        assert!(same_position(s.3, c.3), "{who}: position of {}", s.0);
    }
}

/// Runs ticks without changes until `caught_up` holds, then three more
/// (the last acknowledgements in), and checks the clients.
fn catch_up<S: Side>(side: &mut S, caught_up: impl Fn(&mut S) -> bool) {
    for _ in 0..CATCH_UP_TICKS {
        side.server_update();
        side.deliver();
        if caught_up(side) {
            for _ in 0..3 {
                side.server_update();
                side.deliver();
            }
            side.check();
            return;
        }
    }
    panic!("clients did not catch up in {CATCH_UP_TICKS} ticks");
}
