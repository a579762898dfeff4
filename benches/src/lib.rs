//! fastarray's measuring tool (not published): the criterion benches
//! (`benches/benches/*.rs`) and the bandwidth report that writes
//! `BENCHMARKS.md` (`benches/src/bin/bandwidth/`). This library is what they
//! share: the `Agent` item, the seeded workloads, our side of a tick, and
//! the baselines the issue asks for, which live here and not in fastarray:
//!
//! * [`naive`]: naive position diffing, what a plain replicated array does;
//! * [`bytes`]: the same diffing writing raw little-endian bytes, the
//!   cheapest CPU a hand-written differ gets;
//! * [`ue`]: a bit-count model of Unreal's FastArray wire format;
//! * full snapshots, with our own codec (`FastArray::write_snapshot`) and with
//!   `bitcode`, need no code of their own.
//!
//! Everything is deterministic: workloads come from a seeded `ChaCha8Rng`.
//!
//! ```sh
//! cargo bench -p fastarray-bench                            # CPU (criterion)
//! cargo run --release -p fastarray-bench --bin bandwidth    # writes BENCHMARKS.md
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The byte-level naive baseline.
pub mod bytes;
/// Criterion's estimates, for the reports that write BENCHMARKS.md.
pub mod estimates;
/// The interest-management workload and its baselines.
pub mod interest;
/// The naive position-diffing baseline.
pub mod naive;
/// Recorded messages for the client benches.
pub mod recording;
/// Secure sessions, for the secure bench and the report.
pub mod secure;
/// The medians and spreads the interleaved bins print.
pub mod summary;
/// The bit-count model of Unreal's FastArray.
pub mod ue;

use fastarray::{BitCodec, BitWriter, FastArray, Replicate, ReplicationId, SendState};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How `Agent::position` goes on the wire, for the reports.
pub const POSITION_ENCODING: &str =
    "`#[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]`, 3 × 16 bits";

/// How `Agent::velocity` goes on the wire, for the reports.
pub const VELOCITY_ENCODING: &str = "3 × f32, plain: raw IEEE bits, 3 × 32 bits";

/// Positions stay inside `[-POSITION_RANGE, POSITION_RANGE]` (the quantizer
/// covers `[-1024, 1024]`).
pub const POSITION_RANGE: f32 = 1000.0;

/// The replicated item of every workload: a position, a velocity, health,
/// ammo and a short name. Its whole values (adds) carry only the fields in
/// which it differs from its `Default`, a fresh agent.
#[derive(Replicate, Clone, Debug, PartialEq, bitcode::Encode, bitcode::Decode)]
#[replicate(default_baseline)]
pub struct Agent {
    /// Where the agent is: each coordinate quantized to 16 bits over
    /// `[-1024, 1024]` (steps of 1/32).
    #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
    pub position: [f32; 3],
    /// Where it is going.
    pub velocity: [f32; 3],
    /// Hit points.
    pub health: u8,
    /// Rounds left: the 16-bit field the sparse, dense and scale workloads change.
    pub ammo: u16,
    /// A short display name.
    pub name: String,
}

/// An agent as [`spawn`] makes one, less what differs from one to the
/// next: at the origin, standing still, at full health, no ammo, no name.
impl Default for Agent {
    fn default() -> Self {
        Agent {
            position: [0.0; 3],
            velocity: [0.0; 3],
            health: 100,
            ammo: 0,
            name: String::new(),
        }
    }
}

/// Replicated field index of `Agent::ammo`.
pub const AMMO_FIELD: u32 = 3;

/// Bits of one `ammo` value on the wire.
pub const AMMO_BITS: u64 = 16;

/// A new agent, deterministic in `rng` and `serial`.
pub fn spawn(rng: &mut ChaCha8Rng, serial: u64) -> Agent {
    let mut coord = || rng.random_range(-POSITION_RANGE..POSITION_RANGE);
    let position = [coord(), coord(), coord()];
    let velocity = if rng.random_bool(0.3) {
        [
            rng.random_range(-2.0..2.0),
            0.0,
            rng.random_range(-2.0..2.0),
        ]
    } else {
        [0.0; 3]
    };
    Agent {
        position,
        velocity,
        health: 100,
        ammo: rng.random(),
        name: format!("agent{serial}"),
    }
}

