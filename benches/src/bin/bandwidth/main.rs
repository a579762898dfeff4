//! The bandwidth report: bits on the wire per tick per connection for us
//! against the baselines (naive position diffing, full snapshots with our
//! codec and with `bitcode`, and a bit-count model of Unreal's FastArray),
//! over every workload and array size, over a lossy link, plus memory per
//! item measured with a counting allocator. It prints the tables and
//! regenerates `BENCHMARKS.md` and the charts in `docs/`.
//!
//! CPU numbers come from criterion: run the benches first and this program
//! reads their estimates from `target/criterion/**/new/estimates.json`.
//!
//! ```sh
//! cargo bench -p fastarray-bench                            # CPU (criterion), a few minutes
//! cargo run --release -p fastarray-bench --bin bandwidth    # bits, memory; writes BENCHMARKS.md
//! cargo run --release -p fastarray-bench --bin bandwidth -- --no-write   # print only
//! cargo run --release -p fastarray-bench --bin bandwidth -- --interest   # interest management only, printed
//! cargo run --release -p fastarray-bench --bin bandwidth -- --handoff    # a handoff's and ghosts' bits only, printed
//! cargo run --release -p fastarray-bench --bin bandwidth -- --field-costs   # which field costs what only: docs/field-costs.svg
//! ```
//!
//! It writes at the repository root (the parent of this package's
//! directory), and reads criterion's output from the workspace's
//! `target/` (or `CARGO_TARGET_DIR`).
//!
//! Every bit count is exact (the library's `DeltaStats::bits`, our snapshot
//! writer's count, the naive encoder's count, `bitcode`'s bytes × 8) except
//! the Unreal column, which is a model. Runs are deterministic: the same
//! seeds give the same numbers on every machine.
//!
//! | module | part of the report |
//! |---|---|
//! | `bits` | bits per tick, every packet acknowledged, per workload and size |
//! | `events` | the single-event targets at 10k (one change, one removal, a shuffle) |
//! | `loss` | bits per tick over a lossy link; whether fan-out messages are identical |
//! | `memory` | the counting allocator and the heap bytes per item |
//! | `interest` | interest management: bits against shadow arrays, memory per agent in scope |
//! | `relay` | relays: the feed's bytes a frame against a client's; a handoff's against a remove and an add; a shard's ghosts against its whole feed |
//! | `field_costs` | which field costs what (`FieldCosts`), its table and chart |
//! | `estimates` | criterion's medians, read from its output |
//! | `report` | the results and the issue's targets |
//! | `markdown`, `chart`, `format` | `BENCHMARKS.md`, the SVG charts, number formatting |

mod bits;
mod chart;
mod cpu_targets;
mod events;
mod field_costs;
mod format;
mod interest;
mod loss;
mod markdown;
mod memory;
mod relay;
mod report;
mod secure;

use std::path::{Path, PathBuf};
use std::time::Instant;

use fastarray_bench::{SEED, Workload};

use crate::bits::run_bits;
use crate::chart::charts;
use crate::events::{one_change, one_removal, one_shuffle};
use crate::field_costs::{
    WORKLOADS, field_cost_chart, field_cost_markdown, run_field_costs, run_mixed,
};
use crate::format::{num, size_label};
use crate::interest::run_interest;
use crate::loss::{fan_out_messages, run_loss};
use crate::memory::measure_memory;
use crate::report::{Results, status};
use fastarray_bench::estimates::load_criterion;

/// Array sizes of the bits table.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Ticks per run of the bits table.
const TICKS: u32 = 64;
/// Items of the loss runs and of the single-event targets.
const LOSS_ITEMS: usize = 10_000;
/// Ticks of each loss run (before the link heals).
const LOSS_TICKS: u32 = 200;
/// Loss rates of the loss runs.
const LOSS_RATES: [f64; 4] = [0.0, 0.05, 0.2, 0.5];
/// The chart of which field costs what.
const FIELD_COSTS_CHART: &str = "docs/field-costs.svg";

