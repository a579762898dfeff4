//! Lists of ids in a delta (the removals, the items): a count, then, when
//! the list is not empty, the code its gaps use, then each id as the gap
//! after the previous one (see `WIRE.md`).
//!
//! The sender picks the gap code per list: an exponential-Golomb code of
//! order `k` costs `k + 1` bits for a gap below `2^k`, so a list of ids
//! spread `~2^k` apart (1% of 10 000 items: `k = 6`) costs about `k + 2`
//! bits per id, and a lone id `n` bits long costs `n + 1`. Elias-delta, the
//! general varint, stays one of the choices, so a list never costs more
//! than with it (which is what budgets count on).

use std::collections::BTreeSet;

use crate::bits::{BitReader, BitWriter};
use crate::bits::{gamma_bits, varint_bits};
use crate::bits::{gamma_word, varint_word};
use crate::error::DecodeError;
use crate::id::ReplicationId;

/// Writes a list length: `0` for none, `1 0` for one, `1 1 gamma(n − 2)`
/// for more. Lists of zero or one id are the common case of a tick.
pub(crate) fn write_count(writer: &mut BitWriter<'_>, count: u64) {
    match count {
        0 => writer.write_bool(false),
        1 => writer.write_bits(0b01, 2),
        _ => {
            writer.write_bits(0b11, 2);
            writer.write_gamma(count - 2);
        }
    }
}

/// Bits [`write_count`] uses.
pub(crate) fn count_bits(count: u64) -> u64 {
    match count {
        0 => 1,
        1 => 2,
        _ => 2 + gamma_bits(count - 2),
    }
}

/// Reads a length written by [`write_count`].
pub(crate) fn read_count(reader: &mut BitReader<'_>) -> Result<u64, DecodeError> {
    if !reader.read_bool()? {
        return Ok(0);
    }
    if !reader.read_bool()? {
        return Ok(1);
    }
    let bit_offset = reader.bit_offset();
    reader
        .read_gamma()?
        .checked_add(2)
        .ok_or(DecodeError::VarintOutOfRange {
            bit_offset,
            target: "list length",
        })
}

/// The code of a list's gaps, written after its count: `0` for Elias-delta
/// ([`BitWriter::write_varint`]), `1` + 4 bits for exponential-Golomb of
/// order `0..=15`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GapCode {
    /// Each gap as an Elias-delta varint: the general code, best for a few
    /// small gaps.
    Delta,
    /// Each gap as `gamma(gap >> k)` and its `k` low bits.
    Golomb(u8),
}

impl GapCode {
    /// Bits of a list's code at most, beyond the one bit of
    /// [`Delta`](Self::Delta) (which budgets count with every list).
    pub(crate) const EXTRA_BITS: u32 = 4;

    /// The code that writes the gaps of the ascending `ids` in few bits,
    /// its own bits included: the exponential-Golomb order that suits the
    /// gaps' lengths best (estimated from how many gaps have each bit
    /// length), or Elias-delta when that is no longer, counted exactly.
    fn choose(ids: impl Iterator<Item = ReplicationId> + Clone) -> Self {
        let mut tally = GapTally::default();
        gaps(ids.clone()).for_each(|gap| tally.add(gap));
        Self::choose_tallied(&mut tally, ids)
    }

    /// [`choose`](Self::choose) for the ascending `ids`, whose gaps
    /// `tally` counted as they were written.
    pub(crate) fn choose_tallied(
        tally: &mut GapTally,
        ids: impl Iterator<Item = ReplicationId>,
    ) -> Self {
        tally.end_run();
        let order = tally.best_order();
        let golomb = GapCode::Golomb(order as u8);
        // The estimate is exact when no gap is longer than the order (each
        // then costs `k + 1`); otherwise count exactly.
        let total = if tally.longest as u64 <= order {
            golomb.bits() + tally.estimate(order)
        } else {
            golomb.bits() + gaps(ids).map(|gap| golomb.gap_bits(gap)).sum::<u64>()
        };
        // Ties go to Elias-delta.
        if total < GapCode::Delta.bits() + tally.delta() {
            golomb
        } else {
            GapCode::Delta
        }
    }

