//! The interest-management workload (issue 13): agents spread over a
//! 1 000 × 1 000 world, connections that each see the agents within a
//! radius of a point (a [`fastarray::InterestGrid`] feeding their scopes), and per
//! tick a tenth of the agents moving a little and a hundredth losing
//! health. With the baselines its targets are measured against: the same
//! connections without scopes, each given an array of 1 000 agents of its
//! own ([`Separate`](crate::interest::Separate)), and, for bits, an unscoped array per connection
//! that holds exactly the agents in its scope ([`Shadow`](crate::interest::Shadow)).

use std::collections::HashMap;
use std::time::Instant;

use fastarray::{DeltaWrite, FastArray, InterestGrid, Relevance, ReplicationId, SendState};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::Agent;
use crate::summary::{Summary, in_turn, summary};

/// Half the world's side: agents live in `[-HALF, HALF)²`.
pub const HALF: f32 = 500.0;

/// The radius around a point that holds `share` of a uniform world's
/// agents.
pub fn radius_for(share: f64) -> f32 {
    let area = share * f64::from(2.0 * HALF).powi(2);
    (area / std::f64::consts::PI).sqrt() as f32
}

fn agent(rng: &mut ChaCha8Rng, serial: u64) -> Agent {
    Agent {
        position: [
            rng.random_range(-HALF..HALF),
            0.0,
            rng.random_range(-HALF..HALF),
        ],
        velocity: [0.0; 3],
        health: 100,
        ammo: 30,
        name: format!("a{serial}"),
    }
}

fn ground(agent: &Agent) -> [f32; 2] {
    [agent.position[0], agent.position[2]]
}

/// One tick's changes: the agents that moved and those that lost health
/// (and, in the MMO workload, those that died and were born).
#[derive(Default)]
pub struct TickChanges {
    /// Agents moved (by at most one unit on each axis).
    pub moved: Vec<ReplicationId>,
    /// Agents whose health changed.
    pub hurt: Vec<ReplicationId>,
    /// Agents removed (the MMO workload's churn).
    pub despawned: Vec<ReplicationId>,
    /// Agents pushed in their place.
    pub spawned: Vec<ReplicationId>,
}

/// A tenth of `ids` move a step, a hundredth lose health.
fn change(
    array: &mut FastArray<Agent>,
    ids: &[ReplicationId],
    rng: &mut ChaCha8Rng,
) -> TickChanges {
    let mut changes = TickChanges {
        moved: Vec::with_capacity(ids.len() / 10 + 1),
        hurt: Vec::with_capacity(ids.len() / 100 + 1),
        ..TickChanges::default()
    };
    for &id in ids {
        let roll = rng.random_range(0..1000u32);
        if roll < 100 {
            let mut agent = array.get_mut(id).expect("a live agent");
            let (dx, dz) = (rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0));
            agent.position[0] = (agent.position[0] + dx).clamp(-HALF, HALF - 0.01);
            agent.position[2] = (agent.position[2] + dz).clamp(-HALF, HALF - 0.01);
            changes.moved.push(id);
        } else if roll < 110 {
            let mut agent = array.get_mut(id).expect("a live agent");
            agent.health = agent.health.wrapping_sub(1);
            changes.hurt.push(id);
        }
    }
    changes
}

/// The scoped world: one array of agents, a grid, and connections that
/// each see a disc around a point of their own.
pub struct Scoped {
    /// The agents.
    pub server: FastArray<Agent>,
    /// Their positions, and the connections' views.
    pub grid: InterestGrid,
    /// One per viewer.
    pub conns: Vec<SendState>,
    ids: Vec<ReplicationId>,
    rng: ChaCha8Rng,
    packet: u32,
    /// This tick's enter and leave events, per connection.
    events: Vec<Vec<(ReplicationId, Relevance)>>,
    radius: f32,
    /// The viewers' centres.
    centres: Vec<[f32; 2]>,
    /// Whether the viewers walk ([`Scoped::mmo`]).
    walking: bool,
    /// The share of agents despawned and respawned per tick.
    churn: f64,
    serial: u64,
    /// Time spent per phase since [`Scoped::take_phases`].
    phases: Phases,
    /// How the scopes and writes of a tick are driven.
    drive: Drive,
    /// Their packets.
    outs: Vec<Vec<u8>>,
}

