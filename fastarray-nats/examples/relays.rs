//! One server, relays on a NATS cluster, and their clients: the server
//! publishes its feed once a frame whatever the number of clients, each
//! relay serves its own over lossy links, as the server would.
//!
//! ```sh
//! cargo run --release -p fastarray-nats --example relays                 # a 3-node cluster of its own
//! cargo run --release -p fastarray-nats --example relays -- --clients 400 --relays 4
//! cargo run --release -p fastarray-nats --example relays -- --nats nats://127.0.0.1:4222
//! ```
//!
//! It starts `nats-server` nodes on free ports of 127.0.0.1 (or uses the
//! servers given with `--nats`), runs 2 000 agents that walk, get hurt and
//! respawn for `--ticks` ticks at 30 Hz, each relay's clients on links that
//! lose 5% of the packets, then heals the links and waits until every
//! client settled. It prints the server's time per tick (commit and one
//! feed), each relay's (applying the feed and writing to its clients), the
//! bytes a frame on the bus and to the clients, and exits with status 1 if
//! any client's mirror differs from the server's array (as the wire sees
//! them: positions are quantized).
//!
//! Everything runs on this thread, one role after the other, so each
//! role's time is its own; in a game each is a process of its own.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use fastarray::FastArray;
use fastarray_nats::{FeedFollower, FeedPublisher, FollowConfig, NatsBus};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod demo;
use demo::{AGENTS, Agent, Client, Net, TICK};

struct Relay {
    array: FastArray<Agent>,
    follower: FeedFollower<NatsBus>,
    clients: Vec<Client>,
    time: Duration,
}

fn spawn(rng: &mut ChaCha8Rng) -> Agent {
    Agent {
        x: rng.random_range(0.0..1024.0),
        y: rng.random_range(0.0..1024.0),
        hp: 100,
    }
}

fn main() -> ExitCode {
    let options = demo::options();
    let net = Net::start(&options);
    let connect = |node: usize, name: &str| net.connect(node, name);

    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut world = FastArray::with_capacity(AGENTS);
    for _ in 0..AGENTS {
        world.push(spawn(&mut rng));
    }
    world.commit();
    let mut publisher = FeedPublisher::new(connect(0, "server"), "demo.agents").expect("publisher");
    let mut relays: Vec<Relay> = (0..options.relays)
        .map(|r| Relay {
            array: FastArray::relay(),
            follower: FeedFollower::new(
                connect(1 + r, &format!("relay-{r}")),
                "demo.agents",
                FollowConfig::default(),
            )
            .expect("follower"),
            clients: demo::clients(r, options.relays, options.clients),
            time: Duration::ZERO,
        })
        .collect();

    println!(
        "{AGENTS} agents, {} clients on {} relays, {} ticks at 30 Hz, links losing 5%",
        options.clients, options.relays, options.ticks
    );
    let (mut server_time, mut commit_time) = (Duration::ZERO, Duration::ZERO);
    let (mut feed_bytes, mut snapshot_bytes) = (0u64, 0u64);
    let started = Instant::now();
    let mut settled_at = None;
    for now in 0u32.. {
        let tick_start = Instant::now();
        let moving = now < options.ticks;
        if moving {
            demo::step(&mut world, &mut rng, 4.0, spawn);
        }
        if now == options.ticks {
            for client in relays.iter_mut().flat_map(|relay| &mut relay.clients) {
                client.link.heal();
            }
        }
        let start = Instant::now();
        world.commit();
        let committed = start.elapsed();
        let published = publisher.publish(&mut world).expect("publish");
        if moving {
            commit_time += committed;
            server_time += start.elapsed();
            feed_bytes += published.frame_bytes as u64;
        }
        snapshot_bytes += published.snapshot_bytes as u64;
        for relay in &mut relays {
            let start = Instant::now();
            relay
                .follower
                .poll(&mut relay.array, Instant::now())
                .expect("poll");
            if relay.array.feed_frame().is_some() {
                demo::write(&mut relay.array, &mut relay.clients, now, moving);
            }
            if moving {
                relay.time += start.elapsed();
            }
            demo::deliver(&mut relay.clients, now);
        }
        if !moving {
            let settled = relays.iter().all(|relay| {
                relay.array.wire_eq(&world)
                    && relay
                        .clients
                        .iter()
                        .all(|client| relay.array.is_settled(&client.state) && client.link.idle())
            });
            if settled {
                settled_at = Some(now);
                break;
            }
            if now > options.ticks + 600 {
                break;
            }
        }
        std::thread::sleep(TICK.saturating_sub(tick_start.elapsed()));
    }

    let ticks = f64::from(options.ticks);
    let per_tick = |time: Duration| time.as_secs_f64() * 1e6 / ticks;
    println!(
        "server: {:.0} µs a tick, for any number of relays and clients: commit {:.0} µs, \
         then one feed of {:.0} B written and handed to NATS",
        per_tick(server_time),
        per_tick(commit_time),
        feed_bytes as f64 / ticks
    );
    let mut client_bytes = 0;
    for (r, relay) in relays.iter().enumerate() {
        let bytes: u64 = relay.clients.iter().map(|client| client.bytes).sum();
        client_bytes += bytes;
        println!(
            "relay {r}: {:.0} µs a tick for {} clients ({:.0} B a client a tick); feed {:?}",
            per_tick(relay.time),
            relay.clients.len(),
            bytes as f64 / ticks / relay.clients.len().max(1) as f64,
            relay.array.feed_stats()
        );
    }
    println!(
        "bytes a tick: {:.0} on the bus ({} relays × the feed), {:.0} to the clients; snapshots {} B in all",
        feed_bytes as f64 * options.relays as f64 / ticks,
        options.relays,
        client_bytes as f64 / ticks,
        snapshot_bytes
    );
    let differ = relays
        .iter()
        .flat_map(|relay| &relay.clients)
        .filter(|client| !client.mirror.wire_eq(&world))
        .count();
    match settled_at {
        Some(at) if differ == 0 => {
            println!(
                "every client settled {} ticks after the game stopped ({:.1} s in all)",
                at - options.ticks,
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        _ => {
            println!("{differ} clients differ from the server");
            ExitCode::FAILURE
        }
    }
}
