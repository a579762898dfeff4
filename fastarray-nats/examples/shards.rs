//! Two shards, relays that merge them, and their clients, on a NATS
//! cluster: agents walk across the border between the shards' regions and
//! are handed off from one to the other by request and reply; each relay
//! follows both shards' feeds and serves its clients one world, in which a
//! walker that crosses is a change, never a removal and an add. Each shard
//! sees 32 m across the border: it ghosts its walkers near the border to
//! the other, which holds them in a ghost array, and keeps a ghost of each
//! walker it hands off until the other's ghost feed says where it went.
//!
//! ```sh
//! cargo run --release -p fastarray-nats --example shards                 # a 3-node cluster of its own
//! cargo run --release -p fastarray-nats --example shards -- --clients 400 --relays 4
//! cargo run --release -p fastarray-nats --example shards -- --nats nats://127.0.0.1:4222
//! ```
//!
//! It starts `nats-server` nodes on free ports of 127.0.0.1 (or uses the
//! servers given with `--nats`), runs 2 000 agents on a 1 024 m square,
//! split at x = 512 between shard 0 (west) and shard 1 (east), for
//! `--ticks` ticks at 30 Hz, each relay's clients on links that lose 5% of
//! the packets, then heals the links and waits until every client settled.
//! It prints each shard's time per tick (its game step, handoffs, commit
//! and feed), each relay's (applying both feeds and writing to its
//! clients), the handoffs, the ghosts, the bytes on the bus and to the
//! clients, and exits with status 1 if a walker that crossed ever left a
//! relay, if any client's mirror differs from the two shards (as the wire
//! sees them: positions are quantized), or if a shard's ghosts differ from
//! its neighbour's walkers within reach.
//!
//! Everything runs on this thread, one role after the other, so each
//! role's time is its own; in a game each is a process of its own.

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fastarray::{FastArray, GhostFeed, Replicate, ReplicationId, ShardId, WithCallbacks};
use fastarray_nats::{
    FeedFollower, FeedPublisher, FollowConfig, GhostSource, HandoffConfig, HandoffPort, NatsBus,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod demo;
use demo::{AGENTS, Agent, Client, Net, TICK};

const NAMES: [&str; 2] = ["demo.west", "demo.east"];

/// The shard whose region holds `x`.
fn region(x: f32) -> ShardId {
    ShardId::new(u16::from(x >= 512.0))
}

/// How far across the border a shard sees.
const REACH: f32 = 32.0;

/// Whether shard `k`'s agent is within the other shard's reach.
fn near_other(k: usize, agent: &Agent) -> bool {
    if k == 0 {
        agent.x >= 512.0 - REACH
    } else {
        agent.x < 512.0 + REACH
    }
}

/// The name of shard `k`'s ghost stream for the other.
fn ghost_name(k: usize) -> String {
    format!("{}.ghosts", NAMES[k])
}

struct Shard {
    array: FastArray<Agent>,
    publisher: FeedPublisher<NatsBus>,
    port: HandoffPort<NatsBus>,
    /// Its ghosts for the other shard.
    ghost_feed: GhostFeed,
    ghost_publisher: FeedPublisher<NatsBus>,
    /// Its ghosts of the other shard.
    ghosts: FastArray<Agent>,
    ghost_follower: FeedFollower<NatsBus>,
    ghost_bytes: u64,
    ghosted: u64,
    time: Duration,
    feed_bytes: u64,
    handed: u64,
    taken_back: u64,
}

struct Relay {
    array: FastArray<Agent>,
    followers: Vec<FeedFollower<NatsBus>>,
    clients: Vec<Client>,
    time: Duration,
}

fn spawn(rng: &mut ChaCha8Rng, shard: ShardId) -> Agent {
    let west = f32::from(shard.get()) * 512.0;
    Agent {
        x: west + rng.random_range(0.0..512.0),
        y: rng.random_range(0.0..1024.0),
        hp: 100,
    }
}

fn main() -> ExitCode {
    let options = demo::options();
    let net = Net::start(&options);
    let connect = |node: usize, name: &str| net.connect(node, name);

    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut shards: Vec<Shard> = (0..2u16)
        .map(|k| {
            let shard_id = ShardId::new(k);
            let mut array = FastArray::shard(shard_id);
            for _ in 0..AGENTS / 2 {
                array.push(spawn(&mut rng, shard_id));
            }
            array.commit();
            let bus = connect(usize::from(k), NAMES[usize::from(k)]);
            Shard {
                array,
                publisher: FeedPublisher::new(bus.clone(), NAMES[usize::from(k)])
                    .expect("publisher"),
                port: HandoffPort::new(
                    bus.clone(),
                    NAMES[usize::from(k)],
                    HandoffConfig::default(),
                )
                .expect("handoffs"),
                ghost_feed: GhostFeed::new(),
                ghost_publisher: FeedPublisher::new(bus.clone(), &ghost_name(usize::from(k)))
                    .expect("ghost publisher"),
                ghosts: FastArray::ghost(),
                ghost_follower: FeedFollower::new(
                    bus,
                    &ghost_name(1 - usize::from(k)),
                    FollowConfig::default(),
                )
                .expect("ghost follower"),
                ghost_bytes: 0,
                ghosted: 0,
                time: Duration::ZERO,
                feed_bytes: 0,
                handed: 0,
                taken_back: 0,
            }
        })
        .collect();
    let mut relays: Vec<Relay> = (0..options.relays)
        .map(|r| {
            let bus = connect(2 + r, &format!("relay-{r}"));
            Relay {
                array: FastArray::relay(),
                followers: (0..2u16)
                    .map(|k| {
                        FeedFollower::new(
                            bus.clone(),
                            NAMES[usize::from(k)],
                            FollowConfig::default(),
                        )
                        .expect("follower")
                        .of_shard(ShardId::new(k))
                    })
                    .collect(),
                clients: demo::clients(r, options.relays, options.clients),
                time: Duration::ZERO,
            }
        })
        .collect();

    println!(
        "{AGENTS} agents on 2 shards, {} clients on {} relays, {} ticks at 30 Hz, links losing 5%",
        options.clients, options.relays, options.ticks
    );
    let mut destroyed = BTreeSet::new();
    let mut vanished = 0usize;
    let started = Instant::now();
    let mut settled_at = None;
    for now in 0u32.. {
        let tick_start = Instant::now();
        let moving = now < options.ticks;
        if now == options.ticks {
            for client in relays.iter_mut().flat_map(|relay| &mut relay.clients) {
                client.link.heal();
            }
        }
        for (k, shard) in shards.iter_mut().enumerate() {
            let start = Instant::now();
            if moving {
                let home = shard.array.shard_id();
                let gone = demo::step(&mut shard.array, &mut rng, 8.0, |rng| spawn(rng, home));
                destroyed.extend(gone);
                let leaving: Vec<(ReplicationId, ShardId)> = (shard.array.iter())
                    .map(|(id, agent)| (id, region(agent.x)))
                    .filter(|&(_, to)| to != home)
                    .collect();
                for (id, to) in leaving {
                    // The shard keeps a ghost of it until the other says
                    // where it went: its game sees the agent all along.
                    let name = NAMES[usize::from(to.get())];
                    let mut unheard = ();
                    let mut ghosts = WithCallbacks::new(&mut shard.ghosts, &mut unheard);
                    (shard.port)
                        .hand_off_keeping_ghost(&mut shard.array, &mut ghosts, id, to, name, start)
                        .expect("hand off");
                    shard.handed += 1;
                }
            }
            let handled = shard.port.poll(&mut shard.array, start).expect("handoffs");
            shard.taken_back += u64::from(handled.taken_back);
            for &id in shard.port.taken_back() {
                shard.ghosts.drop_kept(id, &mut ());
            }
            shard.array.commit();
            let published = shard.publisher.publish(&mut shard.array).expect("publish");
            let near = |agent: &Agent| near_other(k, agent);
            let mut ghosts = GhostSource::new(&shard.array, &mut shard.ghost_feed, near);
            let ghosted = (shard.ghost_publisher.publish(&mut ghosts)).expect("publish ghosts");
            (shard.ghost_follower)
                .poll(&mut shard.ghosts, Instant::now())
                .expect("poll ghosts");
            if moving {
                shard.time += start.elapsed();
                shard.feed_bytes += published.frame_bytes as u64;
                shard.ghost_bytes += (ghosted.frame_bytes + ghosted.snapshot_bytes) as u64;
                shard.ghosted += shard.ghost_feed.len() as u64;
            }
        }
        for relay in &mut relays {
            let start = Instant::now();
            let before: Vec<ReplicationId> = relay.array.ids().collect();
            for follower in &mut relay.followers {
                follower
                    .poll(&mut relay.array, Instant::now())
                    .expect("poll");
            }
            vanished += before
                .iter()
                .filter(|&&id| !relay.array.contains(id) && !destroyed.contains(&id))
                .count();
            let joined = (0..2).all(|k| relay.array.feed_frame_from(ShardId::new(k)).is_some());
            if joined {
                demo::write(&mut relay.array, &mut relay.clients, now, moving);
            }
            if moving {
                relay.time += start.elapsed();
            }
            demo::deliver(&mut relay.clients, now);
        }
        if !moving {
            let held: usize = shards.iter().map(|shard| shard.array.len()).sum();
            let settled = shards.iter().all(|shard| shard.port.in_flight() == 0)
                && ghosts_hold(&shards)
                && relays.iter().all(|relay| {
                    relay.array.len() == held
                        && shards.iter().all(|shard| same(&shard.array, &relay.array))
                        && relay.clients.iter().all(|client| {
                            relay.array.is_settled(&client.state) && client.link.idle()
                        })
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
    let mut bus_bytes = 0.0;
    let handoff_bytes: u64 = shards.iter().map(|shard| shard.port.bytes_sent()).sum();
    for (k, shard) in shards.iter().enumerate() {
        bus_bytes += shard.feed_bytes as f64 * options.relays as f64 / ticks;
        println!(
            "shard {k}: {:.0} µs a tick, for any number of relays and clients (step, handoffs, commit, \
             one feed of {:.0} B, ghosts both ways); {} handed off, {} taken back; holds {}",
            per_tick(shard.time),
            shard.feed_bytes as f64 / ticks,
            shard.handed,
            shard.taken_back,
            shard.array.len()
        );
        println!(
            "shard {k}: ghosts {:.0} walkers to the other on average, in {:.0} B a tick; holds {} \
             ghosts; ghost feed {:?}",
            shard.ghosted as f64 / ticks,
            shard.ghost_bytes as f64 / ticks,
            shard.ghosts.len(),
            shard.ghosts.feed_stats()
        );
    }
    let mut client_bytes = 0;
    for (r, relay) in relays.iter().enumerate() {
        let bytes: u64 = relay.clients.iter().map(|client| client.bytes).sum();
        client_bytes += bytes;
        println!(
            "relay {r}: {:.0} µs a tick for {} clients ({:.0} B a client a tick); feeds {:?}",
            per_tick(relay.time),
            relay.clients.len(),
            bytes as f64 / ticks / relay.clients.len().max(1) as f64,
            relay.array.feed_stats()
        );
    }
    println!(
        "bytes a tick: {bus_bytes:.0} of feeds on the bus (2 shards × {} relays) and {:.0} of \
         handoffs, {:.0} to the clients",
        options.relays,
        handoff_bytes as f64 / ticks,
        client_bytes as f64 / ticks
    );
    let differ = relays
        .iter()
        .flat_map(|relay| &relay.clients)
        .filter(|client| {
            let held: usize = shards.iter().map(|shard| shard.array.len()).sum();
            client.mirror.len() != held
                || !shards
                    .iter()
                    .all(|shard| same(&shard.array, &client.mirror))
        })
        .count();
    if vanished > 0 {
        println!("{vanished} times a walker that was not destroyed left a relay");
    }
    let ghosts_differ = !ghosts_hold(&shards);
    if ghosts_differ {
        println!("a shard's ghosts differ from its neighbour's walkers within reach");
    }
    match settled_at {
        Some(at) if differ == 0 && vanished == 0 && !ghosts_differ => {
            println!(
                "every client settled {} ticks after the game stopped ({:.1} s in all)",
                at - options.ticks,
                started.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        _ => {
            println!("{differ} clients differ from the shards");
            ExitCode::FAILURE
        }
    }
}

/// Whether each shard's ghost array holds exactly the other's walkers
/// within its reach, as the wire sees them.
fn ghosts_hold(shards: &[Shard]) -> bool {
    (0..2).all(|k| {
        let (shard, ghosts) = (&shards[k].array, &shards[1 - k].ghosts);
        let near = shard.iter().filter(|(_, agent)| near_other(k, agent));
        ghosts.len() == near.clone().count()
            && near
                .clone()
                .all(|(id, agent)| ghosts.get(id).is_some_and(|g| g.wire_eq(agent)))
    })
}

/// Whether `other` holds every item of `shard` as the wire sees it.
fn same(shard: &FastArray<Agent>, other: &FastArray<Agent>) -> bool {
    shard
        .iter()
        .all(|(id, agent)| other.get(id).is_some_and(|held| held.wire_eq(agent)))
}
