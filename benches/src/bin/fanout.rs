//! The fan-out ratios of issue 32 measured interleaved: the sparse workload
//! (1% of 10 000 items change a u16 per tick) served to 1 and to 256
//! caught-up connections, the two servers taking turns tick by tick, so
//! that a slow stretch of a shared machine slows both alike. A tick is
//! what the criterion bench `fanout_10k/conns_<n>` times: `commit`, then
//! a write and an acknowledgement per connection. With `churn`, the churn
//! workload instead (1% of the items removed and 1% added per tick;
//! `fanout_churn_10k`, whose target compares 16 connections with 1).
//!
//! ```sh
//! cargo run --release -p fastarray-bench --bin fanout -- [rounds] [connections] [bytes|slice] [churn] [late]
//! ```
//!
//! With `late`, each packet is acknowledged two ticks after it was
//! written (a round trip of two ticks), not in the tick that wrote it.
//!
//! With `bytes`, each connection's message is handed out by
//! `write_delta_bytes` (the frame's shared message not copied per
//! connection, as the criterion bench `fanout_bytes_10k` times it); with
//! `slice`, lent by `write_delta_slice` (`fanout_slice_10k`); else copied
//! into a buffer by `write_delta` (`fanout_10k`).
//!
//! Prints the median tick of each server and the ratio of the medians,
//! and the median and spread of the ratios of each round's two ticks.

use std::time::{Duration, Instant};

use fastarray::{FastArray, SendState};
use fastarray_bench::summary::{in_turn, summary};
use fastarray_bench::{
    Agent, Handout, Op, SEED, Script, Workload, apply_ours, caught_up_conn, server_array,
};

/// Items in each array.
const ITEMS: usize = 10_000;

/// Ticks served before the measured ones.
const WARM: usize = 200;

/// One server with its workload and its caught-up connections.
struct Server {
    script: Script,
    array: FastArray<Agent>,
    states: Vec<SendState>,
    ops: Vec<Op>,
    out: Vec<u8>,
    packet: u32,
    /// How each connection's message is taken.
    handout: Handout,
    /// Ticks a packet waits for its acknowledgement.
    lag: u32,
}

impl Server {
    fn new(workload: Workload, conns: usize, handout: Handout, lag: u32) -> Self {
        let (script, agents) = Script::new(workload, ITEMS, SEED);
        let mut array = server_array(&agents);
        let states = (0..conns).map(|_| caught_up_conn(&mut array, 0)).collect();
        Self {
            script,
            array,
            states,
            ops: Vec::new(),
            out: Vec::new(),
            packet: 1,
            handout,
            lag,
        }
    }

    /// Serves one tick; returns the time of the part the bench times.
    fn tick(&mut self) -> Duration {
        self.script.tick(&mut self.ops);
        apply_ours(&mut self.array, &self.ops);
        let start = Instant::now();
        self.array.commit();
        for state in &mut self.states {
            self.handout
                .write(&mut self.array, state, self.packet, &mut self.out);
            if let Some(acked) = self.packet.checked_sub(self.lag).filter(|&p| p > 0) {
                state.on_ack(acked);
            }
        }
        let elapsed = start.elapsed();
        self.packet = self.packet.wrapping_add(1);
        elapsed
    }
}

fn main() {
    let flag = |name: &str| std::env::args().any(|arg| arg == name);
    let churn = flag("churn");
    let handout = match (flag("bytes"), flag("slice")) {
        (true, _) => Handout::Owned,
        (_, true) => Handout::Lent,
        _ => Handout::Copied,
    };
    let lag = if flag("late") { 2 } else { 0 };
    let workload = if churn {
        Workload::Churn
    } else {
        Workload::Sparse
    };
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| !["bytes", "slice", "churn", "late"].contains(&arg.as_str()))
        .map(|arg| {
            arg.parse::<usize>().unwrap_or_else(|_| {
                eprintln!("usage: fanout [rounds] [connections] [bytes|slice] [churn] [late]");
                std::process::exit(2)
            })
        });
    let rounds = args.next().unwrap_or(20_000).max(1);
    let conns = args.next().unwrap_or(256).max(1);
    let mut one = Server::new(workload, 1, handout, lag);
    let mut many = Server::new(workload, conns, handout, lag);
    for _ in 0..WARM {
        one.tick();
        many.tick();
    }
    let (mut ones, mut manys, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (a, b) = in_turn(
            round,
            |to_many| {
                if to_many { many.tick() } else { one.tick() }
            },
        );
        let (a, b) = (a.as_secs_f64() * 1e6, b.as_secs_f64() * 1e6);
        ones.push(a);
        manys.push(b);
        ratios.push(b / a);
    }
    let (one_median, many_median) = (summary(&mut ones).median, summary(&mut manys).median);
    let ratios = summary(&mut ratios);
    let ratio_median = ratios.median;
    println!(
        "{} 10k, {}{}, {rounds} interleaved rounds: 1 connection {one_median:.2} µs, \
         {conns} connections {many_median:.2} µs a tick: {:.2}× (ratio of medians); \
         per-round ratio median {ratio_median:.2}×, quartiles {:.2}–{:.2}×",
        if churn { "churn" } else { "sparse" },
        handout.describe(),
        if lag > 0 {
            ", acknowledged 2 ticks late"
        } else {
            ""
        },
        many_median / one_median,
        ratios.quartiles.0,
        ratios.quartiles.1,
    );
}