/// How [`Scoped::serve`] drives the scopes and writes of a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drive {
    /// Per connection, its scope takes its events and then its delta is
    /// written, as the README shows: the connection's state is read once
    /// into the cache for both.
    Interleaved,
    /// Every scope takes its events, then one `write_delta` after another:
    /// the same passes as [`Parallel`](Self::Parallel), on one core.
    Passes,
    /// Every scope takes its events, then `FastArray::write_deltas` writes
    /// on every core (the bench crate has the `parallel` feature).
    Parallel,
}

/// Ticks a run of [`Scoped::write_speed_up`] serves before it times.
pub const SETTLE: usize = 2;
/// Ticks a run of [`Scoped::write_speed_up`] times.
pub const RUN: usize = 3;

/// [`Scoped::write_speed_up`]'s measurements, over its pairs of runs.
#[derive(Clone, Copy, Debug)]
pub struct SpeedUp {
    /// Milliseconds a tick's writes took one after another.
    pub serial: Summary,
    /// Milliseconds a tick's writes took on every core.
    pub parallel: Summary,
    /// Each pair's ratio, one after another ÷ on every core.
    pub ratio: Summary,
}

/// Where a scoped server's tick goes: the sum over the ticks served.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    /// The grid hearing of the moves, births and deaths, and `update`.
    pub grid: std::time::Duration,
    /// `commit`.
    pub commit: std::time::Duration,
    /// The grid's events into the connections' scopes.
    pub scopes: std::time::Duration,
    /// One `write_delta` per connection (or `write_deltas` for all).
    /// Interleaved with the scopes ([`Drive::Interleaved`]), each
    /// connection's scope goes to `scopes` and its write here.
    pub writes: std::time::Duration,
    /// Each connection's packet acknowledged.
    pub acks: std::time::Duration,
    /// Ticks served.
    pub ticks: u32,
}

impl Scoped {
    /// `items` agents, `conns` connections each seeing `share` of them
    /// (on average), every connection synchronised.
    pub fn new(items: usize, conns: usize, share: f64, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let radius = radius_for(share);
        let mut server = FastArray::with_capacity(items);
        // Cells half a view radius wide, as the grid's docs advise.
        let mut grid = InterestGrid::new(radius / 2.0);
        let ids: Vec<ReplicationId> = (0..items as u64)
            .map(|serial| {
                let agent = agent(&mut rng, serial);
                let position = ground(&agent);
                let id = server.push(agent);
                grid.set_item(id, position);
                id
            })
            .collect();
        server.commit();
        let mut conns: Vec<SendState> = (0..conns).map(|_| SendState::new()).collect();
        let mut centres = Vec::with_capacity(conns.len());
        for (n, conn) in conns.iter_mut().enumerate() {
            server.scope(conn).expect("the server's array");
            let center = [rng.random_range(-HALF..HALF), rng.random_range(-HALF..HALF)];
            grid.set_viewer(n as u64, center, radius);
            centres.push(center);
        }
        let mut world = Self {
            server,
            grid,
            events: vec![Vec::new(); conns.len()],
            conns,
            ids,
            rng,
            packet: 0,
            radius,
            centres,
            walking: false,
            churn: 0.0,
            serial: items as u64,
            phases: Phases::default(),
            drive: Drive::Interleaved,
            outs: Vec::new(),
        };
        world.serve(&TickChanges::default());
        world.phases = Phases::default();
        world
    }

    /// The MMO workload of issue 32: `items` agents, `conns` connections
    /// each seeing `share` of them, whose viewers walk (up to a unit per
    /// axis per tick), and a thousandth of the agents despawned and
    /// respawned elsewhere per tick, on top of [`new`](Self::new)'s moves
    /// and hurts.
    pub fn mmo(items: usize, conns: usize, share: f64, seed: u64) -> Self {
        let mut world = Self::new(items, conns, share, seed);
        world.walking = true;
        world.churn = 0.001;
        world
    }