/// Whether two agents are the same on the wire (equal up to quantization).
pub fn same_agent(a: &Agent, b: &Agent) -> bool {
    a.diff(b).is_empty()
}

/// Whether a mirror holds what the server holds: the same ids, each with
/// the same replicated values (up to quantization).
pub fn same_contents(server: &FastArray<Agent>, mirror: &FastArray<Agent>) -> bool {
    server.len() == mirror.len()
        && server
            .iter()
            .all(|(id, item)| mirror.get(id).is_some_and(|m| same_agent(item, m)))
}

/// Whether two plain arrays hold the same values, position by position.
pub fn same_vec(a: &[Agent], b: &[Agent]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_agent(x, y))
}

/// Bits of one value in our codec.
pub fn encoded_bits(agent: &Agent) -> u64 {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    agent.encode(&mut writer).expect("agents always encode");
    writer.finish()
}

/// The seed of every workload the benches, the interleaved bins and the
/// report run, so that they all measure the same ticks.
pub const SEED: u64 = 0x5eed;

/// The workloads of the issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// 1% of the items change one 16-bit field (`ammo`) per tick.
    Sparse,
    /// 10% of the items change position per tick.
    Hot,
    /// 1% of the items removed (random positions) and 1% added per tick.
    Churn,
    /// A random permutation of the array per tick, nothing else.
    Shuffle,
    /// Every item changes one 16-bit field per tick.
    Dense,
    /// Exactly 10 items change one 16-bit field per tick, whatever the size.
    Ten,
}

impl Workload {
    /// The five per-tick workloads of the bits and CPU tables.
    pub const TABLE: [Workload; 5] = [
        Workload::Sparse,
        Workload::Hot,
        Workload::Churn,
        Workload::Shuffle,
        Workload::Dense,
    ];

    /// Short name, used in bench ids and tables.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Sparse => "sparse",
            Workload::Hot => "hot",
            Workload::Churn => "churn",
            Workload::Shuffle => "shuffle",
            Workload::Dense => "dense",
            Workload::Ten => "ten",
        }
    }

    /// The command line of an interleaved bin, `[rounds] [sparse|hot|churn|dense]`
    /// in either order: the rounds and the workload, `rounds` and
    /// `workload` when not given. Prints `usage` and exits on anything else.
    pub fn rounds_from_args(rounds: usize, workload: Workload, usage: &str) -> (usize, Workload) {
        let (mut rounds, mut workload) = (rounds, workload);
        for arg in std::env::args().skip(1) {
            match (
                Workload::TABLE.iter().find(|w| w.name() == arg),
                arg.parse(),
            ) {
                (Some(&named), _) if named != Workload::Shuffle => workload = named,
                (_, Ok(n)) if n > 0 => rounds = n,
                _ => {
                    eprintln!("usage: {usage}");
                    std::process::exit(2)
                }
            }
        }
        (rounds, workload)
    }

    /// One line saying what happens per tick.
    pub fn describe(self) -> &'static str {
        match self {
            Workload::Sparse => "1% of the items change `ammo` (u16)",
            Workload::Hot => "10% of the items change `position`",
            Workload::Churn => "1% removed at random positions + 1% added",
            Workload::Shuffle => "a random permutation, nothing else",
            Workload::Dense => "every item changes `ammo` (u16)",
            Workload::Ten => "10 items change `ammo` (u16)",
        }
    }
}

