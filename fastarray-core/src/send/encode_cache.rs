//! Shared encoding: an item's payload (the whole item, or a set of changed
//! fields) is encoded once per frame and the bits are copied into every
//! connection's message that carries the same thing that frame. Whole
//! items that scoped connections send as they enter their scopes are kept
//! longer, from frame to frame until the item changes
//! ([`EncodeCache::whole`]).

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;

use crate::bits::BitWriter;
use crate::error::EncodeError;
use crate::id::ReplicationId;

/// What was encoded: an item in full, or these fields of it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Payload {
    /// Every replicated field (`BitCodec::encode`).
    Full,
    /// The values of the fields in the mask (the message writes the field
    /// set, once per entry or once for all of them).
    Fields(u64),
}

/// An encoding: under 64 bits kept inline, longer ones in the arena, or
/// a whole item's in its line of the kept whole encodings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    /// The bits themselves (fewer than 64), the arena's start byte, or
    /// [`IN_LINE`] with the line's index.
    inline_or_start: u64,
    /// Bits, without the padding of the last byte.
    pub(crate) bits: u64,
}

impl Span {
    /// No encoding (no payload is that long).
    pub(crate) const NONE: Self = Self {
        inline_or_start: 0,
        bits: u64::MAX,
    };

    /// Whether it is an encoding (not [`NONE`](Self::NONE)).
    #[inline]
    pub(crate) fn is_some(&self) -> bool {
        self.bits != Self::NONE.bits
    }
}

/// Marks a [`Span`] as a kept whole encoding's: an inline word of fewer
/// than 64 bits never has its top bit set, nor has an arena's start.
const IN_LINE: u64 = 1 << 63;

/// Bytes of a kept whole encoding: a line is one cache line.
const LINE_BYTES: usize = 46;

/// [`Line::bits`] of an item whose whole encoding is longer than a line
/// holds: the frame's map keeps it.
const LONG: u16 = u16::MAX;

/// A whole item's encoding kept from frame to frame, at the item's
/// position in the array: valid while the item there is the same and its
/// key was not bumped since (`key_frame`, the frame of its last bump, is
/// the same). One cache line, so that finding it costs one miss where the
/// frame's map took a probe and the encoding reads the item's value and
/// whatever it points to (an agent's name).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line {
    /// The item's id, raw.
    id: u64,
    /// The frame of the item's last key bump when it was encoded
    /// (`u64::MAX`: the line holds nothing).
    key_frame: u64,
    bits: u16,
    bytes: [u8; LINE_BYTES],
}

impl Line {
    const EMPTY: Self = Self {
        id: 0,
        key_frame: u64::MAX,
        bits: 0,
        bytes: [0; LINE_BYTES],
    };
}

