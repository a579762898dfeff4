//! Charts: hand-written SVG grouped bar charts with a log scale, and the
//! report's three charts.

use std::fmt::Write as _;

use fastarray_bench::Workload;

use crate::LOSS_ITEMS;
use crate::format::num;
use crate::report::Results;

#[derive(Clone, Copy)]
struct Series {
    name: &'static str,
    color: &'static str,
}

struct Group {
    label: String,
    section: String,
    values: Vec<f64>,
}

const SERIES: [Series; 5] = [
    Series {
        name: "fastarray delta",
        color: "#1b9e77",
    },
    Series {
        name: "naive position diff",
        color: "#d95f02",
    },
    Series {
        name: "Unreal FastArray (model)",
        color: "#7570b3",
    },
    Series {
        name: "full snapshot (ours)",
        color: "#e6ab02",
    },
    Series {
        name: "full state (bitcode)",
        color: "#666666",
    },
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn axis_label(value: f64) -> String {
    match value {
        v if v >= 1e9 => format!("{:.0}G", v / 1e9),
        v if v >= 1e6 => format!("{:.0}M", v / 1e6),
        v if v >= 1e3 => format!("{:.0}k", v / 1e3),
        v if v >= 1.0 => format!("{v:.0}"),
        v => format!("{v}"),
    }
}

/// A grouped bar chart, log10 y axis. Zero values draw no bar.
fn bar_chart(title: &str, y_label: &str, series: &[Series], groups: &[Group]) -> String {
    let positive = groups
        .iter()
        .flat_map(|g| g.values.iter().copied())
        .filter(|v| *v > 0.0);
    let (min, max) = positive.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let lo = (min * 0.9).log10().floor();
    let hi = max.log10().ceil().max(lo + 1.0);
    let (left, right, plot_h) = (70.0, 20.0, 300.0);
    let width =
        (left + right + groups.len() as f64 * (series.len() as f64 * 13.0 + 18.0)).max(760.0);
    let group_width = (width - left - right) / groups.len().max(1) as f64;
    let bar = ((group_width - 14.0) / series.len() as f64).min(22.0);
    let gap = group_width - bar * series.len() as f64;
    // Legend entries, wrapped into rows that fit the width.
    let mut legend = Vec::new();
    let (mut x, mut row) = (left, 0.0);
    for s in series {
        let entry = 24.0 + 7.0 * s.name.chars().count() as f64;
        if x + entry > width - right && x > left {
            x = left;
            row += 1.0;
        }
        legend.push((x, 32.0 + 18.0 * row, s));
        x += entry;
    }
    let top = 70.0 + 18.0 * row;
    let height = top + plot_h + 70.0;
    let y_of = |v: f64| top + plot_h - (v.log10() - lo) / (hi - lo) * plot_h;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{left}" y="20" font-size="15" font-weight="bold">{}</text>"#,
        escape(title)
    );
    for (x, y, s) in legend {
        let _ = writeln!(
            svg,
            r#"<rect x="{x:.0}" y="{y:.0}" width="12" height="12" fill="{}"/><text x="{:.0}" y="{:.0}">{}</text>"#,
            s.color,
            x + 16.0,
            y + 11.0,
            escape(s.name)
        );
    }
    // Grid: one line per decade.
    let mut decade = lo;
    while decade <= hi {
        let v = 10f64.powf(decade);
        let y = y_of(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{left}" x2="{:.0}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.0}" y="{:.1}" text-anchor="end">{}</text>"##,
            width - right,
            left - 6.0,
            y + 4.0,
            axis_label(v)
        );
        decade += 1.0;
    }
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16 {:.0}) rotate(-90)" text-anchor="middle">{}</text>"#,
        top + plot_h / 2.0,
        escape(y_label)
    );
    // Bars.
    let mut section_start = 0usize;
    for (i, group) in groups.iter().enumerate() {
        let x0 = left + gap / 2.0 + i as f64 * group_width;
        for (k, value) in group.values.iter().enumerate() {
            if *value <= 0.0 {
                continue;
            }
            let y = y_of(*value);
            let _ = writeln!(
                svg,
                r#"<rect x="{:.1}" y="{y:.1}" width="{bar}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                x0 + k as f64 * bar,
                top + plot_h - y,
                series[k].color,
                escape(series[k].name),
                num(*value)
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.0}" text-anchor="middle">{}</text>"#,
            x0 + series.len() as f64 * bar / 2.0,
            top + plot_h + 16.0,
            escape(&group.label)
        );
        let last = groups.get(i + 1).is_none_or(|g| g.section != group.section);
        if last && !group.section.is_empty() {
            let from = left + section_start as f64 * group_width;
            let to = left + (i + 1) as f64 * group_width;
            let _ = writeln!(
                svg,
                r##"<line x1="{:.0}" x2="{:.0}" y1="{:.0}" y2="{:.0}" stroke="#888"/><text x="{:.0}" y="{:.0}" text-anchor="middle" font-weight="bold">{}</text>"##,
                from + 4.0,
                to - 4.0,
                top + plot_h + 26.0,
                top + plot_h + 26.0,
                (from + to) / 2.0,
                top + plot_h + 42.0,
                escape(&group.section)
            );
            section_start = i + 1;
        }
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{left}" x2="{left}" y1="{top}" y2="{:.0}" stroke="#333"/></svg>"##,
        top + plot_h
    );
    svg
}

