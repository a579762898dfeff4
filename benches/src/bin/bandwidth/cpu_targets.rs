//! The targets of issue 15 (CPU where everything moves, dense bits): each
//! a ratio of two figures of the same run, against the stronger naive
//! baseline where there are two (the byte-level differ is usually faster).

use std::fmt::Write as _;

use fastarray_bench::Workload;

use crate::LOSS_ITEMS;
use crate::format::ratio;
use crate::report::{Results, status};

/// One target: what it measures, the ratio, and its limit.
struct Row {
    name: &'static str,
    of: String,
    value: Option<f64>,
    limit: f64,
}

impl Results {
    /// The faster of the two naive baselines' `codec` and `bytes` figures
    /// in `group`.
    pub fn stronger_naive(&self, group: &str, codec: &str, bytes: &str) -> Option<f64> {
        match (
            self.cpu(&format!("{group}/{codec}")),
            self.cpu(&format!("{group}/{bytes}")),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn server_tick(&self, group: &str) -> Option<f64> {
        Some(
            self.cpu(&format!("{group}/ours_commit"))?
                + self.cpu(&format!("{group}/ours_write"))?,
        )
    }

    fn over(&self, a: &str, b: &str) -> Option<f64> {
        Some(self.cpu(a)? / self.cpu(b)?)
    }

    /// The section of `BENCHMARKS.md` with issue 15's targets.
    pub fn cpu_targets_markdown(&self, md: &mut String) {
        let hot_naive = self.stronger_naive("hot_10k", "naive_diff_encode", "bytes_diff_encode");
        let dense_naive =
            self.stronger_naive("dense_10k", "naive_diff_encode", "bytes_diff_encode");
        let div = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
        let dense = self.bits_of(Workload::Dense, LOSS_ITEMS);
        let sparse = self.bits_of(Workload::Sparse, LOSS_ITEMS);
        let rows = [
            Row {
                name: "hot: commit + write ÷ naive diff + encode",
                of: "`hot_10k`".into(),
                value: div(self.server_tick("hot_10k"), hot_naive),
                limit: 0.75,
            },
            Row {
                name: "dense: commit + write ÷ naive diff + encode",
                of: "`dense_10k`".into(),
                value: div(self.server_tick("dense_10k"), dense_naive),
                limit: 1.5,
            },
            Row {
                name: "dense: commit + write ÷ bitcode full encode",
                of: "`dense_10k`".into(),
                value: div(
                    self.server_tick("dense_10k"),
                    self.cpu("dense_10k/bitcode_encode"),
                ),
                limit: 3.0,
            },
            Row {
                name: "hot: client apply ÷ naive apply",
                of: "`hot_10k`".into(),
                value: div(
                    self.cpu("hot_10k/ours_apply"),
                    self.stronger_naive("hot_10k", "naive_apply", "bytes_apply"),
                ),
                limit: 0.5,
            },
            Row {
                name: "dense: client apply ÷ naive apply",
                of: "`dense_10k`".into(),
                value: div(
                    self.cpu("dense_10k/ours_apply"),
                    self.stronger_naive("dense_10k", "naive_apply", "bytes_apply"),
                ),
                limit: 0.5,
            },
            Row {
                name: "dense mutation through an iterator of guards ÷ the same on a `Vec`",
                of: "`dense_iter_mut_agent`".into(),
                value: self.over(
                    "dense_iter_mut_agent/ours_iter_mut",
                    "dense_iter_mut_agent/vec",
                ),
                limit: 3.0,
            },
            Row {
                name: "dense mutation by `get_mut(id)` ÷ the same on a `Vec`",
                of: "`dense_iter_mut_agent`".into(),
                value: self.over(
                    "dense_iter_mut_agent/ours_ids_get_mut",
                    "dense_iter_mut_agent/vec",
                ),
                limit: 15.0,
            },
            Row {
                name: "churn: 16 connections ÷ 1",
                of: "`fanout_churn_10k`".into(),
                value: self.over("fanout_churn_10k/conns_16", "fanout_churn_10k/conns_1"),
                limit: 3.0,
            },
            Row {
                name: "churn, each packet acknowledged two ticks late: 16 connections ÷ 1",
                of: "`fanout_churn_late_10k`".into(),
                value: self.over(
                    "fanout_churn_late_10k/conns_16",
                    "fanout_churn_late_10k/conns_1",
                ),
                limit: 3.0,
            },
            Row {
                name: "sparse: 256 caught-up connections ÷ 1, messages lent (`write_delta_slice`)",
                of: "`fanout_slice_10k`".into(),
                value: self.over("fanout_slice_10k/conns_256", "fanout_slice_10k/conns_1"),
                limit: 4.0,
            },
            Row {
                name: "sparse: 256 caught-up connections ÷ 1, messages handed out shared by a \
                       reference count (`write_delta_bytes`)",
                of: "`fanout_bytes_10k`".into(),
                value: self.over("fanout_bytes_10k/conns_256", "fanout_bytes_10k/conns_1"),
                limit: 4.0,
            },
            Row {
                name: "dense bits ÷ value bits",
                of: "bits, dense 10k".into(),
                value: Some(dense.ours as f64 / dense.raw_values as f64),
                limit: 1.15,
            },
            Row {
                name: "sparse bits per changed item (header included)",
                of: "bits, sparse 10k".into(),
                value: Some(sparse.ours as f64 / sparse.changes as f64),
                limit: 26.0,
            },
        ];
        let _ = writeln!(
            md,
            "## Issue 15: CPU where everything moves, dense bits\n\n\
             Ratios of two figures of this run (criterion medians, or exact bit counts). \"naive\" is the faster of \
             the two naive baselines (see the CPU tables).\n\n\
             | target | from | measured | limit | status |\n|---|---|---|---|---|"
        );
        for row in rows {
            let bits = row.name.contains("bits");
            let show = |v: f64| {
                if bits && v > 2.0 {
                    format!("{v:.1}")
                } else {
                    ratio(v)
                }
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | ≤ {} | {} |",
                row.name,
                row.of,
                row.value.map_or("not measured".into(), show),
                show(row.limit),
                status(row.value.map(|v| v <= row.limit)),
            );
        }
        let _ = writeln!(md);
    }
}