    /// Bits of the code itself.
    fn bits(self) -> u64 {
        match self {
            GapCode::Delta => 1,
            GapCode::Golomb(_) => 1 + u64::from(Self::EXTRA_BITS),
        }
    }

    /// Bits of `gap` in this code.
    fn gap_bits(self, gap: u64) -> u64 {
        match self {
            GapCode::Delta => varint_bits(gap),
            GapCode::Golomb(order) => gamma_bits(gap >> order) + u64::from(order),
        }
    }

    fn write(self, writer: &mut BitWriter<'_>) {
        match self {
            GapCode::Delta => writer.write_bool(false),
            GapCode::Golomb(order) => {
                writer.write_bool(true);
                writer.write_bits(u64::from(order), Self::EXTRA_BITS);
            }
        }
    }

    fn read(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        Ok(if reader.read_bool()? {
            GapCode::Golomb(reader.read_bits(Self::EXTRA_BITS)? as u8)
        } else {
            GapCode::Delta
        })
    }

    #[inline(always)]
    fn write_gap(self, writer: &mut BitWriter<'_>, gap: u64) {
        match self {
            GapCode::Delta => writer.write_varint(gap),
            GapCode::Golomb(order) => {
                let order = u32::from(order);
                writer.write_gamma(gap >> order);
                writer.write_bits(gap, order);
            }
        }
    }

    /// The bits [`write_gap`](Self::write_gap) writes for `gap`, as a
    /// word and its length, if they fit in 63 bits.
    #[inline(always)]
    fn gap_word(self, gap: u64) -> Option<(u64, u32)> {
        match self {
            GapCode::Delta => varint_word(gap),
            GapCode::Golomb(order) => {
                let order = u32::from(order);
                let (high, bits) = gamma_word(gap >> order)?;
                let low = gap & ((1 << order) - 1);
                (bits + order < 64).then_some((high | low << bits, bits + order))
            }
        }
    }

    #[inline(always)]
    fn read_gap(self, reader: &mut BitReader<'_>) -> Result<u64, DecodeError> {
        let GapCode::Golomb(order) = self else {
            return reader.read_varint();
        };
        let bit_offset = reader.bit_offset();
        let order = u32::from(order);
        let high = reader.read_gamma()?;
        if high > u64::MAX >> order {
            return Err(DecodeError::IdOverflow { bit_offset });
        }
        Ok(high << order | reader.read_bits(order)?)
    }
}

/// The gaps of the ascending `ids`: each id minus the one after the
/// previous id (0 for the first id's predecessor).
fn gaps(ids: impl Iterator<Item = ReplicationId>) -> impl Iterator<Item = u64> {
    ids.scan(0u64, |next, id| {
        let gap = id.to_raw() - *next;
        *next = id.to_raw().wrapping_add(1);
        Some(gap)
    })
}

/// The gaps of a list counted as they go by, by bit length and by
/// whether they are all ones (their Elias-delta code is one bit length
/// longer): both codes' costs follow from those counts alone. A run of
/// gaps of one kind (consecutive ids: every gap 0) is counted in one
/// place, not by one counter in memory after another.
#[derive(Clone, Debug)]
pub(crate) struct GapTally {
    /// Per bit length, gaps that are not all ones, then those that are.
    tallies: [u64; 2 * 65],
    /// The kind of the run being counted, and its gaps so far.
    kind: usize,
    run: u64,
    /// The shortest and longest bit lengths counted.
    shortest: usize,
    longest: usize,
}

impl Default for GapTally {
    fn default() -> Self {
        Self {
            tallies: [0; 2 * 65],
            kind: 0,
            run: 0,
            shortest: 64,
            longest: 0,
        }
    }
}

impl GapTally {
    /// Counts one more gap.
    #[inline(always)]
    pub(crate) fn add(&mut self, gap: u64) {
        let length = 64 - gap.leading_zeros() as usize;
        let kind = 2 * length + usize::from(gap & gap.wrapping_add(1) == 0);
        if kind != self.kind {
            self.end_run();
            self.kind = kind;
        }
        self.run += 1;
    }

