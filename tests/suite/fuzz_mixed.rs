//! Mixed-fault fuzzing of the sender: several connections at once over
//! links that lose, reorder, duplicate, report a loss and deliver anyway and
//! hold packets past the 64-frame window; some connections write with bit
//! budgets, some go quiet long enough to resynchronise; items change enum
//! variants, come and go (some in the same frame) and are reordered. Every
//! client must converge, the shared message and resync must both be taken,
//! budgets must hold for every spacing of ids, and corrupted messages must
//! fail cleanly. (Written as a review of the shared message, the resync's
//! delivered-frame rule and the id-list codes; it found the frame overflow
//! now covered in `tests/suite/protocol.rs`.)

use fastarray::{FastArray, Replicate, ReplicationId, SendState};
use fastarray_testkit::exchange;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
enum Shape {
    Dot,
    Line { len: u16 },
    Rect { w: u8, h: u8 },
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Thing {
    hp: u16,
    team: u8,
    #[replicate(flatten)]
    shape: Shape,
}

fn thing(n: u32) -> Thing {
    Thing {
        hp: n as u16,
        team: (n % 7) as u8,
        shape: Shape::Dot,
    }
}

/// One packet on a simulated link.
struct Flight {
    packet: u32,
    bytes: Vec<u8>,
    deliver_at: Option<u64>,
    dup_at: Option<u64>,
    report_at: u64,
    acked: bool,
}

struct Conn<T> {
    state: SendState,
    client: FastArray<T>,
    flights: Vec<Flight>,
    quiet_until: u64,
    budget: bool,
}

#[derive(Clone, Copy)]
struct Knobs {
    loss: f64,
    max_delay: u64,
    long_delay: f64,
    quiet: f64,
    budget: f64,
    late_after_loss: f64,
    dup: f64,
    structural: f64,
}

fn mutate(server: &mut FastArray<Thing>, rng: &mut ChaCha8Rng, next: &mut u32, k: Knobs) {
    let ids: Vec<ReplicationId> = server.ids().collect();
    for _ in 0..rng.random_range(0..5) {
        if ids.is_empty() {
            break;
        }
        let id = ids[rng.random_range(0..ids.len())];
        let mut t = server.get_mut(id).unwrap();
        match rng.random_range(0..4) {
            0 => t.hp = rng.random(),
            1 => t.team = rng.random(),
            2 => {
                if rng.random_bool(k.structural) {
                    t.shape = match rng.random_range(0..3) {
                        0 => Shape::Dot,
                        1 => Shape::Line { len: rng.random() },
                        _ => Shape::Rect {
                            w: rng.random(),
                            h: rng.random(),
                        },
                    };
                }
            }
            _ => match &mut t.shape {
                Shape::Dot => {}
                Shape::Line { len } => *len = rng.random(),
                Shape::Rect { w, h } => {
                    if rng.random_bool(0.5) {
                        *w = rng.random()
                    } else {
                        *h = rng.random()
                    }
                }
            },
        }
    }
    if rng.random_bool(0.08) && !ids.is_empty() {
        server.remove(ids[rng.random_range(0..ids.len())]);
    }
    if rng.random_bool(0.08) || server.len() < 5 {
        *next += 1;
        let id = server.push(thing(*next));
        if rng.random_bool(0.1) {
            // Added and removed in one frame.
            server.remove(id);
        }
    }
    if rng.random_bool(0.05) {
        server.sort_by(|a, b| a.hp.cmp(&b.hp));
    }
}

fn run(seed: u64, conns: usize, ticks: u64, k: Knobs) -> (u64, u64) {
    run_with(seed, conns, ticks, k, thing, mutate)
}

fn run_with<T: Replicate + Clone + PartialEq + std::fmt::Debug>(
    seed: u64,
    conns: usize,
    ticks: u64,
    k: Knobs,
    make: fn(u32) -> T,
    mutate: fn(&mut FastArray<T>, &mut ChaCha8Rng, &mut u32, Knobs),
) -> (u64, u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut server = FastArray::new();
    let mut next = 0;
    for _ in 0..10 {
        next += 1;
        server.push(make(next));
    }
    let mut cs: Vec<Conn<T>> = (0..conns)
        .map(|n| Conn {
            state: SendState::new(),
            client: FastArray::new(),
            flights: Vec::new(),
            quiet_until: 0,
            budget: n % 3 == 2,
        })
        .collect();
    let mut packet = 0u32;
    let mut shared = 0;
    let mut resynced = 0;
    for now in 0..ticks + 600 {
        let lossy = now < ticks;
        if lossy {
            mutate(&mut server, &mut rng, &mut next, k);
        }
        server.commit();
        for (ci, c) in cs.iter_mut().enumerate() {
            if lossy && c.quiet_until <= now && rng.random_bool(k.quiet) {
                c.quiet_until = now + rng.random_range(60..80);
            }
            let write = if lossy {
                c.quiet_until <= now
            } else {
                now < ticks + 100 || !server.is_settled(&c.state)
            };
            if write {
                packet += 1;
                let mut bytes = Vec::new();
                let stats = if lossy && c.budget && rng.random_bool(k.budget) {
                    let b = rng.random_range(20..300);
                    server
                        .write_delta_with_budget(&mut c.state, packet, &mut bytes, b)
                        .unwrap()
                } else {
                    server
                        .write_delta(&mut c.state, packet, &mut bytes)
                        .unwrap()
                };
                shared += u64::from(stats.shared);
                resynced += u64::from(stats.resynced);
                let delay = if lossy && rng.random_bool(k.long_delay) {
                    rng.random_range(50..90)
                } else if lossy {
                    rng.random_range(0..=k.max_delay)
                } else {
                    rng.random_range(0..=2)
                };
                let ack_delay = if lossy {
                    rng.random_range(0..=k.max_delay)
                } else {
                    1
                };
                let lost = lossy && rng.random_bool(k.loss);
                let (deliver_at, report_at, acked) = if lost {
                    if rng.random_bool(k.late_after_loss) {
                        // Reported lost, delivered afterwards.
                        (
                            Some(now + delay + ack_delay + 3),
                            now + delay + ack_delay,
                            false,
                        )
                    } else {
                        (None, now + delay + ack_delay, false)
                    }
                } else {
                    (Some(now + delay), now + delay + ack_delay, true)
                };
                let dup_at = (lossy && !lost && rng.random_bool(k.dup))
                    .then(|| now + delay + rng.random_range(0..20));
                c.flights.push(Flight {
                    packet,
                    bytes,
                    deliver_at,
                    dup_at,
                    report_at,
                    acked,
                });
            }
            // Deliveries due now, in order of sending.
            for f in &mut c.flights {
                for at in [&mut f.deliver_at, &mut f.dup_at] {
                    if at.is_some_and(|t| t <= now) {
                        *at = None;
                        c.client
                            .apply_delta(&f.bytes, &mut ())
                            .unwrap_or_else(|e| panic!("seed {seed} conn {ci} tick {now}: {e}"));
                    }
                }
            }
            let mut keep = Vec::new();
            for f in c.flights.drain(..) {
                if f.report_at <= now && (!f.acked || f.deliver_at.is_none()) {
                    if f.acked {
                        c.state.on_ack(f.packet);
                    } else {
                        c.state.on_loss(f.packet);
                    }
                    if f.deliver_at.is_some() || f.dup_at.is_some() {
                        keep.push(Flight {
                            report_at: u64::MAX,
                            ..f
                        });
                    }
                } else if f.report_at == u64::MAX && f.deliver_at.is_none() && f.dup_at.is_none() {
                } else {
                    keep.push(f);
                }
            }
            c.flights = keep;
        }
        if now > ticks + 100
            && cs
                .iter()
                .all(|c| c.flights.is_empty() && server.is_settled(&c.state))
        {
            for (ci, c) in cs.iter().enumerate() {
                assert_eq!(c.client, server, "seed {seed} conn {ci}: diverged");
            }
            return (shared, resynced);
        }
    }
    panic!("seed {seed}: not settled");
}

const BASE: Knobs = Knobs {
    loss: 0.1,
    max_delay: 4,
    long_delay: 0.01,
    quiet: 0.01,
    budget: 0.3,
    late_after_loss: 0.1,
    dup: 0.05,
    structural: 0.3,
};

/// Six connections over lossy links (loss, reordering, duplicates, losses
/// reported then delivered, packets held past the window), some writing
/// with budgets, each now and then going quiet for 60-80 commits (resync):
/// enum variant changes, adds, removals, adds removed in the same frame,
/// `sort_by`. Every client converges.
#[test]
fn fuzz_shared_resync_budget_converge() {
    let mut totals = (0, 0);
    for seed in 0..80 {
        let (s, r) = run(seed, 6, 250, BASE);
        totals.0 += s;
        totals.1 += r;
    }
    assert!(totals.0 > 1_000, "shared messages taken: {}", totals.0);
    assert!(totals.1 > 100, "resyncs: {}", totals.1);
}

/// The same under harsher knob settings.
#[test]
fn fuzz_variants() {
    let variants = [
        Knobs {
            loss: 0.3,
            quiet: 0.03,
            long_delay: 0.05,
            ..BASE
        },
        Knobs {
            loss: 0.02,
            quiet: 0.05,
            long_delay: 0.0,
            budget: 0.8,
            ..BASE
        },
        Knobs {
            loss: 0.2,
            max_delay: 30,
            quiet: 0.02,
            long_delay: 0.1,
            ..BASE
        },
        Knobs {
            loss: 0.0,
            max_delay: 1,
            quiet: 0.05,
            long_delay: 0.02,
            late_after_loss: 0.0,
            dup: 0.0,
            ..BASE
        },
        Knobs {
            loss: 0.05,
            max_delay: 70,
            quiet: 0.02,
            long_delay: 0.2,
            ..BASE
        },
    ];
    for (v, k) in variants.iter().enumerate() {
        let mut totals = (0, 0);
        for seed in 0..60 {
            let (s, r) = run(seed * 10 + v as u64, 6, 300, *k);
            totals.0 += s;
            totals.1 += r;
        }
        assert!(totals.0 + totals.1 > 0, "variant {v}: neither path taken");
    }
}

/// Budgeted writes never exceed their budget, whatever the id spacing
/// (the exp-Golomb code must never cost more than Elias-delta + 1 bit).
#[test]
fn budgets_hold_with_every_id_spacing() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for round in 0..300 {
        let mut server = FastArray::new();
        let n = rng.random_range(1..3_000u32);
        let ids: Vec<ReplicationId> = (0..n).map(|i| server.push(thing(i))).collect();
        let mut conn = SendState::new();
        let mut client = FastArray::new();
        let mut packet = 0;
        while !server.is_settled(&conn) {
            packet += 1;
            exchange(&mut server, &mut conn, &mut client, packet);
        }
        // Sparse changes and removals with random spacing.
        let shift = rng.random_range(0..12);
        let step = 1 + rng.random_range(0..(1u32 << shift));
        let mut i = rng.random_range(0..step);
        while (i as usize) < ids.len() {
            if rng.random_bool(0.2) {
                server.remove(ids[i as usize]);
            } else {
                server.get_mut(ids[i as usize]).unwrap().hp ^= 0x55;
            }
            i += step;
        }
        server.commit();
        for _ in 0..200 {
            let budget = rng.random_range(20..2_000);
            packet += 1;
            let mut bytes = Vec::new();
            let stats = server
                .write_delta_with_budget(&mut conn, packet, &mut bytes, budget)
                .unwrap();
            assert!(
                stats.bits <= budget,
                "round {round}: {} > {budget}",
                stats.bits
            );
            client.apply_delta(&bytes, &mut ()).unwrap();
            conn.on_ack(packet);
            if server.is_settled(&conn) {
                break;
            }
            server.commit();
        }
        assert_eq!(client, server, "round {round}");
    }
}