fn print_tables(report: &Results) {
    println!(
        "bits per tick per connection ({TICKS} ticks, every packet acked)\n{:<8} {:>6} {:>12} {:>14} {:>14} {:>14} {:>14}",
        "workload", "items", "fastarray", "naive diff", "unreal model", "snapshot", "bitcode"
    );
    for b in &report.bits {
        println!(
            "{:<8} {:>6} {:>12} {:>14} {:>14} {:>14} {:>14}",
            b.workload.expect("set").name(),
            size_label(b.items),
            num(b.per_tick(b.ours)),
            num(b.per_tick(b.naive)),
            num(b.per_tick(b.ue)),
            num(b.per_tick(b.snapshot)),
            num(b.per_tick(b.bitcode))
        );
    }
    println!(
        "\nbits per tick over a lossy link ({} items, {LOSS_TICKS} ticks)\n{:<8} {:>5} {:>12} {:>14} {:>14} {:>14}",
        LOSS_ITEMS, "workload", "loss", "fastarray", "naive diff", "unreal model", "bitcode"
    );
    for l in &report.loss {
        let per = |v: u64| num(v as f64 / l.ticks as f64);
        println!(
            "{:<8} {:>4.0}% {:>12} {:>14} {:>14} {:>14}",
            l.workload.expect("set").name(),
            l.rate * 100.0,
            per(l.ours),
            per(l.naive),
            per(l.ue),
            per(l.bitcode)
        );
    }
    println!("\ntargets");
    for t in report.targets() {
        println!(
            "  [{}] {}: {} (goal {})",
            status(t.met),
            t.name,
            t.measured,
            t.goal
        );
    }
}

