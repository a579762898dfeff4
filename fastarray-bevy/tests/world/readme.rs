//! The README's Bevy program is `examples/minimal.rs`, word for word, and
//! it runs.

use std::process::Command;

#[test]
fn the_readme_shows_the_minimal_example() {
    let readme = include_str!("../../../README.md");
    let example = include_str!("../../examples/minimal.rs");
    let start = readme
        .find("```rust,ignore\nuse std::{thread::sleep")
        .expect("the README's Bevy program");
    let block = &readme[start + "```rust,ignore\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    assert_eq!(
        block, example,
        "README.md's program differs from examples/minimal.rs"
    );
}

#[test]
fn the_minimal_example_runs() {
    let status = Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "-p",
            "fastarray-bevy",
            "--example",
            "minimal",
        ])
        .status()
        .unwrap();
    assert!(status.success());
}
