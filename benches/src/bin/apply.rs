//! The client's apply of issue 32 measured interleaved: one workload's
//! messages for 10 000 items, recorded once (ours, and the byte-level
//! naive differ's of `fastarray_bench::bytes`), then replayed in turns —
//! our mirror applies the recording's ticks and the naive client its
//! own, which goes first alternating from round to round — so that a
//! slow stretch of a shared machine slows both alike. A replay is what
//! the criterion benches `<workload>_10k/ours_apply` and `bytes_apply`
//! time, tick by tick.
//!
//! ```sh
//! cargo run --release -p fastarray-bench --bin apply -- [rounds] [sparse|hot|churn|dense]
//! ```
//!
//! Prints the median time of a tick's apply on each side, and the median
//! and spread of the rounds' ratios (ours ÷ naive).

use std::hint::black_box;
use std::time::{Duration, Instant};

use fastarray::FastArray;
use fastarray_bench::recording::{Recording, record};
use fastarray_bench::summary::{Summary, in_turn, summary};
use fastarray_bench::{Agent, SEED, Workload, bytes};

/// Items in the array.
const ITEMS: usize = 10_000;

/// Ticks recorded, and replayed per round (the criterion bench's).
const REPLAY: usize = 64;

/// The time our mirror takes to apply the recording, tick by tick (the
/// copy of the mirror before the first tick is not timed).
fn replay_ours(recording: &Recording, mirror: &mut FastArray<Agent>) -> Duration {
    mirror.clone_from(&recording.mirror);
    let mut total = Duration::ZERO;
    for message in &recording.ours {
        let start = Instant::now();
        let report = mirror.apply_delta(message, &mut ());
        total += start.elapsed();
        black_box(report.expect("apply"));
    }
    total
}

/// The same for the naive client.
fn replay_bytes(recording: &Recording, client: &mut Vec<Agent>) -> Duration {
    client.clone_from(&recording.client);
    let mut total = Duration::ZERO;
    for message in &recording.bytes {
        let start = Instant::now();
        let applied = bytes::apply(client, message);
        total += start.elapsed();
        applied.expect("apply");
    }
    total
}

fn main() {
    let (rounds, workload) = Workload::rounds_from_args(
        200,
        Workload::Hot,
        "apply [rounds] [sparse|hot|churn|dense]",
    );
    let recording = record(workload, ITEMS, SEED, REPLAY);
    let mut mirror = recording.mirror.clone();
    let mut client = recording.client.clone();
    let per_tick = |d: Duration| d.as_secs_f64() * 1e6 / REPLAY as f64;
    // A round to warm up, not counted.
    replay_ours(&recording, &mut mirror);
    replay_bytes(&recording, &mut client);
    let (mut ours, mut naive, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (a, b) = in_turn(round, |naive| {
            if naive {
                replay_bytes(&recording, &mut client)
            } else {
                replay_ours(&recording, &mut mirror)
            }
        });
        let (a, b) = (per_tick(a), per_tick(b));
        ours.push(a);
        naive.push(b);
        ratios.push(a / b);
    }
    let (ours, naive) = (summary(&mut ours).median, summary(&mut naive).median);
    let Summary {
        median: ratio,
        quartiles,
        ..
    } = summary(&mut ratios);
    println!(
        "{workload:?}, {rounds} rounds of {REPLAY} ticks: ours {ours:.1} µs a tick, \
         bytes {naive:.1} µs: {:.2}× (median of rounds {ratio:.2}×, quartiles {:.2}–{:.2}×)",
        ours / naive,
        quartiles.0,
        quartiles.1,
    );
}
