//! How our per-tick costs grow with the array and with the connections.
//!
//! * `scale`: 10 changed items per tick in arrays of 1 000, 10 000 and
//!   100 000 items: `write_<n>` times `write_delta` for one caught-up
//!   connection, `commit_<n>` the shared commit. The arrays are built whole
//!   and sent to the connection in one full sync; `write_100k_grown` is the
//!   same 100k array grown 1 000 items per tick instead, with the connection
//!   following every tick.
//! * `fanout_10k`: the sparse workload (1% of 10 000 items change a u16
//!   per tick) sent to 1, 16, 64 and 256 caught-up connections:
//!   `conns_<n>` times `commit` plus, per connection, `write_delta` and
//!   the acknowledgement. `fanout_bytes_10k` is the same with the
//!   messages handed out by `write_delta_bytes` instead of copied into a
//!   buffer: the frame's shared message, one allocation for all, shared
//!   by a reference count; `fanout_slice_10k` with them lent by
//!   `write_delta_slice`: the frame's shared message itself.
//!
//! * `relay_10k`: the same sparse workload served through relays
//!   (`FastArray::relay`): `server_feed` times the server's tick with
//!   relays (`commit` and one `write_feed`, whatever the number of relays
//!   and clients: the bus fans the feed out), `relay_<n>` one relay's tick
//!   (`apply_feed`, which commits, then a write and an ack for each of its
//!   `n` caught-up connections). `fanout_10k/conns_<n>` is the server's
//!   tick without relays. `ghost_feed_hot` times a shard's
//!   `write_ghost_feed` for one neighbour that sees a tenth of the items
//!   (those with `x` in the top tenth of the world), after the commit of
//!   a frame of the hot workload (10% of the 10 000 items move).
//!
//! ```sh
//! cargo bench -p fastarray-bench --bench scaling
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use fastarray::FastArray;
use fastarray_bench::{
    Handout, POSITION_RANGE, SEED, Script, Served, Workload, apply_ours, caught_up_conn, grown,
    server_array,
};

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

fn label(items: usize) -> String {
    format!("{}k", items / 1000)
}

fn scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("scale");
    for items in [1_000, 10_000, 100_000] {
        let (script, agents) = Script::new(Workload::Ten, items, SEED);
        let mut server = server_array(&agents);
        drop(agents);
        let conn = caught_up_conn(&mut server, 0);
        let mut served = Served::new(script, server, conn, 1);
        group.bench_function(format!("write_{}", label(items)), |b| {
            b.iter_custom(|iters| served.ticks(iters).write)
        });
        let Served {
            mut script,
            mut server,
            ..
        } = served;
        let mut ops = Vec::new();
        group.bench_function(format!("commit_{}", label(items)), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    script.tick(&mut ops);
                    apply_ours(&mut server, &ops);
                    let start = Instant::now();
                    black_box(server.commit());
                    total += start.elapsed();
                }
                total
            })
        });
    }
    let (script, agents) = Script::new(Workload::Ten, 100_000, SEED);
    let (server, conn) = grown(&agents, 1_000);
    drop(agents);
    let mut served = Served::new(script, server, conn, 1_000_000);
    group.bench_function("write_100k_grown", |b| {
        b.iter_custom(|iters| served.ticks(iters).write)
    });
    group.finish();
}

fn fanout(c: &mut Criterion) {
    // Churn: every connection gets the frame's adds (issue 15), its
    // acknowledgements coming back at once or, as over a real link, a
    // round trip of two ticks later (its adds then still in flight when
    // the next frame's message is written: issue 32).
    #[rustfmt::skip]
    let groups: [(Workload, &str, &[usize], Handout, u32); 5] = [
        (Workload::Sparse, "fanout", &[1, 16, 64, 256], Handout::Copied, 0),
        (Workload::Sparse, "fanout_bytes", &[1, 256], Handout::Owned, 0),
        (Workload::Sparse, "fanout_slice", &[1, 256], Handout::Lent, 0),
        (Workload::Churn, "fanout_churn", &[1, 16], Handout::Copied, 0),
        (Workload::Churn, "fanout_churn_late", &[1, 16], Handout::Copied, 2),
    ];
    for (workload, name, conns, handout, lag) in groups {
        fan_out(c, workload, name, conns, handout, lag);
    }
}