/// One mutation of a tick, naming its item both by position in the plain
/// array (for the naive baseline) and by serial (for us: the item's
/// `ReplicationId` is its serial, since items are pushed in serial order).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `ammo = ammo.wrapping_add(by)`, `by` ≠ 0.
    Ammo {
        /// Position in the plain array.
        pos: usize,
        /// The item's serial.
        serial: u64,
        /// The increment.
        by: u16,
    },
    /// `position += by` per coordinate, or `-= by` where `+=` would leave
    /// the range.
    Move {
        /// Position in the plain array.
        pos: usize,
        /// The item's serial.
        serial: u64,
        /// The step, at least 0.25 per coordinate.
        by: [f32; 3],
    },
    /// Removes these items; `positions` ascending, as they were before
    /// any of them was removed (the survivors keep their order).
    Remove {
        /// Positions in the plain array, ascending.
        positions: Vec<usize>,
        /// The items' serials, in the same order.
        serials: Vec<u64>,
    },
    /// Appends a new item.
    Add {
        /// The item's serial (its id on our side).
        serial: u64,
        /// The item.
        agent: Agent,
    },
    /// Exchanges the items at two positions.
    Swap {
        /// First position and its item's serial.
        a: (usize, u64),
        /// Second position and its item's serial.
        b: (usize, u64),
    },
}

/// The seeded generator of a workload's ticks. It keeps the logical order
/// of the items (by serial), which is the plain array's order.
#[derive(Clone, Debug)]
pub struct Script {
    workload: Workload,
    rng: ChaCha8Rng,
    order: Vec<u64>,
    next_serial: u64,
}

impl Script {
    /// A script over `items` initial agents (serials `0..items`), which it
    /// returns.
    pub fn new(workload: Workload, items: usize, seed: u64) -> (Self, Vec<Agent>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let agents = (0..items as u64).map(|s| spawn(&mut rng, s)).collect();
        let script = Script {
            workload,
            rng,
            order: (0..items as u64).collect(),
            next_serial: items as u64,
        };
        (script, agents)
    }

    /// Number of items after the ticks generated so far.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The serial of the item at `pos` now.
    pub fn serial_at(&self, pos: usize) -> u64 {
        self.order[pos]
    }

    /// Replaces `ops` with the next tick's mutations.
    pub fn tick(&mut self, ops: &mut Vec<Op>) {
        ops.clear();
        let len = self.order.len();
        match self.workload {
            Workload::Sparse => self.ammo(ops, len / 100),
            Workload::Ten => self.ammo(ops, 10.min(len)),
            Workload::Dense => self.ammo(ops, len),
            Workload::Hot => {
                let mut chosen = sample(&mut self.rng, len, len / 10).into_vec();
                chosen.sort_unstable();
                for pos in chosen {
                    let mut step = || {
                        let size = self.rng.random_range(0.25..1.0f32);
                        if self.rng.random_bool(0.5) {
                            size
                        } else {
                            -size
                        }
                    };
                    let by = [step(), step(), step()];
                    ops.push(Op::Move {
                        pos,
                        serial: self.order[pos],
                        by,
                    });
                }
            }
            Workload::Churn => {
                let count = len / 100;
                let mut positions = sample(&mut self.rng, len, count).into_vec();
                positions.sort_unstable();
                let serials: Vec<u64> = positions.iter().map(|&p| self.order[p]).collect();
                remove_positions(&mut self.order, &positions);
                ops.push(Op::Remove { positions, serials });
                for _ in 0..count {
                    let serial = self.next_serial;
                    self.next_serial += 1;
                    let agent = spawn(&mut self.rng, serial);
                    self.order.push(serial);
                    ops.push(Op::Add { serial, agent });
                }
            }
            Workload::Shuffle => {
                for i in (1..len).rev() {
                    let j = self.rng.random_range(0..=i);
                    if i != j {
                        ops.push(Op::Swap {
                            a: (i, self.order[i]),
                            b: (j, self.order[j]),
                        });
                        self.order.swap(i, j);
                    }
                }
            }
        }
    }

    fn ammo(&mut self, ops: &mut Vec<Op>, count: usize) {
        let len = self.order.len();
        let mut chosen = if count == len {
            (0..len).collect()
        } else {
            sample(&mut self.rng, len, count).into_vec()
        };
        chosen.sort_unstable();
        for pos in chosen {
            let by = self.rng.random_range(1..=u16::MAX);
            ops.push(Op::Ammo {
                pos,
                serial: self.order[pos],
                by,
            });
        }
    }
}

