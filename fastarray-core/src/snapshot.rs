//! Full snapshots: the whole array in one message, ids included.
//!
//! Layout (after the 2-bit snapshot kind, see [`crate::wire`]): the item
//! type's 64-bit `SCHEMA_HASH`, the frame as a varint, the item count as a
//! varint, then per item in ascending id order the gap to the previous id
//! (`id - previous - 1`, the first id as is) as a varint and every
//! replicated field, then each of the item's `#[replicate(array)]` fields
//! in the same layout from the frame on (no kind, no hash: the owner's hash
//! covers the arrays' item types). Consecutive ids cost one bit each.

use crate::array::FastArray;
use crate::bits::{BitReader, BitWriter, prealloc};
use crate::error::{DecodeError, EncodeError, SendError};
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::send::SendState;
use crate::wire::{self, MessageKind};

impl<T: Replicate> FastArray<T> {
    /// Appends a snapshot message of the whole array to `out` and returns
    /// its size in bits (before the zero padding of its last byte). On
    /// error `out` is left as it was.
    ///
    /// It holds the items' current values and the current
    /// [`frame`](FastArray::frame); take it after [`commit`](FastArray::commit).
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
    /// assert_eq!(bits, 2 + 64 + 4 + 5 + 3 * 9);
    /// let client = FastArray::<Tag>::from_snapshot(&bytes).unwrap();
    /// assert_eq!(client, server);
    /// ```
    pub fn write_snapshot(&self, out: &mut Vec<u8>) -> Result<u64, EncodeError> {
        let start = out.len();
        let mut writer = BitWriter::new(out);
        match self.encode_snapshot(&mut writer) {
            Ok(()) => Ok(writer.finish()),
            Err(error) => {
                drop(writer);
                out.truncate(start);
                Err(error)
            }
        }
    }

    /// Writes a snapshot message into a shared bit stream.
    pub fn encode_snapshot(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        MessageKind::Snapshot.write(writer);
        writer.write_bits(T::SCHEMA_HASH, 64);
        self.encode_snapshot_body(writer)
    }

    /// Appends a snapshot of the whole array to `out` for a client that
    /// joins, and makes `conn` the connection of a client that holds
    /// exactly that snapshot: the next [`write_delta`](Self::write_delta)
    /// for `conn` sends only what changes after it (removals of the
    /// snapshot's items included), in short frames. Returns the snapshot's
    /// size in bits.
    ///
    /// The client must apply the snapshot before any delta written after
    /// it (send it reliably, or in the same packet first). Everything must
    /// be committed. On error `out` and `conn` are left as they were.
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
    /// let mut conn = SendState::new();
    /// let mut packet = Vec::new();
    /// server.write_snapshot_for(&mut conn, &mut packet).unwrap();
    /// let mut client = FastArray::<Unit>::from_snapshot(&packet).unwrap();
    ///
    /// server.remove(gone);
    /// server.get_mut(kept).unwrap().hp = 3;
    /// server.commit();
    /// let mut packet = Vec::new();
    /// let stats = server.write_delta(&mut conn, 1, &mut packet).unwrap();
    /// assert_eq!((stats.removed, stats.changed, stats.added), (1, 1, 0));
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// conn.on_ack(1);
    /// assert_eq!(client, server);
    /// ```
    pub fn write_snapshot_for(
        &self,
        conn: &mut SendState,
        out: &mut Vec<u8>,
    ) -> Result<u64, SendError> {
        let start = out.len();
        let mut writer = BitWriter::new(out);
        match self.encode_snapshot_for(conn, &mut writer) {
            Ok(()) => Ok(writer.finish()),
            Err(error) => {
                drop(writer);
                out.truncate(start);
                Err(error)
            }
        }
    }

    /// [`write_snapshot_for`](Self::write_snapshot_for) into a shared bit
    /// stream. On error `conn` is unchanged (the bits written stay).
    pub fn encode_snapshot_for(
        &self,
        conn: &mut SendState,
        writer: &mut BitWriter<'_>,
    ) -> Result<(), SendError> {
        if self.has_uncommitted_work() {
            return Err(SendError::Uncommitted);
        }
        MessageKind::Snapshot.write(writer);
        writer.write_bits(T::SCHEMA_HASH, 64);
        self.encode_body(writer)
            .map_err(|(id, error)| SendError::Encode { id, error })?;
        *conn = self.snapshot_state();
        Ok(())
    }