    /// Adds the run being counted to the tallies.
    fn end_run(&mut self) {
        if self.run > 0 {
            self.tallies[self.kind] += self.run;
            self.shortest = self.shortest.min(self.kind / 2);
            self.longest = self.longest.max(self.kind / 2);
            self.run = 0;
        }
    }

    /// Gaps of bit length `length` in the runs ended so far.
    fn length(&self, length: usize) -> u64 {
        self.tallies[2 * length] + self.tallies[2 * length + 1]
    }

    /// The gaps' bits in Elias-delta, exactly, for the runs ended so far:
    /// a gap of `length` bits codes `gap + 1`, as long unless the gap is
    /// all ones.
    fn delta(&self) -> u64 {
        // The bits of a gap of `length` bits: all ones, or not (a lone one).
        let bits = |length: usize, ones: bool| match (length, ones) {
            (0, _) => varint_bits(0),
            (_, true) => varint_bits(u64::MAX >> (64 - length)),
            (_, false) => varint_bits(1 << (length - 1)),
        };
        (self.shortest..=self.longest)
            .map(|length| {
                self.tallies[2 * length] * bits(length, false)
                    + self.tallies[2 * length + 1] * bits(length, true)
            })
            .sum()
    }

    /// The gaps' bits at exponential-Golomb order `order`, estimated: a
    /// gap `b` bits long costs `k + 1` bits at order `k >= b`; below, its
    /// high part `b − k` bits long costs 3 bits if that is 1, else
    /// `2(b − k) − 1` (one more when the high part is all ones, which is
    /// the estimate's only error).
    #[inline]
    fn estimate(&self, order: u64) -> u64 {
        (self.shortest..=self.longest)
            .map(|length| {
                let n = self.length(length);
                let high = (length as u64).saturating_sub(order);
                let gamma = match high {
                    0 => 1,
                    1 => 3,
                    _ => 2 * high - 1,
                };
                n * (order + gamma)
            })
            .sum()
    }

    /// The order whose estimate is smallest (the lowest on a tie).
    #[inline]
    fn best_order(&self) -> u64 {
        (0..16)
            .min_by_key(|&order| self.estimate(order))
            .unwrap_or(0)
    }
}

/// Writes one list of ascending ids, the payload of each entry (if any)
/// following its id.
pub(crate) struct IdWriter {
    code: GapCode,
    next: u64,
}

impl IdWriter {
    /// Writes the count and gap code of the ascending `ids`, which the
    /// caller then writes one by one with [`write`](Self::write).
    pub(crate) fn start(
        writer: &mut BitWriter<'_>,
        ids: impl ExactSizeIterator<Item = ReplicationId> + Clone,
    ) -> Self {
        let count = ids.len() as u64;
        let code = if count == 0 {
            GapCode::Delta
        } else {
            GapCode::choose(ids)
        };
        Self::write_head(writer, count, code);
        Self { code, next: 0 }
    }

    /// Writes the count and gap code of a list of `count` ids, which the
    /// caller wrote already, in `code` (see [`with_code`](Self::with_code)).
    pub(crate) fn write_head(writer: &mut BitWriter<'_>, count: u64, code: GapCode) {
        write_count(writer, count);
        if count > 0 {
            code.write(writer);
        }
    }

    /// Writes a list's ids in `code`, ahead of its head
    /// ([`write_head`](Self::write_head)).
    pub(crate) fn with_code(code: GapCode) -> Self {
        Self { code, next: 0 }
    }

    /// The last id written plus one (0 for none).
    pub(crate) fn next(&self) -> u64 {
        self.next
    }

    /// Writes the next id of the list (ascending), then the bit `then`
    /// (an entry's first): one write where the two fit in a word.
    #[inline(always)]
    pub(crate) fn write_then(&mut self, writer: &mut BitWriter<'_>, id: ReplicationId, then: bool) {
        let gap = id.to_raw() - self.next;
        self.next = id.to_raw() + 1;
        match self.code.gap_word(gap) {
            Some((word, bits)) => writer.write_bits(word | u64::from(then) << bits, bits + 1),
            None => {
                self.code.write_gap(writer, gap);
                writer.write_bool(then);
            }
        }
    }

