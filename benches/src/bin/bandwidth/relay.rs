//! Relays: what a server publishes a frame for its relays (its feed,
//! every field and owner of what changed) against what it sends one
//! caught-up client, per workload at 10k. The bus carries the feed once
//! per relay; each relay then sends its clients what the server would.

use fastarray_bench::{Script, Workload, apply_ours, caught_up_conn, server_array};

use crate::SEED;

/// Bytes a frame, averaged over a run.
pub struct RelayBytes {
    pub workload: Workload,
    /// The feed (`write_feed`).
    pub feed: f64,
    /// One caught-up client's delta (`write_delta`).
    pub client: f64,
}

/// `ticks` ticks of `workload` over `items` items, every packet
/// acknowledged.
pub fn run_relay_bytes(workload: Workload, items: usize, ticks: u32) -> RelayBytes {
    let (mut script, agents) = Script::new(workload, items, SEED);
    let mut server = server_array(&agents);
    drop(agents);
    let mut conn = caught_up_conn(&mut server, 0);
    let (mut ops, mut bytes) = (Vec::new(), Vec::new());
    let (mut feed, mut client) = (0usize, 0usize);
    for tick in 1..=ticks {
        script.tick(&mut ops);
        apply_ours(&mut server, &ops);
        let (to_relays, to_client) = commit_and_send(&mut server, &mut conn, tick, &mut bytes);
        feed += to_relays;
        client += to_client;
    }
    RelayBytes {
        workload,
        feed: feed as f64 / f64::from(ticks),
        client: client as f64 / f64::from(ticks),
    }
}

/// Commits `server`, then writes its feed and the delta of packet `tick`
/// to `conn` (acknowledged), in `bytes`: their lengths.
fn commit_and_send<T: fastarray::Replicate>(
    server: &mut fastarray::FastArray<T>,
    conn: &mut fastarray::SendState,
    tick: u32,
    bytes: &mut Vec<u8>,
) -> (usize, usize) {
    server.commit();
    bytes.clear();
    server.write_feed(bytes).expect("feed");
    let feed = bytes.len();
    bytes.clear();
    server.write_delta(conn, tick, bytes).expect("write");
    conn.on_ack(tick);
    (feed, bytes.len())
}

/// A walker of the handoff figure: a position on a 2 km square, quantized
/// to 16 bits a coordinate, its health and its kind.
#[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
struct Walker {
    #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
    x: f32,
    #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
    y: f32,
    hp: u8,
    kind: u16,
}

/// Bytes a border crossing costs, by the way it crosses.
pub struct HandoffBytes {
    /// Walkers crossing each way a frame.
    pub crossing: usize,
    /// Bits a crossing to a client of a relay that follows both shards:
    /// handed off (`hand_off`, `adopt`), then as a shard would without
    /// handoffs (removed, pushed anew on the other side).
    pub client: [f64; 2],
    /// Bits a crossing in the two shards' feeds, the same two ways.
    pub feed: [f64; 2],
    /// Bits of one handoff message, shard to shard.
    pub message: f64,
}