    /// The send state of a client that holds this array as a snapshot of
    /// it now would give it (arrays inside items included).
    pub(crate) fn snapshot_state(&self) -> SendState {
        let mut state = SendState::after_snapshot(self.frame, FieldMask::all(T::FIELD_COUNT));
        for slot in &self.slots {
            let mut nested = Vec::new();
            slot.value
                .for_each_array(&mut |array| nested.push(array.snapshot_state()));
            // Arrays that were empty need no state yet: one made when the
            // item is first written brings the client what was added since.
            if nested.iter().all(|inner| inner.client_items() == 0) {
                nested.clear();
            }
            state.hold(slot.id, slot.key, nested);
        }
        state
    }

    /// The frame, count and items of a snapshot; also how an item's
    /// `#[replicate(array)]` fields are written inside it.
    pub(crate) fn encode_snapshot_body(
        &self,
        writer: &mut BitWriter<'_>,
    ) -> Result<(), EncodeError> {
        self.encode_body(writer).map_err(|(_, error)| error)
    }

    /// [`encode_snapshot_body`](Self::encode_snapshot_body), naming the
    /// item that failed to encode.
    fn encode_body(&self, writer: &mut BitWriter<'_>) -> Result<(), (ReplicationId, EncodeError)> {
        writer.write_varint(self.frame);
        writer.write_varint(self.slots.len() as u64);
        let mut order: Vec<usize> = (0..self.slots.len()).collect();
        order.sort_unstable_by_key(|&pos| self.slots[pos].id);
        let mut next = 0u64;
        for pos in order {
            let slot = &self.slots[pos];
            wire::id_list::write_id(writer, slot.id, &mut next);
            let mut result = slot.value.encode(writer);
            slot.value.for_each_array(&mut |array| {
                if result.is_ok() {
                    result = array.encode_snapshot_body(writer);
                }
            });
            result.map_err(|error| (slot.id, error))?;
        }
        Ok(())
    }

    /// Decodes a snapshot that fills all of `bytes` (up to zero padding).
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut reader = BitReader::new(bytes);
        let array = Self::decode_snapshot(&mut reader)?;
        reader.expect_end()?;
        Ok(array)
    }

    /// Reads one snapshot message from a shared bit stream.
    pub fn decode_snapshot(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        MessageKind::expect(reader, MessageKind::Snapshot)?;
        let found = reader.read_bits(64)?;
        if found != T::SCHEMA_HASH {
            return Err(DecodeError::SchemaMismatch {
                type_name: T::TYPE_NAME,
                expected: T::SCHEMA_HASH,
                found,
            });
        }
        Self::decode_snapshot_body(reader)
    }

    /// Reads what [`encode_snapshot_body`](Self::encode_snapshot_body) wrote.
    pub(crate) fn decode_snapshot_body(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let frame = wire::frame::read_long_frame(reader)?;
        let claimed = reader.read_varint()?;
        // Each item costs at least a one-bit id gap plus its fields, and
        // two bits (frame and count) per array field.
        let count = reader.check_len(claimed, 1 + T::MIN_BITS + 2 * u64::from(T::ARRAY_FIELDS))?;
        let mut array = Self::with_capacity(prealloc::<crate::array::Slot<T>>(count));
        array.frame = frame;
        array.receive_from_snapshot(frame);
        let mut next = 0u64;
        for _ in 0..count {
            let id = wire::id_list::read_id(reader, &mut next)?;
            let mut value = T::decode(reader)?;
            let mut result = Ok(());
            value.for_each_array_mut(&mut |array| {
                if result.is_ok() {
                    result = array.decode_snapshot_body(reader);
                }
            });
            result?;
            array.insert_replicated(id, frame, value);
        }
        Ok(array)
    }

    /// Replaces this array's contents with a snapshot that fills all of
    /// `bytes`. On error the array is unchanged.
    pub fn apply_snapshot(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        *self = Self::from_snapshot(bytes)?;
        Ok(())
    }
}
