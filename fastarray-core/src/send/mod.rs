//! The sending side: per connection, what its client may hold and still
//! needs ([`SendState`], with its view, pending work and retirement list);
//! per array, what writing deltas keeps (history, encode cache, the shared
//! message of caught-up connections); and the writer, which asks the
//! connection what is due, plans a message within its budget and writes it.
//!
//! The connection's state (`state`, `view`, `pending`, `retirement`,
//! `stats`, and with a scope `scope`, `seen` and `handles`, the names it
//! gives items on the wire) knows nothing of the items' type and sits
//! below `Replicate`;
//! the writer (`plan`, `write`) works on an array's items and sits above
//! its storage.

pub(crate) mod caught_up;
pub(crate) mod encode_cache;
pub(crate) mod handles;
pub(crate) mod interest;
pub(crate) mod pending;
pub(crate) mod plan;
pub(crate) mod retirement;
pub(crate) mod scope;
pub(crate) mod seen;
pub(crate) mod sender;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod view;
pub(crate) mod watchers;
pub(crate) mod write;

pub use scope::{MAX_DETAIL, ScopeExit};
pub use state::SendState;
pub use stats::{DeltaStats, Oversized};
