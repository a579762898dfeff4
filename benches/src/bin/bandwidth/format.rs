//! Formatting numbers, ratios, times and sizes for the tables.

/// A number with thousands separated by thin commas; one decimal below 100.
pub fn num(value: f64) -> String {
    if value < 100.0 && value.fract() != 0.0 {
        return format!("{value:.1}");
    }
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A ratio like `0.123×` or `12.3×`.
pub fn ratio(value: f64) -> String {
    if value >= 100.0 {
        format!("{}×", num(value.round()))
    } else if value >= 10.0 {
        format!("{value:.1}×")
    } else if value >= 0.01 {
        format!("{value:.2}×")
    } else if value >= 0.0001 {
        format!("{value:.4}×")
    } else {
        format!("{value:.1e}×")
    }
}

/// Nanoseconds as `µs` or `ms`.
pub fn time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Heap bytes of a hashbrown map holding `entries` entries of `entry`
/// bytes, grown by insertion: buckets × (entry + 1 control byte) + 16
/// trailing control bytes.
pub fn map_bytes(entries: usize, entry: usize) -> f64 {
    let mut buckets = 8usize;
    while buckets / 8 * 7 < entries {
        buckets *= 2;
    }
    (buckets * (entry + 1) + 16) as f64
}

pub fn size_label(items: usize) -> String {
    format!("{}k", items / 1000)
}
