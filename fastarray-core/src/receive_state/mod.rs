//! What a mirror keeps between messages, below `Replicate` (it knows
//! nothing of the items' type): the newest frame applied and the recent
//! removals (`mirror`, `tombstones`) so that packets may arrive late,
//! twice, or out of order; the events a message applied reports
//! (`events`: [`Callbacks`], [`ApplyReport`], [`InnerEvent`]); and a
//! mirror's whole state to compare (`mirror_state`). Decoding and applying
//! a message, which work on the items, are `receive`'s, above storage.
//!
//! Per field of each item the mirror keeps the frame of the newest value
//! applied to it, and a field takes a value only from a newer frame; a
//! removal leaves a tombstone so a late add cannot bring the item back; a
//! message more than [`HISTORY_LEN`](crate::HISTORY_LEN) frames older than
//! the newest one applied is ignored whole (its sender has counted it as
//! lost), which also bounds how long tombstones are kept. Changed fields
//! of an item whose add has not arrived (from a frame's shared message)
//! wait for it (`early`).

pub(crate) mod early;
pub(crate) mod events;
pub(crate) mod follow;
pub(crate) mod mirror;
pub(crate) mod mirror_state;
pub(crate) mod sources;
pub(crate) mod tombstones;

pub use events::{ApplyReport, ArrayOwner, Callbacks, InnerChange, InnerEvent};
pub use follow::FeedStats;
pub use mirror_state::MirrorState;
