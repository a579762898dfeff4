//! The encodings of the newest frame's changed fields, made by its commit
//! as it diffs each item, while the item is in cache: what the scoped
//! connections that follow the frame's changes send (see
//! `send_state::follow`), found by the change's place among the frame's
//! changed items (`Routed::index`), read by the writes of every thread.
//!
//! Made later, by the first write to send each, an encoding read its item
//! from memory again: in issue 32's MMO tick (1 000 walking viewers), the
//! wait for the item took four fifths of that encoding's time.
//!
//! Only encodings under a word are kept (a move, a change of health): a
//! longer one is made by the writes as before, and kept in their
//! [`EncodeCache`](super::encode_cache::EncodeCache).

use super::encode_cache::{Span, inline_span};
use crate::history::History;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::replicate::Replicate;

/// The newest frame's changed fields, encoded at its commit.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChangedSpans {
    /// The frame they were made for (0: none).
    frame: u64,
    /// Per changed item, its id, its changed fields and their encoding
    /// ([`Span::NONE`] if it is a word or longer); once the commit is
    /// done, in the order of the frame's changed items.
    spans: Vec<(ReplicationId, FieldMask, Span)>,
    /// Scratch bytes to encode into (an encoding under a word is never
    /// copied out of the writer).
    scratch: Vec<u8>,
    /// What putting them in id order reuses, when the commit diffed the
    /// items out of it.
    spare: Vec<(ReplicationId, FieldMask, Span)>,
}

impl ChangedSpans {
    /// Starts frame `frame`'s encodings (0: a frame with none), dropping
    /// the last frame's.
    pub(crate) fn begin(&mut self, frame: u64) {
        self.frame = frame;
        let made = self.spans.len();
        self.spans.clear();
        if self.spans.capacity() > 4 * made.max(1024) {
            self.spans.shrink_to(2 * made);
        }
    }

    /// Encodes the changed fields `mask` of item `id`, whose value is
    /// `value`, as the commit finds them changed.
    #[inline]
    pub(crate) fn make<T: Replicate>(&mut self, id: ReplicationId, value: &T, mask: FieldMask) {
        let span = inline_span(&mut self.scratch, |w| value.encode_fields(mask, w));
        self.spans.push((id, mask, span.unwrap_or(Span::NONE)));
    }

    /// The commit is done: its changed items are the newest of `history`
    /// (sorted by id). The encodings follow their order (put in it as the
    /// history put the changes, with no second sort), or are dropped if
    /// they do not name the same items and fields (an item that changed
    /// owner this frame adds to its fields).
    pub(crate) fn finish(&mut self, history: &History) {
        let changed = history
            .newest()
            .map_or(&[][..], |changes| &changes.changed[..]);
        let sorted = self.spans.is_sorted_by_key(|&(id, _, _)| id);
        if !sorted && !history.order_as_changes(&mut self.spans, &mut self.spare) {
            self.spans.sort_unstable_by_key(|&(id, _, _)| id);
        }
        let same = self.spans.len() == changed.len()
            && (self.spans.iter())
                .zip(changed)
                .all(|(&(id, mask, _), &(other, fields))| id == other && mask == fields);
        if !same {
            self.begin(0);
        }
    }

    /// The encoding of the changed fields of the changed item at place
    /// `index` among frame `frame`'s, if the commit made it.
    #[inline]
    pub(crate) fn get(&self, frame: u64, index: u32) -> Option<Span> {
        if self.frame != frame {
            return None;
        }
        let &(_, _, span) = self.spans.get(index as usize)?;
        span.is_some().then_some(span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::BitWriter;
    use crate::send::encode_cache::EncodeCache;

    #[derive(fastarray_derive::Replicate, Clone, Debug, PartialEq)]
    struct Unit {
        x: i32,
        hp: u16,
        name: String,
    }

    fn unit(x: i32, name: &str) -> Unit {
        Unit {
            x,
            hp: x as u16,
            name: name.into(),
        }
    }

    /// The bits of `span`, as bytes (an inline span copies from any cache).
    fn bits(span: Span) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer = BitWriter::new(&mut out);
        EncodeCache::default().copy(span, &mut writer);
        writer.finish();
        out
    }

    /// The bits `encode_fields` writes for `mask` of `value`.
    fn encoded(value: &Unit, mask: FieldMask) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer = BitWriter::new(&mut out);
        value.encode_fields(mask, &mut writer).unwrap();
        writer.finish();
        out
    }

