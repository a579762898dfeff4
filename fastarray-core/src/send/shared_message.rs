//! The message of a frame shared by caught-up connections.
//!
//! A connection that wrote everything up to the last frame, whose client
//! holds every item or has its add in flight, and that has nothing to
//! repair, gets the same message as every other such connection: the
//! frame's removals, adds and changed fields. A change of an item whose
//! add is still on its way waits on the client for it (the message is a
//! shared delta, `WIRE.md`). The first of them writes it straight from the
//! frame's changeset (`plan::frame_entries`) and the bits are kept here; every
//! one of them, the first included, copies them (or is handed the same
//! bytes, [`DeltaBytes`]) and records the packet in O(adds + removals):
//! its record counts the changed items and names none, since the frame's
//! changeset in the history ring names them (a loss reads them there), so
//! no record entry, view update or shared list is touched per changed item
//! or per connection.

use std::sync::Arc;

use super::delta_bytes::DeltaBytes;
use crate::bits::{BitReader, BitWriter, copy_bits};
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::send_state::retirement::RecordEntry;
use crate::send_state::stats::DeltaStats;
use crate::send_state::{Removal, SendState};
use crate::wire::MessageKind;

/// One frame's shared message and what taking it means for a connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedMessage {
    /// The frame this message is for (0: none yet; frames start at 1).
    frame: u64,
    /// The message's bits, from the first bit of the byte.
    pub(crate) bytes: Vec<u8>,
    /// Bits of the message.
    bits: u64,
    /// The entries that change what a client may hold (adds, whole values,
    /// removals): recorded per connection as usual.
    entries: Vec<RecordEntry>,
    /// Of those, the adds (whole values); the others are removals.
    adds: u32,
    /// The changed fields of items the client knows. A record counts them
    /// and names none (the history ring holds the frame's changes); the
    /// list is kept to gather the next frame's in.
    changed: Vec<(ReplicationId, FieldMask)>,
    /// What writing it counts.
    stats: DeltaStats,
    /// The clients that own an item whose entry is not theirs (see
    /// `send_state::audience`): their connections write their own, as
    /// every connection does when the frame has no message kept (`none`).
    excluded: Vec<u64>,
    /// The frame has no message to share (its changes were owners' alone).
    none: bool,
    /// Whether a removal is a scope exit: a shared delta cannot say so.
    exits: bool,
    /// The message's bytes as handed out whole ([`hand_out`](Self::hand_out)),
    /// made at the frame's first hand-out.
    handed: Option<Arc<[u8]>>,
    /// The message as a shared delta, for connections whose adds are in
    /// flight, made at the first such connection's write of the frame
    /// (see [`form_for`](Self::form_for)).
    early: EarlyForm,
}

/// A frame's shared message as a shared delta (`WIRE.md`): the same bits
/// but the kind's, whose changes of items the client does not hold yet
/// wait there for their adds.
#[derive(Clone, Debug, Default)]
struct EarlyForm {
    bytes: Vec<u8>,
    /// Bits of the message (0: not made for the kept frame).
    bits: u64,
    handed: Option<Arc<[u8]>>,
}

impl EarlyForm {
    /// Forgets the last frame's form: the next is made when first asked.
    fn unmake(&mut self) {
        self.bits = 0;
        self.handed = None;
    }
}

/// Bits a shared delta's kind takes beyond a delta's.
const EARLY_KIND_BITS: u64 = 3;

impl SharedMessage {
    /// Whether frame `frame`'s message is kept.
    #[inline]
    pub(crate) fn holds(&self, frame: u64) -> bool {
        self.frame == frame
    }

    /// Whether the connection serving `client` may take the kept message.
    #[inline]
    pub(crate) fn serves(&self, client: Option<u64>) -> bool {
        !self.none && client.is_none_or(|client| self.excluded.binary_search(&client).is_err())
    }

    /// The form of the kept message a connection takes: `None` if it
    /// cannot take it; else whether it takes it as a shared delta, as a
    /// connection whose client has adds in flight (not `adds_known`) does
    /// when the message changes fields (a change of such an item then
    /// waits on the client for its add). A message with scope exits has
    /// no such form, nor has an item type with shapes (`reshapes`: a
    /// whole value in flight may be of a new shape, an enum's variant,
    /// that a change would reach before it).
    #[inline]
    pub(crate) fn form_for(&mut self, adds_known: bool, reshapes: bool) -> Option<bool> {
        if adds_known || self.changed.is_empty() {
            return Some(false);
        }
        self.early_form(reshapes)
    }

    /// [`form_for`](Self::form_for) for a connection whose client has
    /// adds in flight, when the message changes fields.
    #[cold]
    fn early_form(&mut self, reshapes: bool) -> Option<bool> {
        if self.exits || reshapes {
            return None;
        }
        if self.early.bits == 0 {
            let early = &mut self.early;
            early.bytes.clear();
            let mut writer = BitWriter::new(&mut early.bytes);
            MessageKind::SharedDelta.write(&mut writer);
            let kind = MessageKind::Delta.bits();
            let mut reader = BitReader::at(&self.bytes, kind);
            copy_bits(&mut reader, &mut writer, self.bits - kind);
            early.bits = writer.finish();
            debug_assert_eq!(early.bits, self.bits + EARLY_KIND_BITS);
        }
        Some(true)
    }

