//! Replays every fuzz input kept in the repository on stable: the seed
//! corpus (`fuzz/corpus/<target>/`) and every crash ever found
//! (`fuzz/regressions/<target>/`), through the same target functions the
//! libFuzzer binaries call (`fuzz/src/targets.rs`, included here by path).
//!
//! A crash input lands with the fix of the bug it shows
//! (`fuzz/regressions/README.md` says what each one shows), so every input
//! must pass. Each runs on a thread named after it, so that a stack
//! overflow, which aborts the process, names the input.
//!
//! `cargo test --test suite -- --ignored fuzz_replay::write_seed_corpus`
//! regenerates the seed files; `... --ignored describe_regressions
//! --nocapture` prints every `stateful` regression as a list of ops.

#[path = "../../fuzz/src/targets.rs"]
mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::{fs, thread};

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
    assert!(failures.is_empty(), "fuzz inputs that fail: {failures:#?}");
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
