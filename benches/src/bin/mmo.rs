//! The MMO workload of issue 32, tick by tick: 100 000 agents on a
//! 1 000 × 1 000 world, per tick 10% moving, 1% hurt and 0.1% despawned
//! and respawned elsewhere; each connection a viewer walking up to a unit
//! per axis per tick, seeing the agents within 56.4 units (about 1 000)
//! through an `InterestGrid` (`fastarray_bench::interest::Scoped::mmo`).
//! Prints where the server's tick goes: the grid, `commit`, the scopes
//! and the writes (one per connection, each acknowledged).
//!
//! ```sh
//! cargo run --release -p fastarray-bench --bin mmo -- [connections] [ticks] [parallel]
//! ```
//!
//! With `parallel`, the writes go through `FastArray::write_deltas` on
//! every core; else one `write_delta` after another.
//!
//! Time on a shared machine is noisy; instructions are not. Counted by
//! cachegrind, a tick's cost is the difference of two runs that differ in
//! ticks only (the first builds the world):
//!
//! ```sh
//! valgrind --tool=cachegrind --cache-sim=yes --LL=1048576,16,64 target/release/mmo 256 0
//! valgrind --tool=cachegrind --cache-sim=yes --LL=1048576,16,64 target/release/mmo 256 5
//! ```

use std::time::Duration;

use fastarray_bench::interest::Scoped;

/// Ticks served before the measured ones (the first scopes fill).
const WARM: usize = 5;

fn main() {
    let parallel = std::env::args().any(|arg| arg == "parallel");
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| arg != "parallel")
        .map(|arg| {
            arg.parse::<usize>().unwrap_or_else(|_| {
                eprintln!("usage: mmo [connections] [ticks] (both whole numbers)");
                std::process::exit(2)
            })
        });
    let conns = args.next().unwrap_or(1_000);
    let ticks = args.next().unwrap_or(30);
    let mut world = Scoped::mmo(100_000, conns, 0.01, 0x5eed);
    world.set_parallel(parallel);
    for _ in 0..WARM {
        let changes = world.mutate();
        world.serve(&changes);
    }
    world.take_phases();
    let mut bits = 0u64;
    for _ in 0..ticks {
        let changes = world.mutate();
        bits += world.serve(&changes).iter().sum::<u64>();
    }
    if ticks == 0 {
        return;
    }
    let phases = world.take_phases();
    let per_tick = |d: Duration| d.as_secs_f64() * 1e3 / ticks as f64;
    let total = phases.grid + phases.commit + phases.scopes + phases.writes + phases.acks;
    println!(
        "{conns} connections{}, {ticks} ticks: grid {:.1} ms, commit {:.1} ms, scopes {:.1} ms, \
         writes {:.1} ms, acks {:.1} ms: {:.1} ms a tick; {:.0} bytes per connection per tick",
        if parallel { " (parallel writes)" } else { "" },
        per_tick(phases.grid),
        per_tick(phases.commit),
        per_tick(phases.scopes),
        per_tick(phases.writes),
        per_tick(phases.acks),
        per_tick(total),
        bits as f64 / 8.0 / (ticks * conns) as f64,
    );
}