fn main() {
    let write = !std::env::args().any(|a| a == "--no-write");
    if std::env::args().any(|a| a == "--handoff") {
        // Only the handoff figure, printed.
        let h = relay::run_handoff_bytes(5_000, 20, TICKS);
        println!(
            "bits a crossing: client {:.1} handed off, {:.1} removed and added; feeds {:.1}, {:.1}; \
             a handoff message {:.0}",
            h.client[0], h.client[1], h.feed[0], h.feed[1], h.message
        );
        let g = relay::run_ghost_bytes(5_000, 32.0, TICKS);
        println!(
            "bits a frame: ghosts {:.0} ({:.0} walkers within {} m), whole feed {:.0}",
            g.ghost, g.ghosted, g.reach, g.feed
        );
        let a = relay::run_array_feed_bytes(1_000, 20, 10, TICKS);
        println!(
            "bytes a frame, inventories: feed {:.0}, a client {:.0}",
            a.feed, a.client
        );
        return;
    }
    if std::env::args().any(|a| a == "--interest") {
        // Only the interest-management figures, printed.
        let i = run_interest();
        println!(
            "bits: scoped {} shadow {} ({:.3}x), {:.0} in scope; memory {:?}",
            i.scoped_bits,
            i.shadow_bits,
            i.scoped_bits as f64 / i.shadow_bits.max(1) as f64,
            i.in_scope,
            i.memory
        );
        return;
    }
    let started = Instant::now();
    // This package is `benches/` in the repository.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the bench package sits in the repository")
        .to_path_buf();
    // Which field costs what: seconds, not the whole report's minutes.
    let mut field_runs: Vec<_> = WORKLOADS
        .iter()
        .map(|&workload| run_field_costs(workload, LOSS_ITEMS, TICKS))
        .collect();
    field_runs.push(run_mixed(LOSS_ITEMS, TICKS));
    for run in &field_runs {
        println!(
            "which field costs what: {} ({} items, {} ticks)\n{}\n",
            run.name,
            size_label(run.items),
            run.ticks,
            run.costs
        );
    }
    let field_section = field_cost_markdown(&field_runs, FIELD_COSTS_CHART);
    if std::env::args().any(|a| a == "--field-costs") {
        println!("{field_section}");
        if write {
            std::fs::create_dir_all(root.join("docs")).expect("create docs/");
            std::fs::write(root.join(FIELD_COSTS_CHART), field_cost_chart(&field_runs))
                .expect("write chart");
            eprintln!("wrote {FIELD_COSTS_CHART}");
        }
        return;
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let cpu_dir = target.join("criterion");

    let mut bits = Vec::new();
    for workload in Workload::TABLE {
        for items in SIZES {
            let t = Instant::now();
            bits.push(run_bits(workload, items, TICKS));
            eprintln!(
                "bits: {} {} in {:.1} s",
                workload.name(),
                size_label(items),
                t.elapsed().as_secs_f64()
            );
        }
    }
    let mut loss = Vec::new();
    for workload in [Workload::Sparse, Workload::Hot, Workload::Churn] {
        for rate in LOSS_RATES {
            let t = Instant::now();
            loss.push(run_loss(workload, rate));
            eprintln!(
                "loss: {} {:.0}% in {:.1} s",
                workload.name(),
                rate * 100.0,
                t.elapsed().as_secs_f64()
            );
        }
    }
    let memory = vec![measure_memory(10_000), measure_memory(100_000)];
    let t = Instant::now();
    let interest = run_interest();
    eprintln!("interest: {:.1} s", t.elapsed().as_secs_f64());
    let report = Results {
        bits,
        change: one_change(),
        removal: one_removal(),
        shuffle: one_shuffle(),
        loss,
        memory,
        interest,
        fan_out: fan_out_messages(16, TICKS),
        relay: [Workload::Sparse, Workload::Hot, Workload::Churn]
            .map(|workload| relay::run_relay_bytes(workload, LOSS_ITEMS, TICKS))
            .into(),
        handoff: relay::run_handoff_bytes(5_000, 20, TICKS),
        ghost: relay::run_ghost_bytes(5_000, 32.0, TICKS),
        inventories: relay::run_array_feed_bytes(1_000, 20, 10, TICKS),
        cpu: load_criterion(&cpu_dir),
        cpu_dir: cpu_dir
            .strip_prefix(&root)
            .map_or(cpu_dir.clone(), Path::to_path_buf),
        seconds: started.elapsed().as_secs_f64(),
    };
    print_tables(&report);
    if !write {
        return;
    }
    let mut charts = charts(&report);
    charts.push((
        "Which field costs what",
        FIELD_COSTS_CHART,
        field_cost_chart(&field_runs),
    ));
    std::fs::create_dir_all(root.join("docs")).expect("create docs/");
    for (_, file, svg) in &charts {
        std::fs::write(root.join(file), svg).expect("write chart");
    }
    let links: Vec<(&str, &str)> = charts
        .iter()
        .map(|(name, file, _)| (*name, *file))
        .collect();
    let path = root.join("BENCHMARKS.md");
    let mut markdown = format!("{}\n\n{field_section}", report.markdown(&links).trim_end());
    // The section of `benches/bevy`'s report (it needs Bevy, and a newer Rust
    // than this package): kept as it was.
    if let Some(bevy) = std::fs::read_to_string(&path)
        .ok()
        .as_deref()
        .and_then(inside_bevy_section)
    {
        if !markdown.ends_with("\n\n") {
            markdown.push('\n');
        }
        markdown.push_str(bevy);
    }
    std::fs::write(&path, markdown).expect("write BENCHMARKS.md");
    eprintln!("wrote BENCHMARKS.md and {} charts in docs/", charts.len());
}

/// The section "Inside Bevy" of `BENCHMARKS.md`, written by `cargo run
/// --release -p fastarray-bench-bevy --bin bevy_report`, with its markers.
fn inside_bevy_section(markdown: &str) -> Option<&str> {
    const BEGIN: &str = "<!-- inside-bevy:";
    const END: &str = "<!-- /inside-bevy -->\n";
    let begin = markdown.find(BEGIN)?;
    let end = begin + markdown[begin..].find(END)? + END.len();
    Some(&markdown[begin..end])
}
