//! Which field costs what: the `Agent` workloads' messages broken down by
//! field with [`FieldCosts`] (each commit's changed fields measured alone,
//! whole items apart, the rest of the messages as overhead), the table
//! and the chart `docs/field-costs.svg` (a bar per workload, a segment per
//! field by its share of the bits).

use std::fmt::Write as _;

use fastarray::{FastArray, FieldCosts, ReplicationId};
use fastarray_bench::{
    Agent, POSITION_RANGE, Script, Workload, apply_ours, caught_up, server_array,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::SEED;
use crate::format::num;

/// The workloads broken down: those where different fields change.
pub const WORKLOADS: [Workload; 3] = [Workload::Sparse, Workload::Hot, Workload::Churn];

/// One workload's breakdown.
pub struct FieldCostRun {
    /// The workload's name.
    pub name: &'static str,
    /// What happens per tick.
    pub describe: &'static str,
    pub items: usize,
    pub ticks: u32,
    pub costs: FieldCosts<Agent>,
}

/// Runs `workload` on `items` agents for `ticks` ticks, one caught-up
/// connection acknowledging every message, and breaks its messages down.
pub fn run_field_costs(workload: Workload, items: usize, ticks: u32) -> FieldCostRun {
    let (mut script, agents) = Script::new(workload, items, SEED);
    let mut ops = Vec::new();
    measure(
        workload.name(),
        workload.describe(),
        &agents,
        ticks,
        |server| {
            script.tick(&mut ops);
            apply_ours(server, &ops);
        },
    )
}

/// What [`MIXED`] does per tick.
pub const MIXED: &str = "10% move, 2% turn, 1% lose health, 1% change ammo, 0.1% are renamed";

/// A tick where every field changes somewhere, as in a game (the crowd
/// demo's mix): of the agents, 10% move (`position`), 2% turn
/// (`velocity`), 1% lose health, 1% change ammo, 0.1% are renamed.
/// Seeded: the same bits on every machine.
pub fn run_mixed(items: usize, ticks: u32) -> FieldCostRun {
    let (_, agents) = Script::new(Workload::Hot, items, SEED);
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 0xf1e1d);
    let mut ids: Vec<ReplicationId> = Vec::new();
    measure(
        "mixed",
        MIXED,
        &agents,
        ticks,
        |server: &mut FastArray<Agent>| {
            if ids.is_empty() {
                ids = server.ids().collect();
            }
            for &id in &ids {
                let roll: f64 = rng.random();
                let Some(mut agent) = server.get_mut(id) else {
                    continue;
                };
                if roll < 0.10 {
                    let step = rng.random_range(-4.0..4.0);
                    let x = &mut agent.position[0];
                    *x = (*x + step).clamp(-POSITION_RANGE, POSITION_RANGE);
                } else if roll < 0.12 {
                    agent.velocity = [
                        rng.random_range(-2.0..2.0),
                        0.0,
                        rng.random_range(-2.0..2.0),
                    ];
                } else if roll < 0.13 {
                    agent.health = agent.health.wrapping_sub(rng.random_range(1..20));
                } else if roll < 0.14 {
                    agent.ammo = rng.random();
                } else if roll < 0.141 {
                    agent.name = format!("renamed-{}", rng.random_range(0..1000u32));
                }
            }
        },
    )
}

/// Runs `tick` on `agents` for `ticks` ticks, one caught-up connection
/// acknowledging every message, and breaks its messages down.
fn measure(
    name: &'static str,
    describe: &'static str,
    agents: &[Agent],
    ticks: u32,
    mut tick: impl FnMut(&mut FastArray<Agent>),
) -> FieldCostRun {
    let mut server = server_array(agents);
    let (mut conn, _) = caught_up(&mut server, 0);
    let mut costs = FieldCosts::new();
    let mut out = Vec::new();
    for packet in 1..=ticks {
        tick(&mut server);
        server.commit();
        costs.record(&server);
        out.clear();
        let stats = server
            .write_delta(&mut conn, packet, &mut out)
            .expect("write");
        costs.record_message(&stats);
        conn.on_ack(packet);
    }
    FieldCostRun {
        name,
        describe,
        items: agents.len(),
        ticks,
        costs,
    }
}

/// A segment of a bar: what it is and its bits.
struct Segment {
    name: String,
    bits: u64,
}

/// The segments of a run: its fields in mask order, the whole items, the
/// overhead.
fn segments(run: &FieldCostRun) -> Vec<Segment> {
    let mut out: Vec<Segment> = run
        .costs
        .fields()
        .iter()
        .map(|field| Segment {
            name: field.name.clone(),
            bits: field.bits,
        })
        .collect();
    out.push(Segment {
        name: "whole items (adds)".into(),
        bits: run.costs.added().1,
    });
    out.push(Segment {
        name: "ids, keys, masks, frames".into(),
        bits: run.costs.overhead_bits().unwrap_or(0),
    });
    out
}

const COLORS: [&str; 8] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#999999",
];