// ---------------------------------------------------------------------------
// The report's charts.

pub fn charts(report: &Results) -> Vec<(&'static str, &'static str, String)> {
    let mut out = Vec::new();
    let groups: Vec<Group> = report
        .bits
        .iter()
        .filter(|b| b.items == LOSS_ITEMS)
        .map(|b| Group {
            label: b.workload.expect("set").name().into(),
            section: String::new(),
            values: vec![
                b.per_tick(b.ours),
                b.per_tick(b.naive),
                b.per_tick(b.ue),
                b.per_tick(b.snapshot),
                b.per_tick(b.bitcode),
            ],
        })
        .collect();
    out.push((
        "Bits per tick by workload, 10k items",
        "docs/bits-by-workload.svg",
        bar_chart(
            "Bits per tick per connection, 10k items (log scale)",
            "bits per tick",
            &SERIES,
            &groups,
        ),
    ));

    let loss_series = [SERIES[0], SERIES[1], SERIES[2], SERIES[4]];
    let groups: Vec<Group> = report
        .loss
        .iter()
        .map(|l| Group {
            label: format!("{:.0}%", l.rate * 100.0),
            section: l.workload.expect("set").name().into(),
            values: [l.ours, l.naive, l.ue, l.bitcode]
                .iter()
                .map(|&v| v as f64 / l.ticks as f64)
                .collect(),
        })
        .collect();
    out.push((
        "Bits per tick vs loss rate, 10k items",
        "docs/bits-vs-loss.svg",
        bar_chart(
            "Bits per tick per connection vs packet loss, 10k items (log scale)",
            "bits per tick",
            &loss_series,
            &groups,
        ),
    ));

    let cpu_series = [
        Series {
            name: "fastarray commit + write",
            color: SERIES[0].color,
        },
        Series {
            name: "naive diff + encode",
            color: SERIES[1].color,
        },
        Series {
            name: "snapshot encode (ours)",
            color: SERIES[3].color,
        },
        Series {
            name: "bitcode encode",
            color: SERIES[4].color,
        },
    ];
    let groups: Vec<Group> = Workload::TABLE
        .iter()
        .filter_map(|w| {
            let get = |f: &str| report.cpu(&format!("{}_10k/{f}", w.name()));
            Some(Group {
                label: w.name().into(),
                section: String::new(),
                values: vec![
                    get("ours_commit")? + get("ours_write")?,
                    get("naive_diff_encode")?,
                    get("snapshot_encode")?,
                    get("bitcode_encode")?,
                ],
            })
        })
        .collect();
    if !groups.is_empty() {
        out.push((
            "Server CPU per tick, 10k items",
            "docs/cpu-server.svg",
            bar_chart(
                "Server CPU per tick and connection, 10k items, ns (log scale)",
                "nanoseconds",
                &cpu_series,
                &groups,
            ),
        ));
    }
    out
}