/// One tick of `workload` at 10k items: commit, then a write and an ack
/// for each of `conns` caught-up connections, of the packet written `lag`
/// ticks before; the messages taken as `handout` says.
fn fan_out(
    c: &mut Criterion,
    workload: Workload,
    name: &str,
    conns: &[usize],
    handout: Handout,
    lag: u32,
) {
    let items = 10_000;
    let mut group = c.benchmark_group(format!("{name}_{}", label(items)));
    for &conns in conns {
        let (mut script, agents) = Script::new(workload, items, SEED);
        let mut server = server_array(&agents);
        drop(agents);
        let mut states: Vec<_> = (0..conns).map(|_| caught_up_conn(&mut server, 0)).collect();
        let mut packet = 1u32;
        let mut ops = Vec::new();
        let mut out = Vec::new();
        group.bench_function(format!("conns_{conns}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    script.tick(&mut ops);
                    apply_ours(&mut server, &ops);
                    let start = Instant::now();
                    server.commit();
                    for conn in &mut states {
                        handout.write(&mut server, conn, packet, &mut out);
                        // The first ticks have nothing that old to ack.
                        conn.on_ack(packet.wrapping_sub(lag));
                    }
                    total += start.elapsed();
                    packet = packet.wrapping_add(1);
                }
                total
            })
        });
    }
    group.finish();
}

/// The sparse workload at 10k through relays: the server's tick with its
/// feed, and a relay's tick serving `n` connections.
fn relays(c: &mut Criterion) {
    let items = 10_000;
    let mut group = c.benchmark_group(format!("relay_{}", label(items)));
    let (mut script, agents) = Script::new(Workload::Sparse, items, SEED);
    let mut server = server_array(&agents);
    drop(agents);
    let mut ops = Vec::new();
    let mut feed = Vec::new();
    group.bench_function("server_feed", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                script.tick(&mut ops);
                apply_ours(&mut server, &ops);
                feed.clear();
                let start = Instant::now();
                server.commit();
                black_box(server.write_feed(&mut feed).expect("feed"));
                total += start.elapsed();
            }
            total
        })
    });
    let (mut script_hot, agents) = Script::new(Workload::Hot, items, SEED);
    let mut shard = FastArray::shard(fastarray::ShardId::new(0));
    for agent in agents {
        shard.push(agent);
    }
    shard.commit();
    let mut neighbour = fastarray::GhostFeed::new();
    let near = |agent: &fastarray_bench::Agent| agent.position[0] > 0.8 * POSITION_RANGE;
    shard
        .write_ghost_feed(&mut neighbour, near, &mut feed)
        .expect("ghost snapshot");
    group.bench_function("ghost_feed_hot", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                script_hot.tick(&mut ops);
                apply_ours(&mut shard, &ops);
                shard.commit();
                feed.clear();
                let start = Instant::now();
                black_box(shard.write_ghost_feed(&mut neighbour, near, &mut feed)).expect("ghosts");
                total += start.elapsed();
            }
            total
        })
    });
    for conns in [16, 256] {
        let (mut script, agents) = Script::new(Workload::Sparse, items, SEED);
        let mut server = server_array(&agents);
        drop(agents);
        let mut relay = FastArray::relay();
        feed.clear();
        server.write_feed_snapshot(&mut feed).expect("snapshot");
        relay.apply_feed(&feed).expect("join");
        let mut states: Vec<_> = (0..conns).map(|_| caught_up_conn(&mut relay, 0)).collect();
        let mut packet = 1u32;
        let mut out = Vec::new();
        group.bench_function(format!("relay_{conns}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    script.tick(&mut ops);
                    apply_ours(&mut server, &ops);
                    server.commit();
                    feed.clear();
                    server.write_feed(&mut feed).expect("feed");
                    let start = Instant::now();
                    black_box(relay.apply_feed(&feed).expect("frame"));
                    for conn in &mut states {
                        out.clear();
                        let stats = relay.write_delta(conn, packet, &mut out);
                        black_box(stats.expect("write"));
                        conn.on_ack(packet);
                    }
                    total += start.elapsed();
                    packet = packet.wrapping_add(1);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = scale, fanout, relays
}
criterion_main!(benches);
