//! What fastarray's integration tests, its `crowd` example and its bench
//! tool share. Not published: a workspace member so that every test uses
//! one copy of each piece, by path, instead of including source files.
//!
//! | module | what it holds | used by |
//! |---|---|---|
//! | [`link`] | [`Link`](link::Link): a seeded lossy link (loss, bursts, reordering, duplication, late delivery after a loss report, outages), configured by a [`LinkProfile`](link::LinkProfile) | the convergence tests, `examples/crowd.rs`, the bandwidth report |
//! | [`channel`] | [`Channel`](channel::Channel): the one simulation behind both links, a `LinkProfile`'s misbehaviours plus [`Extra`](channel::Extra) ones (ghosts, held packets) | [`link`], [`wide_link`] |
//! | [`drive`] | [`drive`](drive::drive): one server → client session over a [`Link`](link::Link) until it heals and settles, the sessions of an array and of an object, and their [`Logic`](drive::Logic) (game logic, scope changes before a write, checks of what it wrote) | the convergence tests, `tests/suite/enums.rs`, `tests/suite/inner_arrays.rs`, `tests/suite/objects.rs`, `tests/suite/scope.rs` |
//! | [`fixtures`] | the squads the tests share: [`ranked`](fixtures::ranked) and [`plain`](fixtures::plain) members in an array inside the item | `budget`, `inner_arrays`, `inner_events`, `events`, `scope`, `snapshot` in `tests/suite/` |
//! | root | [`exchange`], [`exchange_object`]: the first-sync dance (commit, write, apply, acknowledge) over a perfect link, for a `FastArray` and for a `Replicated` object | most tests that need a synchronised client |
//! | [`wide_link`] | [`WideProfile`](wide_link::WideProfile): the wide suite's links, which also report delivered packets lost and hold packets past the 64-frame window | `tests/suite/convergence_wide.rs` |
//! | [`wide_drive`] | [`run`](wide_drive::run): one server, several connections, budgets, joins by snapshot, every packet checked | `tests/suite/convergence_wide.rs` |
//! | [`proxies`] | [`Proxies`](proxies::Proxies): a game's copies of what a follower holds, kept from its callbacks alone | `tests/suite/shard.rs`, `fastarray-nats/tests/shards.rs` |
//! | [`counted`] | [`Counted`](counted::Counted): a field that counts its encodes and comparisons | `tests/suite/array.rs`, `tests/suite/protocol.rs` |
//!
//! Everything is deterministic: every random draw comes from a seeded
//! `ChaCha8Rng`, and every collection is ordered.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod channel;
pub mod counted;
pub mod drive;
mod exchange;
pub mod fixtures;
pub mod link;
pub mod proxies;
pub mod wide_drive;
pub mod wide_link;

pub use exchange::{exchange, exchange_object};
