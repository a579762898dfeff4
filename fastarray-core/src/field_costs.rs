//! [`FieldCosts`]: which field costs what on the wire, measured off the
//! send path, on demand: each changed field of each commit encoded alone
//! into a scratch buffer, and what the messages spent besides.

use core::fmt;
use core::marker::PhantomData;

use crate::array::FastArray;
use crate::bits::BitWriter;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::send_state::stats::DeltaStats;

/// What one replicated field (one mask bit) cost over the commits a
/// [`FieldCosts`] recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldCost {
    /// The field's mask bit.
    pub index: u32,
    /// Its path, `.`-joined (`body.position`: see
    /// [`Replicate::field_path`]), or `#index` for a bit the type does not
    /// name.
    pub name: String,
    /// Items whose change carried it.
    pub changes: u64,
    /// The bits its values took in those changes: each encoded alone
    /// ([`Replicate::encode_fields`] of its one bit), exactly what a
    /// change entry spends on it.
    pub bits: u64,
}

/// Which field costs what: for each replicated field of `T`, how many
/// changes carried it and the bits its values took on the wire; the
/// whole items (adds) apart; and, given the messages of a connection that
/// carried exactly those commits, what they spent on the rest (ids, keys,
/// masks, frames, the message's own counts).
///
/// It measures, off the send path: [`record`](Self::record) encodes each
/// changed field of the last commit alone into a scratch buffer, so call
/// it when you want the breakdown (in a test, a tool, a sampled tick),
/// not on every tick of a loaded server. A field inside a nested (not
/// flattened) `Replicate` field is counted as that field's whole value;
/// items of `#[replicate(array)]` fields are not counted.
///
/// ```
/// use fastarray_core::{FastArray, FieldCosts, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit {
///     #[replicate(quantize(min = 0.0, max = 100.0, bits = 10))]
///     x: f32,
///     hp: u8,
/// }
///
/// let mut units = FastArray::new();
/// let ids: Vec<_> = (0..10).map(|n| units.push(Unit { x: n as f32, hp: 100 })).collect();
/// units.commit();
/// let mut costs = FieldCosts::<Unit>::new();
/// let mut state = SendState::new();
/// let mut bytes = Vec::new();
/// units.write_delta(&mut state, 0, &mut bytes).unwrap();
/// state.on_ack(0);
/// for id in &ids[..4] {
///     units.get_mut(*id).unwrap().x += 1.0;
/// }
/// units.commit();
/// costs.record(&units);
/// bytes.clear();
/// let stats = units.write_delta(&mut state, 1, &mut bytes).unwrap();
/// costs.record_message(&stats);
///
/// let x = &costs.fields()[0];
/// assert_eq!((x.name.as_str(), x.changes, x.bits), ("x", 4, 40));
/// assert_eq!(costs.fields()[1].changes, 0);
/// assert_eq!(costs.overhead_bits(), Some(stats.bits - 40));
/// println!("{costs}"); // a table: field, changes, bits, share
/// ```
pub struct FieldCosts<T> {
    fields: Vec<FieldCost>,
    added: u64,
    added_bits: u64,
    removed: u64,
    message_bits: u64,
    messages: u64,
    scratch: Vec<u8>,
    marker: PhantomData<fn(&T)>,
}

impl<T: Replicate> Default for FieldCosts<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for FieldCosts<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FieldCosts")
            .field("fields", &self.fields)
            .field("added", &self.added)
            .field("added_bits", &self.added_bits)
            .field("removed", &self.removed)
            .field("message_bits", &self.message_bits)
            .field("messages", &self.messages)
            .finish()
    }
}

impl<T: Replicate> FieldCosts<T> {
    /// Nothing recorded: every field of `T`, named, at zero.
    pub fn new() -> Self {
        let fields = (0..T::FIELD_COUNT)
            .map(|index| {
                let mut path = Vec::new();
                let name = if T::field_path(index, &mut path) {
                    path.join(".")
                } else {
                    format!("#{index}")
                };
                FieldCost {
                    index,
                    name,
                    changes: 0,
                    bits: 0,
                }
            })
            .collect();
        Self {
            fields,
            added: 0,
            added_bits: 0,
            removed: 0,
            message_bits: 0,
            messages: 0,
            scratch: Vec::new(),
            marker: PhantomData,
        }
    }

    /// Records the last commit of `array`
    /// ([`last_changeset`](FastArray::last_changeset)): each changed item's
    /// changed fields, as the item holds them now
    /// ([`record_change`](Self::record_change)), each added item whole
    /// ([`record_added`](Self::record_added)), and the removals. Call it
    /// right after [`commit`](FastArray::commit), before the next
    /// mutations.
    pub fn record(&mut self, array: &FastArray<T>) {
        let changes = array.last_changeset();
        for &(id, mask) in changes.changed() {
            if let Some(value) = array.get(id) {
                self.record_change(value, mask);
            }
        }
        for &id in changes.added() {
            if let Some(value) = array.get(id) {
                self.record_added(value);
            }
        }
        self.removed += changes.removed().len() as u64;
    }

