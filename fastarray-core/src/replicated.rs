//! [`Replicated`]: one replicated object (game state, a match, a player's
//! inventory) with plain fields and `FastArray` fields, and the life cycle
//! of a `FastArray`.
//!
//! A struct marked up with `#[replicate(array)]` on its `FastArray` fields
//! implements [`Object`]. In a [`Replicated`] wrapper its plain fields are
//! replicated as the changed fields of a single item (through the same
//! history ring, retirement list and per-field frames as any `FastArray`
//! item), and each array field as a `FastArray` of its own (per-id deltas),
//! all in one message per packet.

use core::ops::{Deref, DerefMut};

use crate::array::FastArray;
use crate::bits::BitWriter;
use crate::error::{DecodeError, SendError};
use crate::id::ReplicationId;
use crate::receive::events::{ApplyReport, Callbacks};
use crate::replicate::Replicate;
use crate::send::state::SendState;
use crate::send::stats::DeltaStats;
use crate::store::ItemMut;

/// A struct with `FastArray` fields (`#[replicate(array)]`) besides its
/// plain replicated fields: implemented by `#[derive(Replicate)]` for such
/// structs, and used through [`Replicated`]. Its array fields are reached
/// through [`Replicate::for_each_array`].
#[doc(hidden)]
pub trait Object: Replicate {
    /// A copy of the replicated plain fields, with empty arrays (that keep
    /// the arrays' identity, see [`InnerArray::empty_like`](crate::inner::InnerArray::empty_like)) and default
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
    /// its array fields the inner-array machinery of any item.
    item: FastArray<T>,
}

impl<T: Object + 'static> Replicated<T> {
    /// A server-side object. Its first [`commit`](Self::commit) announces it.
    pub fn new(value: T) -> Self {
        Self {
            item: FastArray::for_object(value, false),
        }
    }

    /// A client-side mirror, to [`apply_delta`](Self::apply_delta) to: a
    /// default value until the server's first message arrives. It refuses
    /// local changes ([`get_mut`](Self::get_mut), [`commit`](Self::commit)
    /// panic, writes return [`SendError::NotAnAuthority`]), which the next
    /// delta would overwrite; an object made with [`new`](Self::new)
    /// refuses deltas ([`DecodeError::NotAMirror`]).
    pub fn mirror() -> Self
    where
        T: Default,
    {
        Self {
            item: FastArray::for_object(T::default(), true),
        }
    }

    /// Whether this is a client's mirror (from [`mirror`](Self::mirror)),
    /// not a server's object (from [`new`](Self::new)).
    pub fn is_mirror(&self) -> bool {
        self.item.is_mirror()
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
    ///
    /// # Panics
    /// On a [mirror](Self::mirror): the next delta would overwrite the
    /// change.
    #[track_caller]
    pub fn get_mut(&mut self) -> ObjectMut<'_, T> {
        self.item.expect_authority("Replicated::get_mut");
        match self.item.get_mut_with(ID, T::capture) {
            Some(item) => ObjectMut { item },
            None => unreachable!("a Replicated always holds its object"),
        }
    }

    /// Ends the frame: works out which plain fields changed since the last
    /// commit, and commits every array field.
    ///
    /// # Panics
    /// On a [mirror](Self::mirror), which has no changes of its own.
    #[track_caller]
    pub fn commit(&mut self) {
        self.item.expect_authority("Replicated::commit");
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

    /// Whether both objects are equal *as the wire sees them*: their plain
    /// fields encode to the same bits and their arrays hold the same ids
    /// with items equal in the same sense ([`Replicate::wire_eq`]). Compare
    /// a mirror with its server with this: quantized fields make `==` fail.
    pub fn wire_eq(&self, other: &Self) -> bool {
        self.get().wire_eq(other.get())
    }

    /// Whether `conn`'s client holds everything this object has committed,
    /// its arrays included: every change written and every packet that
    /// carried one acknowledged (see [`FastArray::is_settled`]).
    pub fn is_settled(&self, conn: &SendState) -> bool {
        self.item.is_settled(conn)
    }

    /// Applies a message written by [`write_delta`](Self::write_delta) to
    /// this [mirror](Self::mirror). Everything is decoded and checked
    /// first; on error nothing changes. A server's object (from
    /// [`new`](Self::new)) returns [`DecodeError::NotAMirror`].
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
