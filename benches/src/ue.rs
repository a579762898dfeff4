//! A bit-count model of Unreal Engine's FastArray delta wire format, as
//! published in its source (`FFastArraySerializer::FastArrayDeltaSerialize`).
//! It counts bits; it does not encode anything, and it is a model, not
//! Unreal's code.
//!
//! Per array update that sends anything: a header of four `int32` (array
//! replication key, base key, deleted count, changed count) and one flag
//! bit. Per deleted item its 32-bit id. Per changed (or added) item its
//! 32-bit id, one bit, then per changed property an 8-bit handle and the
//! property's value bits, then an 8-bit terminator. Value bits are those of
//! our own codec for the same field, so only the framing differs from us.
//! An update with nothing to send costs 0 bits (Unreal skips the property).
//!
//! Which items and properties are sent follows Unreal's per-connection base
//! state: the sender diffs the array against the state it sent last (item
//! id → replication key, and the item values as shadow). When a packet is
//! NAKed, the base goes back to the newest acknowledged state, so the next
//! update sends everything that differs from it, including changes that are
//! still in flight in other packets. New items send the properties that
//! differ from the type's default (Unreal compares against the archetype).

use std::collections::VecDeque;

use fastarray::{BitWriter, FastArray, FieldMask, Replicate, ReplicationId, ReplicationKey};
use std::cell::RefCell;
use std::collections::HashMap;

use crate::Agent;

/// `4 × int32` header plus the flag bit.
pub const HEADER_BITS: u64 = 4 * 32 + 1;
/// An item id (`int32`).
pub const ID_BITS: u64 = 32;
/// A property handle.
pub const HANDLE_BITS: u64 = 8;
/// The handle list terminator.
pub const TERMINATOR_BITS: u64 = 8;

/// Bits of field `field` of `agent` in our codec.
pub fn field_bits(agent: &Agent, field: u32) -> u64 {
    fields_bits(agent, FieldMask::single(field))
}

/// Bits of the fields in `mask` of `agent` in our codec.
pub fn fields_bits(agent: &Agent, mask: FieldMask) -> u64 {
    SCRATCH.with_borrow_mut(|bytes| {
        bytes.clear();
        let mut writer = BitWriter::new(bytes);
        agent
            .encode_fields(mask, &mut writer)
            .expect("agents always encode");
        writer.finish()
    })
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Bits of one changed item carrying the properties in `mask`.
pub fn item_bits(agent: &Agent, mask: FieldMask) -> u64 {
    let handles = u64::from(mask.len()) * HANDLE_BITS;
    ID_BITS + 1 + handles + fields_bits(agent, mask) + TERMINATOR_BITS
}

/// Bits of one update with `removed` deleted ids and the given changed
/// items' bits; 0 if it carries nothing.
pub fn update_bits(removed: usize, changed_items_bits: u64, changed: usize) -> u64 {
    if removed == 0 && changed == 0 {
        0
    } else {
        HEADER_BITS + removed as u64 * ID_BITS + changed_items_bits
    }
}

type State = HashMap<ReplicationId, (ReplicationKey, Agent)>;

/// What one packet in flight carried: per id, the key and value sent, or
/// `None` for a deletion.
type Entries = Vec<(ReplicationId, Option<(ReplicationKey, Agent)>)>;

/// What one modelled update carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UeUpdate {
    /// Bits of the update.
    pub bits: u64,
    /// Items sent (changed or new).
    pub changed: usize,
    /// Ids deleted.
    pub removed: usize,
}

/// One connection's sending side in the model.
#[derive(Clone, Debug, Default)]
pub struct UeConnection {
    /// Base of the next update: the state sent last (or the newest
    /// acknowledged one after a NAK).
    recent: State,
    /// The newest acknowledged state.
    acked: State,
    /// Per id, the record whose content `acked` holds.
    acked_seq: HashMap<ReplicationId, u64>,
    /// Packets in flight: id, sequence, entries (`None` = deleted).
    records: VecDeque<(u32, u64, Entries)>,
    next_seq: u64,
}

impl UeConnection {
    /// A connection whose client holds (and acknowledged) all of `array`.
    pub fn new(array: &FastArray<Agent>) -> Self {
        let state: State = array
            .iter()
            .map(|(id, item)| (id, (array.key(id).unwrap_or_default(), item.clone())))
            .collect();
        UeConnection {
            recent: state.clone(),
            acked: state,
            next_seq: 1,
            ..UeConnection::default()
        }
    }

    /// The update Unreal would send as packet `packet` for `array` now.
    pub fn write(&mut self, packet: u32, array: &FastArray<Agent>) -> UeUpdate {
        let mut entries = Vec::new();
        let mut items_bits = 0;
        let default = Agent::default();
        for (id, item) in array.iter() {
            let key = array.key(id).unwrap_or_default();
            let mask = match self.recent.get(&id) {
                Some((sent, _)) if *sent == key => continue,
                Some((_, old)) => item.diff(old),
                None => item.diff(&default),
            };
            items_bits += item_bits(item, mask);
            entries.push((id, Some((key, item.clone()))));
        }
        let changed = entries.len();
        let gone: Vec<ReplicationId> = self
            .recent
            .keys()
            .copied()
            .filter(|&id| !array.contains(id))
            .collect();
        let removed = gone.len();
        for id in gone {
            self.recent.remove(&id);
            entries.push((id, None));
        }
        for (id, value) in &entries {
            if let Some(value) = value {
                self.recent.insert(*id, value.clone());
            }
        }
        let bits = update_bits(removed, items_bits, changed);
        if bits > 0 {
            let seq = self.next_seq;
            self.next_seq += 1;
            self.records.push_back((packet, seq, entries));
        }
        UeUpdate {
            bits,
            changed,
            removed,
        }
    }

    /// The packet arrived: its content joins the acknowledged state.
    pub fn on_ack(&mut self, packet: u32) {
        let Some(i) = self.records.iter().position(|r| r.0 == packet) else {
            return;
        };
        let Some((_, seq, entries)) = self.records.remove(i) else {
            return;
        };
        for (id, value) in entries {
            let newest = self.acked_seq.entry(id).or_insert(0);
            if *newest > seq {
                continue;
            }
            *newest = seq;
            match value {
                Some(value) => {
                    self.acked.insert(id, value);
                }
                None => {
                    self.acked.remove(&id);
                }
            }
        }
    }

    /// The packet was NAKed: the next update diffs against the newest
    /// acknowledged state.
    pub fn on_loss(&mut self, packet: u32) {
        let Some(i) = self.records.iter().position(|r| r.0 == packet) else {
            return;
        };
        self.records.remove(i);
        self.recent = self.acked.clone();
    }
}