/// `ticks` ticks of two shards of `items` walkers each, `crossing` of
/// each crossing the border every tick (the rest standing), with a relay
/// following both and one caught-up client of it, every packet
/// acknowledged.
pub fn run_handoff_bytes(items: usize, crossing: usize, ticks: u32) -> HandoffBytes {
    use fastarray::{FastArray, ShardId};

    let shard_ids = [ShardId::new(0), ShardId::new(1)];
    let mut result = HandoffBytes {
        crossing,
        client: [0.0; 2],
        feed: [0.0; 2],
        message: 0.0,
    };
    for (way, handoffs) in [true, false].into_iter().enumerate() {
        let mut shards = shard_ids.map(FastArray::<Walker>::shard);
        for (side, shard) in shards.iter_mut().enumerate() {
            let sign = if side == 0 { -1.0 } else { 1.0 };
            for n in 0..items {
                shard.push(Walker {
                    x: sign * (1.0 + (n % 500) as f32),
                    y: (n / 500) as f32,
                    hp: 100,
                    kind: (n % 7) as u16,
                });
            }
            shard.commit();
        }
        let mut relay = FastArray::<Walker>::relay();
        let mut bytes = Vec::new();
        for shard in &mut shards {
            bytes.clear();
            shard
                .write_feed_snapshot(&mut bytes)
                .expect("feed snapshot");
            relay.apply_feed(&bytes).expect("join");
        }
        let mut conn = fastarray::SendState::new();
        bytes.clear();
        relay
            .write_delta(&mut conn, 0, &mut bytes)
            .expect("join write");
        conn.on_ack(0);
        let (mut client, mut feed, mut messages, mut message_bits) = (0, 0, 0, 0);
        for tick in 1..=ticks {
            for from in 0..2 {
                let to = 1 - from;
                let ids: Vec<_> = shards[from].ids().take(crossing).collect();
                for id in ids {
                    let mut walker = shards[from].get(id).expect("held").clone();
                    walker.x = -walker.x;
                    if handoffs {
                        bytes.clear();
                        let bits = shards[from]
                            .hand_off(id, shard_ids[to], &mut bytes)
                            .expect("hand off");
                        message_bits += bits;
                        messages += 1;
                        shards[to].adopt(&bytes).expect("adopt");
                        *shards[to].get_mut(id).expect("adopted") = walker;
                    } else {
                        shards[from].remove(id);
                        shards[to].push(walker);
                    }
                }
            }
            for shard in &mut shards {
                shard.commit();
                bytes.clear();
                feed += shard.write_feed(&mut bytes).expect("feed");
                relay.apply_feed(&bytes).expect("apply");
            }
            bytes.clear();
            let stats = relay
                .write_delta(&mut conn, tick, &mut bytes)
                .expect("write");
            conn.on_ack(tick);
            client += stats.bits;
        }
        let crossings = (2 * crossing) as f64 * f64::from(ticks);
        result.client[way] = client as f64 / crossings;
        result.feed[way] = feed as f64 / crossings;
        if handoffs {
            result.message = message_bits as f64 / messages.max(1) as f64;
        }
    }
    result
}

/// Bits a frame of a shard's ghosts for one neighbour, against following
/// the shard's whole feed.
pub struct GhostBytes {
    /// Walkers in the shard.
    pub items: usize,
    /// How far from the border the neighbour sees, in metres.
    pub reach: f32,
    /// Walkers ghosted, on average over the frames.
    pub ghosted: f64,
    /// Bits a frame of the ghost feed.
    pub ghost: f64,
    /// Bits a frame of the whole feed (what a neighbour following it as a
    /// relay does would receive).
    pub feed: f64,
}