    /// The game's part of a tick (not what the server's tick is timed on):
    /// agents move and get hurt; in the MMO workload viewers walk and some
    /// agents die and others are born.
    pub fn mutate(&mut self) -> TickChanges {
        let mut changes = change(&mut self.server, &self.ids, &mut self.rng);
        if self.walking {
            for centre in &mut self.centres {
                for axis in centre.iter_mut() {
                    *axis = (*axis + self.rng.random_range(-1.0..1.0)).clamp(-HALF, HALF);
                }
            }
        }
        let deaths = (self.ids.len() as f64 * self.churn) as usize;
        for _ in 0..deaths {
            let at = self.rng.random_range(0..self.ids.len());
            let dead = self.ids[at];
            let touched = [&changes.moved, &changes.hurt, &changes.spawned];
            if touched.iter().any(|ids| ids.contains(&dead)) {
                continue;
            }
            self.server.remove(dead);
            let born = self.server.push(agent(&mut self.rng, self.serial));
            self.serial += 1;
            self.ids[at] = born;
            changes.despawned.push(dead);
            changes.spawned.push(born);
        }
        changes
    }

    /// How the ticks served from now on drive the scopes and writes
    /// ([`Drive::Interleaved`] unless set).
    pub fn set_drive(&mut self, drive: Drive) {
        self.drive = drive;
    }

    /// Where the ticks served since the last call went, and resets it.
    pub fn take_phases(&mut self) -> Phases {
        core::mem::take(&mut self.phases)
    }

