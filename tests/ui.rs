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
    ] {
        cases.compile_fail(format!("tests/ui/{category}/*.rs"));
    }
    // `#[replicate(serde)]` without the feature names the feature.
    #[cfg(not(feature = "serde"))]
    cases.compile_fail("tests/ui/serde-feature/*.rs");
}
