//! Arrays inside items (`#[replicate(array)]` fields), type-erased: what
//! the machinery of the item that holds one drives in it — commit, writing
//! its delta for a connection, reading and applying one, snapshots —
//! without knowing its item type. `#[derive(Replicate)]` hands these out
//! through [`Replicate::for_each_array`](crate::Replicate::for_each_array);
//! `FastArray<U>` implements them.
//!
//! Plumbing of the derive, not an API: users never call it.

use core::any::Any;

use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError, SendError};
use crate::limits::ArrayLimits;
use crate::receive_state::events::{ApplyReport, ArrayPath, InnerEvent};
use crate::receive_state::mirror_state::MirrorState;
use crate::send_state::SendState;
use crate::send_state::stats::{Budget, DeltaStats};

/// What `#[derive(Replicate)]` requires of the type of a
/// `#[replicate(array)]` field: that it be a `FastArray` (whose items'
/// schema joins the owner's), and the typed ways in to its
/// [`InnerArray`]. Every use the derive makes of such a field goes
/// through this trait, so a field of another type is one error that says
/// what to write instead.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "array fields must be `FastArray<T>`: `{Self}` is not a `FastArray`",
    label = "`#[replicate(array)]` on a field of type `{Self}`",
    note = "an array field is a `FastArray<T>` (with `T: Replicate`), replicated by id: use `FastArray<T>`, or remove `#[replicate(array)]` to send the field as a plain value"
)]
pub trait ArrayField: Sized {
    /// The schema hash of the array's item type: the field's part of its
    /// owner's schema hash.
    const ELEMENT_SCHEMA_HASH: u64;
    /// An empty array of the same type that carries this one's identity
    /// and frame: the pre-image of an array field, against which a commit
    /// checks that the array was edited, not replaced.
    fn empty_like(&self) -> Self;
    /// A new, empty array.
    fn empty() -> Self;
    /// The array, as its owner drives it.
    fn as_inner(&self) -> &dyn InnerArray;
    /// The array, as its owner drives it, mutably.
    fn as_inner_mut(&mut self) -> &mut dyn InnerArray;
}