/// `ticks` ticks of a shard of `items` walkers on the 500 m west of a
/// border, a tenth of them taking a step of up to 2 m each tick, and a
/// neighbour that sees `reach` metres across the border: the ghost feed's
/// bits a frame against the whole feed's.
pub fn run_ghost_bytes(items: usize, reach: f32, ticks: u32) -> GhostBytes {
    use fastarray::{FastArray, GhostFeed, ShardId};
    use rand::{Rng, SeedableRng};

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(SEED);
    let mut shard = FastArray::<Walker>::shard(ShardId::new(0));
    for n in 0..items {
        shard.push(Walker {
            x: -rng.random_range(0.0..500.0),
            y: rng.random_range(-500.0..500.0),
            hp: 100,
            kind: (n % 7) as u16,
        });
    }
    shard.commit();
    let near = |w: &Walker| w.x >= -reach;
    let (mut feed, mut ghosts, mut ghosted) = (GhostFeed::new(), FastArray::<Walker>::ghost(), 0);
    let mut bytes = Vec::new();
    shard
        .write_ghost_feed(&mut feed, near, &mut bytes)
        .expect("ghost snapshot");
    ghosts.apply_feed(&bytes).expect("join");
    let ids: Vec<_> = shard.ids().collect();
    let (mut ghost_bits, mut feed_bits) = (0, 0);
    for _ in 0..ticks {
        for _ in 0..items / 10 {
            let id = ids[rng.random_range(0..ids.len())];
            let mut walker = shard.get_mut(id).expect("held");
            walker.x = (walker.x + rng.random_range(-2.0..2.0)).clamp(-500.0, -0.01);
            walker.y = (walker.y + rng.random_range(-2.0..2.0)).clamp(-500.0, 500.0);
        }
        shard.commit();
        bytes.clear();
        feed_bits += shard.write_feed(&mut bytes).expect("feed");
        bytes.clear();
        ghost_bits += shard
            .write_ghost_feed(&mut feed, near, &mut bytes)
            .expect("ghost feed");
        ghosts.apply_feed(&bytes).expect("ghost frame");
        ghosted += ghosts.len();
    }
    let per_tick = |bits: u64| bits as f64 / f64::from(ticks);
    GhostBytes {
        items,
        reach,
        ghosted: ghosted as f64 / f64::from(ticks),
        ghost: per_tick(ghost_bits),
        feed: per_tick(feed_bits),
    }
}

/// An item of a hero's inventory.
#[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
struct Slot {
    kind: u16,
    count: u8,
}

/// A hero of the inventory figure: a position and an inventory, an array
/// inside the item.
#[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
struct Hero {
    #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
    x: f32,
    #[replicate(array)]
    inventory: fastarray::FastArray<Slot>,
}

/// Bytes a frame of a server's feed against one caught-up client's delta,
/// for items with an array inside them.
pub struct ArrayFeedBytes {
    /// Heroes.
    pub items: usize,
    /// Slots in each hero's inventory.
    pub slots: usize,
    /// Heroes whose inventory changes a frame (one slot's count).
    pub changing: usize,
    /// The feed (`write_feed`).
    pub feed: f64,
    /// One caught-up client's delta (`write_delta`).
    pub client: f64,
}

/// `ticks` ticks of `items` heroes with `slots` slots each, `changing` of
/// them changing one slot's count a tick: a frame of the feed carries each
/// slot that changed whole, a client's delta its count.
pub fn run_array_feed_bytes(
    items: usize,
    slots: usize,
    changing: usize,
    ticks: u32,
) -> ArrayFeedBytes {
    use fastarray::{FastArray, SendState};
    use rand::{Rng, SeedableRng};

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(SEED);
    let mut server = FastArray::new();
    for n in 0..items {
        let mut inventory = FastArray::new();
        for kind in 0..slots {
            inventory.push(Slot {
                kind: kind as u16,
                count: 1,
            });
        }
        server.push(Hero {
            x: n as f32,
            inventory,
        });
    }
    server.commit();
    let mut conn = SendState::new();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 0, &mut bytes).expect("join");
    conn.on_ack(0);
    let ids: Vec<_> = server.ids().collect();
    let (mut feed, mut client) = (0usize, 0usize);
    for tick in 1..=ticks {
        for _ in 0..changing {
            let id = ids[rng.random_range(0..ids.len())];
            let mut hero = server.get_mut(id).expect("held");
            let slot = hero
                .inventory
                .ids()
                .nth(rng.random_range(0..slots))
                .expect("a slot");
            let mut slot = hero.inventory.get_mut(slot).expect("held");
            slot.count = slot.count.wrapping_add(1);
        }
        let (to_relays, to_client) = commit_and_send(&mut server, &mut conn, tick, &mut bytes);
        feed += to_relays;
        client += to_client;
    }
    ArrayFeedBytes {
        items,
        slots,
        changing,
        feed: feed as f64 / f64::from(ticks),
        client: client as f64 / f64::from(ticks),
    }
}