/// Encodings made during one frame, keyed by item and payload.
#[derive(Clone, Debug, Default)]
pub(crate) struct EncodeCache {
    frame: u64,
    spans: HashMap<(ReplicationId, Payload), Span>,
    arena: Vec<u8>,
    /// Scratch bytes for encoding one payload.
    scratch: Vec<u8>,
    /// The encodings of the frame's changed items' changed fields, by
    /// their places among them (see `Routed::index`): what the connections
    /// that follow the frame's changes send, found with no hashing.
    /// [`Span::NONE`] where none was made.
    changed: Vec<Span>,
    /// Whole encodings kept from frame to frame, by the item's position
    /// (see [`whole`](Self::whole)); empty until a scoped connection
    /// sends an item whole.
    lines: Vec<Line>,
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
        self.begin(frame);
        // One probe whether or not this frame encoded it already.
        let slot = match self.spans.entry((id, payload)) {
            Entry::Occupied(found) => return Ok(*found.get()),
            Entry::Vacant(slot) => slot,
        };
        let span = encode_span(&mut self.scratch, &mut self.arena, encode)?;
        slot.insert(span);
        Ok(span)
    }

    /// The whole encoding of item `id`, at position `pos` of the array,
    /// whose key was last bumped at `key_frame`: kept from an earlier
    /// frame if the item did not change since ([`kept`](Self::kept)), else
    /// made with `encode` and kept. One longer than a line holds is made
    /// once a frame, as any payload ([`get_or_encode`](Self::get_or_encode));
    /// its line says so.
    ///
    /// For the items scoped connections send whole as they enter their
    /// scopes: a walking viewer's entering items are mostly items that
    /// did not move, encoded in earlier frames for other viewers. A line
    /// per position of the array (64 bytes an item), made only for
    /// arrays that have such connections.
    pub(crate) fn whole(
        &mut self,
        frame: u64,
        pos: usize,
        id: ReplicationId,
        key_frame: u64,
        encode: impl FnOnce(&mut BitWriter<'_>) -> Result<(), EncodeError>,
    ) -> Result<Span, EncodeError> {
        self.begin(frame);
        if let Some(line) = self.line(pos, id, key_frame) {
            if line.bits == LONG {
                return self.get_or_encode(frame, id, Payload::Full, encode);
            }
            #[cfg(debug_assertions)]
            {
                // The item did not change: its encoding would be the same.
                let mut fresh = Vec::new();
                let mut writer = BitWriter::new(&mut fresh);
                if encode(&mut writer).is_ok() {
                    let bits = writer.finish();
                    debug_assert_eq!(bits, u64::from(line.bits), "item {id} changed unseen");
                    debug_assert_eq!(
                        fresh[..],
                        line.bytes[..fresh.len()],
                        "item {id} changed unseen"
                    );
                }
            }
            return Ok(line_span(pos, line));
        }
        if pos >= self.lines.len() {
            self.lines.resize(pos + 1, Line::EMPTY);
        }
        self.scratch.clear();
        let mut writer = BitWriter::new(&mut self.scratch);
        encode(&mut writer)?;
        let bits = writer.finish();
        let line = &mut self.lines[pos];
        *line = Line {
            id: id.to_raw(),
            key_frame,
            bits: LONG,
            bytes: [0; LINE_BYTES],
        };
        if self.scratch.len() > LINE_BYTES {
            // The frame's map, where the next connection finds it.
            let span = keep_in_arena(&mut self.arena, &self.scratch, bits);
            self.spans.insert((id, Payload::Full), span);
            return Ok(span);
        }
        line.bits = bits as u16;
        line.bytes[..self.scratch.len()].copy_from_slice(&self.scratch);
        Ok(line_span(pos, line))
    }

    /// The line at position `pos`, if it keeps the whole encoding of item
    /// `id` whose key was last bumped at `key_frame` (or says it is too
    /// long for a line).
    #[inline]
    fn line(&self, pos: usize, id: ReplicationId, key_frame: u64) -> Option<&Line> {
        self.lines
            .get(pos)
            .filter(|line| line.id == id.to_raw() && line.key_frame == key_frame)
    }

    /// Whether [`whole`](Self::whole) would find the encoding of item
    /// `id`, at position `pos`, whose key was last bumped at `key_frame`,
    /// kept from an earlier call, with no encoding.
    #[cfg(test)]
    fn kept(&self, pos: usize, id: ReplicationId, key_frame: u64) -> bool {
        self.line(pos, id, key_frame).is_some()
    }

    /// Reads the kept whole encoding at position `pos`, and does nothing
    /// with it (see [`warm`](Self::warm)).
    pub(crate) fn warm_whole(&self, pos: usize) {
        core::hint::black_box(self.lines.get(pos).map(|line| line.key_frame));
    }

    /// The encoding of the changed fields of the frame `frame`'s changed
    /// item at place `index` among them, if this frame made it.
    #[inline]
    pub(crate) fn changed(&mut self, frame: u64, index: u32) -> Option<Span> {
        self.begin(frame);
        let span = *self.changed.get(index as usize)?;
        span.is_some().then_some(span)
    }

    /// Keeps `span` as the encoding of the changed fields of this frame's
    /// changed item at place `index` among them.
    pub(crate) fn keep_changed(&mut self, index: u32, span: Span) {
        let index = index as usize;
        if index >= self.changed.len() {
            self.changed.resize(index + 1, Span::NONE);
        }
        self.changed[index] = span;
    }

    /// Reads the encoding of `payload` for item `id`, if this frame made
    /// it, and does nothing with it: called on the items of a write
    /// before any is encoded, so that the cache misses of their lookups
    /// overlap.
    pub(crate) fn warm(&self, id: ReplicationId, payload: Payload) {
        core::hint::black_box(self.spans.get(&(id, payload)).map(|span| span.bits));
    }

    /// Starts frame `frame`, if it has not started: the last frame's
    /// encodings go. Every write calls it, so that a frame whose only
    /// message is the shared one (which encodes straight into itself) does
    /// not keep the encodings of the last frame written per connection (a
    /// first full sync's) for good.
    #[inline]
    pub(crate) fn begin(&mut self, frame: u64) {
        if self.frame != frame {
            self.start_frame(frame);
        }
    }

    /// Forgets the last frame's encodings. The map's and the arena's
    /// capacities follow what recent frames needed, so a one-off burst (a
    /// first full sync) does not make every later frame pay to clear a
    /// huge table, nor keep its bytes.
    fn start_frame(&mut self, frame: u64) {
        let used = self.spans.len();
        self.frame = frame;
        self.spans.clear();
        if self.spans.capacity() > 4 * used.max(64) {
            self.spans.shrink_to(2 * used);
        }
        let places = self.changed.len();
        self.changed.clear();
        if self.changed.capacity() > 4 * places.max(1024) {
            self.changed.shrink_to(2 * places);
        }
        let bytes = self.arena.len();
        self.arena.clear();
        if self.arena.capacity() > 4 * bytes.max(4096) {
            self.arena.shrink_to(2 * bytes);
        }
    }

    /// Appends the bits of `span` to `writer`.
    pub(crate) fn copy(&self, span: Span, writer: &mut BitWriter<'_>) {
        if span.inline_or_start & IN_LINE != 0 {
            let line = &self.lines[(span.inline_or_start & !IN_LINE) as usize];
            writer.write_bits_from(&line.bytes, span.bits);
            return;
        }
        if span.bits < 64 {
            writer.write_bits(span.inline_or_start, span.bits as u32);
            return;
        }
        let start = span.inline_or_start as usize;
        // The span lies inside the arena, so every bit is there.
        writer.write_bits_from(&self.arena[start..], span.bits);
    }
}

