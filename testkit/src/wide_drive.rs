//! The drive loop of the wide convergence suite: one server, several
//! connections over independent [`Channel`]s, some writing within bit
//! budgets, some joining mid-run by snapshot; every delivered copy applied
//! and checked, every report passed to the sender, then a healed link
//! until every connection settles and the network is empty.
//!
//! What each run checks, besides the final `mirror == server`:
//!
//! * every genuine packet applies with `Ok`, whatever came before it (the
//!   transport acknowledges on arrival: an `Err` is recorded, the packet
//!   still acknowledged, and the run goes on to fail at its end);
//! * the frame a message reports is the frame it was written at (short
//!   frames resolve), and it is `stale` exactly when the mirror's rule
//!   says so: 64 or more frames older than the newest frame applied, or
//!   not newer than the snapshot the mirror joined with; a stale message
//!   adds, changes and removes nothing;
//! * a budgeted write stays within its budget and never reports an item
//!   too large for it: the worlds size their items for the smallest budget
//!   used. One exception is allowed where a run asks: a connection with a
//!   [`ConnSpec::settle_budget`] may report items larger than its budget
//!   while the links are lossy. A report that contradicts itself (an item
//!   that needs no more bits than the budget) always fails;
//! * every connection settles within [`SETTLE_TICKS`] of healing, and the
//!   network empties.
//!
//! [`Tally`] counts what the runs went through, so tests can check they
//! exercised what they claim.

use std::fmt::Write as _;

use fastarray::{ApplyReport, DecodeError, DeltaStats, HISTORY_LEN, SendError, SendState};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::channel::{Arrival, Channel, Fate, HOLD};
use crate::link::Report;
use crate::wide_link::WideProfile;

/// A replicated server state and how to reach its mirrors.
pub trait World {
    /// A client's copy.
    type Mirror;
    /// One tick of game logic.
    fn mutate(&mut self, rng: &mut ChaCha8Rng, tick: u32);
    /// Ends the frame.
    fn commit(&mut self);
    /// The frame of the last commit: what a message written now carries.
    fn frame(&self) -> u64;
    /// Writes the delta for `conn`, within `budget` bits if given.
    fn write(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        budget: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<DeltaStats, SendError>;
    /// A client joining now with a snapshot (delivered reliably), and
    /// `conn` reset to it.
    fn join(&mut self, conn: &mut SendState) -> Result<Self::Mirror, String>;
    /// A client that starts empty and learns everything from deltas.
    fn fresh_mirror(&self) -> Self::Mirror;
    /// Applies one delivered message.
    fn apply(mirror: &mut Self::Mirror, bytes: &[u8]) -> Result<ApplyReport, DecodeError>;
    /// How `mirror` differs from the server, if it does.
    fn difference(&self, mirror: &Self::Mirror) -> Option<String>;
    /// Whether `conn`'s client holds everything the server committed,
    /// every packet that carried it acknowledged (`FastArray::is_settled`).
    fn settled(&self, conn: &SendState) -> bool;
    /// How many arrays inside items have passed frame 64, at depth 1 (an
    /// item's array) and deeper.
    fn inner_frames(&self) -> (usize, usize) {
        (0, 0)
    }
}

/// How a connection chooses the bit budget of each write.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// `write_delta`.
    None,
    /// Always this many bits.
    Fixed(u64),
    /// Log-uniform in `[lo, hi]`, drawn per write.
    Range(u64, u64),
}

/// One connection of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConnSpec {
    /// Its budgets.
    pub budget: Budget,
    /// `Some`: its budgets once the links heal; then `budget` may be too
    /// small for some items while the links are lossy (they are reported
    /// `oversized` and wait), and this one must hold every item.
    pub settle_budget: Option<Budget>,
    /// `Some(tick)`: joins by snapshot at that tick (after the commit);
    /// `None`: from tick 0, by deltas alone.
    pub join: Option<u32>,
    /// `Some(tick)`: the client joins again by snapshot at that tick (a
    /// reconnection), with the old session's packets and reports still in
    /// transit; they reach the new mirror and the reset connection.
    pub rejoin: Option<u32>,
    /// `Some((start, len))`: the server writes nothing to this connection
    /// for `len` ticks from `start` (deliveries and reports go on).
    pub quiet: Option<(u32, u32)>,
}

