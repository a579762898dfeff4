//! Interest management (issue 13): the server's whole tick with scopes
//! against the same connections given arrays of their own.
//!
//! * `interest/scoped_100k`: 100 000 agents on a 1 000 × 1 000 world, 256
//!   connections each seeing about 1% of them (an `InterestGrid` feeding
//!   their scopes); per tick 10% of the agents move and 1% lose health.
//!   Timed: the grid hearing of the moves, `commit`, the grid's update
//!   into the scopes, and 256 `write_delta`s (each acknowledged).
//! * `interest/separate_1k`: 256 unscoped arrays of 1 000 agents, one per
//!   connection, with the same rates of change. Timed: per array, `commit`
//!   and one `write_delta` (acknowledged).
//!
//! The game's own mutations are not timed in either.
//!
//! ```sh
//! cargo bench -p fastarray-bench --bench interest
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use fastarray_bench::interest::{Scoped, Separate};

const SEED: u64 = 0x5eed;
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
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = interest
}
criterion_main!(benches);
