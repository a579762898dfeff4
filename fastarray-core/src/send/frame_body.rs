//! The entries of a frame's shared message, written by its commit as it
//! diffs each item, while the item is in cache: the one pass of issue 32.
//! Writing the message later then copies these bits after its head, with
//! no item read again.
//!
//! It covers the common frame of a server whose caught-up connections
//! take the shared message: changed fields only (no add, no new shape),
//! the same fields of every item (a dense or sparse tick), written in
//! ascending id order (as `iter_mut` writes). The head states what the
//! entries were written for — how many, the ids' gap code, the common
//! fields — so the code must be chosen before the first id: it is the
//! last frame's, and the frame's own choice, counted as the ids go by,
//! must agree. Any other frame writes its message from the items as
//! before (`Message::write_frame`), byte for byte what this gives.

use crate::bits::BitWriter;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::Replicate;
use crate::wire::id_list::{GapCode, GapTally, IdWriter};

/// The newest frame's entries, written at its commit, and whether the
/// next commit should write them.
#[derive(Clone, Debug)]
pub(crate) struct FrameBody {
    /// The entries' bits.
    bytes: Vec<u8>,
    state: BodyState,
}

/// What a [`FrameBody`] knows of its entries.
#[derive(Clone, Debug)]
struct BodyState {
    /// Whether a shared message was written since the last commit: only
    /// then does a commit write the next frame's entries.
    wanted: bool,
    /// The frame whose entries are held (0: none).
    frame: u64,
    bits: u64,
    /// The code the ids went in: the last frame's choice.
    code: GapCode,
    /// The ids' gaps, counted as they went in.
    tally: GapTally,
    /// The fields every entry carries (the first one's).
    common: Option<FieldMask>,
    count: usize,
    /// Whether every entry so far went in the layout above.
    fits: bool,
}

impl Default for FrameBody {
    fn default() -> Self {
        Self {
            bytes: Vec::new(),
            state: BodyState {
                wanted: false,
                frame: 0,
                bits: 0,
                code: GapCode::Delta,
                tally: GapTally::default(),
                common: None,
                count: 0,
                fits: false,
            },
        }
    }
}

/// The entries of what a frame's shared message holds, written.
pub(crate) struct Written<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) bits: u64,
    pub(crate) code: GapCode,
    /// The fields every entry carries.
    pub(crate) common: FieldMask,
}

impl FrameBody {
    /// A shared message is being written: the next commit writes its
    /// frame's entries.
    pub(crate) fn want(&mut self) {
        self.state.wanted = true;
    }

    /// Starts writing the entries of frame `frame`, if a shared message
    /// was written since the last commit and the item type's entries can
    /// go in this layout (no array fields); else holds no entries.
    pub(crate) fn begin<T: Replicate>(&mut self, frame: u64) -> Option<BodyWriter<'_>> {
        let state = &mut self.state;
        state.frame = 0;
        if !core::mem::take(&mut state.wanted) || T::ARRAY_FIELDS > 0 {
            return None;
        }
        state.frame = frame;
        state.tally = GapTally::default();
        state.common = None;
        state.count = 0;
        state.fits = true;
        self.bytes.clear();
        Some(BodyWriter {
            ids: IdWriter::with_code(state.code),
            writer: BitWriter::new(&mut self.bytes),
            state,
        })
    }

    /// Whether the entries of frame `frame` were written, all in the
    /// layout above.
    #[cfg(test)]
    pub(crate) fn holds(&self, frame: u64) -> bool {
        self.state.frame == frame && self.state.fits && self.state.count >= 2
    }

    /// The entries of frame `frame`, if they are exactly those of its
    /// shared message, whose item list carries `changed` (ascending, each
    /// with the fields sent) and nothing else, and the code of their ids
    /// is the one the list would choose.
    pub(crate) fn written(
        &mut self,
        frame: u64,
        changed: &[(ReplicationId, FieldMask)],
        whole: usize,
    ) -> Option<Written<'_>> {
        let state = &mut self.state;
        let common = state.common?;
        let agree = state.frame == frame
            && state.fits
            && whole == 0
            && state.count >= 2
            && state.count == changed.len();
        if !agree {
            return None;
        }
        // The code this frame's list would choose; the next body's ids go
        // in it.
        let ids = changed.iter().map(|&(id, _)| id);
        let chosen = GapCode::choose_tallied(&mut state.tally, ids);
        let code = core::mem::replace(&mut state.code, chosen);
        (code == chosen).then_some(Written {
            bytes: &self.bytes,
            bits: state.bits,
            code,
            common,
        })
    }
}

/// Writes a frame's entries as its commit finds them
/// ([`FrameBody::begin`]).
pub(crate) struct BodyWriter<'a> {
    writer: BitWriter<'a>,
    ids: IdWriter,
    state: &'a mut BodyState,
}

impl BodyWriter<'_> {
    /// Writes the entry of item `id`, whose fields `mask` changed to
    /// `value`'s, as the shared message writes it: its id, the bit saying
    /// it is not whole, and the fields (the field set is the message's,
    /// stated once). An entry that does not fit that layout (out of order,
    /// other fields than the first entry's, a new shape) ends the body.
    #[inline]
    pub(crate) fn entry<T: Replicate>(&mut self, id: ReplicationId, value: &T, mask: FieldMask) {
        let state = &mut *self.state;
        if !state.fits {
            return;
        }
        let next = self.ids.next();
        let common = *state.common.get_or_insert(mask);
        if id.to_raw() < next || common != mask || mask.intersects(T::STRUCTURE) {
            state.fits = false;
            return;
        }
        state.tally.add(id.to_raw() - next);
        self.ids.write_then(&mut self.writer, id, false);
        state.fits = value.encode_fields(mask, &mut self.writer).is_ok();
        state.count += 1;
    }

    /// Ends the body.
    pub(crate) fn finish(self) {
        self.state.bits = self.writer.finish();
    }
}
