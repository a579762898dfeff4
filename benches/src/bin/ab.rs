//! Two builds of a timing bin compared in turn: runs `a` and `b` with the
//! same arguments, `pairs` times (each pair alternating which runs
//! first), and prints per measure the median of each side and the median
//! and range of the pairs' ratios (a ÷ b). Time
//! on a shared machine swings by a third from run to run; runs taken in
//! turn swing together, so the ratio of a pair says what the change did.
//!
//! ```sh
//! cp target/release/mmo /tmp/mmo-before    # build, copy; change; build again
//! cargo run --release -p fastarray-bench --bin ab -- /tmp/mmo-before target/release/mmo 8 -- 1000 8
//! ```
//!
//! A measure is a number followed by `ms` or `µs` in a run's output, named
//! by the word before it (`grid 31.8 ms` is `grid`), or `total` when no
//! word comes before it (the `mmo` bin's `acks 10.1 ms: 126.7 ms a
//! tick`). Both builds must print the same measures in the same order.

use std::process::{Command, exit};

use fastarray_bench::summary::{in_turn, summary};

/// Runs `bin` with `args` and returns its measures, in order.
fn measures(bin: &str, args: &[String]) -> Vec<(String, f64)> {
    let output = Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|error| {
            eprintln!("ab: cannot run {bin}: {error}");
            exit(1)
        });
    if !output.status.success() {
        eprintln!("ab: {bin} failed: {}", output.status);
        exit(1)
    }
    parse(&String::from_utf8_lossy(&output.stdout))
}

/// The measures of one run's output (see the module docs).
fn parse(text: &str) -> Vec<(String, f64)> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == ':' || c == ';')
        .filter(|word| !word.is_empty())
        .collect();
    let mut found = Vec::new();
    for (i, unit) in words.iter().enumerate().skip(1) {
        if *unit != "ms" && *unit != "µs" {
            continue;
        }
        let Ok(value) = words[i - 1].parse::<f64>() else {
            continue;
        };
        let name = match i.checked_sub(2).map(|j| words[j]) {
            Some(word)
                if !matches!(word, "ms" | "µs")
                    && word.chars().all(|c| c.is_alphabetic() || c == '_') =>
            {
                word
            }
            _ => "total",
        };
        found.push((name.to_string(), value));
    }
    found
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(args.len());
    let (ours, theirs) = args.split_at(split);
    let passed = theirs.get(1..).unwrap_or_default();
    let (a, b, pairs) = match ours {
        [a, b] => (a, b, 8),
        [a, b, pairs] => match pairs.parse::<usize>() {
            Ok(pairs) if pairs > 0 => (a, b, pairs),
            _ => usage(),
        },
        _ => usage(),
    };
    let mut sides: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    for pair in 0..pairs {
        let (x, y) = in_turn(pair, |second| measures(if second { b } else { a }, passed));
        let same = x.len() == y.len() && x.iter().zip(&y).all(|(x, y)| x.0 == y.0);
        if !same || x.is_empty() {
            eprintln!("ab: the two builds printed different measures: {x:?} against {y:?}");
            exit(1)
        }
        if sides.is_empty() {
            sides = x
                .iter()
                .map(|(name, _)| (name.clone(), Vec::new(), Vec::new()))
                .collect();
        }
        for ((_, xs, ys), ((_, x), (_, y))) in sides.iter_mut().zip(x.iter().zip(&y)) {
            xs.push(*x);
            ys.push(*y);
        }
    }
    println!("{pairs} pairs, a = {a}, b = {b}");
    for (name, xs, ys) in &mut sides {
        let mut ratios: Vec<f64> = xs.iter().zip(ys.iter()).map(|(x, y)| x / y).collect();
        let ratios = summary(&mut ratios);
        let (low, high) = ratios.range;
        println!(
            "{name:>8}: a {:9.2}  b {:9.2}  a ÷ b {:.3} (pairs {low:.3}–{high:.3})",
            summary(xs).median,
            summary(ys).median,
            ratios.median,
        );
    }
}

fn usage() -> ! {
    eprintln!("usage: ab <bin a> <bin b> [pairs] -- [arguments of both]");
    exit(2)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn measures_are_named_by_the_word_before_them() {
        let line = "1000 connections, 8 ticks: grid 31.8 ms, commit 11.1 ms, scopes 21.2 ms, \
                    writes 52.5 ms, acks 10.1 ms: 126.7 ms a tick; 686 bytes per connection per tick";
        let names: Vec<(String, f64)> = parse(line);
        let expected = [
            ("grid", 31.8),
            ("commit", 11.1),
            ("scopes", 21.2),
            ("writes", 52.5),
            ("acks", 10.1),
            ("total", 126.7),
        ];
        assert_eq!(names.len(), expected.len());
        for ((name, value), (want, at)) in names.iter().zip(expected) {
            assert_eq!((name.as_str(), *value), (want, at));
        }
        let apply = parse("Hot, 100 rounds of 64 ticks: ours 63.1 µs a tick, bytes 15.9 µs: 3.96×");
        assert_eq!(
            apply,
            [("ours".to_string(), 63.1), ("bytes".to_string(), 15.9)]
        );
    }
}
