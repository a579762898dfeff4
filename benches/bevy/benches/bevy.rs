//! Server CPU per tick inside Bevy: one `App::update` of the server app,
//! fastarray-bevy against bevy_replicon, on sparse, hot and churn over
//! 1 000 agents with 1, 16 and 64 caught-up clients.
//!
//! Only the server's update is timed (`iter_custom`): each iteration
//! applies the tick's changes to the server's World, times
//! `server.update()`, then, untimed, moves what the server sent to the
//! clients, updates them and moves their acknowledgements back, so every
//! timed update starts from clients that hold the previous tick.
//!
//! ```sh
//! cargo bench -p fastarray-bench-bevy
//! cargo bench -p fastarray-bench-bevy -- sparse/64
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use fastarray_bench::Workload;
use fastarray_bench_bevy::ours::Ours;
use fastarray_bench_bevy::replicon::Replicon;
use fastarray_bench_bevy::{CLIENTS, GROUP, ITEMS, SEED, Side, WORKLOADS};

/// Criterion id of a row, inside [`GROUP`]: `side/workload/clients`.
fn id<S: Side>(workload: Workload, clients: usize) -> String {
    format!("{}/{}/{clients}", S::NAME, workload.name())
}

fn bench_side<S: Side>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    workload: Workload,
    clients: usize,
) {
    let id = id::<S>(workload, clients);
    // Skip building the apps of rows the filter leaves out.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filter.is_empty() && !filter.iter().any(|f| format!("{GROUP}/{id}").contains(f)) {
        return;
    }
    let mut side = S::new(workload, ITEMS, clients, SEED);
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut server = Duration::ZERO;
            for _ in 0..iters {
                side.mutate();
                let start = Instant::now();
                side.server_update();
                server += start.elapsed();
                black_box(side.sent_bytes());
                side.deliver();
            }
            server
        });
    });
}

fn server_cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group(GROUP);
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    for workload in WORKLOADS {
        for clients in CLIENTS {
            bench_side::<Ours>(&mut group, workload, clients);
            bench_side::<Replicon>(&mut group, workload, clients);
        }
    }
    group.finish();
}

criterion_group!(benches, server_cpu);
criterion_main!(benches);