    const X: FieldMask = FieldMask::single(0);
    const HP_NAME: FieldMask = FieldMask::from_bits(0b110);

    /// A history whose newest frame, `frame`, changed `changed` (in the
    /// order its commit found them), sorted as a commit sorts them.
    fn history(frame: u64, mut changed: Vec<(ReplicationId, FieldMask)>) -> History {
        let mut history = History::default();
        let mut changes = history.next_slot(frame);
        history.sort_changes(&mut changed, true);
        changes.changed = changed;
        history.push(changes);
        history
    }

    /// Diffed in an order that is not the ids' (the items' places in the
    /// array, after a removal moved one): each encoding is found at its
    /// item's place among the frame's changed items, which the history
    /// keeps in id order; one of a word or more is not kept.
    #[test]
    fn encodings_follow_the_order_of_the_frames_changes() {
        let id = ReplicationId::from_raw;
        let (a, b, c) = (
            unit(5, "ab"),
            unit(-7, "a long name, past a word"),
            unit(9, ""),
        );
        let mut spans = ChangedSpans::default();
        spans.begin(4);
        spans.make(id(30), &c, X);
        spans.make(id(10), &a, HP_NAME);
        spans.make(id(20), &b, HP_NAME);
        // Put in order as the history put the changes (by the map of
        // their ids), then as a sort by comparison would (ids far apart).
        spans.finish(&history(
            4,
            vec![(id(30), X), (id(10), HP_NAME), (id(20), HP_NAME)],
        ));
        assert_eq!(spans.get(4, 0).map(bits), Some(encoded(&a, HP_NAME)));
        assert!(
            spans.get(4, 1).is_none(),
            "a name past a word is made by the writes"
        );
        assert_eq!(spans.get(4, 2).map(bits), Some(encoded(&c, X)));
        assert!(spans.get(4, 3).is_none());
        assert!(spans.get(5, 0).is_none(), "another frame's");
        // The next frame starts empty.
        spans.begin(5);
        assert!(spans.get(5, 0).is_none());

        let far = |n: u64| id(n << 40);
        spans.make(far(3), &c, X);
        spans.make(far(1), &a, HP_NAME);
        spans.finish(&history(5, vec![(far(3), X), (far(1), HP_NAME)]));
        assert_eq!(spans.get(5, 0).map(bits), Some(encoded(&a, HP_NAME)));
        assert_eq!(spans.get(5, 1).map(bits), Some(encoded(&c, X)));
    }

    /// Encodings that do not name the frame's changes exactly (an item
    /// that changed owner adds its audience fields, or an entry of its
    /// own) are dropped, every one.
    #[test]
    fn encodings_that_differ_from_the_frames_changes_are_dropped() {
        let id = ReplicationId::from_raw;
        let a = unit(1, "a");
        for changed in [
            vec![(id(1), HP_NAME), (id(2), X)],
            vec![(id(1), X)],
            vec![(id(1), X), (id(2), X), (id(3), X)],
        ] {
            let mut spans = ChangedSpans::default();
            spans.begin(2);
            spans.make(id(2), &a, X);
            spans.make(id(1), &a, X);
            spans.finish(&history(2, changed.clone()));
            assert!(
                (0..3).all(|index| spans.get(2, index).is_none()),
                "{changed:?}"
            );
        }
    }
}