impl ConnSpec {
    /// A connection from tick 0 with `budget`, nothing else.
    pub const fn new(budget: Budget) -> Self {
        ConnSpec {
            budget,
            settle_budget: None,
            join: None,
            rejoin: None,
            quiet: None,
        }
    }

    fn quiet_at(&self, now: u32) -> bool {
        self.quiet
            .is_some_and(|(start, len)| now >= start && now - start < len)
    }
}

/// What runs went through, summed.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Runs.
    pub runs: u64,
    /// Ticks, settling included.
    pub ticks: u64,
    /// Packets written.
    pub writes: u64,
    /// Packets written within a budget.
    pub budgeted: u64,
    /// Budgeted writes that left work for later (`deferred > 0`).
    pub deferred: u64,
    /// The smallest budget used.
    pub min_budget: Option<u64>,
    /// Copies applied (`Ok`).
    pub applied: u64,
    /// Copies reported `stale`.
    pub stale: u64,
    /// Second copies delivered.
    pub duplicates: u64,
    /// Copies delivered after the sender had been told they were lost.
    pub after_loss_report: u64,
    /// Packets reported lost that arrived anyway, before or after the report.
    pub reported_lost_arrived: u64,
    /// Copies delivered 65 or more ticks (so frames) after they were sent.
    pub held: u64,
    /// Of those, the ones reported `stale`.
    pub held_stale: u64,
    /// Acks and loss reports passed to senders.
    pub reports: u64,
    /// Loss reports passed to senders.
    pub losses: u64,
    /// Reports a sender ignored (no such packet in flight: a second report
    /// for a packet, or one for a packet it already counted as lost).
    pub ignored_reports: u64,
    /// Budgeted writes that reported an item too large for their budget.
    pub oversized: u64,
    /// Of those, the ones written within a budget that is allowed to be
    /// too small (see [`ConnSpec::settle_budget`]), naming an item that
    /// needs more bits than the budget.
    pub oversized_allowed: u64,
    /// Of those, the ones whose report says the item needs no more bits
    /// than the budget.
    pub oversized_within_budget: u64,
    /// Writes that compared the whole array with what the client holds,
    /// because the connection was more than 64 commits behind.
    pub resynced: u64,
    /// Writes that took the frame's shared message.
    pub shared: u64,
    /// Ticks with more than one commit.
    pub multi_commit_ticks: u64,
    /// Snapshot joins (re-joins included).
    pub joins: u64,
    /// Re-joins.
    pub rejoins: u64,
    /// Copies stale because they are not newer than the snapshot their
    /// mirror joined with.
    pub older_than_snapshot: u64,
    /// Snapshot joins at a frame below 64.
    pub joins_early: u64,
    /// Snapshot joins at frame 64 or later.
    pub joins_late: u64,
    /// Arrays at depth 1 past frame 64, when the link healed.
    pub inner_past_64: u64,
    /// Arrays deeper than that past frame 64, when the link healed.
    pub deep_past_64: u64,
    /// The longest settling, in ticks after healing.
    pub slowest_settle: u32,
}