    /// Keeps, for frame `frame`, that it has no message to share.
    pub(crate) fn keep_none(&mut self, frame: u64) {
        self.frame = frame;
        self.none = true;
        self.handed = None;
        self.early.unmake();
        self.bits = 0;
        self.entries.clear();
        self.adds = 0;
        self.changed.clear();
        self.excluded.clear();
    }

    /// The list of the kept message's changed fields, emptied, to gather
    /// the next frame's in (a list of a few hundred kB, allocated anew,
    /// costs a page fault per 4 kB). The kept message is the last frame's.
    pub(crate) fn spare_changes(&mut self) -> Vec<(ReplicationId, FieldMask)> {
        let mut spare = core::mem::take(&mut self.changed);
        spare.clear();
        spare
    }

    /// The kept message's size, in bits, as a shared delta if `early`.
    pub(crate) fn bits(&self, early: bool) -> u64 {
        match early {
            false => self.bits,
            true => self.bits + EARLY_KIND_BITS,
        }
    }

    /// Keeps the message of `frame` just written into `bytes`, which
    /// carries `removals`, the items sent `whole` (their record entries) and the
    /// `changed` fields of the others, for the caught-up connections of
    /// this frame but those of the `excluded` clients (sorted): the entries
    /// each records, and the changed fields they all share.
    pub(crate) fn keep(
        &mut self,
        frame: u64,
        removals: &[Removal],
        whole: &[RecordEntry],
        changed: Vec<(ReplicationId, FieldMask)>,
        excluded: Vec<u64>,
        stats: DeltaStats,
    ) {
        self.frame = frame;
        self.none = false;
        self.handed = None;
        self.excluded = excluded;
        self.exits = removals.iter().any(|removal| removal.exit);
        self.early.unmake();
        self.bits = stats.bits;
        self.entries.clear();
        let key = ReplicationKey::default();
        self.entries.extend(
            removals
                .iter()
                .map(|removal| RecordEntry::new(removal.id, removal.work(), key, frame, frame)),
        );
        self.entries.extend_from_slice(whole);
        self.adds = u32::try_from(whole.len()).unwrap_or(u32::MAX);
        self.changed = changed;
        // The next frame's message may be far smaller (after a burst).
        if self.entries.capacity() > 4 * self.entries.len().max(64) {
            self.entries.shrink_to(2 * self.entries.len());
        }
        self.stats = DeltaStats {
            shared: true,
            ..stats
        };
    }

    /// Records the kept message as packet `packet` of a caught-up
    /// connection: O(adds + removals) for the connection, whatever the
    /// number of changed items. The caller then [copies](Self::copy) or
    /// [hands out](Self::hand_out) its bytes.
    #[inline]
    pub(crate) fn record(&self, state: &mut SendState, packet: u32, all_fields: FieldMask) {
        state.record_shared(
            packet,
            self.frame,
            &self.entries,
            self.adds,
            self.changed.len(),
            all_fields,
        );
    }

    /// What writing the kept message counts, for every connection that
    /// takes it (as a shared delta if `early`).
    #[inline]
    pub(crate) fn stats(&self, early: bool) -> DeltaStats {
        DeltaStats {
            bits: self.bits(early),
            ..self.stats
        }
    }

    /// Appends the kept message's bits to `writer`, as a shared delta if
    /// `early` (made by [`form_for`](Self::form_for)).
    pub(crate) fn copy(&self, writer: &mut BitWriter<'_>, early: bool) {
        match early {
            false => writer.write_bits_from(&self.bytes, self.bits),
            true => writer.write_bits_from(&self.early.bytes, self.early.bits),
        }
    }

    /// The kept message's bytes, lent (as a shared delta if `early`, made by
    /// [`form_for`](Self::form_for)).
    #[inline]
    pub(crate) fn lend(&self, early: bool) -> &[u8] {
        let (bytes, bits) = match early {
            false => (&self.bytes, self.bits),
            true => (&self.early.bytes, self.early.bits),
        };
        whole_bytes(bytes, bits)
    }

    /// The kept message as a message of its own, the same bytes for every
    /// connection this frame that takes it in the same form: copied once,
    /// at the frame's first hand-out.
    #[inline]
    pub(crate) fn hand_out(&mut self, early: bool) -> DeltaBytes {
        let (bytes, bits, handed) = match early {
            false => (&self.bytes, self.bits, &mut self.handed),
            true => (&self.early.bytes, self.early.bits, &mut self.early.handed),
        };
        let handed = handed.get_or_insert_with(|| Arc::from(whole_bytes(bytes, bits)));
        DeltaBytes::shared(Arc::clone(handed))
    }
}

/// The bytes of a message of `bits` bits written from the start of `bytes`.
#[inline]
fn whole_bytes(bytes: &[u8], bits: u64) -> &[u8] {
    &bytes[..bits.div_ceil(8) as usize]
}
