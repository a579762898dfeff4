//! A delta message's layout, written: the kind, the frame, the removed
//! ids (and which are scope exits), then the item list, each entry's head
//! (name, whole or fields, the field set unless the message states it
//! once) and its payload (see `WIRE.md`).

use super::encode_cache::EncodeCache;
use super::frame_body::FrameBody;
use super::frame_entries::FrameEntries;
use super::plan::Planned;
use crate::bits::{BitReader, BitWriter, copy_bits};
use crate::changeset::Changeset;
use crate::error::SendError;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::{Replicate, encode_whole};
use crate::send_state::pending::Work;
use crate::send_state::retirement::RecordEntry;
use crate::send_state::{Removal, SendState};
use crate::store::{Near, Store};
use crate::wire::MessageKind;
use crate::wire::exits::write_exits;
use crate::wire::field_set::{FieldSetCode, write_field_set};
use crate::wire::frame::write_frame;
use crate::wire::id_list::IdWriter;

/// A planned message, ready to write.
pub(super) struct Message<'a> {
    pub(super) frame: u64,
    /// The item type's replicated fields.
    pub(super) field_count: u32,
    /// Whether the item type can withhold fields (then a whole entry says
    /// which it carries: see `Replicate::WITHHOLDS`).
    pub(super) withholds: bool,
    /// Whether the item type has array fields (then a fields entry starts
    /// with a bit saying whether plain fields follow).
    pub(super) arrays: bool,
    /// Whether items are named by the connection's handles (a whole entry
    /// then carries the item's id).
    pub(super) handles: bool,
    pub(super) removals: &'a [Removal],
    pub(super) items: &'a [Planned],
    /// The items' array deltas.
    pub(super) inner: &'a [u8],
}