/// Removes the elements at `positions` (ascending) in one pass, keeping
/// the order of the others (what `TArray::RemoveAt` does one by one).
pub fn remove_positions<T>(items: &mut Vec<T>, positions: &[usize]) {
    let mut next = positions.iter().copied().peekable();
    let mut index = 0;
    items.retain(|_| {
        let drop = next.next_if_eq(&index).is_some();
        index += 1;
        !drop
    });
}

/// A moved coordinate: `p + by`, or `p - by` if that would leave the range.
pub fn moved(p: f32, by: f32) -> f32 {
    let forward = p + by;
    if forward.abs() <= POSITION_RANGE {
        forward
    } else {
        p - by
    }
}

/// Our id for an item's serial.
pub fn id_of(serial: u64) -> ReplicationId {
    ReplicationId::from_raw(serial)
}

/// Applies one tick's mutations to a plain array (the naive and bitcode
/// servers' state).
pub fn apply_vec(items: &mut Vec<Agent>, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Ammo { pos, by, .. } => {
                let agent = &mut items[*pos];
                agent.ammo = agent.ammo.wrapping_add(*by);
            }
            Op::Move { pos, by, .. } => {
                let agent = &mut items[*pos];
                for (p, b) in agent.position.iter_mut().zip(by) {
                    *p = moved(*p, *b);
                }
            }
            Op::Remove { positions, .. } => remove_positions(items, positions),
            Op::Add { agent, .. } => items.push(agent.clone()),
            Op::Swap { a, b } => items.swap(a.0, b.0),
        }
    }
}

/// Applies one tick's mutations to our server array, through its API
/// (`get_mut` guards, `remove`, `push`, `swap`).
pub fn apply_ours(array: &mut FastArray<Agent>, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Ammo { serial, by, .. } => {
                let mut agent = array.get_mut(id_of(*serial)).expect("live item");
                agent.ammo = agent.ammo.wrapping_add(*by);
            }
            Op::Move { serial, by, .. } => {
                let mut agent = array.get_mut(id_of(*serial)).expect("live item");
                for (p, b) in agent.position.iter_mut().zip(by) {
                    *p = moved(*p, *b);
                }
            }
            Op::Remove { serials, .. } => {
                for &serial in serials {
                    array.remove(id_of(serial));
                }
            }
            Op::Add { serial, agent } => {
                let id = array.push(agent.clone());
                debug_assert_eq!(id, id_of(*serial));
            }
            Op::Swap { a, b } => {
                array.swap(id_of(a.1), id_of(b.1));
            }
        }
    }
}

/// How a fan-out bench takes each connection's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handout {
    /// Copied into a buffer of the caller's (`write_delta`).
    Copied,
    /// Handed out, shared by a reference count (`write_delta_bytes`).
    Owned,
    /// Lent, valid until the array's next call (`write_delta_slice`).
    Lent,
}

impl Handout {
    /// What it does to a message, as a report says it.
    pub fn describe(self) -> &'static str {
        match self {
            Handout::Copied => "copied",
            Handout::Owned => "handed out",
            Handout::Lent => "lent",
        }
    }

    /// Writes `state`'s message as packet `packet` this way, into `out` if
    /// copied; the message is kept from the optimizer.
    #[inline]
    pub fn write(
        self,
        array: &mut FastArray<Agent>,
        state: &mut SendState,
        packet: u32,
        out: &mut Vec<u8>,
    ) {
        match self {
            Handout::Copied => {
                out.clear();
                std::hint::black_box(array.write_delta(state, packet, out).expect("write"));
            }
            Handout::Owned => {
                std::hint::black_box(array.write_delta_bytes(state, packet).expect("write"));
            }
            Handout::Lent => {
                std::hint::black_box(array.write_delta_slice(state, packet).expect("write"));
            }
        }
    }
}

/// Our server array holding `agents` (ids = serials), committed.
pub fn server_array(agents: &[Agent]) -> FastArray<Agent> {
    let mut array = FastArray::with_capacity(agents.len());
    for (serial, agent) in agents.iter().enumerate() {
        let id = array.push(agent.clone());
        assert_eq!(id, id_of(serial as u64), "ids are serials");
    }
    array.commit();
    array
}

