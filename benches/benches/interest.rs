//! Interest management (issue 13): the server's whole tick with scopes
//! against the same connections given arrays of their own.
//!
//! * `interest/scoped_100k`: 100 000 agents on a 1 000 × 1 000 world, 256
//!   connections each seeing about 1% of them (an `InterestGrid` feeding
//!   their scopes); per tick 10% of the agents move and 1% lose health.
//!   Timed: the grid hearing of the moves, `commit`, the grid's update,
//!   and per connection its scope taking its events and its
//!   `write_delta` (each acknowledged).
//! * `interest/separate_1k`: 256 unscoped arrays of 1 000 agents, one per
//!   connection, with the same rates of change. Timed: per array, `commit`
//!   and one `write_delta` (acknowledged).
//!
//! The game's own mutations are not timed in either.
//!
//! * `interest/mmo_1000`: issue 32's MMO tick: the same world with 1 000
//!   connections whose viewers walk (up to a unit per axis per tick), and
//!   0.1% of the agents despawned and respawned elsewhere per tick. Timed
//!   as `scoped_100k` (the grid also hears of the viewers, the births and
//!   the deaths). `interest/mmo_1000_parallel`: the same, every scope
//!   first, then the writes on every core (`write_deltas`, the `parallel`
//!   feature).
//! * `interest/grid_walking_100k`: the `InterestGrid` alone, with the
//!   viewers walking: 100 000 agents, 256 viewers each seeing about 1% of
//!   them; per tick 10% of the agents and every viewer move by up to a
//!   unit. Timed: `set_item`/`set_viewer` of the moves and `update`.
//! * `interest/join_scoped_100k`: a client joins the 100 000-agent world
//!   (long past the history ring) seeing 1 000 of them: a new connection,
//!   its `scope()`, 1 000 `include`s and its first `write_delta` (the
//!   thousand adds). Timed: all of it.
//! * `interest/join_separate_1k`: the same client joining an array of just
//!   those 1 000 agents: a new connection and its first `write_delta`.
//!
//! ```sh
//! cargo bench -p fastarray-bench --bench interest
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use fastarray::{FastArray, InterestGrid, ReplicationId, SendState};
use fastarray_bench::interest::{Drive, Scoped, Separate};
use fastarray_bench::{Agent, SEED, spawn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CONNS: usize = 256;

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
}

fn interest(c: &mut Criterion) {
    let mut group = c.benchmark_group("interest");
    let mut scoped = Scoped::new(100_000, CONNS, 0.01, SEED);
    group.bench_function("scoped_100k", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let changes = scoped.mutate();
                let start = Instant::now();
                black_box(scoped.serve(&changes));
                spent += start.elapsed();
            }
            spent
        });
    });
    drop(scoped);
    let mut separate = Separate::new(1_000, CONNS, SEED);
    group.bench_function("separate_1k", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                separate.mutate();
                let start = Instant::now();
                black_box(separate.serve());
                spent += start.elapsed();
            }
            spent
        });
    });
    drop(separate);
    // The MMO workload: 1 000 walking viewers, churn; per connection its
    // scope then its write, then every scope and the writes on every
    // core (`write_deltas`).
    let mut mmo = Scoped::mmo(100_000, 1_000, 0.01, SEED);
    for (name, parallel) in [("mmo_1000", false), ("mmo_1000_parallel", true)] {
        mmo.set_drive(if parallel {
            Drive::Parallel
        } else {
            Drive::Interleaved
        });
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let changes = mmo.mutate();
                    let start = Instant::now();
                    black_box(mmo.serve(&changes));
                    spent += start.elapsed();
                }
                spent
            });
        });
    }
    drop(mmo);

    // The grid alone, viewers walking.
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let radius = fastarray_bench::interest::radius_for(0.01);
    let half = fastarray_bench::interest::HALF;
    // Cells half a view radius wide, as the grid's docs advise.
    let mut grid = InterestGrid::new(radius / 2.0);
    let mut items: Vec<[f32; 2]> = (0..100_000)
        .map(|_| [rng.random_range(-half..half), rng.random_range(-half..half)])
        .collect();
    for (n, &p) in items.iter().enumerate() {
        grid.set_item(ReplicationId::from_raw(n as u64), p);
    }
    let mut viewers: Vec<[f32; 2]> = (0..CONNS)
        .map(|_| [rng.random_range(-half..half), rng.random_range(-half..half)])
        .collect();
    for (n, &c) in viewers.iter().enumerate() {
        grid.set_viewer(n as u64, c, radius);
    }
    grid.update(|_, _, _| {});
    let step = move |rng: &mut ChaCha8Rng, p: &mut [f32; 2]| {
        for axis in p.iter_mut() {
            *axis = (*axis + rng.random_range(-1.0..1.0)).clamp(-half, half);
        }
    };
    group.bench_function("grid_walking_100k", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let moved: Vec<usize> = (0..10_000)
                    .map(|_| rng.random_range(0..items.len()))
                    .collect();
                for &n in &moved {
                    step(&mut rng, &mut items[n]);
                }
                for viewer in viewers.iter_mut() {
                    step(&mut rng, viewer);
                }
                let start = Instant::now();
                for &n in &moved {
                    grid.set_item(ReplicationId::from_raw(n as u64), items[n]);
                }
                for (n, &c) in viewers.iter().enumerate() {
                    grid.set_viewer(n as u64, c, radius);
                }
                let mut events = 0u64;
                grid.update(|_, _, _| events += 1);
                black_box(events);
                spent += start.elapsed();
            }
            spent
        });
    });
    drop(grid);

    // Joins: the world of 100 000 long past its ring, and the 1 000 the
    // client sees alone.
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let agents: Vec<Agent> = (0..100_000).map(|n| spawn(&mut rng, n)).collect();
    let mut world = FastArray::new();
    let ids: Vec<ReplicationId> = agents.iter().map(|a| world.push(a.clone())).collect();
    for _ in 0..100 {
        world.commit();
    }
    let seen: Vec<ReplicationId> = ids.iter().step_by(100).copied().collect();
    let mut alone = FastArray::new();
    for &id in &seen {
        alone.push(world.get(id).unwrap().clone());
    }
    alone.commit();
    let mut packet = Vec::with_capacity(64 * 1024);
    group.bench_function("join_scoped_100k", |b| {
        b.iter(|| {
            let mut state = SendState::new();
            let mut scope = world.scope(&mut state).unwrap();
            for &id in &seen {
                scope.include(id);
            }
            packet.clear();
            black_box(world.write_delta(&mut state, 1, &mut packet).unwrap());
        });
    });
    group.bench_function("join_separate_1k", |b| {
        b.iter(|| {
            let mut state = SendState::new();
            packet.clear();
            black_box(alone.write_delta(&mut state, 1, &mut packet).unwrap());
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = interest
}
criterion_main!(benches);