impl Message<'_> {
    /// Writes the message: kind, frame, the removals, then the items with
    /// their payloads (from `encoded`) and array deltas.
    pub(super) fn write(
        &self,
        encoded: &EncodeCache,
        state: &SendState,
        writer: &mut BitWriter<'_>,
    ) {
        let common = common_fields(self.items.iter().map(|item| item.work));
        let wires = self.items.iter().map(|item| item.wire);
        let mut list = self.write_head(state, writer, wires, common);
        for item in self.items {
            let entry = (item.wire, item.id, item.work, item.whole);
            self.write_entry_head(state, writer, &mut list, entry);
            encoded.copy(item.span, writer);
            let (start, bits) = item.inner;
            if bits > 0 {
                let mut reader = BitReader::at(self.inner, start);
                copy_bits(&mut reader, writer, bits);
            }
        }
    }

    /// Writes the frame's shared message (see
    /// [`FrameEntries`](super::frame_entries)): the head, then each entry
    /// with its payload encoded straight from the item in `store`, no plan
    /// in between; each entry carries only the fields in `allowed` (what
    /// the audience rule lets a connection that owns none of the items
    /// see), and an entry left with no changed field goes. Returns what
    /// the connections that take it record: the record entries of the
    /// items sent whole (adds and new shapes), and the changed fields of
    /// the others, gathered in `spare` (a list kept to reuse). The entries
    /// are `body`'s, if its commit wrote them. `None` if an
    /// entry's item is not in `store` (a broken invariant: the caller then
    /// writes per connection), with `writer` holding a partial message.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_frame<T: Replicate>(
        &self,
        store: &Store<T>,
        changes: &Changeset,
        allowed: FieldMask,
        state: &SendState,
        writer: &mut BitWriter<'_>,
        spare: Vec<(ReplicationId, FieldMask)>,
        body: &mut FrameBody,
    ) -> Result<Option<FrameRecord>, SendError> {
        let entries = FrameEntries::of::<T>(changes, allowed, spare);
        if allowed == FieldMask::all(self.field_count)
            && let Some(written) = body.written(self.frame, &entries.changed, entries.whole.len())
        {
            // The entries were written as the commit diffed the items.
            self.write_removals(state, writer);
            IdWriter::write_head(writer, entries.changed.len() as u64, written.code);
            writer.write_bool(true);
            write_field_set(writer, written.common, self.field_count);
            writer.write_bits_from(written.bytes, written.bits);
            return Ok(Some((Vec::new(), entries.changed)));
        }
        let works = entries.changed.iter().map(|&(_, mask)| Work::Fields(mask));
        let common = common_fields(works);
        let wires = entries.iter().map(|(id, _)| id);
        let mut list = self.write_head(state, writer, wires, common);
        let mut whole = Vec::with_capacity(entries.whole.len());
        let mut near = Near::default();
        for (id, work) in entries.iter() {
            // A commit's changes name live items only, and nothing has
            // changed since the commit.
            let Some(pos) = store.locate(id, &mut near) else {
                debug_assert!(false, "item {id} of the newest changeset is gone");
                return Ok(None);
            };
            let slot = store.slot(pos);
            self.write_entry_head(state, writer, &mut list, (id, id, work, allowed));
            let encoded = match work {
                Work::Fields(mask) => slot.value.encode_fields(mask, writer),
                _ => {
                    whole.push(RecordEntry::new(id, work, slot.key, self.frame, self.frame));
                    encode_whole(&slot.value, allowed, writer)
                }
            };
            encoded.map_err(|error| SendError::Encode { id, error })?;
        }
        Ok(Some((whole, entries.changed)))
    }

    /// Writes the message's kind, frame and removals, then the start of
    /// its item list, whose entries are named `wires` and, if `common`,
    /// all carry those changed fields. The entries follow, written by the
    /// caller through the returned list.
    fn write_head(
        &self,
        state: &SendState,
        writer: &mut BitWriter<'_>,
        wires: impl ExactSizeIterator<Item = ReplicationId> + Clone,
        common: Option<FieldMask>,
    ) -> ItemList {
        self.write_removals(state, writer);
        let any = wires.len() > 0;
        let ids = IdWriter::start(writer, wires);
        if any {
            writer.write_bool(common.is_some());
            if let Some(mask) = common {
                write_field_set(writer, mask, self.field_count);
            }
        }
        ItemList {
            ids,
            common,
            sets: FieldSetCode::NONE,
        }
    }

    /// Writes the message's kind, frame and removals.
    fn write_removals(&self, state: &SendState, writer: &mut BitWriter<'_>) {
        let exits = self.removals.iter().any(|removal| removal.exit);
        MessageKind::delta(exits, self.handles).write(writer);
        write_frame(writer, self.frame, state.acked_frame());
        let mut ids = IdWriter::start(writer, self.removals.iter().map(|removal| removal.wire));
        for removal in self.removals {
            ids.write(writer, removal.wire);
        }
        if exits {
            write_exits(writer, self.removals.iter().map(|removal| removal.exit));
        }
    }

    /// Writes the entry `(wire, id, work, fields)` of item `id`, named
    /// `wire`, up to its payload: its name, whether it is whole (then, with
    /// handles, its id and its handle's age; and for a type that can
    /// withhold fields, whether this one carries only `fields`, and which),
    /// and the changed fields it carries unless the message states them
    /// once for the whole `list`.
    #[inline]
    fn write_entry_head(
        &self,
        state: &SendState,
        writer: &mut BitWriter<'_>,
        list: &mut ItemList,
        (wire, id, work, fields): (ReplicationId, ReplicationId, Work, FieldMask),
    ) {
        let whole = matches!(work, Work::Add { .. });
        list.ids.write_then(writer, wire, whole);
        if whole && self.handles {
            writer.write_varint(id.to_raw());
            writer.write_gamma(state.handle_age(wire, self.frame));
        }
        if whole && self.withholds {
            let withheld = fields != FieldMask::all(self.field_count);
            writer.write_bool(withheld);
            if withheld {
                list.sets.write(writer, fields, self.field_count);
            }
        }
        if let Work::Fields(mask) = work {
            if self.arrays {
                // Whether plain fields follow: an entry may carry array
                // deltas only.
                writer.write_bool(!mask.is_empty());
            }
            if !mask.is_empty() && list.common.is_none() {
                list.sets.write(writer, mask, self.field_count);
            }
        }
    }
}

/// What the connections taking a frame's shared message record (see
/// [`SharedMessage::keep`](super::shared_message::SharedMessage::keep)): the
/// record entries of its whole items, and the changed fields of the others.
type FrameRecord = (Vec<RecordEntry>, Vec<(ReplicationId, FieldMask)>);

/// A message's item list being written: its ids, and the changed fields
/// its entries all carry if the message states them once.
struct ItemList {
    ids: IdWriter,
    common: Option<FieldMask>,
    /// The code of the last field set an entry carried.
    sets: FieldSetCode,
}

/// The field set every entry with changed fields carries, if there are two
/// or more such entries and they all carry the same one: then the message
/// states it once (a sparse or dense tick changes the same fields of every
/// item it sends).
fn common_fields(works: impl Iterator<Item = Work>) -> Option<FieldMask> {
    let mut sets = works.filter_map(|work| match work {
        Work::Fields(mask) if !mask.is_empty() => Some(mask),
        _ => None,
    });
    let first = sets.next()?;
    let mut count = 1;
    for mask in sets {
        if mask != first {
            return None;
        }
        count += 1;
    }
    (count >= 2).then_some(first)
}
