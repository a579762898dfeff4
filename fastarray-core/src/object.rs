//! Replicated objects: one value with plain fields and `FastArray` fields,
//! with the same life cycle as a `FastArray`.
//!
//! A struct marked up with `#[replicate(array)]` on its `FastArray` fields
//! implements [`Object`]. In a [`Replicated`] wrapper its plain fields are
//! replicated as the changed fields of a single item (through the same
//! history ring, retirement list and per-field frames as any `FastArray`
//! item), and each array field as a `FastArray` of its own (per-id deltas),
//! all in one message per packet.

use core::any::Any;
use core::ops::{Deref, DerefMut};

use crate::array::{FastArray, ItemMut, Lineage};
use crate::bits::{BitReader, BitWriter};
use crate::delta::{Budget, DeltaStats};
use crate::error::{DecodeError, EncodeError, SendError};
use crate::id::ReplicationId;
use crate::receive::{ApplyReport, Callbacks};
use crate::replicate::Replicate;
use crate::send::SendState;

/// A `FastArray` field of a replicated object or of an array's item,
/// type-erased so its owner can drive all of them alike. Implemented by
/// `FastArray<U>`; `#[derive(Replicate)]` hands these out through
/// [`Replicate::for_each_array`].
pub trait ArrayField {
    /// An empty array of the same type that carries this one's identity:
    /// the pre-image of an array field, against which a commit checks that
    /// the array was edited, not replaced.
    fn empty_like(&self) -> Self
    where
        Self: Sized;
    /// Which array this is, for that check.
    fn lineage(&self) -> Lineage;
    /// Whether it has changes since its last commit.
    fn has_uncommitted_work(&self) -> bool;
    /// Commits its changes; returns whether anything changed.
    fn commit_changes(&mut self) -> bool;
    /// Writes its delta for a connection into a shared bit stream, within
    /// `budget` if given.
    fn write_delta_into(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError>;
    /// Decodes one delta and checks it against this array (the mirror it
    /// will be applied to), without applying it. `None` when it has nothing
    /// to apply (an empty or stale message).
    fn decode_delta_from(
        &self,
        reader: &mut BitReader<'_>,
    ) -> Result<Option<Box<dyn Any>>, DecodeError>;
    /// Reads past one delta whose owner is being dropped: nothing is
    /// checked or kept.
    fn skip_delta_from(&self, reader: &mut BitReader<'_>) -> Result<(), DecodeError>;
    /// Applies what [`decode_delta_from`](Self::decode_delta_from) returned.
    fn apply_decoded_delta(&mut self, decoded: Box<dyn Any>) -> ApplyReport;
    /// The send state of a client that holds it as a snapshot of it now
    /// would give it.
    fn snapshot_state(&self) -> SendState;
    /// Writes its frame and items as in a snapshot (no kind, no schema hash).
    fn encode_snapshot_body(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError>;
    /// Replaces its contents with a body written by
    /// [`encode_snapshot_body`](Self::encode_snapshot_body).
    fn decode_snapshot_body(&mut self, reader: &mut BitReader<'_>) -> Result<(), DecodeError>;
}

impl<U: Replicate + 'static> ArrayField for FastArray<U> {
    fn empty_like(&self) -> Self {
        FastArray::empty_like(self)
    }

    fn lineage(&self) -> Lineage {
        FastArray::lineage(self)
    }

    fn has_uncommitted_work(&self) -> bool {
        FastArray::has_uncommitted_work(self)
    }

    fn commit_changes(&mut self) -> bool {
        !self.commit().is_empty()
    }

    fn write_delta_into(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        self.write_budgeted(conn, packet, writer, budget)
    }

    fn decode_delta_from(
        &self,
        reader: &mut BitReader<'_>,
    ) -> Result<Option<Box<dyn Any>>, DecodeError> {
        let decoded = self.decode_delta(reader)?;
        Ok(decoded
            .has_effect()
            .then(|| Box::new(decoded) as Box<dyn Any>))
    }

    fn skip_delta_from(&self, reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
        FastArray::<U>::skip_delta(reader)
    }

    fn apply_decoded_delta(&mut self, decoded: Box<dyn Any>) -> ApplyReport {
        match decoded.downcast() {
            Ok(decoded) => self.apply_decoded(*decoded, &mut ()),
            // Only `decode_delta_from` of this same array makes the box.
            Err(_) => ApplyReport::default(),
        }
    }

    fn snapshot_state(&self) -> SendState {
        FastArray::snapshot_state(self)
    }

    fn encode_snapshot_body(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        FastArray::encode_snapshot_body(self, writer)
    }

    fn decode_snapshot_body(&mut self, reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
        *self = FastArray::decode_snapshot_body(reader)?;
        Ok(())
    }
}

/// A struct with `FastArray` fields (`#[replicate(array)]`) besides its
/// plain replicated fields: implemented by `#[derive(Replicate)]` for such
/// structs, and used through [`Replicated`]. Its array fields are reached
/// through [`Replicate::for_each_array`].
pub trait Object: Replicate {
    /// A copy of the replicated plain fields, with empty arrays (that keep
    /// the arrays' identity, see [`ArrayField::empty_like`]) and default
    /// skipped fields: the pre-image a change is diffed against. Cheap: the
    /// arrays are not cloned.
    fn capture(&self) -> Self;
}

/// The single item's id inside a [`Replicated`].
const ID: ReplicationId = ReplicationId::from_raw(0);

/// One replicated object (game state, a match, a player's inventory) with
/// the life cycle of a [`FastArray`]: mutate, [`commit`](Self::commit),
/// [`write_delta`](Self::write_delta) per connection, report acks and
/// losses to the [`SendState`], and [`apply_delta`](Self::apply_delta) on
/// the client's mirror. Plain fields send only the fields that changed;
/// `#[replicate(array)]` fields send per-id deltas of their items.
///
/// ```
/// use fastarray_core::{FastArray, Replicated, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { hp: u16 }
///
/// #[derive(Replicate, Debug, PartialEq, Default)]
/// #[replicate(crate = "fastarray_core")]
/// struct Match {
///     round: u8,
///     #[replicate(array)]
///     red: FastArray<Unit>,
///     #[replicate(array)]
///     blue: FastArray<Unit>,
/// }
///
/// let mut server = Replicated::new(Match::default());
/// server.get_mut().red.push(Unit { hp: 100 });
/// server.commit();
///
/// let mut conn = SendState::new();
/// let mut client = Replicated::<Match>::mirror();
/// let mut packet = Vec::new();
/// server.write_delta(&mut conn, 1, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// conn.on_ack(1);
///
/// server.get_mut().round = 2;
/// server.commit();
/// let mut packet = Vec::new();
/// let stats = server.write_delta(&mut conn, 2, &mut packet).unwrap();
/// assert_eq!(stats.changed, 1); // `round` only
/// client.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(client.get(), server.get());
/// ```
pub struct Replicated<T> {
    /// The object as the single item `ID` of an array: its plain fields
    /// use the item machinery (history, retirement, per-field frames) and
    /// its array fields the nested-array machinery of any item.
    item: FastArray<T>,
}

impl<T: Object + 'static> Replicated<T> {
    /// A server-side object. Its first [`commit`](Self::commit) announces it.
    pub fn new(value: T) -> Self {
        let mut item = FastArray::new();
        item.push(value);
        item.receive_as_object();
        Self { item }
    }

    /// A client-side mirror, to [`apply_delta`](Self::apply_delta) to: a
    /// default value until the server's first message arrives.
    pub fn mirror() -> Self
    where
        T: Default,
    {
        let mut item = FastArray::new();
        // Frames 0: anything the server sends is newer.
        item.insert_replicated(ID, 0, T::default());
        item.receive_as_object();
        Self { item }
    }

    /// The object.
    pub fn get(&self) -> &T {
        match self.item.get(ID) {
            Some(value) => value,
            None => unreachable!("a Replicated always holds its object"),
        }
    }

    /// The object, behind a guard that keeps a copy of the plain fields the
    /// first time it is written in a frame (arrays are not copied: they
    /// track their own changes).
    pub fn get_mut(&mut self) -> ObjectMut<'_, T> {
        match self.item.get_mut_with(ID, T::capture) {
            Some(item) => ObjectMut { item },
            None => unreachable!("a Replicated always holds its object"),
        }
    }

    /// Ends the frame: works out which plain fields changed since the last
    /// commit, and commits every array field.
    pub fn commit(&mut self) {
        self.item.commit();
    }

    /// Appends to `out` the delta bringing `conn`'s client up to date:
    /// the changed plain fields, then each array field's per-id delta.
    /// On error nothing is written and nothing is recorded for `packet`.
    pub fn write_delta(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        out: &mut Vec<u8>,
    ) -> Result<DeltaStats, SendError> {
        self.item.write_delta(conn, packet, out)
    }

    /// Writes the delta into a shared bit stream.
    pub fn write_delta_bits(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
    ) -> Result<DeltaStats, SendError> {
        self.item.write_delta_bits(conn, packet, writer, None)
    }

    /// Applies a message written by [`write_delta`](Self::write_delta).
    /// Everything is decoded and checked first; on error nothing changes.
    /// `callbacks` hear about the object as item `#0` (an empty field mask
    /// in `post_change` means only its arrays changed); the arrays' own
    /// items are applied without callbacks.
    pub fn apply_delta(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        self.item.apply_delta(bytes, callbacks)
    }
}

/// Write access to a [`Replicated`] object, from [`Replicated::get_mut`].
pub struct ObjectMut<'a, T> {
    item: ItemMut<'a, T>,
}

impl<T> Deref for ObjectMut<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T> DerefMut for ObjectMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.item
    }
}
