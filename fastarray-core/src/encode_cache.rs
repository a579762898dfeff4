//! Shared encoding: an item's payload (the whole item, or a set of changed
//! fields) is encoded once per frame and the bits are copied into every
//! connection's message that carries the same thing that frame.

use hashbrown::HashMap;

use crate::bits::{BitReader, BitWriter};
use crate::error::EncodeError;
use crate::id::ReplicationId;

/// What was encoded: an item in full, or these fields of it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Payload {
    /// Every replicated field (`BitCodec::encode`).
    Full,
    /// The field set header and the fields in the mask.
    Fields(u64),
}

/// Where an encoding lives in the arena.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    start: usize,
    /// Bits, without the padding of the last byte.
    pub(crate) bits: u64,
}

/// Encodings made during one frame, keyed by item and payload.
#[derive(Clone, Debug, Default)]
pub(crate) struct EncodeCache {
    frame: u64,
    spans: HashMap<(ReplicationId, Payload), Span>,
    arena: Vec<u8>,
}

impl EncodeCache {
    /// The encoding of `payload` for item `id` at `frame`, made with
    /// `encode` if this frame has not made it yet.
    pub(crate) fn get_or_encode(
        &mut self,
        frame: u64,
        id: ReplicationId,
        payload: Payload,
        encode: impl FnOnce(&mut BitWriter<'_>) -> Result<(), EncodeError>,
    ) -> Result<Span, EncodeError> {
        if self.frame != frame {
            self.frame = frame;
            self.spans.clear();
            self.arena.clear();
        }
        if let Some(&span) = self.spans.get(&(id, payload)) {
            return Ok(span);
        }
        let start = self.arena.len();
        let mut writer = BitWriter::new(&mut self.arena);
        let encoded = encode(&mut writer);
        let bits = writer.finish();
        if let Err(error) = encoded {
            self.arena.truncate(start);
            return Err(error);
        }
        let span = Span { start, bits };
        self.spans.insert((id, payload), span);
        Ok(span)
    }

    /// Appends the bits of `span` to `writer`.
    pub(crate) fn copy(&self, span: Span, writer: &mut BitWriter<'_>) {
        let mut reader = BitReader::new(&self.arena[span.start..]);
        let mut left = span.bits;
        while left > 0 {
            let step = left.min(64) as u32;
            // The span lies inside the arena, so the read cannot fail.
            writer.write_bits(reader.read_bits(step).unwrap_or(0), step);
            left -= u64::from(step);
        }
    }
}
