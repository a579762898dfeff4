//! [`DenseOrder`]: distinct numbers that lie close together put in order
//! without comparing them. Each marks its bit in a map of their range and
//! keeps its place; the map's bits are then read in order. A scoped
//! connection's handles (dealt from 0 up and reused) and a frame's changed
//! ids (an array deals its ids out in order) lie within a few dozen
//! numbers per item: reading the map costs a word per 64 numbers, where
//! sorting a scoped connection's ~130 planned items by comparison took
//! about 90 instructions an item (callgrind, issue 32's MMO tick).

/// The buffers of [`order`](Self::order), kept from call to call.
#[derive(Clone, Debug, Default)]
pub(crate) struct DenseOrder {
    /// One bit per number of the range: present or not.
    marks: Vec<u64>,
    /// Per number of the range, the place of the one present (read only
    /// where a mark says so: what earlier calls left elsewhere is never
    /// used).
    places: Vec<u32>,
    /// The places of the list the last [`sort`](Self::sort) ordered by
    /// the map, in their new order (empty if it compared).
    order: Vec<u64>,
}

/// How many numbers per item the range may span for
/// [`DenseOrder::order`] to order them: a word of marks per 64 numbers,
/// and a 4-byte place per number.
const DENSE: u64 = 32;

impl DenseOrder {
    /// Sorts `list` by `key`: by a map of the keys if they are `distinct`
    /// and close together (see [`order`](Self::order)), each entry moved
    /// once through `spare` (a list kept from call to call, handed back
    /// empty), else by comparing them.
    pub(crate) fn sort<E: Copy>(
        &mut self,
        list: &mut Vec<E>,
        spare: &mut Vec<E>,
        key: impl Fn(&E) -> u64,
        distinct: bool,
    ) {
        let mut order = core::mem::take(&mut self.order);
        order.clear();
        if distinct && self.order(list.iter().map(&key), &mut order) {
            self.order = order;
            self.reorder(list, spare);
        } else {
            self.order = order;
            list.sort_unstable_by_key(key);
        }
    }

    /// Puts `list`, written in the order of the list the last
    /// [`sort`](Self::sort) was given and as long, in the order that sort
    /// put that list in, moving each entry once through `spare`. Returns
    /// `false`, leaving `list` as it is, if that sort compared (or the
    /// lengths differ).
    pub(crate) fn reorder<E: Copy>(&self, list: &mut Vec<E>, spare: &mut Vec<E>) -> bool {
        if self.order.is_empty() || self.order.len() != list.len() {
            return false;
        }
        spare.clear();
        spare.extend(self.order.iter().map(|&at| list[at as usize]));
        core::mem::swap(list, spare);
        spare.clear();
        true
    }

    /// Puts into `order` the places of `names` (distinct), in the order of
    /// the names, if they span at most [`DENSE`] times as many numbers as
    /// there are names; else leaves `order` as it was and returns
    /// `false`.
    pub(crate) fn order(
        &mut self,
        names: impl ExactSizeIterator<Item = u64> + Clone,
        order: &mut Vec<u64>,
    ) -> bool {
        let count = names.len();
        let (low, high) = (names.clone()).fold((u64::MAX, 0), |(low, high), name| {
            (low.min(name), high.max(name))
        });
        let Some(span) = high.checked_sub(low).map(|gap| gap + 1) else {
            return false;
        };
        if span > DENSE * count as u64 || count >= 1 << 32 {
            return false;
        }
        let span = span as usize;
        let words = span.div_ceil(64);
        self.marks.clear();
        self.marks.resize(words, 0);
        if self.places.len() < span {
            self.places.resize(span, 0);
        }
        for (at, name) in (0u32..).zip(names) {
            let name = (name - low) as usize;
            let bit = 1 << (name % 64);
            debug_assert_eq!(self.marks[name / 64] & bit, 0, "names are distinct");
            self.marks[name / 64] |= bit;
            self.places[name] = at;
        }
        order.reserve(count);
        for (word, &bits) in self.marks.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let name = 64 * word + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                order.push(u64::from(self.places[name]));
            }
        }
        // A one-off burst's room is not kept for good.
        if self.places.len() > 4 * span.max(1024) {
            self.places = Vec::new();
        }
        if self.marks.capacity() > 4 * words.max(64) {
            self.marks = Vec::new();
        }
        true
    }
}