    /// Writes the next id of the list (ascending).
    #[inline(always)]
    pub(crate) fn write(&mut self, writer: &mut BitWriter<'_>, id: ReplicationId) {
        self.code.write_gap(writer, id.to_raw() - self.next);
        self.next = id.to_raw() + 1;
    }
}

/// Reads one list written by [`IdWriter`].
#[derive(Clone)]
pub(crate) struct IdReader {
    code: GapCode,
    next: u64,
}

impl IdReader {
    /// Reads a list's count and gap code. The count is refused unless the
    /// input has `min_bits_each` bits left per entry (an id costs at least
    /// one).
    pub(crate) fn start(
        reader: &mut BitReader<'_>,
        min_bits_each: u64,
    ) -> Result<(Self, usize), DecodeError> {
        let claimed = read_count(reader)?;
        let mut code = GapCode::Delta;
        if claimed > 0 {
            code = GapCode::read(reader)?;
        }
        let count = reader.check_len(claimed, min_bits_each.max(1))?;
        Ok((Self { code, next: 0 }, count))
    }

    /// Reads the next id of the list.
    #[inline(always)]
    pub(crate) fn read(
        &mut self,
        reader: &mut BitReader<'_>,
    ) -> Result<ReplicationId, DecodeError> {
        let bit_offset = reader.bit_offset();
        let raw = self
            .next
            .checked_add(self.code.read_gap(reader)?)
            .ok_or(DecodeError::IdOverflow { bit_offset })?;
        self.next = raw
            .checked_add(1)
            .ok_or(DecodeError::IdOverflow { bit_offset })?;
        Ok(ReplicationId::from_raw(raw))
    }
}

/// Writes an id of a snapshot's ascending list as the gap after the
/// previous one, an Elias-delta varint
/// (`next` is the previous id plus one, or zero before the first).
pub(crate) fn write_id(writer: &mut BitWriter<'_>, id: ReplicationId, next: &mut u64) {
    writer.write_varint(id.to_raw() - *next);
    *next = id.to_raw() + 1;
}

/// Reads an id written by [`write_id`].
pub(crate) fn read_id(
    reader: &mut BitReader<'_>,
    next: &mut u64,
) -> Result<ReplicationId, DecodeError> {
    let bit_offset = reader.bit_offset();
    let raw = next
        .checked_add(reader.read_varint()?)
        .ok_or(DecodeError::IdOverflow { bit_offset })?;
    *next = raw
        .checked_add(1)
        .ok_or(DecodeError::IdOverflow { bit_offset })?;
    Ok(ReplicationId::from_raw(raw))
}

/// The bits an id list will take at most, kept exact while ids are added
/// in any order (a budgeted write picks items by priority, not by id): its
/// count, the one bit of the Elias-delta code and every gap as a varint.
/// [`IdWriter`] writes no more, since it takes Elias-delta unless another
/// code is cheaper.
#[derive(Debug, Default)]
pub(crate) struct ListSize {
    ids: BTreeSet<u64>,
    /// The gaps' varints.
    gaps: u64,
}

impl ListSize {
    /// Bits of the list as it is.
    /// Ids in the list.
    pub(crate) fn count(&self) -> u64 {
        self.ids.len() as u64
    }

    pub(crate) fn bits(&self) -> u64 {
        let count = self.ids.len() as u64;
        count_bits(count) + u64::from(count > 0) + self.gaps
    }

    /// How many bits adding `id` (not in the list) would add (none when
    /// it splits a gap into two cheaper ones).
    pub(crate) fn cost(&self, id: ReplicationId) -> u64 {
        let gaps = self.gaps_with(id.to_raw());
        let count = self.ids.len() as u64;
        let with = count_bits(count + 1) + 1 + gaps;
        with.saturating_sub(self.bits())
    }

    /// Adds `id` (not in the list).
    pub(crate) fn insert(&mut self, id: ReplicationId) {
        self.gaps = self.gaps_with(id.to_raw());
        self.ids.insert(id.to_raw());
    }

