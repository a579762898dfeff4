//! Compile-fail cases for `#[derive(Replicate)]`: each `tests/ui/*/*.rs`
//! must fail to build with exactly the errors in the `.stderr` beside it.
//! Regenerate with `TRYBUILD=overwrite cargo test --test ui`, then read
//! every changed `.stderr`: the message must be the clear one intended and
//! point at the offending token.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*/*.rs");
}