/// A 100% stacked bar per run, a segment per field (and the whole items
/// and the overhead), labelled with its share where it is wide enough.
pub fn field_cost_chart(runs: &[FieldCostRun]) -> String {
    let (left, right, bar_h, gap) = (80.0, 20.0, 34.0, 22.0);
    let width = 860.0;
    let plot_w = width - left - right;
    let names: Vec<String> = runs
        .first()
        .map(|run| segments(run).into_iter().map(|s| s.name).collect())
        .unwrap_or_default();
    // Legend entries, wrapped into rows that fit the width.
    let mut legend = Vec::new();
    let (mut x, mut row) = (left, 0.0);
    for (i, name) in names.iter().enumerate() {
        let entry = 32.0 + 7.0 * name.chars().count() as f64;
        if x + entry > width - right && x > left {
            x = left;
            row += 1.0;
        }
        legend.push((x, 32.0 + 18.0 * row, i, name));
        x += entry;
    }
    let top = 70.0 + 18.0 * row;
    let height = top + runs.len() as f64 * (bar_h + gap) + 40.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let title = match runs.first() {
        Some(run) => format!(
            "Which field costs what: share of the bits on the wire, {} agents, {} ticks",
            num(run.items as f64),
            run.ticks
        ),
        None => "Which field costs what".to_string(),
    };
    let _ = writeln!(
        svg,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{left}" y="20" font-size="15" font-weight="bold">{}</text>"#,
        escape(&title)
    );
    for (x, y, i, name) in legend {
        let _ = writeln!(
            svg,
            r#"<rect x="{x:.0}" y="{y:.0}" width="12" height="12" fill="{}"/><text x="{:.0}" y="{:.0}">{}</text>"#,
            COLORS[i % COLORS.len()],
            x + 16.0,
            y + 11.0,
            escape(name)
        );
    }
    for (r, run) in runs.iter().enumerate() {
        let y = top + r as f64 * (bar_h + gap);
        let total = run.costs.total_bits().max(1) as f64;
        let _ = writeln!(
            svg,
            r#"<text x="{:.0}" y="{:.1}" text-anchor="end" font-weight="bold">{}</text>"#,
            left - 8.0,
            y + bar_h / 2.0 + 4.0,
            run.name
        );
        let mut x = left;
        for (i, segment) in segments(run).iter().enumerate() {
            if segment.bits == 0 {
                continue;
            }
            let share = segment.bits as f64 / total;
            let w = share * plot_w;
            let per_tick = segment.bits as f64 / f64::from(run.ticks.max(1));
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{bar_h}" fill="{}"><title>{}: {:.1}% ({} bits per tick)</title></rect>"#,
                COLORS[i % COLORS.len()],
                escape(&segment.name),
                100.0 * share,
                num(per_tick)
            );
            if w > 36.0 {
                let _ = writeln!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="white">{:.0}%</text>"#,
                    x + w / 2.0,
                    y + bar_h / 2.0 + 4.0,
                    100.0 * share
                );
            }
            x += w;
        }
        let _ = writeln!(
            svg,
            r##"<text x="{left}" y="{:.1}" fill="#555">{} bits per tick ({})</text>"##,
            y + bar_h + 14.0,
            num(total / f64::from(run.ticks.max(1))),
            escape(&run.describe.replace('`', ""))
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The section of `BENCHMARKS.md`: per workload, the table.
pub fn field_cost_markdown(runs: &[FieldCostRun], chart: &str) -> String {
    let mut md = String::new();
    let (items, ticks) = runs.first().map_or((0, 0), |run| (run.items, run.ticks));
    let _ = writeln!(md, "## Which field costs what\n");
    let _ = writeln!(
        md,
        "The messages of the bits table's sparse, hot and churn workloads, and of a mixed one where every field changes somewhere \
         ({MIXED}), {} agents, {ticks} ticks, one caught-up connection, broken down by `FieldCosts`: \
         each commit's changed fields encoded alone (exactly the bits a change entry spends on them), whole items (adds) apart, \
         and the rest of each message (ids, keys, field masks or handles, removals, frames) as overhead. Bits per tick; \
         share of all the messages carried. `cargo run --release -p fastarray-bench --bin bandwidth -- --field-costs` \
         prints this section and redraws the chart alone.\n",
        num(items as f64)
    );
    let _ = writeln!(md, "![Which field costs what]({chart})\n");
    let _ = writeln!(
        md,
        "| workload | field | changes/tick | bits/tick | share |\n|---|---|---|---|---|"
    );
    for run in runs {
        let total = run.costs.total_bits().max(1) as f64;
        let per = |v: u64| num(v as f64 / f64::from(run.ticks.max(1)));
        for segment in segments(run) {
            if segment.bits == 0 {
                continue;
            }
            let changes = run
                .costs
                .fields()
                .iter()
                .find(|f| f.name == segment.name)
                .map(|f| per(f.changes))
                .unwrap_or_else(|| match segment.name.as_str() {
                    "whole items (adds)" => per(run.costs.added().0),
                    _ => String::new(),
                });
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.1}% |",
                run.name,
                segment.name,
                changes,
                per(segment.bits),
                100.0 * segment.bits as f64 / total
            );
        }
    }
    md
}