    /// The gaps' total with `raw` (not in the list) added.
    fn gaps_with(&self, raw: u64) -> u64 {
        let start = |previous: Option<&u64>| previous.map_or(0, |&p| p + 1);
        let previous = self.ids.range(..raw).next_back();
        let mut gaps = self.gaps + varint_bits(raw - start(previous));
        if let Some(&next) = self.ids.range(raw..).next() {
            debug_assert!(next != raw, "id {raw} is already in the list");
            gaps = gaps - varint_bits(next - start(previous)) + varint_bits(next - raw - 1);
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(raw: &[u64]) -> Vec<ReplicationId> {
        raw.iter().copied().map(ReplicationId::from_raw).collect()
    }

    /// The list of ids `raw` as [`IdWriter`] writes it, and its bits.
    fn encode(raw: &[u64]) -> (Vec<u8>, u64) {
        let list = ids(raw);
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        let mut out = IdWriter::start(&mut writer, list.iter().copied());
        for &id in &list {
            out.write(&mut writer, id);
        }
        let bits = writer.finish();
        (bytes, bits)
    }

    fn round_trip(raw: &[u64]) -> u64 {
        let list = ids(raw);
        let (bytes, bits) = encode(raw);
        let mut reader = BitReader::new(&bytes);
        let (mut input, count) = IdReader::start(&mut reader, 1).unwrap();
        assert_eq!(count, list.len());
        let read: Vec<_> = (0..count)
            .map(|_| input.read(&mut reader).unwrap())
            .collect();
        assert_eq!(read, list);
        assert_eq!(reader.bit_offset(), bits);
        bits
    }

    /// A xorshift generator from `state` (not 0): the tests' random lists.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// The gaps of the ascending ids `raw` as Elias-delta varints, in bits.
    fn delta_gap_bits(raw: &[u64]) -> u64 {
        raw.iter()
            .scan(0, |next, &id| {
                let bits = varint_bits(id - *next);
                *next = id.wrapping_add(1);
                Some(bits)
            })
            .sum()
    }

    #[test]
    fn counts_round_trip_in_their_documented_bits() {
        for (count, bits) in [
            (0, 1),
            (1, 2),
            (2, 3),
            (3, 5),
            (4, 5),
            (5, 7),
            (u64::MAX, 2 + 127),
        ] {
            let mut bytes = Vec::new();
            let mut writer = BitWriter::new(&mut bytes);
            write_count(&mut writer, count);
            assert_eq!(writer.finish(), bits, "count {count}");
            assert_eq!(count_bits(count), bits);
            assert_eq!(read_count(&mut BitReader::new(&bytes)), Ok(count));
        }
    }

    #[test]
    fn a_lone_id_costs_its_length_plus_one_after_the_header() {
        // Count `1 0`, code `1` + order 13 (4 bits), then `1` + 13 bits.
        assert_eq!(round_trip(&[5_000]), 2 + 5 + 14);
        // Small ids keep Elias-delta: code `0`, then the varint.
        assert_eq!(round_trip(&[0]), 2 + 1 + 1);
        assert_eq!(round_trip(&[2]), 2 + 1 + 4);
        assert_eq!(round_trip(&[]), 1);
    }

    #[test]
    fn never_costs_more_than_elias_delta() {
        let cases: [&[u64]; 6] = [
            &[0, 1, 2, 3, 4],
            &[7, 300, 301, 90_000, u64::MAX - 1],
            &[u64::MAX - 1],
            &[1, 1_000_000, 1_000_001],
            &[5, 150, 260, 333, 480, 512, 700, 801],
            &[0, 1 << 40, (1 << 41) + 3],
        ];
        for raw in cases {
            let delta = delta_gap_bits(raw);
            let bits = round_trip(raw);
            assert!(
                bits <= count_bits(raw.len() as u64) + 1 + delta,
                "{raw:?}: {bits} bits"
            );
        }
    }

    #[test]
    fn spread_ids_cost_about_their_spacing_in_bits() {
        // 100 ids about 100 apart: order 6, 8 to 9 bits each.
        let raw: Vec<u64> = (0..100u64).map(|i| i * 100 + (i * 37) % 50).collect();
        let bits = round_trip(&raw);
        assert!(bits <= 100 * 9, "{bits} bits");
        let delta = delta_gap_bits(&raw);
        assert!(bits + 150 < delta, "{bits} vs Elias-delta {delta}");
    }

    /// Random ascending lists of every density: each round-trips, never
    /// costs more than Elias-delta with its one code bit, and every
    /// truncation to whole bytes is an error, not a panic.
    #[test]
    fn random_lists_round_trip_within_the_elias_delta_bound() {
        let mut random = xorshift(0x9e37_79b9_7f4a_7c15u64);
        for _ in 0..500 {
            let len = random() % 40;
            let spacing = 1 + random() % (1 << (random() % 40));
            let mut next = random() % (spacing * 4);
            let raw: Vec<u64> = (0..len)
                .map(|_| {
                    let id = next;
                    next += 1 + random() % (2 * spacing);
                    id
                })
                .collect();
            let bits = round_trip(&raw);
            let delta = delta_gap_bits(&raw);
            let bound = count_bits(len) + u64::from(len > 0) + delta;
            assert!(bits <= bound, "{raw:?}: {bits} > {bound}");

            let (bytes, _) = encode(&raw);
            for keep in 0..bits.div_ceil(8) as usize {
                let mut reader = BitReader::new(&bytes[..keep]);
                let read = IdReader::start(&mut reader, 1).and_then(|(mut input, count)| {
                    (0..count).try_for_each(|_| input.read(&mut reader).map(drop))
                });
                assert!(read.is_err(), "{raw:?} cut to {keep} bytes of {bits} bits");
            }
        }
    }

    /// An id and the bit after it, written at once where they fit a word,
    /// are the bits of the two written one after the other, in every code.
    #[test]
    fn an_id_and_the_bit_after_it_are_written_as_two_writes_would() {
        let mut random = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut gaps: Vec<u64> = vec![0, 1, 2, 3, 7, (1 << 31) - 2, (1 << 31) - 1, 1 << 31];
        gaps.extend([u64::MAX / 4, u64::MAX - 1]);
        gaps.extend((0..2_000).map(|_| random() >> (random() % 64)));
        let codes = [GapCode::Delta, GapCode::Golomb(0), GapCode::Golomb(6)];
        for code in codes.into_iter().chain([GapCode::Golomb(15)]) {
            for &gap in &gaps {
                for then in [false, true] {
                    let id = ReplicationId::from_raw(gap);
                    let (mut one, mut two) = (Vec::new(), Vec::new());
                    let mut writer = BitWriter::new(&mut one);
                    IdWriter::with_code(code).write_then(&mut writer, id, then);
                    let bits = writer.finish();
                    let mut writer = BitWriter::new(&mut two);
                    IdWriter::with_code(code).write(&mut writer, id);
                    writer.write_bool(then);
                    assert_eq!(writer.finish(), bits, "{code:?} {gap}");
                    assert_eq!(one, two, "{code:?} {gap} {then}");
                }
            }
        }
    }

    /// The choice of a list's gap code, tallied in runs, is the
    /// cheaper of Elias-delta and the best estimated Golomb order, both
    /// counted gap by gap: runs of consecutive ids (a dense tick), spread
    /// and clustered ids, and gaps up to the largest.
    /// Its tally's lengths and Elias-delta bits are exact.
    #[test]
    fn the_gap_code_is_the_cheaper_counted_exactly() {
        let mut random = xorshift(0x2545_f491_4f6c_dd1du64);
        let mut lists: Vec<Vec<u64>> = vec![
            (0..10_000).collect(),
            (5..900).step_by(3).collect(),
            vec![0, u64::MAX],
            vec![u64::MAX],
            vec![0, 1 << 63, (1 << 63) + 1],
            // Gaps of all ones, whose Elias-delta codes are a length longer.
            (0..40u32)
                .scan(0u64, |next, k| {
                    let id = *next + (1 << k) - 1;
                    *next = id + 1;
                    Some(id)
                })
                .collect(),
        ];
        for _ in 0..2_000 {
            let len = random() % 300;
            let spacing = 1 + random() % (1 << (random() % 48));
            let mut next = random() % (spacing * 4);
            let list = (0..len)
                .map_while(|_| {
                    let id = next;
                    next = next.checked_add(1 + random() % (2 * spacing))?;
                    Some(id)
                })
                .collect();
            lists.push(list);
        }
        for raw in lists {
            if raw.is_empty() {
                continue;
            }
            let ids = raw.iter().map(|&id| ReplicationId::from_raw(id));
            let delta = 1 + delta_gap_bits(&raw);
            let mut tally = GapTally::default();
            gaps(ids.clone()).for_each(|gap| tally.add(gap));
            tally.end_run();
            assert_eq!(1 + tally.delta(), delta, "{raw:?}");
            let mut lengths = [0; 65];
            gaps(ids.clone()).for_each(|gap| lengths[64 - gap.leading_zeros() as usize] += 1);
            assert!((0..65).all(|l| tally.length(l) == lengths[l]), "{raw:?}");
            let present = || (0..65).filter(|&length| lengths[length] > 0);
            assert_eq!(tally.shortest, present().min().unwrap(), "{raw:?}");
            assert_eq!(tally.longest, present().max().unwrap(), "{raw:?}");
            let golomb = GapCode::Golomb(tally.best_order() as u8);
            let exact = golomb.bits() + gaps(ids.clone()).map(|g| golomb.gap_bits(g)).sum::<u64>();
            let expected = if exact < delta {
                golomb
            } else {
                GapCode::Delta
            };
            assert_eq!(GapCode::choose(ids), expected, "{raw:?}");
        }
    }

    /// Ids added in any order: the kept size is what the list costs with
    /// Elias-delta gaps, which bounds what `IdWriter` writes.
    #[test]
    fn list_sizes_bound_the_written_list_in_any_order() {
        let raw = [900u64, 3, 70_000, 4, 0, 901, 65, 12_345_678, 2, 1];
        let mut size = ListSize::default();
        let mut sorted = Vec::new();
        for &id in &raw {
            let before = size.bits();
            let cost = size.cost(ReplicationId::from_raw(id));
            size.insert(ReplicationId::from_raw(id));
            assert_eq!(size.bits().max(before), before + cost);
            sorted.push(id);
            sorted.sort_unstable();
            let delta = delta_gap_bits(&sorted);
            assert_eq!(size.bits(), count_bits(sorted.len() as u64) + 1 + delta);
            assert!(encode(&sorted).1 <= size.bits());
        }
    }

    #[test]
    fn overflowing_gaps_are_refused() {
        // Order 14, then a high part that does not fit in 64 − 14 bits.
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        write_count(&mut writer, 1);
        GapCode::Golomb(14).write(&mut writer);
        writer.write_gamma(1 << 50);
        writer.write_bits(0, 14);
        writer.finish();
        let mut reader = BitReader::new(&bytes);
        let (mut list, count) = IdReader::start(&mut reader, 1).unwrap();
        assert_eq!(count, 1);
        assert!(matches!(
            list.read(&mut reader),
            Err(DecodeError::IdOverflow { .. })
        ));
        // Two ids, the second u64::MAX: no id may follow it, so it is refused.
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        write_count(&mut writer, 2);
        GapCode::Delta.write(&mut writer);
        writer.write_varint(u64::MAX - 1);
        writer.write_varint(0);
        writer.finish();
        let mut reader = BitReader::new(&bytes);
        let (mut list, _) = IdReader::start(&mut reader, 1).unwrap();
        assert_eq!(
            list.read(&mut reader),
            Ok(ReplicationId::from_raw(u64::MAX - 1))
        );
        assert!(matches!(
            list.read(&mut reader),
            Err(DecodeError::IdOverflow { .. })
        ));
    }

    #[test]
    fn a_count_larger_than_the_input_is_refused_before_reading_ids() {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        write_count(&mut writer, 1_000_000);
        GapCode::Golomb(0).write(&mut writer);
        writer.finish();
        assert!(matches!(
            IdReader::start(&mut BitReader::new(&bytes), 1),
            Err(DecodeError::LengthTooLarge { .. })
        ));
    }
}