/// The span of the whole encoding kept in `line`, at position `pos`.
#[inline]
fn line_span(pos: usize, line: &Line) -> Span {
    Span {
        inline_or_start: IN_LINE | pos as u64,
        bits: u64::from(line.bits),
    }
}

/// Encodes with `encode` through `scratch`: the bits inline if they are
/// fewer than a word's (taken from the writer's accumulator, no byte
/// copied), else appended to `arena`.
fn encode_span(
    scratch: &mut Vec<u8>,
    arena: &mut Vec<u8>,
    encode: impl FnOnce(&mut BitWriter<'_>) -> Result<(), EncodeError>,
) -> Result<Span, EncodeError> {
    scratch.clear();
    let mut writer = BitWriter::new(scratch);
    encode(&mut writer)?;
    Ok(match writer.take_word() {
        Some((word, bits)) => Span {
            inline_or_start: word,
            bits,
        },
        None => {
            let bits = writer.finish();
            keep_in_arena(arena, scratch, bits)
        }
    })
}

/// Encodes with `encode` through `scratch`, keeping the bits inline:
/// `None` if they are a word or more, or the encoding failed.
#[inline]
pub(crate) fn inline_span(
    scratch: &mut Vec<u8>,
    encode: impl FnOnce(&mut BitWriter<'_>) -> Result<(), EncodeError>,
) -> Option<Span> {
    scratch.clear();
    let mut writer = BitWriter::new(scratch);
    encode(&mut writer).ok()?;
    let (word, bits) = writer.take_word()?;
    Some(Span {
        inline_or_start: word,
        bits,
    })
}

/// Appends `bytes`, an encoding of `bits` bits, to `arena`.
fn keep_in_arena(arena: &mut Vec<u8>, bytes: &[u8], bits: u64) -> Span {
    let start = arena.len() as u64;
    arena.extend_from_slice(bytes);
    Span {
        inline_or_start: start,
        bits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bits `span` copies, as bytes.
    fn copied(cache: &EncodeCache, span: Span) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer = BitWriter::new(&mut out);
        cache.copy(span, &mut writer);
        writer.finish();
        out
    }

    /// A line is one cache line (`WIRE.md`, "Memory").
    #[test]
    fn documented_sizes_hold() {
        assert_eq!(core::mem::size_of::<Line>(), 64);
        assert_eq!(core::mem::align_of::<Line>(), 64);
    }

    /// A whole encoding is kept from frame to frame while the same item
    /// at the same position has the same key frame, made again otherwise;
    /// one longer than a line holds is made once a frame.
    #[test]
    fn whole_encodings_last_while_the_item_does() {
        let mut cache = EncodeCache::default();
        let (id, other) = (ReplicationId::from_raw(7), ReplicationId::from_raw(8));
        let calls = core::cell::Cell::new(0);
        let encode = |byte: u8, len: usize| {
            let calls = &calls;
            move |w: &mut BitWriter<'_>| {
                calls.set(calls.get() + 1);
                (0..len).for_each(|_| w.write_bits(u64::from(byte), 8));
                Ok(())
            }
        };
        assert!(!cache.kept(3, id, 1));
        let made = cache.whole(1, 3, id, 1, encode(0xab, 20)).unwrap();
        assert_eq!(copied(&cache, made), [0xab; 20]);
        // A later frame, the same item unchanged: kept.
        assert!(cache.kept(3, id, 1));
        let kept = cache.whole(2, 3, id, 1, encode(0xab, 20)).unwrap();
        assert_eq!(copied(&cache, kept), [0xab; 20]);
        // Its key bumped since, or another item at that position: made
        // again.
        assert!(!cache.kept(3, id, 3) && !cache.kept(3, other, 1));
        let changed = cache.whole(3, 3, id, 3, encode(0xcd, 20)).unwrap();
        assert_eq!(copied(&cache, changed), [0xcd; 20]);
        let moved = cache.whole(3, 3, other, 3, encode(0xef, 5)).unwrap();
        assert_eq!(copied(&cache, moved), [0xef; 5]);
        // Too long for a line: made once in frame 3 (a second connection
        // finds it in the frame's map), once more in frame 4.
        calls.set(0);
        let long = |cache: &mut EncodeCache, frame| {
            let span = cache.whole(frame, 0, id, 3, encode(0x11, LINE_BYTES + 1));
            copied(cache, span.unwrap())
        };
        assert_eq!(long(&mut cache, 3), [0x11; LINE_BYTES + 1]);
        assert_eq!(long(&mut cache, 3), [0x11; LINE_BYTES + 1]);
        assert_eq!(calls.get(), 1);
        assert_eq!(long(&mut cache, 4), [0x11; LINE_BYTES + 1]);
        assert_eq!(calls.get(), 2);
        assert_eq!(copied(&cache, moved), [0xef; 5], "other lines untouched");
    }
}