/// An array inside an item, as its owner drives it.
#[doc(hidden)]
pub trait InnerArray {
    /// Which array this is, for the check that an array field was edited,
    /// not replaced (see [`ArrayField::empty_like`]).
    fn lineage(&self) -> Lineage;
    /// Whether it has changes since its last commit.
    fn has_uncommitted_work(&self) -> bool;
    /// Commits its changes; returns whether anything changed.
    fn commit_changes(&mut self) -> bool;
    /// The array, to tell its type.
    fn as_any(&self) -> &dyn Any;
    /// Whether `other` is an array of the same type that holds the same
    /// ids with items equal on the wire (`FastArray::wire_eq`).
    fn wire_eq_array(&self, other: &dyn InnerArray) -> bool;
    /// Writes its delta for a connection into the owner's message, within
    /// `budget` if given.
    fn write_delta_into(
        &mut self,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError>;
    /// Decodes one delta and checks it against this array (the mirror it
    /// will be applied to) and `limits` (its owner's), without applying
    /// it. `None` when it has nothing to apply (an empty or stale message).
    fn decode_delta_from(
        &self,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<Option<InnerDelta>, DecodeError>;
    /// Reads past one delta whose owner is being dropped: nothing is
    /// checked or kept.
    fn skip_delta_from(&self, reader: &mut BitReader<'_>) -> Result<(), DecodeError>;
    /// Applies what [`decode_delta_from`](Self::decode_delta_from) returned,
    /// telling `sink` what it did to this array's items (and to the items
    /// of the arrays inside them), this array being the one at `at`.
    fn apply_decoded_delta(
        &mut self,
        decoded: InnerDelta,
        at: &ArrayPath<'_>,
        sink: &mut dyn FnMut(&InnerEvent<'_>),
    ) -> ApplyReport;
    /// Tells `sink` that every item is `Added`, each before the items of
    /// the arrays inside it: what a mirror says of the arrays of an item
    /// it adds.
    fn announce(&self, at: &ArrayPath<'_>, sink: &mut dyn FnMut(&InnerEvent<'_>));
    /// Tells `sink` that every item is `Removed`, each after the items of
    /// the arrays inside it: what a mirror says of the arrays of an item
    /// it removes.
    fn retire(&self, at: &ArrayPath<'_>, sink: &mut dyn FnMut(&InnerEvent<'_>));
    /// Whether the client of `state` holds every change this array
    /// committed (see `FastArray::is_settled`).
    fn is_settled_for(&self, state: &SendState) -> bool;
    /// The send state of a client that holds it as a snapshot of it now
    /// would give it, serving `client`.
    fn snapshot_state(&self, client: Option<u64>) -> SendState;
    /// Writes its frame and items as in a snapshot (no kind, no schema
    /// hash), for the connection serving `client`.
    fn encode_snapshot_body(
        &self,
        client: Option<u64>,
        writer: &mut BitWriter<'_>,
    ) -> Result<(), EncodeError>;
    /// Replaces its contents with a body written by
    /// [`encode_snapshot_body`](Self::encode_snapshot_body), checked
    /// against `limits` (its owner's).
    fn decode_snapshot_body(
        &mut self,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<(), DecodeError>;
    /// Everything it holds as a mirror but its items' values.
    fn mirror_state(&self) -> MirrorState;
    /// The array, to tell its type, mutably.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Writes what a `follower` holds of it, as of its last commit: the
    /// id its next push takes, then every item (its id, its owner for a
    /// relay, its fields — every one for a relay, the ghost fields for a
    /// ghost — and its own arrays so).
    fn write_follow(
        &self,
        follower: Follower,
        writer: &mut BitWriter<'_>,
    ) -> Result<(), EncodeError>;
    /// Reads what [`write_follow`](Self::write_follow) wrote into this
    /// array, new and empty: its items pushed with their ids and owners,
    /// not committed. Refuses more items than `limits` (its owner's)
    /// allow before reading them.
    fn read_follow(
        &mut self,
        follower: Follower,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<(), DecodeError>;
    /// Makes this array hold what `copy`, an array of the same type read by
    /// [`read_follow`](Self::read_follow), holds, as a follower takes an
    /// item: ids it lacks removed, the others added or written over where
    /// they differ, so its next commit holds the changes. `copy` is left
    /// empty. An array of another type changes nothing.
    fn take_follow(&mut self, copy: &mut dyn InnerArray);
    /// Swaps contents with `other`, an array of the same type (nothing
    /// for another type).
    fn swap_with(&mut self, other: &mut dyn InnerArray);
    /// Writes what its last commit changed, for a relay that holds what it
    /// held before: a bit (whether anything changed), then the ids removed,
    /// the items added and the items changed (each whole, its own arrays
    /// whole too) and the owners moved.
    fn write_follow_changes(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError>;
    /// Reads what [`write_follow_changes`](Self::write_follow_changes)
    /// wrote (`None`: nothing changed), refusing more entries than `limits`
    /// (its owner's) allow. This array is only its type.
    fn read_follow_changes(
        &self,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<Option<InnerDelta>, DecodeError>;
    /// Whether `changes`, read by
    /// [`read_follow_changes`](Self::read_follow_changes), applies to what
    /// this array holds: refuses one that removes or changes an item it
    /// does not hold, or adds one it holds.
    fn check_follow_changes(&self, changes: &InnerDelta) -> Result<(), DecodeError>;
    /// Applies `changes`, checked by
    /// [`check_follow_changes`](Self::check_follow_changes), as a follower
    /// does: its next commit holds them.
    fn apply_follow_changes(&mut self, changes: InnerDelta);
}

/// Who reads a copy of an array written by
/// [`InnerArray::write_follow`]: what the copy carries.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follower {
    /// A relay or a shard taking an item over: owners and every field.
    Relay,
    /// A neighbour's ghost array: no owners, the ghost fields only (all but
    /// the `owner_only` ones).
    Ghost,
}

/// A delta decoded by an array inside an item, kept until the owner's whole
/// message is known to be valid. Only the array that decoded it can read it.
#[doc(hidden)]
pub struct InnerDelta(Box<dyn Any>);

impl InnerDelta {
    /// Wraps an array's decoded delta.
    pub(crate) fn new<D: Any>(decoded: D) -> Self {
        Self(Box::new(decoded))
    }

    /// The decoded delta, if it is a `D`.
    pub(crate) fn take<D: Any>(self) -> Option<D> {
        self.0.downcast().ok().map(|decoded| *decoded)
    }

    /// The decoded delta, if it is a `D`, borrowed.
    pub(crate) fn get<D: Any>(&self) -> Option<&D> {
        self.0.downcast_ref()
    }
}

/// An array's identity and frame, to tell an edit from a replacement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Lineage {
    origin: u64,
    frame: u64,
    cloned_from: Option<(u64, u64)>,
}

impl Lineage {
    /// The lineage of the array with this origin, at this frame, cloned (if
    /// it is a clone) from the array and frame `cloned_from`.
    pub(crate) fn new(origin: u64, frame: u64, cloned_from: Option<(u64, u64)>) -> Self {
        Self {
            origin,
            frame,
            cloned_from,
        }
    }

    /// Whether an array with this lineage can stand where the array of
    /// `was` stood at its last commit: it is that array (committed since,
    /// or not), or a clone of it taken at that frame and not committed
    /// since (an edited copy written back).
    pub(crate) fn continues(&self, was: &Lineage) -> bool {
        let same = self.origin == was.origin && self.frame >= was.frame;
        let copy = self.cloned_from == Some((was.origin, was.frame)) && self.frame == was.frame;
        same || copy
    }
}