    /// How much faster the writes of a tick are on every core
    /// (`write_deltas`) than one after another (`write_delta`), measured
    /// on this world in `pairs` pairs of runs of ticks that take the two
    /// in turn, which goes first alternating, so that the machine's drift
    /// falls on both. A run serves [`SETTLE`] ticks, then times the writes
    /// of [`RUN`] more: the first ticks after a switch find the
    /// connections' states in the other core's cache. Both take the same
    /// passes (every scope, then every write: [`Drive::Passes`] against
    /// [`Drive::Parallel`]). Leaves the drive as it found it.
    pub fn write_speed_up(&mut self, pairs: usize) -> SpeedUp {
        let drive = self.drive;
        let mut run = |parallel: bool| {
            self.set_drive(if parallel {
                Drive::Parallel
            } else {
                Drive::Passes
            });
            for tick in 0..SETTLE + RUN {
                if tick == SETTLE {
                    self.take_phases();
                }
                let changes = self.mutate();
                self.serve(&changes);
            }
            self.take_phases().writes.as_secs_f64() * 1e3 / RUN as f64
        };
        let (mut serial, mut parallel, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for pair in 0..pairs {
            let (one, every) = in_turn(pair, &mut run);
            serial.push(one);
            parallel.push(every);
            ratios.push(one / every);
        }
        self.set_drive(drive);
        SpeedUp {
            serial: summary(&mut serial),
            parallel: summary(&mut parallel),
            ratio: summary(&mut ratios),
        }
    }

    /// The server's tick: the grid hears of the moves, commit, scopes
    /// follow the grid, one delta per connection (each acknowledged).
    /// Returns the bits written per connection.
    pub fn serve(&mut self, changes: &TickChanges) -> Vec<u64> {
        let start = Instant::now();
        for &id in changes.moved.iter().chain(&changes.spawned) {
            let position = ground(self.server.get(id).expect("a live agent"));
            self.grid.set_item(id, position);
        }
        for &id in &changes.despawned {
            self.grid.remove_item(id);
        }
        if self.walking {
            for (n, &centre) in self.centres.iter().enumerate() {
                self.grid.set_viewer(n as u64, centre, self.radius);
            }
        }
        let committing = Instant::now();
        self.server.commit();
        let updating = Instant::now();
        let events = &mut self.events;
        events.iter_mut().for_each(Vec::clear);
        self.grid
            .update(|viewer, id, relevance| events[viewer as usize].push((id, relevance)));
        let scoping = Instant::now();
        self.packet += 1;
        let mut bits = Vec::with_capacity(self.conns.len());
        // Each connection's packet in a buffer of its own, as a server
        // keeps them until its transport sends them, either way.
        let packet = self.packet;
        self.outs.resize_with(self.conns.len(), Vec::new);
        self.outs.iter_mut().for_each(Vec::clear);
        let server = &mut self.server;
        let scope = |server: &mut FastArray<Agent>, conn: &mut SendState, events: &[_]| {
            if !events.is_empty() {
                let mut scope = server.scope(conn).expect("the server's array");
                scope.update(events.iter().copied());
            }
        };
        let write = |server: &mut FastArray<Agent>, conn: &mut SendState, out: &mut Vec<u8>| {
            server.write_delta(conn, packet, out).expect("a write").bits
        };
        let (conns, outs, events) = (&mut self.conns, &mut self.outs, &self.events);
        let writing = match self.drive {
            Drive::Interleaved => {
                // The scopes' share of the pass, timed per connection.
                let mut scopes = std::time::Duration::ZERO;
                for ((conn, out), events) in conns.iter_mut().zip(outs.iter_mut()).zip(events) {
                    let start = Instant::now();
                    scope(server, conn, events);
                    scopes += start.elapsed();
                    bits.push(write(server, conn, out));
                }
                scoping + scopes
            }
            Drive::Passes | Drive::Parallel => {
                for (conn, events) in conns.iter_mut().zip(events) {
                    scope(server, conn, events);
                }
                let writing = Instant::now();
                if self.drive == Drive::Parallel {
                    let mut writes: Vec<DeltaWrite<'_>> = (conns.iter_mut().zip(outs.iter_mut()))
                        .map(|(state, out)| DeltaWrite {
                            state,
                            packet,
                            out,
                            max_bits: None,
                        })
                        .collect();
                    let results = server.write_deltas(&mut writes);
                    drop(writes);
                    bits.extend(
                        results
                            .into_iter()
                            .map(|result| result.expect("a write").bits),
                    );
                } else {
                    for (conn, out) in conns.iter_mut().zip(outs.iter_mut()) {
                        bits.push(write(server, conn, out));
                    }
                }
                writing
            }
        };
        let acking = Instant::now();
        for conn in &mut self.conns {
            conn.on_ack(self.packet);
        }
        let end = Instant::now();
        let phases = &mut self.phases;
        phases.grid += (committing - start) + (scoping - updating);
        phases.commit += updating - committing;
        phases.scopes += writing - scoping;
        phases.writes += acking - writing;
        phases.acks += end - acking;
        phases.ticks += 1;
        bits
    }

    /// This tick's enter and leave events of connection `conn`.
    pub fn events(&self, conn: usize) -> &[(ReplicationId, Relevance)] {
        &self.events[conn]
    }

    /// The packets of the last tick served, one per connection.
    pub fn packets(&self) -> &[Vec<u8>] {
        &self.outs
    }

    /// The agents connection `conn` sees.
    pub fn in_scope(&mut self, conn: usize) -> usize {
        let conn = &mut self.conns[conn];
        self.server.scope(conn).map_or(0, |scope| scope.len())
    }
}

/// The baseline of the tick's time: each connection has an unscoped array
/// of its own holding `items` agents, with the same rates of change.
pub struct Separate {
    arrays: Vec<(FastArray<Agent>, SendState, Vec<ReplicationId>)>,
    rng: ChaCha8Rng,
    packet: u32,
}

impl Separate {
    /// `conns` arrays of `items` agents, each with its synchronised
    /// connection.
    pub fn new(items: usize, conns: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let arrays = (0..conns)
            .map(|_| {
                let mut array = FastArray::with_capacity(items);
                let ids = (0..items as u64)
                    .map(|serial| array.push(agent(&mut rng, serial)))
                    .collect();
                array.commit();
                let mut conn = SendState::new();
                array
                    .write_delta(&mut conn, 0, &mut Vec::new())
                    .expect("a write");
                conn.on_ack(0);
                (array, conn, ids)
            })
            .collect();
        Self {
            arrays,
            rng,
            packet: 0,
        }
    }

    /// The game's part of a tick, in every array.
    pub fn mutate(&mut self) {
        for (array, _, ids) in &mut self.arrays {
            change(array, ids, &mut self.rng);
        }
    }

