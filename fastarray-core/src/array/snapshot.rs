//! Snapshots of a [`FastArray`]: the whole array in one message, for a
//! client that joins (`write_snapshot_for` starts its connection at the
//! snapshot) and for a mirror built or reset from one.

use super::FastArray;
use super::limits::{read_whole, within_message_bytes};
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError, SendError};
use crate::id::ReplicationId;
use crate::limits::{ArrayLimits, MirrorLimits};
use crate::receive::apply::report_snapshot;
use crate::receive_state::events::{ApplyReport, Callbacks};
use crate::receive_state::mirror::Mirror;
use crate::replicate::Replicate;
use crate::send_state::SendState;
use crate::snapshot_message;

impl<T: Replicate> FastArray<T> {
    /// Appends a snapshot message of the whole array to `out` and returns
    /// its size in bits (before the zero padding of its last byte). On
    /// error `out` is left as it was.
    ///
    /// It holds the items' current values and the current
    /// [`frame`](Self::frame); take it after [`commit`](Self::commit). To
    /// start a connection from it, use
    /// [`write_snapshot_for`](Self::write_snapshot_for).
    ///
    /// ```
    /// use fastarray_core::FastArray;
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Tag(u8);
    ///
    /// let mut server = FastArray::new();
    /// for n in 0..3 {
    ///     server.push(Tag(n));
    /// }
    /// server.commit();
    /// let mut bytes = Vec::new();
    /// let bits = server.write_snapshot(&mut bytes).unwrap();
    /// // kind 2 + schema 64 + frame 4 + count 5 + 3 × (id gap 1 + 8)
    /// assert_eq!(bits, 3 + 64 + 4 + 5 + 3 * 9);
    /// let client = FastArray::<Tag>::from_snapshot(&bytes).unwrap();
    /// assert_eq!(client, server);
    /// ```
    pub fn write_snapshot(&self, out: &mut Vec<u8>) -> Result<u64, EncodeError> {
        write_truncating(out, |writer| self.write_snapshot_bits(writer))
    }

    /// [`write_snapshot`](Self::write_snapshot) into a shared bit stream
    /// (on error, the bits written so far stay).
    pub fn write_snapshot_bits(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        snapshot_message::write_header::<T>(writer);
        snapshot_message::encode_body(&self.store, self.owners(), None, writer)
            .map_err(|(_, error)| error)
    }

    /// Appends a snapshot of the whole array to `out` for a client that
    /// joins, and makes `state` the send state of a client that holds
    /// exactly that snapshot: the next [`write_delta`](Self::write_delta)
    /// for `state` sends only what changes after it (removals of the
    /// snapshot's items included), in short frames. Returns the snapshot's
    /// size in bits.
    ///
    /// The client must apply the snapshot before any delta written after
    /// it (send it reliably, or in the same packet first). Everything must
    /// be committed. On error `out` and `state` are left as they were.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16 }
    ///
    /// let mut server = FastArray::new();
    /// let gone = server.push(Unit { hp: 1 });
    /// let kept = server.push(Unit { hp: 2 });
    /// server.commit();
    ///
    /// // A client joins: one snapshot, and a connection that knows it.
    /// let mut state = SendState::new();
    /// let mut packet = Vec::new();
    /// server.write_snapshot_for(&mut state, &mut packet).unwrap();
    /// let mut client = FastArray::<Unit>::from_snapshot(&packet).unwrap();
    ///
    /// server.remove(gone);
    /// server.get_mut(kept).unwrap().hp = 3;
    /// server.commit();
    /// let mut packet = Vec::new();
    /// let stats = server.write_delta(&mut state, 1, &mut packet).unwrap();
    /// assert_eq!((stats.removed, stats.changed, stats.added), (1, 1, 0));
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// state.on_ack(1);
    /// assert_eq!(client, server);
    /// ```
    pub fn write_snapshot_for(
        &self,
        state: &mut SendState,
        out: &mut Vec<u8>,
    ) -> Result<u64, SendError> {
        write_truncating(out, |writer| self.write_snapshot_for_bits(state, writer))
    }