    /// Records one change of an item: the fields in `mask`, with the values
    /// `value` holds, each encoded alone. A field whose value cannot be
    /// encoded (out of its range) is counted as a change of no bits: it
    /// never reaches the wire.
    pub fn record_change(&mut self, value: &T, mask: FieldMask) {
        for index in mask.iter() {
            let Some(field) = self.fields.get_mut(index as usize) else {
                continue;
            };
            self.scratch.clear();
            let mut writer = BitWriter::new(&mut self.scratch);
            let encoded = value.encode_fields(FieldMask::single(index), &mut writer);
            let bits = writer.finish();
            field.changes += 1;
            if encoded.is_ok() {
                field.bits += bits;
            }
        }
    }

    /// Records an item sent whole (an add): its every replicated field, in
    /// one encoding.
    pub fn record_added(&mut self, value: &T) {
        self.scratch.clear();
        let mut writer = BitWriter::new(&mut self.scratch);
        let encoded = value.encode(&mut writer);
        let bits = writer.finish();
        self.added += 1;
        if encoded.is_ok() {
            self.added_bits += bits;
        }
    }

    /// Records a message written for the commits recorded, by a connection
    /// that carried each of them once, whole and alone (caught up, no loss,
    /// no budget: [`FastArray::write_delta`]'s stats): its bits, less the
    /// fields' and the whole items', are the
    /// [`overhead`](Self::overhead_bits). Record one per commit recorded,
    /// or the overhead means nothing.
    pub fn record_message(&mut self, stats: &DeltaStats) {
        self.message_bits += stats.bits;
        self.messages += 1;
    }

    /// Every field (one per mask bit, in mask order) and its costs.
    pub fn fields(&self) -> &[FieldCost] {
        &self.fields
    }

    /// The bits of every field's values in changes, summed.
    pub fn field_bits(&self) -> u64 {
        self.fields.iter().map(|field| field.bits).sum()
    }

    /// Items recorded whole (adds), and their bits.
    pub fn added(&self) -> (u64, u64) {
        (self.added, self.added_bits)
    }

    /// Removals recorded.
    pub fn removed(&self) -> u64 {
        self.removed
    }

    /// The bits of the messages recorded ([`record_message`](Self::record_message)),
    /// and how many there were.
    pub fn messages(&self) -> (u64, u64) {
        (self.messages, self.message_bits)
    }

    /// What the messages recorded spent besides the fields' values and the
    /// whole items: ids, keys, field masks or handles, removals, frames
    /// and counts. `None` before any message is recorded.
    pub fn overhead_bits(&self) -> Option<u64> {
        (self.messages > 0).then(|| {
            self.message_bits
                .saturating_sub(self.field_bits() + self.added_bits)
        })
    }

    /// Everything recorded: the messages' bits if any were recorded,
    /// else the fields' and the whole items'.
    pub fn total_bits(&self) -> u64 {
        match self.overhead_bits() {
            Some(overhead) => self.field_bits() + self.added_bits + overhead,
            None => self.field_bits() + self.added_bits,
        }
    }
}

/// A table: per field, its changes, bits and share of
/// [`total_bits`](FieldCosts::total_bits), most expensive first; then the
/// whole items and the overhead, when recorded.
impl<T: Replicate> fmt::Display for FieldCosts<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total_bits().max(1) as f64;
        let width = self
            .fields
            .iter()
            .map(|field| field.name.len())
            .chain([30])
            .max()
            .unwrap_or(30);
        let share = |bits: u64| 100.0 * bits as f64 / total;
        writeln!(
            f,
            "{:<width$} {:>9} {:>12} {:>6}",
            "field", "changes", "bits", "share"
        )?;
        let mut fields: Vec<&FieldCost> = self.fields.iter().collect();
        fields.sort_by(|a, b| b.bits.cmp(&a.bits).then(a.index.cmp(&b.index)));
        for field in fields {
            writeln!(
                f,
                "{:<width$} {:>9} {:>12} {:>5.1}%",
                field.name,
                field.changes,
                field.bits,
                share(field.bits)
            )?;
        }
        if self.added > 0 {
            writeln!(
                f,
                "{:<width$} {:>9} {:>12} {:>5.1}%",
                "(whole items: adds)",
                self.added,
                self.added_bits,
                share(self.added_bits)
            )?;
        }
        if let Some(overhead) = self.overhead_bits() {
            writeln!(
                f,
                "{:<width$} {:>9} {:>12} {:>5.1}%",
                "(ids, keys, masks, frames)",
                "",
                overhead,
                share(overhead)
            )?;
        }
        write!(f, "{:<width$} {:>9} {:>12}", "total", "", self.total_bits())
    }
}
