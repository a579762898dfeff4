//! The crowd demo: a server `FastArray` of a few thousand agents that move,
//! take damage, spawn and die for a number of ticks. Each tick it commits and
//! prints what the commit found; at the end a client is built from a full
//! snapshot and checked against the server.
//!
//! ```sh
//! cargo run --release --example crowd            # 120 ticks
//! cargo run --release --example crowd -- 1000    # more ticks
//! ```
//!
//! Exits with status 1 if the client does not match the server.

use std::process::ExitCode;
use std::time::Instant;

use fastarray::{FastArray, Replicate, ReplicationId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    position: [f32; 3],
    velocity: [f32; 3],
    health: u8,
    name: String,
}

const START_AGENTS: usize = 4000;
const SPAWNS_PER_TICK: usize = 12;
const DEATH_CHANCE: f64 = 0.003;

fn spawn(rng: &mut ChaCha8Rng, serial: u64) -> Agent {
    let moving = rng.random_bool(0.3);
    let mut velocity = [0.0; 3];
    if moving {
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

fn main() -> ExitCode {
    let ticks: u32 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 120,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: crowd [TICKS]");
            return ExitCode::from(2);
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut server = FastArray::with_capacity(START_AGENTS + SPAWNS_PER_TICK * ticks as usize);
    let mut serial = 0;
    for _ in 0..START_AGENTS {
        server.push(spawn(&mut rng, serial));
        serial += 1;
    }
    server.commit();

    let started = Instant::now();
    let mut ids: Vec<ReplicationId> = Vec::new();
    let (mut total_changed, mut total_touched) = (0, 0);
    for tick in 1..=ticks {
        ids.clear();
        ids.extend(server.ids());
        let mut touched = 0;
        let mut deaths = Vec::new();
        for &id in &ids {
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
            // Every touched agent has its health clamped, which for an idle,
            // unhurt agent rewrites the same value: the guard records the
            // touch, the commit finds no change.
            if rng.random_bool(0.02) {
                agent.health = agent.health.saturating_sub(rng.random_range(5..40));
            }
            agent.health = agent.health.min(100);
            if agent.health == 0 || rng.random_bool(DEATH_CHANCE) {
                deaths.push(id);
            }
        }
        for id in deaths {
            server.remove(id);
        }
        for _ in 0..SPAWNS_PER_TICK {
            server.push(spawn(&mut rng, serial));
            serial += 1;
        }
        if tick % 25 == 0 {
            server.sort_by(|a, b| a.name.cmp(&b.name)); // reordering costs nothing
        }
        let changes = server.commit();
        let (changed, added, removed) = (
            changes.changed().len(),
            changes.added().len(),
            changes.removed().len(),
        );
        total_changed += changed;
        total_touched += touched;
        println!(
            "tick {tick:>4}  items {:>5}  touched {touched:>5}  changed {changed:>5}  added {added:>3}  removed {removed:>3}",
            server.len(),
        );
    }
    let elapsed = started.elapsed();

    let mut packet = Vec::new();
    let bits = server.write_snapshot(&mut packet).expect("agents encode");
    let client = match FastArray::<Agent>::from_snapshot(&packet) {
        Ok(client) => client,
        Err(error) => {
            eprintln!("snapshot did not decode: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{ticks} ticks in {:.1} ms; {total_touched} touches, {total_changed} real changes",
        elapsed.as_secs_f64() * 1e3
    );
    println!(
        "snapshot: {} agents in {} bytes ({:.1} bits per agent)",
        server.len(),
        packet.len(),
        bits as f64 / server.len().max(1) as f64
    );
    if client != server {
        eprintln!("MISMATCH: the client built from the snapshot differs from the server");
        return ExitCode::FAILURE;
    }
    println!("client matches server: {} agents", client.len());
    ExitCode::SUCCESS
}