impl Tally {
    /// Adds another run's counts.
    pub fn add(&mut self, other: &Tally) {
        self.runs += other.runs;
        self.ticks += other.ticks;
        self.writes += other.writes;
        self.budgeted += other.budgeted;
        self.deferred += other.deferred;
        self.min_budget = match (self.min_budget, other.min_budget) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.applied += other.applied;
        self.stale += other.stale;
        self.duplicates += other.duplicates;
        self.after_loss_report += other.after_loss_report;
        self.reported_lost_arrived += other.reported_lost_arrived;
        self.held += other.held;
        self.held_stale += other.held_stale;
        self.reports += other.reports;
        self.oversized += other.oversized;
        self.oversized_within_budget += other.oversized_within_budget;
        self.oversized_allowed += other.oversized_allowed;
        self.losses += other.losses;
        self.ignored_reports += other.ignored_reports;
        self.resynced += other.resynced;
        self.shared += other.shared;
        self.multi_commit_ticks += other.multi_commit_ticks;
        self.joins += other.joins;
        self.rejoins += other.rejoins;
        self.older_than_snapshot += other.older_than_snapshot;
        self.joins_early += other.joins_early;
        self.joins_late += other.joins_late;
        self.inner_past_64 += other.inner_past_64;
        self.deep_past_64 += other.deep_past_64;
        self.slowest_settle = self.slowest_settle.max(other.slowest_settle);
    }
}

/// Ticks allowed after healing for every connection to settle and the
/// network to empty. A held packet takes up to 300; and where acks can
/// take longer than the 64-frame window, each packet is resent until one
/// is acknowledged in time, a geometric wait (a connection whose acks all
/// take that long never settles: see
/// `a_connection_whose_acks_take_64_frames_settles`).
pub const SETTLE_TICKS: u32 = 1_500;

const WINDOW: u64 = HISTORY_LEN as u64;

/// A message in the network.
#[derive(Clone, Debug)]
struct Message {
    /// The frame it was written at (`None`: an empty message).
    frame: Option<u64>,
    bytes: Vec<u8>,
}

impl AsRef<[u8]> for Message {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

struct Conn<M> {
    spec: ConnSpec,
    state: SendState,
    mirror: Option<M>,
    link: Channel<Message>,
    rng: ChaCha8Rng,
    next_packet: u32,
    /// The newest frame the mirror applied (a snapshot's included).
    newest: Option<u64>,
    /// The frame of the snapshot it joined with.
    floor: Option<u64>,
}

impl<M> Conn<M> {
    fn settled(&self, world: &impl World<Mirror = M>) -> bool {
        self.mirror.is_some() && world.settled(&self.state)
    }
}

/// One run's settings.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    /// The links' behaviour (each connection has its own link).
    pub profile: &'a WideProfile,
    /// Seeds the links (with `salt`).
    pub seed: u64,
    /// Mixed into the links' seeds, so that cases sharing seeds do not
    /// share the links' fates.
    pub salt: u64,
    /// Ticks of game logic over lossy links before they heal.
    pub heal_at: u32,
    /// Frames of game logic (mutate and commit) per tick, that is per
    /// write: a simulation that runs faster than it sends.
    pub commits_per_tick: u32,
    /// The connections.
    pub conns: &'a [ConnSpec],
    /// Names the run in failures.
    pub label: &'a str,
}

