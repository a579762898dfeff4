//! Replays every fuzz input kept in the repository on stable: the seed
//! corpus (`fuzz/corpus/<target>/`) and every crash ever found
//! (`fuzz/regressions/<target>/`), through the same target functions the
//! libFuzzer binaries call (`fuzz/src/targets.rs`, included here by path).
//!
//! A regression input whose bug is not fixed yet is listed in
//! [`KNOWN_FAILING`] with the bug it shows: it is run in a child process
//! (a stack overflow aborts the process it happens in) and must still fail.
//! Once it passes, this test fails and says so: delete its line.
//!
//! `cargo test --test fuzz_replay -- --ignored write_seed_corpus`
//! regenerates the seed files; `... --ignored describe_regressions
//! --nocapture` prints every `stateful` regression as a list of ops.

#[path = "../fuzz/src/targets.rs"]
mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs, thread};

/// Regression inputs that fail until their bug is fixed, as
/// `"<target>/<file name>"`, with the bug. Empty this list as fixes land:
/// `known_failing_inputs_still_fail` names the ones that pass.
const KNOWN_FAILING: &[(&str, &str)] = &[
    (
        "object/remove-object-0",
        "a delta removing item #0 is accepted by a Replicated mirror, whose get() then panics",
    ),
    (
        "snapshot/deep-chain-stack-overflow",
        "decoding a recursive type recurses once per level with no depth limit: a snapshot \
         of 52 534 nested `Option<Box<Chain>>` levels overflows the stack",
    ),
    (
        "stateful/inner-short-frame-in-skipped-entry",
        "an entry for a removed item is skipped, but its array's delta is still read with \
         no reference frame, so a genuine late packet whose inner short frame is >= 64 is \
         refused (FrameWithoutReference)",
    ),
    (
        "stateful/budget-livelock-squads",
        "budgeted writes livelock for items with array fields: every message carries an \
         arrays-only entry for each squad and no inner array gets bits to progress",
    ),
    (
        "stateful/budget-livelock-platoons",
        "the same livelock, for items with two array fields, one of items with arrays",
    ),
];

/// The environment variable naming the one input a child process replays.
const CHILD_INPUT: &str = "FASTARRAY_FUZZ_REPLAY_INPUT";

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Every kept input: `(target, "<target>/<file name>", path)`, corpus
/// first, sorted.
fn kept_inputs() -> Vec<(&'static str, String, PathBuf)> {
    let mut inputs = Vec::new();
    for kind in ["corpus", "regressions"] {
        for target in targets::TARGETS {
            let dir = fuzz_dir().join(kind).join(target);
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.is_file())
                .collect();
            files.sort();
            for path in files {
                let name = path.file_name().unwrap().to_string_lossy();
                inputs.push((target, format!("{target}/{name}"), path));
            }
        }
    }
    inputs
}

fn is_known_failing(key: &str) -> bool {
    KNOWN_FAILING.iter().any(|&(name, _)| name == key)
}

#[test]
fn every_kept_fuzz_input_replays() {
    let inputs = kept_inputs();
    assert!(
        inputs.iter().any(|(_, key, _)| key.contains("/seed-")),
        "no seed corpus under {}",
        fuzz_dir().display()
    );
    let mut failures = Vec::new();
    for (target, key, path) in inputs {
        if is_known_failing(&key) {
            continue;
        }
        let data = fs::read(&path).unwrap();
        // A thread per input, named after it: a stack overflow aborts the
        // process, and the runtime's message then names the input.
        let outcome = thread::Builder::new()
            .name(key.clone())
            .spawn(move || catch_unwind(AssertUnwindSafe(|| targets::run(target, &data))))
            .unwrap()
            .join()
            .unwrap();
        if outcome.is_err() {
            failures.push(key);
        }
    }
    assert!(
        failures.is_empty(),
        "fuzz inputs that fail (a new regression, or one to list in KNOWN_FAILING \
         with its bug): {failures:#?}"
    );
}

#[test]
fn known_failing_inputs_still_fail() {
    let inputs = kept_inputs();
    let mut fixed = Vec::new();
    for &(key, bug) in KNOWN_FAILING {
        assert!(
            inputs.iter().any(|(_, k, _)| k == key),
            "KNOWN_FAILING names {key}, which is not under fuzz/regressions/"
        );
        let child = Command::new(env::current_exe().unwrap())
            .args(["replay_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_INPUT, key)
            .output()
            .unwrap();
        if child.status.success() {
            fixed.push(format!("{key} ({bug})"));
        }
    }
    assert!(
        fixed.is_empty(),
        "known-failing fuzz inputs now pass: delete them from KNOWN_FAILING in \
         tests/fuzz_replay.rs: {fixed:#?}"
    );
}

/// In a child process started by `known_failing_inputs_still_fail`:
/// replays the one input named by the environment. Does nothing otherwise.
#[test]
fn replay_child() {
    let Ok(key) = env::var(CHILD_INPUT) else {
        return;
    };
    let (target, _) = key.split_once('/').unwrap();
    let target = targets::TARGETS.into_iter().find(|&t| t == target).unwrap();
    let data = fs::read(fuzz_dir().join("regressions").join(&key)).unwrap();
    targets::run(target, &data);
}

/// Regenerates `fuzz/corpus/<target>/seed-*` from the current library
/// (seed files no longer generated are deleted; other corpus files are
/// left alone). Run it on its own: the replay reads those files.
#[test]
#[ignore = "writes files: run it to regenerate the seed corpus"]
fn write_seed_corpus() {
    let corpus = fuzz_dir().join("corpus");
    let seeds = targets::seed_corpus();
    for seed in &seeds {
        // Every seed must pass its own target.
        targets::run(seed.target, &seed.bytes);
        let dir = corpus.join(seed.target);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(&seed.name), &seed.bytes).unwrap();
    }
    for target in targets::TARGETS {
        for entry in fs::read_dir(corpus.join(target)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let current = seeds.iter().any(|s| s.target == target && s.name == name);
            if name.starts_with("seed-") && !current {
                fs::remove_file(path).unwrap();
            }
        }
    }
}

/// Prints each `stateful` regression input as its ops.
#[test]
#[ignore = "prints the stateful regressions as scripts"]
fn describe_regressions() {
    let dir = fuzz_dir().join("regressions").join("stateful");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    files.sort();
    for path in files {
        let data = fs::read(&path).unwrap();
        println!("== {}\n{}", path.display(), targets::describe_script(&data));
    }
}
