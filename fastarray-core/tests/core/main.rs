//! The integration tests of `fastarray-core`, in one binary: each module
//! is one concept's tests. Binaries of their own: `layers.rs` (the layer
//! check), `observe.rs` (the process-wide tracing subscriber and metrics
//! recorder), `serde.rs` and `bitstream_io.rs` (they measure the largest
//! allocation with a global allocator, which other tests running beside
//! them would disturb).

mod ack;
mod audience_masks;
mod codec;
mod glam;
mod glam_versions;
mod interest_grid;
mod persist;
mod serde_field;
mod std_collections;
