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

use crate::array::FastArray;
use crate::bits::{BitReader, BitWriter};
use crate::delta::DeltaStats;
use crate::error::{DecodeError, SendError};
use crate::id::ReplicationId;
use crate::receive::{ApplyReport, Callbacks};
use crate::replicate::Replicate;
use crate::send::SendState;

/// A `FastArray` field of a replicated object, type-erased so the object can
/// drive all of them alike. Implemented by `FastArray<U>`.
pub trait ArrayField {
    /// Whether it has changes since its last commit.
    fn has_uncommitted_work(&self) -> bool;
    /// Commits its changes.
    fn commit_changes(&mut self);
    /// Writes its delta for a connection into a shared bit stream.
    fn write_delta_into(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
    ) -> Result<DeltaStats, SendError>;
    /// Decodes and checks one delta, without applying it.
    fn decode_delta_from(&self, reader: &mut BitReader<'_>) -> Result<Box<dyn Any>, DecodeError>;
    /// Applies what [`decode_delta_from`](Self::decode_delta_from) returned.
    fn apply_decoded_delta(&mut self, decoded: Box<dyn Any>) -> ApplyReport;
}

impl<U: Replicate + 'static> ArrayField for FastArray<U> {
    fn has_uncommitted_work(&self) -> bool {
        FastArray::has_uncommitted_work(self)
    }

    fn commit_changes(&mut self) {
        self.commit();
    }

    fn write_delta_into(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
    ) -> Result<DeltaStats, SendError> {
        self.write_delta_bits(conn, packet, writer, None)
    }

    fn decode_delta_from(&self, reader: &mut BitReader<'_>) -> Result<Box<dyn Any>, DecodeError> {
        Ok(Box::new(self.decode_delta(reader)?))
    }

    fn apply_decoded_delta(&mut self, decoded: Box<dyn Any>) -> ApplyReport {
        match decoded.downcast() {
            Ok(decoded) => self.apply_decoded(*decoded, &mut ()),
            // Only `decode_delta_from` of this same array makes the box.
            Err(_) => ApplyReport::default(),
        }
    }
}

/// A struct with `FastArray` fields (`#[replicate(array)]`) besides its
/// plain replicated fields: implemented by `#[derive(Replicate)]` for such
/// structs, and used through [`Replicated`].
pub trait Object: Replicate {
    /// A copy of the replicated plain fields, with empty arrays and default
    /// skipped fields: the pre-image a change is diffed against. Cheap: the
    /// arrays are not cloned.
    fn capture(&self) -> Self;

    /// Calls `visit` with each array field, in declaration order.
    fn for_each_array(&self, visit: &mut dyn FnMut(&dyn ArrayField));

    /// Calls `visit` with each array field, mutably, in declaration order.
    fn for_each_array_mut(&mut self, visit: &mut dyn FnMut(&mut dyn ArrayField));
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
    /// The object as the single item `ID`: its plain fields use the item
    /// machinery (history, retirement, per-field frames).
    item: FastArray<T>,
    /// The plain fields before this frame's first write.
    before: Option<T>,
}

impl<T: Object + 'static> Replicated<T> {
    /// A server-side object. Its first [`commit`](Self::commit) announces it.
    pub fn new(value: T) -> Self {
        let mut item = FastArray::new();
        item.push(value);
        Self { item, before: None }
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
        Self { item, before: None }
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
        ObjectMut { object: self }
    }

    /// Ends the frame: commits every array field, and works out which
    /// plain fields changed since the last commit.
    pub fn commit(&mut self) {
        let Some(value) = self.item.get_mut_untracked(ID) else {
            unreachable!("a Replicated always holds its object");
        };
        value.for_each_array_mut(&mut |array| array.commit_changes());
        if let Some(before) = self.before.take() {
            let changed = value.diff(&before);
            self.item.report_change(ID, changed);
        }
        self.item.commit();
    }

    /// Appends to `out` the delta bringing `conn`'s client up to date:
    /// the changed plain fields, then each array field's per-id delta.
    ///
    /// If an item of an array fails to encode, the error is returned and
    /// parts already recorded for `packet` are treated as lost if the
    /// packet is never sent (they are resent later).
    pub fn write_delta(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        out: &mut Vec<u8>,
    ) -> Result<DeltaStats, SendError> {
        let mut writer = BitWriter::new(out);
        self.write_delta_bits(conn, packet, &mut writer)
    }

    /// Writes the delta into a shared bit stream.
    pub fn write_delta_bits(
        &mut self,
        conn: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
    ) -> Result<DeltaStats, SendError> {
        let mut uncommitted = self.before.is_some();
        self.get()
            .for_each_array(&mut |array| uncommitted |= array.has_uncommitted_work());
        if uncommitted {
            return Err(SendError::Uncommitted);
        }
        if conn.has_in_flight(packet) {
            return Err(SendError::PacketInFlight { packet });
        }
        let mut total = self.item.write_delta_bits(conn, packet, writer, None)?;
        let Some(value) = self.item.get_mut_untracked(ID) else {
            unreachable!("a Replicated always holds its object");
        };
        let mut index = 0;
        let mut result = Ok(());
        value.for_each_array_mut(&mut |array| {
            if result.is_ok() {
                match array.write_delta_into(conn.child(index), packet, writer) {
                    Ok(stats) => {
                        total.bits += stats.bits;
                        total.removed += stats.removed;
                        total.added += stats.added;
                        total.changed += stats.changed;
                        total.resynced |= stats.resynced;
                    }
                    Err(error) => result = Err(error),
                }
            }
            index += 1;
        });
        result.map(|()| total)
    }

    /// Applies a message written by [`write_delta`](Self::write_delta).
    /// Everything is decoded and checked first; on error nothing changes.
    /// `callbacks` hear about the plain fields (the object is item `#0`);
    /// array fields are applied without callbacks.
    pub fn apply_delta(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        let mut reader = BitReader::new(bytes);
        let plain = self.item.decode_delta(&mut reader)?;
        let mut arrays: Vec<Box<dyn Any>> = Vec::new();
        let mut failure = None;
        self.get().for_each_array(&mut |array| {
            if failure.is_none() {
                match array.decode_delta_from(&mut reader) {
                    Ok(decoded) => arrays.push(decoded),
                    Err(error) => failure = Some(error),
                }
            }
        });
        if let Some(error) = failure {
            return Err(error);
        }
        reader.expect_end()?;

        let mut report = self.item.apply_decoded(plain, callbacks);
        let Some(value) = self.item.get_mut_untracked(ID) else {
            unreachable!("a Replicated always holds its object");
        };
        let mut decoded = arrays.into_iter();
        value.for_each_array_mut(&mut |array| {
            if let Some(delta) = decoded.next() {
                let part = array.apply_decoded_delta(delta);
                report.added += part.added;
                report.changed += part.changed;
                report.removed += part.removed;
                report.skipped += part.skipped;
            }
        });
        Ok(report)
    }
}

/// Write access to a [`Replicated`] object, from [`Replicated::get_mut`].
pub struct ObjectMut<'a, T: Object + 'static> {
    object: &'a mut Replicated<T>,
}

impl<T: Object + 'static> Deref for ObjectMut<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.object.get()
    }
}

impl<T: Object + 'static> DerefMut for ObjectMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        let object = &mut *self.object;
        let Some(value) = object.item.get_mut_untracked(ID) else {
            unreachable!("a Replicated always holds its object");
        };
        if object.before.is_none() {
            object.before = Some(value.capture());
        }
        value
    }
}