    /// The server's tick: per array, commit and one delta (acknowledged).
    /// Returns the bits written in all.
    pub fn serve(&mut self) -> u64 {
        self.packet += 1;
        let mut bits = 0;
        let mut bytes = Vec::new();
        for (array, conn, _) in &mut self.arrays {
            array.commit();
            bytes.clear();
            bits += array
                .write_delta(conn, self.packet, &mut bytes)
                .expect("a write")
                .bits;
            conn.on_ack(self.packet);
        }
        bits
    }
}

/// The baseline of a connection's bits: an unscoped array that holds
/// exactly the agents in the connection's scope, following the same
/// changes (an agent entering is pushed, one leaving removed).
pub struct Shadow {
    array: FastArray<Agent>,
    conn: SendState,
    /// Server id → shadow id.
    ids: HashMap<ReplicationId, ReplicationId>,
    packet: u32,
}

impl Default for Shadow {
    fn default() -> Self {
        Self {
            array: FastArray::new(),
            conn: SendState::new(),
            ids: HashMap::new(),
            packet: 0,
        }
    }
}

impl Shadow {
    /// Follows one server tick of connection `conn` of `world` (after its
    /// `serve`): its enter and leave events and the tick's changes.
    /// Returns the bits of the shadow's delta.
    pub fn follow(&mut self, world: &Scoped, conn: usize, changes: &TickChanges) -> u64 {
        for &(id, relevance) in world.events(conn) {
            match relevance {
                Relevance::Enter => {
                    let agent = world.server.get(id).expect("a live agent").clone();
                    self.ids.insert(id, self.array.push(agent));
                }
                Relevance::Leave => {
                    if let Some(shadow) = self.ids.remove(&id) {
                        self.array.remove(shadow);
                    }
                }
            }
        }
        for &id in changes.moved.iter().chain(&changes.hurt) {
            if let Some(&shadow) = self.ids.get(&id) {
                let agent = world.server.get(id).expect("a live agent");
                let mut copy = self.array.get_mut(shadow).expect("a shadowed agent");
                copy.position = agent.position;
                copy.health = agent.health;
            }
        }
        self.array.commit();
        self.packet += 1;
        let stats = self
            .array
            .write_delta(&mut self.conn, self.packet, &mut Vec::new())
            .expect("a write");
        self.conn.on_ack(self.packet);
        stats.bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However a tick drives the scopes and writes, every client ends
    /// each tick holding exactly the agents in its connection's scope, as
    /// the server holds them (viewers walking, agents born and dying).
    /// The bytes themselves differ from world to world even under one
    /// drive: the grid's maps are seeded at random, which orders the
    /// events, and so the handles each connection deals.
    #[test]
    fn every_drive_keeps_every_client_in_step() {
        for drive in [Drive::Interleaved, Drive::Passes, Drive::Parallel] {
            let mut world = Scoped::mmo(3_000, 8, 0.05, 7);
            world.set_drive(drive);
            let mut mirrors: Vec<FastArray<Agent>> = (0..world.conns.len())
                .map(|_| FastArray::mirror())
                .collect();
            // The packets of the world's first tick, served as it was made.
            for (mirror, packet) in mirrors.iter_mut().zip(world.packets()) {
                mirror.apply_delta(packet, &mut ()).expect("a delta");
            }
            let mut entered = 0;
            for tick in 0..12 {
                let changes = world.mutate();
                world.serve(&changes);
                entered += world.events.iter().flatten().count();
                for (conn, mirror) in mirrors.iter_mut().enumerate() {
                    mirror
                        .apply_delta(&world.outs[conn], &mut ())
                        .expect("a delta");
                    let scope = world.server.scope(&mut world.conns[conn]).expect("scoped");
                    let mut ids: Vec<ReplicationId> = scope.ids().collect();
                    // The scope took the grid's events: it is what the
                    // viewer sees.
                    let mut seen: Vec<ReplicationId> = world.grid.visible(conn as u64).collect();
                    ids.sort_unstable();
                    seen.sort_unstable();
                    assert_eq!(ids, seen, "{drive:?}, tick {tick}, conn {conn}");
                    assert_eq!(
                        mirror.len(),
                        ids.len(),
                        "{drive:?}, tick {tick}, conn {conn}"
                    );
                    for id in ids {
                        let (held, real) = (mirror.get(id), world.server.get(id));
                        let (Some(held), Some(real)) = (held, real) else {
                            panic!("{drive:?}, tick {tick}: {id} is {held:?}, not {real:?}");
                        };
                        // Positions go quantized to 16 bits an axis.
                        let near = held.position.iter().zip(real.position);
                        assert!(near.into_iter().all(|(a, b)| (a - b).abs() < 0.05), "{id}");
                        let rest = |a: &Agent| (a.health, a.ammo, a.name.clone());
                        assert_eq!(rest(held), rest(real), "{drive:?}, tick {tick}, {id}");
                    }
                }
            }
            assert!(
                entered > 50,
                "{drive:?}: viewers walked through {entered} events"
            );
        }
    }
}
