//! The integration tests of the `fastarray` facade, in one binary (one
//! link instead of one per file): each module is one former test file, its
//! tests named `<module>::<test>`. `tests/allocations.rs` stays a binary of
//! its own, since it counts the process's allocations with a global
//! allocator, and `tests/ui.rs` too (trybuild's compile-fail cases).

mod array;
mod attributes;
mod audience;
mod authority_mirror;
mod baseline;
mod budget;
mod connection;
mod convergence;
mod convergence_wide;
mod depth;
mod derive;
mod detail;
mod enums;
mod events;
mod feed_arrays;
mod flatten;
mod fuzz_mixed;
mod fuzz_replay;
mod ghost;
// Public, as the hostile caller's items are: its lints (`unreachable_pub`,
// `missing_docs`) judge what the derive generates for public types.
pub mod hostile;
mod inner_arrays;
mod inner_events;
mod iter_mut;
mod limits;
mod link_model;
mod objects;
mod pre_images;
mod protocol;
mod references;
mod relay;
mod schema;
mod scope;
mod secure;
mod settled;
mod shard;
mod shared;
mod snapshot;
mod wire_eq;
mod write_many;
