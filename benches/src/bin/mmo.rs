//! The MMO workload of issue 32, tick by tick: 100 000 agents on a
//! 1 000 × 1 000 world, per tick 10% moving, 1% hurt and 0.1% despawned
//! and respawned elsewhere; each connection a viewer walking up to a unit
//! per axis per tick, seeing the agents within 56.4 units (about 1 000)
//! through an `InterestGrid` (`fastarray_bench::interest::Scoped::mmo`).
//! Prints where the server's tick goes: the grid, `commit`, the scopes
//! and the writes (one per connection, each acknowledged).
//!
//! ```sh
//! cargo run --release -p fastarray-bench --bin mmo -- [connections] [ticks] [passes|parallel|both] [still]
//! ```
//!
//! With `still`, the world of `interest/scoped_100k` instead: the viewers
//! stand still and no agent dies (`Scoped::new`).
//!
//! By default each connection's scope takes its events and its delta is
//! written in turn (`Drive::Interleaved`). With `passes`, every scope
//! first, then one `write_delta` after another; with `parallel`, every
//! scope, then `FastArray::write_deltas` on every core. With `both`, runs
//! of ticks take the two in turn on the same world (`ticks` pairs of
//! runs, which goes first alternating), and the bin prints the median of
//! the pairs' ratios of the writes' times, one after another ÷ on every
//! core: the speed-up of the parallel writes, the machine's drift
//! cancelled.
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

use fastarray_bench::interest::{Drive, Scoped, SpeedUp};

/// Ticks served before the measured ones (the first scopes fill).
const WARM: usize = 5;

fn main() {
    let parallel = std::env::args().any(|arg| arg == "parallel");
    let passes = std::env::args().any(|arg| arg == "passes");
    let both = std::env::args().any(|arg| arg == "both");
    let still = std::env::args().any(|arg| arg == "still");
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| !["parallel", "passes", "both", "still"].contains(&arg.as_str()))
        .map(|arg| {
            arg.parse::<usize>().unwrap_or_else(|_| {
                eprintln!("usage: mmo [connections] [ticks] (both whole numbers)");
                std::process::exit(2)
            })
        });
    let conns = args.next().unwrap_or(1_000);
    let ticks = args.next().unwrap_or(30);
    let mut world = if still {
        Scoped::new(100_000, conns, 0.01, fastarray_bench::SEED)
    } else {
        Scoped::mmo(100_000, conns, 0.01, fastarray_bench::SEED)
    };
    let drive = match (parallel, passes) {
        (true, _) => Drive::Parallel,
        (false, true) => Drive::Passes,
        (false, false) => Drive::Interleaved,
    };
    world.set_drive(drive);
    for _ in 0..WARM {
        let changes = world.mutate();
        world.serve(&changes);
    }
    world.take_phases();
    if both {
        return speed_up(&mut world, conns, ticks);
    }
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
        match drive {
            Drive::Parallel => " (parallel writes)",
            Drive::Passes => " (scopes, then writes)",
            Drive::Interleaved => "",
        },
        per_tick(phases.grid),
        per_tick(phases.commit),
        per_tick(phases.scopes),
        per_tick(phases.writes),
        per_tick(phases.acks),
        per_tick(total),
        bits as f64 / 8.0 / (ticks * conns) as f64,
    );
}

/// The writes one after another ÷ on every core, over `pairs` pairs of
/// runs of ticks on the same world (`Scoped::write_speed_up`).
fn speed_up(world: &mut Scoped, conns: usize, pairs: usize) {
    let SpeedUp {
        serial,
        parallel,
        ratio,
    } = world.write_speed_up(pairs);
    println!(
        "{conns} connections, {pairs} pairs of runs: writes one after another {:.1} ms, \
         on every core {:.1} ms (medians); speed-up {:.2}× (median of the pairs, \
         quartiles {:.2}–{:.2}×)",
        serial.median, parallel.median, ratio.median, ratio.quartiles.0, ratio.quartiles.1,
    );
}