/// Random corruptions of real messages: errors, never panics.
#[test]
fn corrupted_messages_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..500).map(|i| server.push(thing(i))).collect();
    server.commit();
    let mut conn = SendState::new();
    let mut client = FastArray::<Thing>::new();
    let mut messages = Vec::new();
    for packet in 1..60u32 {
        let mut bytes = Vec::new();
        server.write_delta(&mut conn, packet, &mut bytes).unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        messages.push(bytes);
        for _ in 0..rng.random_range(0..30) {
            let id = ids[rng.random_range(0..ids.len())];
            if let Some(mut t) = server.get_mut(id) {
                t.hp = rng.random();
                if rng.random_bool(0.2) {
                    t.shape = Shape::Rect { w: 1, h: 2 };
                }
            }
        }
        if rng.random_bool(0.3) {
            server.remove(ids[rng.random_range(0..ids.len())]);
        }
        server.commit();
    }
    let state = client.mirror_state();
    for _ in 0..20_000 {
        let mut bytes = messages[rng.random_range(0..messages.len())].clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..bytes.len());
            bytes[i] ^= 1 << rng.random_range(0..8);
        }
        if rng.random_bool(0.3) {
            bytes.truncate(rng.random_range(0..bytes.len() + 1));
        }
        let mut mirror = client.clone();
        if mirror.apply_delta(&bytes, &mut ()).is_err() {
            assert_eq!(mirror, client, "a refused message changed the mirror");
            // Tombstones, field frames and the newest frame too.
            assert_eq!(
                mirror.mirror_state(),
                state,
                "a refused message changed the mirror's state"
            );
        }
    }
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Member {
    hp: u16,
    #[replicate(flatten)]
    shape: Shape,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Squad {
    tag: u8,
    #[replicate(array)]
    members: FastArray<Member>,
}

fn squad(n: u32) -> Squad {
    let mut s = Squad {
        tag: n as u8,
        members: FastArray::new(),
    };
    for i in 0..(n % 5) {
        s.members.push(Member {
            hp: i as u16,
            shape: Shape::Dot,
        });
    }
    s
}

fn mutate_squads(server: &mut FastArray<Squad>, rng: &mut ChaCha8Rng, next: &mut u32, k: Knobs) {
    let ids: Vec<ReplicationId> = server.ids().collect();
    for _ in 0..rng.random_range(0..4) {
        if ids.is_empty() {
            break;
        }
        let id = ids[rng.random_range(0..ids.len())];
        let mut s = server.get_mut(id).unwrap();
        match rng.random_range(0..5) {
            0 => s.tag = rng.random(),
            1 => {
                let n = rng.random();
                s.members.push(Member {
                    hp: n,
                    shape: Shape::Dot,
                });
            }
            2 => {
                let m: Vec<ReplicationId> = s.members.ids().collect();
                if !m.is_empty() {
                    let victim = m[rng.random_range(0..m.len())];
                    s.members.remove(victim);
                }
            }
            3 => {}
            _ => {
                let m: Vec<ReplicationId> = s.members.ids().collect();
                for _ in 0..rng.random_range(0..3) {
                    if m.is_empty() {
                        break;
                    }
                    let victim = m[rng.random_range(0..m.len())];
                    let mut member = s.members.get_mut(victim).unwrap();
                    if rng.random_bool(k.structural) {
                        member.shape = Shape::Line { len: rng.random() };
                    } else if let Shape::Line { len } = &mut member.shape {
                        *len = rng.random();
                    } else {
                        member.hp = rng.random();
                    }
                }
            }
        }
    }
    if rng.random_bool(0.05) && !ids.is_empty() {
        server.remove(ids[rng.random_range(0..ids.len())]);
    }
    if rng.random_bool(0.05) || server.len() < 3 {
        *next += 1;
        server.push(squad(*next));
    }
}

/// The same with items holding `#[replicate(array)]` fields (the inner
/// arrays share their messages across outer frames).
#[test]
fn fuzz_inner_arrays_converge() {
    let variants = [
        BASE,
        Knobs {
            loss: 0.0,
            max_delay: 1,
            quiet: 0.05,
            long_delay: 0.02,
            late_after_loss: 0.0,
            dup: 0.0,
            ..BASE
        },
        Knobs {
            loss: 0.3,
            quiet: 0.03,
            long_delay: 0.05,
            budget: 0.8,
            ..BASE
        },
        Knobs {
            loss: 0.05,
            max_delay: 70,
            quiet: 0.02,
            long_delay: 0.2,
            ..BASE
        },
    ];
    for (v, k) in variants.iter().enumerate() {
        let mut totals = (0, 0);
        for seed in 0..50 {
            let (s, r) = run_with(seed * 10 + v as u64, 5, 250, *k, squad, mutate_squads);
            totals.0 += s;
            totals.1 += r;
        }
        assert!(totals.1 > 0, "inner-array variant {v}: no resync was taken");
    }
}