/// A connection whose client holds everything in `server` (the full
/// state written as packet `packet` and acknowledged), and that client's
/// mirror.
pub fn caught_up(server: &mut FastArray<Agent>, packet: u32) -> (SendState, FastArray<Agent>) {
    let mut conn = SendState::new();
    let mut mirror = FastArray::mirror();
    let mut bytes = Vec::new();
    server
        .write_delta(&mut conn, packet, &mut bytes)
        .expect("initial write");
    mirror.apply_delta(&bytes, &mut ()).expect("initial apply");
    conn.on_ack(packet);
    assert!(server.is_settled(&conn));
    (conn, mirror)
}

/// A connection whose client holds everything in `server`, without a mirror
/// (for server-side benches with many connections).
pub fn caught_up_conn(server: &mut FastArray<Agent>, packet: u32) -> SendState {
    let mut conn = SendState::new();
    let mut bytes = Vec::new();
    server
        .write_delta(&mut conn, packet, &mut bytes)
        .expect("initial write");
    conn.on_ack(packet);
    conn
}

/// Our server array holding `agents` (ids = serials) and a caught-up
/// connection, grown `batch` items per tick with the connection writing and
/// acknowledging every tick, as a game that spawns gradually would: no frame
/// ever carries more than `batch` items (unlike [`server_array`] followed by
/// one full sync).
pub fn grown(agents: &[Agent], batch: usize) -> (FastArray<Agent>, SendState) {
    let mut array = FastArray::new();
    let mut conn = SendState::new();
    let mut bytes = Vec::new();
    for (packet, chunk) in (0u32..).zip(agents.chunks(batch.max(1))) {
        for agent in chunk {
            array.push(agent.clone());
        }
        array.commit();
        bytes.clear();
        array
            .write_delta(&mut conn, packet, &mut bytes)
            .expect("write");
        conn.on_ack(packet);
    }
    (array, conn)
}

/// The time a server took over some ticks: its commits, and one
/// connection's `write_delta`s.
#[derive(Clone, Copy, Debug, Default)]
pub struct TickTimes {
    /// The commits.
    pub commit: std::time::Duration,
    /// The writes.
    pub write: std::time::Duration,
}

/// A server serving one caught-up client: the array, the connection, the
/// script that mutates the array each tick and the buffers its ticks reuse.
/// The benches and bins that time a server's ticks share it.
pub struct Served {
    /// The workload's mutations.
    pub script: Script,
    /// The server's array.
    pub server: FastArray<Agent>,
    /// Its connection, acknowledged after every write.
    pub conn: SendState,
    /// The next packet number.
    pub packet: u32,
    ops: Vec<Op>,
    out: Vec<u8>,
}

impl Served {
    /// `server` serving `conn`, whose next packet is `packet`, mutated by
    /// `script`.
    pub fn new(script: Script, server: FastArray<Agent>, conn: SendState, packet: u32) -> Self {
        Self {
            script,
            server,
            conn,
            packet,
            ops: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Runs `iters` ticks: each applies the script's mutations (not timed),
    /// commits, and writes for the connection, acknowledged at once (a
    /// caught-up client). Times the commits and the writes apart: the
    /// criterion benches keep the one they measure.
    pub fn ticks(&mut self, iters: u64) -> TickTimes {
        let mut times = TickTimes::default();
        for _ in 0..iters {
            self.script.tick(&mut self.ops);
            apply_ours(&mut self.server, &self.ops);
            let start = std::time::Instant::now();
            self.server.commit();
            let committed = std::time::Instant::now();
            self.out.clear();
            let stats = self
                .server
                .write_delta(&mut self.conn, self.packet, &mut self.out);
            times.write += committed.elapsed();
            times.commit += committed - start;
            std::hint::black_box(stats.expect("write"));
            self.conn.on_ack(self.packet);
            self.packet = self.packet.wrapping_add(1);
        }
        times
    }
}