/// Runs `world`: `run.heal_at` ticks of game logic over lossy links, then
/// healed links until every connection settles and nothing is in transit.
/// Returns what the run went through; panics, naming the run, if any check
/// failed.
pub fn run<W: World>(world: &mut W, run: &Run<'_>) -> Tally {
    let &Run {
        profile,
        seed,
        salt,
        heal_at,
        conns: specs,
        label,
        ..
    } = run;
    let mut tally = Tally {
        runs: 1,
        ..Tally::default()
    };
    let mut problems = Vec::new();
    let mut logic = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_1060 ^ (salt << 40));
    let mut conns: Vec<Conn<W::Mirror>> = specs
        .iter()
        .enumerate()
        .map(|(i, &spec)| {
            let stream = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i as u64 + 1) ^ (salt << 40);
            Conn {
                spec,
                state: SendState::new(),
                mirror: spec.join.is_none().then(|| world.fresh_mirror()),
                link: profile.channel(stream),
                rng: ChaCha8Rng::seed_from_u64(stream ^ 0xb0d6e7),
                // Near the wrap of a u16 sequence.
                next_packet: 65_400 + 17 * i as u32,
                newest: None,
                floor: None,
            }
        })
        .collect();
    for now in 0.. {
        let lossy = now < heal_at;
        for _ in 0..run.commits_per_tick.max(1) {
            if lossy {
                world.mutate(&mut logic, now);
            }
            world.commit();
        }
        if now == heal_at {
            let (inner, deep) = world.inner_frames();
            tally.inner_past_64 += inner as u64;
            tally.deep_past_64 += deep as u64;
        }
        let frame = world.frame();
        for (ci, conn) in conns.iter_mut().enumerate() {
            let rejoin = conn.spec.rejoin == Some(now) && conn.mirror.is_some();
            if conn.spec.join == Some(now) || rejoin {
                match world.join(&mut conn.state) {
                    Ok(mirror) => conn.mirror = Some(mirror),
                    Err(error) => problems.push(format!("tick {now} conn {ci}: join: {error}")),
                }
                conn.newest = Some(frame);
                conn.floor = Some(frame);
                tally.joins += 1;
                tally.rejoins += u64::from(rejoin);
                if frame < WINDOW {
                    tally.joins_early += 1;
                } else {
                    tally.joins_late += 1;
                }
            }
            if conn.mirror.is_none() {
                continue;
            }
            if now == heal_at {
                conn.link.heal();
            }
            let due = if lossy {
                !conn.spec.quiet_at(now)
            } else {
                !conn.settled(world)
            };
            if due {
                write(world, conn, run, now, &mut tally, &mut problems, ci);
            }
            for arrival in conn.link.deliver(now) {
                apply::<W>(conn, now, arrival, &mut tally, &mut problems, ci);
            }
            for report in conn.link.reports(now) {
                tally.reports += 1;
                let known = match report {
                    Report::Acked(p) => conn.state.on_ack(p),
                    Report::Lost(p) => {
                        tally.losses += 1;
                        conn.state.on_loss(p)
                    }
                };
                tally.ignored_reports += u64::from(!known);
            }
        }
        tally.ticks += 1;
        tally.multi_commit_ticks += u64::from(run.commits_per_tick > 1);
        if !lossy && conns.iter().all(|c| c.settled(world) && c.link.idle()) {
            tally.slowest_settle = now - heal_at;
            break;
        }
        if problems.len() > 20 {
            break;
        }
        if now >= heal_at + SETTLE_TICKS {
            let state: Vec<String> = conns
                .iter()
                .map(|c| {
                    format!(
                        "settled {} pending {} in flight {}, in transit: {}",
                        world.settled(&c.state),
                        c.state.pending_items(),
                        c.state.packets_in_flight(),
                        c.link.in_transit()
                    )
                })
                .collect();
            problems.push(format!(
                "tick {now}: not settled {SETTLE_TICKS} ticks after healing: {state:?}"
            ));
            break;
        }
    }
    for (ci, conn) in conns.iter().enumerate() {
        let Some(mirror) = &conn.mirror else {
            problems.push(format!("conn {ci} never joined"));
            continue;
        };
        if let Some(difference) = world.difference(mirror) {
            problems.push(format!(
                "conn {ci} ({:?}): diverged: {difference}",
                conn.spec
            ));
        }
    }
    if !problems.is_empty() {
        let mut message = format!("{label}: {} problem(s)", problems.len());
        for problem in problems.iter().take(8) {
            let _ = write!(message, "\n  {problem}");
        }
        panic!("{message}");
    }
    tally
}

