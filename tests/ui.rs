//! Compile-fail cases for `#[derive(Replicate)]`: each `tests/ui/*/*.rs`
//! must fail to build with exactly the errors in the `.stderr` beside it.
//! Regenerate with `TRYBUILD=overwrite cargo test --test ui`, then read
//! every changed `.stderr`: the message must be the clear one intended and
//! point at the offending token.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    for category in [
        "deprecated",
        "duplicate-attribute",
        "malformed",
        "misplaced",
        "multiple",
        "too-many-fields",
        "union",
        "unknown-attribute",
        "unsupported-type",
        "array-field",
        "bits-out-of-range",
        "quantize-bad-range",
        "detail",
        "audience",
        "baseline",
    ] {
        cases.compile_fail(format!("tests/ui/{category}/*.rs"));
    }
    // A type that cannot be replicated gets a note on glam's versions that
    // names the glam features that are off, so the expected output depends
    // on them: none is on under `cargo test -p fastarray`, `glam-0_33` is
    // under `cargo test --workspace` (fastarray-bevy turns it on, and a
    // workspace's build resolves features once).
    let glam = (
        cfg!(feature = "glam-0_32"),
        cfg!(feature = "glam-0_33"),
        cfg!(feature = "glam-0_34"),
    );
    match glam {
        (false, false, false) => cases.compile_fail("tests/ui/glam-notes/no-glam/*.rs"),
        (false, true, false) => cases.compile_fail("tests/ui/glam-notes/with-glam-0_33/*.rs"),
        _ => {} // other combinations: covered by neither set of outputs
    }
    // `#[replicate(serde)]` without the feature names the feature.
    #[cfg(not(feature = "serde"))]
    cases.compile_fail("tests/ui/serde-feature/*.rs");
}
