//! CPU per tick, ours against the baselines, side by side: one criterion
//! group per workload (sparse, hot, churn, shuffle, dense) at 10 000 items,
//! so every ratio in `BENCHMARKS.md` comes from one run of one group.
//!
//! | bench | what one iteration times |
//! |---|---|
//! | `ours_mutate` | the tick's mutations through the `FastArray` API (guards, `remove`, `push`, `swap`) |
//! | `vec_mutate` | the same mutations on a plain `Vec` |
//! | `ours_commit` | `commit()` (shared by every connection), in a server whose caught-up connection writes each tick |
//! | `ours_write` | `write_delta` for one caught-up connection |
//! | `ours_write_payload` | `Connection::write_payload` (one channel, no MTU limit to speak of) for one caught-up client, then `delivered` |
//! | `ours_apply` | the client's `apply_delta` of one tick's message |
//! | `naive_diff_encode` | naive position diffing against the shadow, encoding, shadow update |
//! | `naive_apply` | the naive client applying one tick's message by position |
//! | `bytes_diff_encode` | the byte-level differ: shadow compare, raw little-endian bytes, `clone_from` |
//! | `bytes_apply` | its client, writing each item into its slot |
//! | `bitcode_encode` | `bitcode` encoding the whole array (full state) |
//! | `bitcode_decode` | `bitcode` decoding the whole array |
//! | `snapshot_encode` | `FastArray::write_snapshot` of the whole array |
//! | `snapshot_decode` | `FastArray::from_snapshot` |
//!
//! Untimed work (generating and applying the tick's mutations, committing
//! before a write, acknowledging after it) happens outside the timed
//! regions through `iter_custom`. Client benches replay messages recorded
//! once from the same seeded workload.
//!
//! ```sh
//! cargo bench -p fastarray-bench --bench workloads             # everything, about 3 minutes
//! cargo bench -p fastarray-bench --bench workloads -- sparse   # one group
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{
    BenchmarkGroup, Criterion, criterion_group, criterion_main, measurement::WallTime,
};
use fastarray::{Connection, FastArray, MAX_PACKET};
use fastarray_bench::bytes::{self, BytesSender};
use fastarray_bench::naive::{self, NaiveSender};
use fastarray_bench::recording::record;
use fastarray_bench::{
    Agent, Op, SEED, Script, Served, Workload, apply_ours, apply_vec, caught_up, server_array,
};

/// Items of every group here.
const ITEMS: usize = 10_000;
/// Ticks recorded for the client benches, replayed in a loop.
const REPLAY: usize = 64;

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

/// Times `timed` once per iteration after running `untimed`.
fn split<S>(
    state: &mut S,
    iters: u64,
    mut untimed: impl FnMut(&mut S),
    mut timed: impl FnMut(&mut S),
    mut after: impl FnMut(&mut S),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        untimed(state);
        let start = Instant::now();
        timed(state);
        total += start.elapsed();
        after(state);
    }
    total
}

fn workload_group(c: &mut Criterion, workload: Workload) {
    let mut group = c.benchmark_group(format!("{}_{}k", workload.name(), ITEMS / 1000));
    server_side(&mut group, workload);
    client_side(&mut group, workload);
    full_state(&mut group, workload);
    group.finish();
}

/// The tick's mutations, commit and write on our side; diff and encode on
/// the naive side.
fn server_side(group: &mut BenchmarkGroup<'_, WallTime>, workload: Workload) {
    let (script, agents) = Script::new(workload, ITEMS, SEED);
    let mut ops: Vec<Op> = Vec::new();

    {
        let mut state = (script.clone(), server_array(&agents), Vec::new());
        group.bench_function("ours_mutate", |b| {
            b.iter_custom(|iters| {
                split(
                    &mut state,
                    iters,
                    |(script, _, ops)| script.tick(ops),
                    |(_, server, ops)| apply_ours(server, ops),
                    |(_, server, _)| {
                        server.commit();
                    },
                )
            })
        });
    }
    {
        let mut state = (script.clone(), agents.clone(), Vec::new());
        group.bench_function("vec_mutate", |b| {
            b.iter_custom(|iters| {
                split(
                    &mut state,
                    iters,
                    |(script, _, ops)| script.tick(ops),
                    |(_, items, ops)| apply_vec(items, ops),
                    |_| {},
                )
            })
        });
    }
    {
        // A server's commit, with a caught-up connection written (untimed)
        // after each: the commit then writes the frame's shared entries as
        // it diffs (what `ours_write` no longer does), and that is timed
        // here.
        let mut server = server_array(&agents);
        let (conn, _) = caught_up(&mut server, 0);
        let mut served = Served::new(script.clone(), server, conn, 1);
        group.bench_function("ours_commit", |b| {
            b.iter_custom(|iters| served.ticks(iters).commit)
        });
    }
    {
        let mut server = server_array(&agents);
        let (conn, _) = caught_up(&mut server, 0);
        let mut served = Served::new(script.clone(), server, conn, 1);
        group.bench_function("ours_write", |b| {
            b.iter_custom(|iters| served.ticks(iters).write)
        });
    }
    {
        // The same write through a `Connection` on the transport's
        // reports: what the connection adds around the channel's delta
        // (sections, stats, verdicts).
        let mut script = script.clone();
        let mut server = server_array(&agents);
        let mut conn = Connection::with_delivery_reports(1);
        let mut packet = 0u32;
        let mut out = Vec::new();
        loop {
            out.clear();
            let stats = conn
                .write_payload(packet, MAX_PACKET, &mut [&mut server], &mut out)
                .expect("join");
            if stats.sections == 0 {
                break;
            }
            conn.delivered(packet).expect("report");
            packet += 1;
        }
        group.bench_function("ours_write_payload", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    script.tick(&mut ops);
                    apply_ours(&mut server, &ops);
                    server.commit();
                    out.clear();
                    let start = Instant::now();
                    let stats =
                        conn.write_payload(packet, MAX_PACKET, &mut [&mut server], &mut out);
                    total += start.elapsed();
                    black_box(stats.expect("write"));
                    conn.delivered(packet).expect("report");
                    while conn.poll_verdict().is_some() {}
                    packet = packet.wrapping_add(1);
                }
                total
            })
        });
    }
    let mut naive = NaiveSender::new(&agents);
    vec_writes(
        group,
        "naive_diff_encode",
        &script,
        &agents,
        |items, out| {
            black_box(naive.write(items, out).expect("write"));
        },
    );
    let mut bytes = BytesSender::new(&agents);
    vec_writes(
        group,
        "bytes_diff_encode",
        &script,
        &agents,
        |items, out| {
            black_box(bytes.write(items, out));
        },
    );
}

