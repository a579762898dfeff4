//! Dense mutation: every item of a 10 000-item array changed in one tick,
//! through `FastArray::iter_mut` against the same loop over a `Vec`.
//!
//! | bench | what one iteration times |
//! |---|---|
//! | `vec` | the loop over a `Vec` of the items (`iter_mut`) |
//! | `ours_iter_mut` | the loop through `FastArray::iter_mut` (a guard per item; a pre-image per item on its first write, already held from the last tick here) |
//! | `ours_ids_get_mut` | the loop users wrote before `iter_mut`: collect the ids, then `get_mut` each |
//! | `ours_get_mut_alternating` | `get_mut` over the ids (collected untimed), forwards one tick and backwards the next: no buffer holds its item, every first write copies |
//!
//! Each for two items: `particle`, plain numbers, and `agent`, the
//! workloads' `Agent`, which holds a `String`. The loop meets the items in
//! the same order every tick, so after the first tick each pre-image
//! buffer already holds its item (commit copied the changed fields into
//! it) and the guards copy nothing, the name included. The commit after
//! each tick is not timed.
//!
//! ```sh
//! cargo bench -p fastarray-bench --bench iter_mut
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use fastarray::{FastArray, Replicate};
use fastarray_bench::Agent;

/// Items in every array here.
const ITEMS: usize = 10_000;

/// A small item of plain numbers.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Particle {
    #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
    position: [f32; 3],
    velocity: [f32; 3],
    ttl: u16,
}

fn particle(n: usize) -> Particle {
    let f = n as f32;
    Particle {
        position: [f % 100.0, f % 37.0, 0.0],
        velocity: [0.5, -0.25, 1.0],
        ttl: 1_000,
    }
}

fn step_particle(p: &mut Particle) {
    for (x, v) in p.position.iter_mut().zip(p.velocity) {
        *x += v;
    }
    p.ttl = p.ttl.wrapping_sub(1);
}

fn agent(n: usize) -> Agent {
    Agent {
        position: [n as f32 % 100.0, 0.0, 0.0],
        velocity: [1.0, 0.0, 0.0],
        health: 100,
        ammo: n as u16,
        name: format!("agent{n}"),
    }
}

fn step_agent(a: &mut Agent) {
    a.position[0] += a.velocity[0];
    a.ammo = a.ammo.wrapping_add(1);
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

/// The three benches for items made by `make` and changed by `step`.
fn dense<T: Replicate + Clone>(
    c: &mut Criterion,
    name: &str,
    make: fn(usize) -> T,
    step: fn(&mut T),
) {
    let mut group = c.benchmark_group(format!("dense_iter_mut_{name}"));
    let items: Vec<T> = (0..ITEMS).map(make).collect();

    let mut vec = items.clone();
    group.bench_function("vec", |b| {
        b.iter(|| {
            for item in vec.iter_mut() {
                step(item);
            }
            black_box(&mut vec);
        })
    });

    let mut array = FastArray::with_capacity(ITEMS);
    for item in items.iter().cloned() {
        array.push(item);
    }
    array.commit();
    group.bench_function("ours_iter_mut", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                for (_, mut item) in array.iter_mut() {
                    step(&mut item);
                }
                total += start.elapsed();
                black_box(array.commit());
            }
            total
        })
    });

    // The same loop, its direction flipped every tick: each item meets
    // another item's buffer, and every first write copies.
    let mut forward = true;
    group.bench_function("ours_get_mut_alternating", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut ids: Vec<_> = array.ids().collect();
                if !forward {
                    ids.reverse();
                }
                forward = !forward;
                let start = Instant::now();
                for &id in &ids {
                    if let Some(mut item) = array.get_mut(id) {
                        step(&mut item);
                    }
                }
                total += start.elapsed();
                black_box(array.commit());
            }
            total
        })
    });

    group.bench_function("ours_ids_get_mut", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let ids: Vec<_> = array.ids().collect();
                for id in ids {
                    if let Some(mut item) = array.get_mut(id) {
                        step(&mut item);
                    }
                }
                total += start.elapsed();
                black_box(array.commit());
            }
            total
        })
    });
    group.finish();
}

fn particles(c: &mut Criterion) {
    dense(c, "particle", particle, step_particle);
}

fn agents(c: &mut Criterion) {
    dense(c, "agent", agent, step_agent);
}

criterion_group! {
    name = benches;
    config = config();
    targets = particles, agents
}
criterion_main!(benches);
