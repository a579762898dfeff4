//! The server's tick against bitcode's full encode, measured interleaved
//! (issue 32's "dense ÷ bitcode" target): our commit and one caught-up
//! connection's `write_delta`, and bitcode encoding the whole array,
//! tick by tick in one process, taking turns — which goes first
//! alternates from round to round — so that a slow stretch of a shared
//! machine slows both alike. Each side runs the same workload on its own
//! copy: our server array, and a `Vec` of the same agents. The criterion
//! benches `<workload>_10k/ours_commit`, `ours_write` and
//! `bitcode_encode` time the same work in separate groups.
//!
//! ```sh
//! cargo run --release -p fastarray-bench --bin encode -- [rounds] [sparse|hot|churn|dense]
//! ```
//!
//! Prints the median time of a tick on each side (ours split into commit
//! and write), and the median and quartiles of the rounds' ratios (ours ÷
//! bitcode).

use std::hint::black_box;
use std::time::{Duration, Instant};

use fastarray_bench::summary::{Summary, in_turn, summary};
use fastarray_bench::{
    Agent, Op, SEED, Script, Served, TickTimes, Workload, apply_vec, caught_up, server_array,
};

/// Items in the array.
const ITEMS: usize = 10_000;

/// Ticks per round on each side.
const TICKS: usize = 16;

/// Bitcode's side: the same workload on a `Vec`, encoded whole.
struct Bitcode {
    script: Script,
    items: Vec<Agent>,
    ops: Vec<Op>,
    buffer: bitcode::Buffer,
}

impl Bitcode {
    /// `TICKS` ticks: the time of the encodes.
    fn round(&mut self) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..TICKS {
            self.script.tick(&mut self.ops);
            apply_vec(&mut self.items, &self.ops);
            let start = Instant::now();
            let bytes = self.buffer.encode(&self.items).len();
            total += start.elapsed();
            black_box(bytes);
        }
        total
    }
}

fn main() {
    let (rounds, workload) = Workload::rounds_from_args(
        200,
        Workload::Dense,
        "encode [rounds] [sparse|hot|churn|dense]",
    );
    let (script, agents) = Script::new(workload, ITEMS, SEED);
    let mut server = server_array(&agents);
    let (conn, _) = caught_up(&mut server, 0);
    // Our side: the server, its caught-up connection and its script.
    let mut ours = Served::new(script.clone(), server, conn, 1);
    let mut bitcode = Bitcode {
        script,
        items: agents,
        ops: Vec::new(),
        buffer: bitcode::Buffer::new(),
    };
    let per_tick = |d: Duration| d.as_secs_f64() * 1e6 / TICKS as f64;
    // A round to warm up, not counted.
    ours.ticks(TICKS as u64);
    bitcode.round();
    let (mut commits, mut writes, mut encodes, mut ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // Each side fills in its own times.
        let ((ticks, _), (_, encode)) = in_turn(round, |encode| {
            if encode {
                (TickTimes::default(), bitcode.round())
            } else {
                (ours.ticks(TICKS as u64), Duration::ZERO)
            }
        });
        let TickTimes { commit, write } = ticks;
        let (commit, write, encode) = (per_tick(commit), per_tick(write), per_tick(encode));
        commits.push(commit);
        writes.push(write);
        encodes.push(encode);
        ratios.push((commit + write) / encode);
    }
    let median = |values: &mut Vec<f64>| summary(values).median;
    let (commit, write, encode) = (
        median(&mut commits),
        median(&mut writes),
        median(&mut encodes),
    );
    let Summary {
        median: ratio,
        quartiles,
        ..
    } = summary(&mut ratios);
    println!(
        "{workload:?}, {rounds} rounds of {TICKS} ticks: ours {:.1} µs a tick (commit {commit:.1}, \
         write {write:.1}), bitcode {encode:.1} µs: median of rounds {ratio:.2}× (quartiles \
         {:.2}–{:.2}×)",
        commit + write,
        quartiles.0,
        quartiles.1,
    );
}