    /// [`write_snapshot_for`](Self::write_snapshot_for) into a shared bit
    /// stream. On error `state` is unchanged (the bits written so far stay).
    pub fn write_snapshot_for_bits(
        &self,
        state: &mut SendState,
        writer: &mut BitWriter<'_>,
    ) -> Result<(), SendError> {
        self.expect_client_writer()?;
        if self.has_uncommitted_work() {
            return Err(SendError::Uncommitted);
        }
        state.may_join_by_snapshot()?;
        snapshot_message::write_header::<T>(writer);
        let client = state.client();
        snapshot_message::encode_body(&self.store, self.owners(), client, writer)
            .map_err(|(id, error)| SendError::Encode { id, error })?;
        *state = snapshot_message::snapshot_state(&self.store, client);
        Ok(())
    }

    /// Decodes a snapshot that fills all of `bytes` (up to zero padding):
    /// a mirror that ignores every message no newer than the snapshot,
    /// under the [default limits](MirrorLimits::DEFAULT).
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_snapshot_with_limits(bytes, MirrorLimits::DEFAULT)
    }

    /// [`from_snapshot`](Self::from_snapshot) of a mirror held to `limits`:
    /// a snapshot past them is refused
    /// ([`DecodeError::LimitExceeded`]) — one longer than
    /// `message_bytes` before it is decoded, one of more items than
    /// `items` (or an array inside an item of more than `inner_items`)
    /// before they are read — and so is any later message that would take
    /// the mirror past them.
    pub fn from_snapshot_with_limits(
        bytes: &[u8],
        limits: MirrorLimits,
    ) -> Result<Self, DecodeError> {
        read_whole(bytes, &limits, |reader| {
            Self::from_snapshot_bits_with_limits(reader, limits)
        })
    }

    /// [`from_snapshot`](Self::from_snapshot) of one snapshot read from a
    /// shared bit stream.
    pub fn from_snapshot_bits(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        Self::from_snapshot_bits_with_limits(reader, MirrorLimits::DEFAULT)
    }

    /// [`from_snapshot_with_limits`](Self::from_snapshot_with_limits) of
    /// one snapshot read from a shared bit stream (a read past
    /// `message_bytes` from its start refuses it).
    pub fn from_snapshot_bits_with_limits(
        reader: &mut BitReader<'_>,
        limits: MirrorLimits,
    ) -> Result<Self, DecodeError> {
        Self::snapshot_under(reader, limits, false)
    }

    /// A snapshot read from `reader` under `limits`, a replicated
    /// object's if `object` (its arrays are held to `items`).
    fn snapshot_under(
        reader: &mut BitReader<'_>,
        limits: MirrorLimits,
        object: bool,
    ) -> Result<Self, DecodeError> {
        within_message_bytes(reader, &limits, |reader| {
            snapshot_message::read_header::<T>(reader)?;
            let limits = ArrayLimits::top(limits);
            let (store, frame) = snapshot_message::decode_body(reader, limits, object)?;
            Ok(Self {
                store,
                sender: None,
                mirror: Some(Box::new(Mirror::from_snapshot(frame, limits.limits()))),
            })
        })
    }

    /// Replaces this mirror's contents with a snapshot that fills all of
    /// `bytes`, keeping its [limits](Self::limits), which the snapshot is
    /// checked against. On error the array is unchanged; an authority (an
    /// array that has held items or committed) returns
    /// [`DecodeError::NotAMirror`].
    pub fn apply_snapshot(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        self.apply_snapshot_with(bytes, &mut ()).map(|_| ())
    }

    /// [`apply_snapshot`](Self::apply_snapshot), telling `callbacks` what
    /// it changed as a delta making the same change would: `pre_remove`
    /// for each item the snapshot does not hold, `post_add` for each item
    /// new to the mirror, `post_change_whole` for each item it changed
    /// (with the fields that differ; an empty mask when only its arrays
    /// did), the events of the arrays inside them, then `post_receive`. So
    /// a game spawns and despawns through one path whether the client
    /// joins by snapshot or by delta, or is resynchronised by a snapshot
    /// later. On error the array is unchanged and nothing is reported.
    ///
    /// ```
    /// use fastarray_core::{Callbacks, FastArray, ReplicationId};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16 }
    ///
    /// #[derive(Default)]
    /// struct Spawned(Vec<ReplicationId>);
    /// impl Callbacks<Unit> for Spawned {
    ///     fn post_add(&mut self, id: ReplicationId, _: &Unit) {
    ///         self.0.push(id);
    ///     }
    /// }
    ///
    /// let mut server = FastArray::new();
    /// let ids = [server.push(Unit { hp: 1 }), server.push(Unit { hp: 2 })];
    /// server.commit();
    /// let mut snapshot = Vec::new();
    /// server.write_snapshot(&mut snapshot).unwrap();
    ///
    /// let (mut client, mut game) = (FastArray::<Unit>::mirror(), Spawned::default());
    /// let report = client.apply_snapshot_with(&snapshot, &mut game).unwrap();
    /// assert_eq!((report.added, game.0), (2, ids.to_vec()));
    /// ```
    pub fn apply_snapshot_with(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        self.expect_receiver()?;
        let new = Self::from_snapshot_with_limits(bytes, self.limits())?;
        let report = self.report_snapshot(&new, callbacks);
        *self = new;
        Ok(report)
    }

    /// Tells `callbacks` what replacing this mirror's items with `new`'s,
    /// a mirror just made from a snapshot, changes.
    pub(crate) fn report_snapshot(
        &self,
        new: &Self,
        callbacks: &mut impl Callbacks<T>,
    ) -> ApplyReport {
        let frame = new
            .mirror
            .as_deref()
            .and_then(Mirror::newest)
            .unwrap_or_default();
        report_snapshot(&self.store, &new.store, frame, callbacks, None)
    }

    /// A mirror of a snapshot's body, checked against `limits`: its items,
    /// and its frame as the newest applied and the floor below which
    /// messages are ignored.
    pub(crate) fn decode_snapshot_body(
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<Self, DecodeError> {
        let (store, frame) = snapshot_message::decode_body(reader, limits, false)?;
        Ok(Self {
            store,
            sender: None,
            mirror: Some(Box::new(Mirror::from_snapshot(frame, limits.limits()))),
        })
    }

    /// A replicated object's mirror from a snapshot read from `reader`
    /// (see [`from_snapshot_bits`](Self::from_snapshot_bits)): refused
    /// unless it holds exactly item `#0`.
    pub(crate) fn object_from_snapshot_bits(
        reader: &mut BitReader<'_>,
        limits: MirrorLimits,
    ) -> Result<Self, DecodeError> {
        let mut array = Self::snapshot_under(reader, limits, true)?;
        let object = ReplicationId::from_raw(0);
        if let Some(id) = array.ids().find(|&id| id != object) {
            return Err(DecodeError::NotAnObjectChange { id });
        }
        if array.is_empty() {
            return Err(DecodeError::MissingObject);
        }
        array.mirror = array.mirror.map(|mirror| Box::new(mirror.into_object()));
        Ok(array)
    }
}

/// Writes with `write` into `out`, returning the bits written; on error
/// `out` is left as it was.
pub(super) fn write_truncating<E>(
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut BitWriter<'_>) -> Result<(), E>,
) -> Result<u64, E> {
    let start = out.len();
    let mut writer = BitWriter::new(out);
    match write(&mut writer) {
        Ok(()) => Ok(writer.finish()),
        Err(error) => {
            drop(writer);
            out.truncate(start);
            Err(error)
        }
    }
}