fn write<W: World>(
    world: &mut W,
    conn: &mut Conn<W::Mirror>,
    run: &Run<'_>,
    now: u32,
    tally: &mut Tally,
    problems: &mut Vec<String>,
    ci: usize,
) {
    let lossy = now < run.heal_at;
    let small = lossy && conn.spec.settle_budget.is_some();
    let phase = match conn.spec.settle_budget {
        Some(settle) if !lossy => settle,
        _ => conn.spec.budget,
    };
    let budget = match phase {
        Budget::None => None,
        Budget::Fixed(bits) => Some(bits),
        Budget::Range(lo, hi) => {
            let (lo, hi) = (lo as f64, hi as f64);
            let u: f64 = conn.rng.random();
            Some((lo * (hi / lo).powf(u)).round() as u64)
        }
    };
    let packet = conn.next_packet & 0xffff;
    conn.next_packet = conn.next_packet.wrapping_add(1);
    let mut bytes = Vec::new();
    let stats = match world.write(&mut conn.state, packet, budget, &mut bytes) {
        Ok(stats) => stats,
        Err(error) => {
            problems.push(format!("tick {now} conn {ci}: write: {error}"));
            return;
        }
    };
    tally.writes += 1;
    tally.resynced += u64::from(stats.resynced);
    tally.shared += u64::from(stats.shared);
    if let Some(budget) = budget {
        tally.budgeted += 1;
        tally.min_budget = Some(tally.min_budget.map_or(budget, |b| b.min(budget)));
        if stats.deferred > 0 {
            tally.deferred += 1;
        }
        if stats.bits > budget {
            problems.push(format!(
                "tick {now} conn {ci}: {} bits over a budget of {budget}",
                stats.bits
            ));
        }
        if let Some(oversized) = stats.oversized {
            tally.oversized += 1;
            let within = oversized.bits <= budget;
            tally.oversized_within_budget += u64::from(within);
            tally.oversized_allowed += u64::from(!within && small);
            if within || !small {
                problems.push(format!(
                    "tick {now} conn {ci}: budget {budget}: oversized {oversized:?}, though every item fits"
                ));
            }
        }
    }
    let frame = (stats.bits > 1).then(|| world.frame());
    conn.link.send(now, packet, Message { frame, bytes });
}

fn apply<W: World>(
    conn: &mut Conn<W::Mirror>,
    now: u32,
    arrival: Arrival<Message>,
    tally: &mut Tally,
    problems: &mut Vec<String>,
    ci: usize,
) {
    let Message { frame, bytes } = &arrival.payload;
    let late = now - arrival.sent_at >= HOLD.0;
    match arrival.fate {
        Fate::Duplicate => tally.duplicates += 1,
        Fate::Ghost => tally.reported_lost_arrived += 1,
        _ => {}
    }
    if arrival.reported_lost {
        tally.after_loss_report += 1;
        if arrival.fate != Fate::Ghost {
            tally.reported_lost_arrived += 1;
        }
    }
    let expect_stale = frame.is_some_and(|frame| {
        conn.newest.is_some_and(|newest| frame + WINDOW <= newest)
            || conn.floor.is_some_and(|floor| frame <= floor)
    });
    let what = format!(
        "tick {now} conn {ci}: packet {} sent at {} ({:?}{}, frame {frame:?}, mirror newest {:?})",
        arrival.packet,
        arrival.sent_at,
        arrival.fate,
        if arrival.reported_lost {
            ", reported lost"
        } else {
            ""
        },
        conn.newest,
    );
    let mirror = conn.mirror.as_mut().expect("only joined connections send");
    let report = match W::apply(mirror, bytes) {
        Ok(report) => report,
        Err(error) => {
            problems.push(format!("{what}: apply_delta failed: {error}"));
            return;
        }
    };
    tally.applied += 1;
    if late {
        tally.held += 1;
    }
    if report.frame != *frame {
        problems.push(format!("{what}: read as frame {:?}", report.frame));
    }
    if report.stale != expect_stale {
        problems.push(format!("{what}: stale {}", report.stale));
    }
    if report.stale {
        tally.stale += 1;
        if conn
            .floor
            .is_some_and(|floor| frame.is_some_and(|f| f <= floor))
        {
            tally.older_than_snapshot += 1;
        }
        if late {
            tally.held_stale += 1;
        }
        if report.added + report.changed + report.removed > 0 {
            problems.push(format!("{what}: stale, yet applied {report:?}"));
        }
    } else if let Some(frame) = report.frame {
        conn.newest = Some(conn.newest.map_or(frame, |n| n.max(frame)));
    }
}

/// Seeds per profile: `default`, or `FASTARRAY_SEEDS` when set.
pub fn seeds(default: u64) -> u64 {
    std::env::var("FASTARRAY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