/// Times `write` of each tick's array, the script's mutations applied to
/// a `Vec` outside the timed region: a naive sender's diff and encode, or
/// a full-state encode.
fn vec_writes(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    script: &Script,
    agents: &[Agent],
    mut write: impl FnMut(&[Agent], &mut Vec<u8>),
) {
    let mut script = script.clone();
    let mut items = agents.to_vec();
    let (mut ops, mut out) = (Vec::new(), Vec::new());
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                script.tick(&mut ops);
                apply_vec(&mut items, &ops);
                out.clear();
                let start = Instant::now();
                write(&items, &mut out);
                total += start.elapsed();
            }
            total
        })
    });
}

/// Times a `Vec` client applying recorded `messages`, replayed in a loop
/// from `start`.
fn replay_on_vec<E: std::fmt::Debug>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    start: &[Agent],
    messages: &[Vec<u8>],
    apply: fn(&mut Vec<Agent>, &[u8]) -> Result<(), E>,
) {
    let mut client = start.to_vec();
    let mut tick = 0;
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if tick == 0 {
                    client = start.to_vec();
                }
                let begin = Instant::now();
                let applied = apply(&mut client, &messages[tick]);
                total += begin.elapsed();
                applied.expect("apply");
                tick = (tick + 1) % REPLAY;
            }
            total
        })
    });
}

/// The client applying one tick: ours and naive, replaying a recording.
fn client_side(group: &mut BenchmarkGroup<'_, WallTime>, workload: Workload) {
    let recording = record(workload, ITEMS, SEED, REPLAY);
    {
        let mut mirror = recording.mirror.clone();
        let mut tick = 0;
        group.bench_function("ours_apply", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if tick == 0 {
                        mirror.clone_from(&recording.mirror);
                    }
                    let start = Instant::now();
                    let report = mirror.apply_delta(&recording.ours[tick], &mut ());
                    total += start.elapsed();
                    black_box(report.expect("apply"));
                    tick = (tick + 1) % REPLAY;
                }
                total
            })
        });
    }
    replay_on_vec(
        group,
        "naive_apply",
        &recording.client,
        &recording.naive,
        naive::apply,
    );
    replay_on_vec(
        group,
        "bytes_apply",
        &recording.client,
        &recording.bytes,
        bytes::apply,
    );
}

/// The whole array every tick: bitcode and our snapshot, both ways.
fn full_state(group: &mut BenchmarkGroup<'_, WallTime>, workload: Workload) {
    let (script, agents) = Script::new(workload, ITEMS, SEED);
    let mut server = server_array(&agents);
    let mut ops = Vec::new();
    let mut buffer = bitcode::Buffer::new();
    vec_writes(group, "bitcode_encode", &script, &agents, |items, _| {
        black_box(buffer.encode(items).len());
    });
    let encoded = bitcode::encode(&agents);
    group.bench_function("bitcode_decode", |b| {
        b.iter(|| {
            let decoded: Vec<Agent> = buffer.decode(&encoded).expect("decode");
            decoded
        })
    });

    let mut out = Vec::new();
    let (mut script, _) = Script::new(workload, ITEMS, SEED);
    group.bench_function("snapshot_encode", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                script.tick(&mut ops);
                apply_ours(&mut server, &ops);
                server.commit();
                out.clear();
                let start = Instant::now();
                let bits = server.write_snapshot(&mut out);
                total += start.elapsed();
                black_box(bits.expect("snapshot"));
            }
            total
        })
    });
    out.clear();
    server.write_snapshot(&mut out).expect("snapshot");
    group.bench_function("snapshot_decode", |b| {
        b.iter(|| FastArray::<Agent>::from_snapshot(&out).expect("decode"))
    });
}

fn sparse(c: &mut Criterion) {
    workload_group(c, Workload::Sparse);
}

fn hot(c: &mut Criterion) {
    workload_group(c, Workload::Hot);
}

fn churn(c: &mut Criterion) {
    workload_group(c, Workload::Churn);
}

fn shuffle(c: &mut Criterion) {
    workload_group(c, Workload::Shuffle);
}

fn dense(c: &mut Criterion) {
    workload_group(c, Workload::Dense);
}

criterion_group! {
    name = benches;
    config = config();
    targets = sparse, hot, churn, shuffle, dense
}
criterion_main!(benches);
