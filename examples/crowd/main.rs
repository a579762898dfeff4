//! The crowd demo: one server replicating a few thousand agents that move,
//! take damage, spawn and die, to eight clients. Each client is a player
//! somewhere on the map who sees the agents within its view radius (area of
//! interest: an `InterestGrid` feeds each connection's scope) while walking
//! around.
//!
//! By default it runs over real UDP sockets on 127.0.0.1 (`udp.rs`): the
//! server on the main thread, each client on its own thread, a seeded shim
//! at every socket dropping 0%, 5%, 20% or 50% of the datagrams, duplicating
//! and delaying them; three clients join late. Each client's packets carry
//! its acknowledgements and where its player stands; the server keeps a
//! `Connection` per client (the agents and a match object, in packets of at
//! most 1 200 bytes). Each client first connects with the handshake, and
//! every packet carries its session's token (`--encrypted`: is sealed with
//! ChaCha20-Poly1305). With `--simulated`, the same game runs in one loop
//! over the test kit's simulated links instead (`simulated.rs`).
//!
//! At the end the links heal, the last repairs go out, and every client is
//! checked against the server's agents in its scope. Bytes are compared
//! with sending everything to everyone (one unscoped connection over a
//! perfect link).
//!
//! ```sh
//! cargo run --release --example crowd                     # 300 ticks over UDP (about 6 s)
//! cargo run --release --example crowd -- 1000             # more ticks
//! cargo run --release --example crowd -- --encrypted      # sealed packets
//! cargo run --release --example crowd -- --simulated      # over simulated links
//! ```
//!
//! Exits with status 1 if any client differs from the server's agents in
//! its scope.

mod shim;
mod simulated;
mod udp;

use std::process::ExitCode;

use fastarray::{FastArray, InterestGrid, Protection, Replicate, ReplicationId, SendState};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Agent {
    position: [f32; 3],
    velocity: [f32; 3],
    health: u8,
    name: String,
}

pub const START_AGENTS: usize = 4000;
pub const SPAWNS_PER_TICK: usize = 12;
const DEATH_CHANCE: f64 = 0.003;

/// Where agent `agent` is on the ground plane.
pub fn ground(agent: &Agent) -> [f32; 2] {
    [agent.position[0], agent.position[2]]
}

pub fn spawn(rng: &mut ChaCha8Rng, serial: u64) -> Agent {
    let mut velocity = [0.0; 3];
    if rng.random_bool(0.3) {
        velocity = [
            rng.random_range(-2.0..2.0),
            0.0,
            rng.random_range(-2.0..2.0),
        ];
    }
    Agent {
        position: [
            rng.random_range(-500.0..500.0),
            0.0,
            rng.random_range(-500.0..500.0),
        ],
        velocity,
        health: 100,
        name: format!("agent-{serial}"),
    }
}

/// One tick of game logic, telling `grid` where agents went; returns how
/// many agents were written to.
pub fn simulate(
    server: &mut FastArray<Agent>,
    grid: &mut InterestGrid,
    rng: &mut ChaCha8Rng,
    serial: &mut u64,
    tick: u32,
) -> usize {
    let ids: Vec<ReplicationId> = server.ids().collect();
    let mut touched = 0;
    let mut deaths = Vec::new();
    for id in ids {
        let idle = server.get(id).is_some_and(|a| a.velocity == [0.0; 3]);
        if idle && !rng.random_bool(0.05) {
            continue; // most idle agents are not even looked at
        }
        let mut agent = server.get_mut(id).expect("id from this tick's list");
        touched += 1;
        let velocity = agent.velocity;
        for (p, v) in agent.position.iter_mut().zip(velocity) {
            *p += v * 0.1;
        }
        if rng.random_bool(0.02) {
            agent.health = agent.health.saturating_sub(rng.random_range(5..40));
        }
        // Clamping rewrites an unhurt idle agent's health with the same
        // value: the guard records the touch, the commit finds no change.
        agent.health = agent.health.min(100);
        if agent.health == 0 || rng.random_bool(DEATH_CHANCE) {
            deaths.push(id);
        }
        grid.set_item(id, ground(&agent));
    }
    for id in deaths {
        server.remove(id);
        grid.remove_item(id);
    }
    for _ in 0..SPAWNS_PER_TICK {
        let agent = spawn(rng, *serial);
        let position = ground(&agent);
        grid.set_item(server.push(agent), position);
        *serial += 1;
    }
    if tick % 25 == 0 {
        server.sort_by(|a, b| a.name.cmp(&b.name)); // reordering costs nothing
    }
    touched
}

fn main() -> ExitCode {
    let mut ticks = 300;
    let mut simulated = false;
    let mut protection = Protection::Token;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--simulated" => simulated = true,
            "--encrypted" => protection = Protection::Encrypted,
            number => match number.parse() {
                Ok(n) => ticks = n,
                Err(_) => {
                    eprintln!("usage: crowd [TICKS] [--simulated | --encrypted]");
                    return ExitCode::from(2);
                }
            },
        }
    }
    if simulated {
        simulated::run(ticks)
    } else {
        udp::run(ticks, protection)
    }
}

/// Whether `mirror` holds exactly the agents in `conn`'s scope, equal on
/// the wire.
pub fn mirrors_scope(
    agents: &mut FastArray<Agent>,
    conn: &mut SendState,
    mirror: &FastArray<Agent>,
) -> bool {
    let Ok(scope) = agents.scope(conn) else {
        return false;
    };
    let ids: Vec<ReplicationId> = scope.ids().collect();
    ids.len() == mirror.len()
        && ids.iter().all(|&id| {
            let (ours, theirs) = (agents.get(id), mirror.get(id));
            ours.zip(theirs).is_some_and(|(a, b)| a.wire_eq(b))
        })
}
