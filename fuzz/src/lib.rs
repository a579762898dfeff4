//! Fuzz targets for `fastarray`: see `targets` and the README's
//! "Contributing" section. The target logic lives in `targets.rs`, which
//! the stable test `tests/suite/fuzz_replay.rs` also includes, so every crash
//! input kept under `fuzz/regressions/` is replayed without nightly.

pub mod targets;
