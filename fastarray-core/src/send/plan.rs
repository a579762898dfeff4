//! Planning a message: which removals and items it carries — every piece of
//! work due, or, within a bit budget, the removals and then the work that
//! has waited longest, counted exactly — with each item's payload encoded
//! and its arrays' deltas written.

use super::changed_spans::ChangedSpans;
use super::encode_cache::{EncodeCache, Payload, Span};
use crate::bits::{BitWriter, gamma_bits, varint_bits};
use crate::dense_order::DenseOrder;
use crate::error::SendError;
use crate::id::{ReplicationId, ReplicationKey};
use crate::mask::FieldMask;
use crate::receive_state::sources::Sources;
use crate::replicate::Replicate;
use crate::send_state::audience::Audience;
use crate::send_state::follow::Follow;
use crate::send_state::pending::Work;
use crate::send_state::routed::NOT_CHANGED;
use crate::send_state::stats::{Budget, DeltaStats, Oversized};
use crate::send_state::{Due, LOOKAHEAD, Removal, SendState};
use crate::store::Store;
use crate::wire::MessageKind;
use crate::wire::exits::exit_bits;
use crate::wire::field_set::field_set_bits;
use crate::wire::frame::frame_bits;
use crate::wire::id_list::ListSize;

/// An item chosen for a message.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    pub(crate) id: ReplicationId,
    /// Its name on the wire (see [`Due::wire`]).
    pub(crate) wire: ReplicationId,
    pub(crate) work: Work,
    /// The fields its entry carries if whole: those the connection may see.
    pub(crate) whole: FieldMask,
    pub(crate) key: ReplicationKey,
    /// The frame its work first became due.
    pub(crate) since: u64,
    /// Its entry after the whole/fields flag, in the encode cache.
    pub(crate) span: Span,
    /// Its array deltas in the plan's scratch: first bit and length.
    pub(crate) inner: (u64, u64),
    /// Whether it is changed fields sent as they were handed (see
    /// `send_state::follow`).
    pub(crate) followed: bool,
}

/// What one message carries, chosen and encoded, not yet written.
pub(crate) struct Plan {
    /// Removals and scope exits.
    pub(crate) removals: Vec<Removal>,
    pub(crate) items: Vec<Planned>,
    /// Removals and items left for a later packet.
    pub(crate) deferred: usize,
    pub(crate) oversized: Option<Oversized>,
    /// The figures of the array deltas written inside the items.
    pub(crate) inner: DeltaStats,
    /// Items whose arrays have work left, and since when it is due.
    pub(crate) unfinished: Vec<(ReplicationId, u64)>,
    /// Items whose changes wait for their detail level's interval.
    pub(crate) waiting: usize,
}

/// The bits a budgeted message has used so far: exact for everything
/// but the id lists, which are counted as if written with Elias-delta
/// gaps (the writer takes that code unless another is cheaper).
struct Fill {
    budget: u64,
    /// What a message of a single item may take (see [`Budget::alone`]).
    alone_budget: u64,
    /// Kind and frame.
    header: u64,
    removals: ListSize,
    /// Whether a removal is a scope exit (then each takes a flag bit).
    exits: bool,
    /// Whether the connection names items by handles.
    handles: bool,
    items: ListSize,
    /// Flags, payloads and array deltas of the items.
    entries: u64,
}

impl Fill {
    fn used(&self) -> u64 {
        self.header
            + self.removals.bits()
            + self.exit_bits(self.exits)
            + self.items.bits()
            + self.entries
    }

    /// The bits of the exit flags of the removals taken so far, `exits`
    /// being whether one of them is an exit.
    fn exit_bits(&self, exits: bool) -> u64 {
        exit_bits(self.removals.count(), exits, self.handles)
    }

    fn left(&self) -> u64 {
        self.budget.saturating_sub(self.used())
    }

    /// The bits of a message carrying only an item with `id` whose entry
    /// takes `entry` bits after its id.
    fn alone(&self, id: ReplicationId, entry: u64) -> u64 {
        let empty = ListSize::default();
        let items = empty.bits() + empty.cost(id);
        self.header + empty.bits() + items + entry
    }
}

/// The array deltas of one item, written for a message.
struct ArrayDeltas {
    bits: u64,
    /// Every array wrote its one-bit empty message.
    wrote_nothing: bool,
    /// Some array has work left (the budget ran out).
    unfinished: bool,
    oversized: Option<Oversized>,
    stats: DeltaStats,
}

/// The items a plan reads: shared by the writes of several threads, or
/// held alone, as a type with arrays inside its items needs (their deltas
/// are written by the arrays themselves).
pub(crate) enum Items<'a, T> {
    /// Read by several writes at once.
    Shared(&'a Store<T>),
    /// Held by this write alone.
    Exclusive(&'a mut Store<T>),
}

impl<T> Items<'_, T> {
    /// The store, to read.
    pub(crate) fn get(&self) -> &Store<T> {
        match self {
            Self::Shared(store) => store,
            Self::Exclusive(store) => store,
        }
    }

    /// The same items, for a shorter while.
    pub(crate) fn reborrow(&mut self) -> Items<'_, T> {
        match self {
            Self::Shared(store) => Items::Shared(store),
            Self::Exclusive(store) => Items::Exclusive(store),
        }
    }
}

/// The buffers a plan reuses from write to write: allocating lists of a few
/// kB per write cost 7% of a sparse write's instructions in malloc.
#[derive(Debug, Default)]
pub(crate) struct PlanBuffers {
    /// The list of the items of the last message written; its capacity
    /// follows what recent writes needed.
    pub(crate) planned: Vec<Planned>,
    /// The work due of the last message written, likewise.
    due: Vec<Due>,
    /// [`sort_by_wire`](Self::sort_by_wire)'s keys and its sorted list.
    order: Vec<u64>,
    sorted: Vec<Planned>,
    /// [`sort_by_wire`](Self::sort_by_wire)'s order of names that lie
    /// close together.
    dense: DenseOrder,
}

/// Plans `state`'s message for `packet` from the items of `store`, their
/// payloads encoded in `encoded` and their arrays' deltas written into
/// `scratch`, each item with the fields `audience` lets the connection see;
/// with `follows`, changed fields taken to send as they were handed (only
/// without a budget). On error, every array delta already written for
/// `packet` is retired as lost, so nothing stays in flight for a packet
/// that will not be sent. Changed fields whose encoding the commit made
/// (`changed`) are not encoded again. On a relay, `sources` says which
/// removals are written as exits.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan<T: Replicate>(
    mut store: Items<'_, T>,
    encoded: &mut EncodeCache,
    buffers: &mut PlanBuffers,
    audience: &Audience<'_>,
    sources: Option<&Sources>,
    changed: &ChangedSpans,
    state: &mut SendState,
    packet: u32,
    budget: Option<Budget>,
    follows: &[Follow],
    scratch: &mut Vec<u8>,
) -> Result<Plan, SendError> {
    debug_assert!(budget.is_none() || follows.is_empty());
    let mut due = reuse(core::mem::take(&mut buffers.due), state.pending_items());
    let mut removals = Vec::new();
    let waiting = state.due(
        store.get().frame(),
        |id| store.get().position(id),
        T::ARRAY_FIELDS > 0,
        audience,
        &mut removals,
        &mut due,
    );
    if let Some(sources) = sources {
        for removal in &mut removals {
            removal.exit |= sources.returns(removal.id);
        }
    }
    let mut plan = Plan {
        removals: Vec::new(),
        items: core::mem::take(&mut buffers.planned),
        deferred: 0,
        oversized: None,
        inner: DeltaStats::default(),
        unfinished: Vec::new(),
        waiting,
    };
    plan.items = reuse(core::mem::take(&mut plan.items), due.len() + follows.len());
    let handles = state.uses_handles();
    let mut fill = budget.map(|budget| Fill {
        budget: budget.bits,
        alone_budget: budget.alone,
        // The kind, the frame, and the bit saying whether the items share
        // one field set (counted as if they did not: sharing only saves).
        header: MessageKind::delta(false, handles).bits()
            + frame_bits(store.get().frame(), state.acked_frame())
            + 1,
        removals: ListSize::default(),
        exits: false,
        handles,
        items: ListSize::default(),
        entries: 0,
    });
    match &mut fill {
        None => {
            plan.removals = removals;
            plan.items.reserve(due.len());
        }
        Some(fill) => {
            // Removals first, then by how long the work has waited.
            removals.sort_unstable_by_key(|removal| (removal.since, removal.id));
            for removal in removals {
                // The list grows by the id, and the flags by one bit (or
                // one per removal so far, for the first exit).
                let exits = fill.exits || removal.exit;
                let flags = exit_bits(fill.removals.count() + 1, exits, handles);
                let cost = fill.removals.cost(removal.wire) + flags - fill.exit_bits(fill.exits);
                if fill.used() + cost <= fill.budget {
                    fill.removals.insert(removal.wire);
                    fill.exits = exits;
                    plan.removals.push(removal);
                } else {
                    plan.deferred += 1;
                }
            }
            // Then by urgency: priority times frames waited (without a
            // scope every priority is 1, so that is the oldest first).
            let frame = store.get().frame();
            if state.scope().is_some() {
                let mut urgent: Vec<(f32, Due)> = due
                    .drain(..)
                    .map(|d| (d.urgency(frame, state.priority(d.id)), d))
                    .collect();
                urgent.sort_unstable_by(|(a, x), (b, y)| {
                    b.total_cmp(a).then((x.since, x.id).cmp(&(y.since, y.id)))
                });
                due.extend(urgent.into_iter().map(|(_, d)| d));
            } else {
                due.sort_unstable_by_key(|d| (d.since, d.id));
            }
        }
    }
    let mut writer = BitWriter::new(scratch);
    let mut written = Vec::new();
    let chooser = Chooser {
        store: store.reborrow(),
        encoded,
        changed,
        state,
        packet,
    };
    let result = chooser
        .choose(
            &mut due,
            fill.as_mut(),
            &mut writer,
            &mut plan,
            &mut written,
        )
        .and_then(|chooser| chooser.follow(follows, &mut plan));
    drop(writer);
    buffers.due = due;
    if let Err(error) = result {
        state.unwrite_inner(&written, packet);
        buffers.planned = plan.items;
        return Err(error);
    }
    Ok(plan)
}

impl PlanBuffers {
    /// Gives back the room of lists that no connection planned with this
    /// frame (every connection took the shared message).
    pub(crate) fn idle(&mut self) {
        self.due = reuse(core::mem::take(&mut self.due), 0);
        self.planned = reuse(core::mem::take(&mut self.planned), 0);
        self.order = reuse(core::mem::take(&mut self.order), 0);
        self.sorted = reuse(core::mem::take(&mut self.sorted), 0);
        self.dense = DenseOrder::default();
    }

    /// Puts `items` in the order of their names on the wire, as a message
    /// lists them. A planned item is a dozen words: sorting their names
    /// with their places, then moving each item once, costs a third of
    /// sorting the items themselves (a scoped connection's items come in
    /// the order their work became due).
    ///
    /// A name and its place are sorted as one `u64` (the name above
    /// [`PLACE_BITS`] bits of place) whenever they fit, as a scoped
    /// connection's handles and an array's ids below 2^40 do: a 130-item
    /// message sorted in about half the instructions of `(name, place)`
    /// pairs. Names are distinct, so the order is the names' either way.
    ///
    /// Names that lie close together (a scoped connection's handles are
    /// dealt from 0 up and reused: a 1 000-item scope names its items
    /// below about 1 200) are not compared at all: each marks its bit in a
    /// map of the names' range, which is then read in order
    /// ([`DenseOrder`]).
    pub(crate) fn sort_by_wire(&mut self, items: &mut Vec<Planned>) {
        if items.is_sorted_by_key(|item| item.wire) {
            return;
        }
        let mut order = reuse(core::mem::take(&mut self.order), items.len());
        let fits = || {
            items.len() < 1 << PLACE_BITS
                && items
                    .iter()
                    .all(|item| item.wire.to_raw() < 1 << (64 - PLACE_BITS))
        };
        let names = items.iter().map(|item| item.wire.to_raw());
        if self.dense.order(names, &mut order) {
            // Ordered by the map of the names.
        } else if fits() {
            order.extend(
                (0u64..)
                    .zip(items.iter())
                    .map(|(at, item)| item.wire.to_raw() << PLACE_BITS | at),
            );
            order.sort_unstable();
            order
                .iter_mut()
                .for_each(|key| *key &= (1 << PLACE_BITS) - 1);
        } else {
            let mut pairs: Vec<(ReplicationId, u64)> = (0u64..)
                .zip(items.iter())
                .map(|(at, item)| (item.wire, at))
                .collect();
            pairs.sort_unstable();
            order.extend(pairs.into_iter().map(|(_, at)| at));
        }
        let mut sorted = reuse(core::mem::take(&mut self.sorted), items.len());
        sorted.extend(order.iter().map(|&at| items[at as usize].clone()));
        core::mem::swap(items, &mut sorted);
        self.order = order;
        self.sorted = sorted;
    }
}

/// The bits of an item's place in [`PlanBuffers::sort_by_wire`]'s keys.
const PLACE_BITS: u32 = 24;

/// `list` emptied, with room for `needed`: its capacity follows what
/// recent writes needed, so a one-off burst (a first full sync) is not
/// kept for good.
fn reuse<T>(mut list: Vec<T>, needed: usize) -> Vec<T> {
    list.clear();
    if list.capacity() > 4 * needed.max(64) {
        list = Vec::new();
    }
    list.reserve(needed);
    list
}

/// What choosing items works with.
struct Chooser<'a, T> {
    store: Items<'a, T>,
    encoded: &'a mut EncodeCache,
    /// The frame's changed fields, encoded by its commit.
    changed: &'a ChangedSpans,
    state: &'a mut SendState,
    packet: u32,
}

impl<T: Replicate> Chooser<'_, T> {
    /// Encodes the work due and writes the items' array deltas, keeping
    /// what fits `fill` (everything without a budget) in `plan`. `written`
    /// gets the id of every item whose arrays wrote into this packet.
    fn choose(
        mut self,
        due: &mut Vec<Due>,
        mut fill: Option<&mut Fill>,
        scratch: &mut BitWriter<'_>,
        plan: &mut Plan,
        written: &mut Vec<ReplicationId>,
    ) -> Result<Self, SendError> {
        let arrays = u64::from(T::ARRAY_FIELDS);
        let count = due.len();
        // The list is handed back empty (with its room) at the end; on an
        // error it is dropped.
        let items = core::mem::take(due);
        for index in 0..count {
            if index % LOOKAHEAD == 0 {
                // The encodings and slots of the next run of items, read
                // before any is used so that their cache misses overlap
                // (each item's work between lookups would keep them
                // apart); a run at a time, since a budget may stop early.
                let store = self.store.get();
                let whole_kept = self.whole_kept();
                for d in &items[index..count.min(index + LOOKAHEAD)] {
                    match payload::<T>(d.work, d.whole) {
                        Payload::Full if whole_kept => self.encoded.warm_whole(d.pos),
                        payload => self.encoded.warm(d.id, payload),
                    }
                    core::hint::black_box(store.slot(d.pos).key);
                }
            }
            let d = items[index];
            if let Some(fill) = fill.as_deref() {
                // Nothing fits in fewer bits than an id, a flag and the
                // item's one-bit array deltas.
                if fill.left() < 2 + arrays {
                    plan.deferred += count - index;
                    break;
                }
            }
            let mut work = d.work;
            let mut span = self.encode_entry(d.id, d.pos, work, d.whole)?;
            if let (Some(fill), Work::Fields(mask)) = (fill.as_deref(), work) {
                let framing = framing_bits::<T>(work, d.whole);
                let cost = fill.items.cost(d.wire) + 1 + framing + span.bits + arrays;
                if !mask.is_empty() && fill.used() + cost > fill.budget {
                    // A known item may always go whole: with most of its
                    // fields changed, that can be the smaller entry.
                    let whole = Work::Add { structural: false };
                    let full = self.encode_entry(d.id, d.pos, whole, d.whole)?;
                    let full_bits =
                        full.bits + self.name_bits(&d, whole) + framing_bits::<T>(whole, d.whole);
                    if full_bits < framing + span.bits {
                        (work, span) = (whole, full);
                    }
                }
            }
            // The entry's bits, counted only against a budget.
            let own = match fill {
                Some(_) => {
                    let name = self.name_bits(&d, work);
                    1 + name + framing_bits::<T>(work, d.whole) + span.bits + arrays
                }
                None => 0,
            };
            let mut inner = None;
            if let Some(fill) = fill.as_deref() {
                let cost = fill.items.cost(d.wire) + own;
                let alone = fill.alone(d.wire, own);
                if fill.used() + cost > fill.budget {
                    if alone > fill.alone_budget {
                        let this = Oversized {
                            id: d.id,
                            bits: alone,
                            count: 1,
                        };
                        plan.oversized = Oversized::merge(plan.oversized, Some(this));
                    }
                    plan.deferred += 1;
                    continue;
                }
                // Each array gets back the one bit its entry counted.
                inner = Some(Budget {
                    bits: fill.budget - fill.used() - cost + 1,
                    alone: fill.alone_budget - alone + 1,
                });
            }
            let mut deltas = (scratch.bits_written(), 0);
            if T::ARRAY_FIELDS > 0 {
                written.push(d.id);
                let mut part = self.write_arrays(&d, inner, scratch)?;
                if let (Some(fill), Some(oversized)) = (fill.as_deref(), &mut part.oversized) {
                    // What the owner's message needs to carry it: the
                    // owner's entry alone, with that array's message.
                    oversized.bits += fill.alone(d.wire, own) - 1;
                }
                deltas.1 = part.bits;
                plan.oversized = Oversized::merge(plan.oversized, part.oversized);
                if part.wrote_nothing && d.arrays_only {
                    // Nothing to carry: the work waits for a larger
                    // budget, or is done.
                    if part.unfinished {
                        plan.deferred += 1;
                    } else {
                        self.state.drop_due(d.id);
                    }
                    continue;
                }
                plan.inner.absorb(&part.stats);
                if part.unfinished {
                    plan.unfinished.push((d.id, d.since));
                }
            }
            if let Some(fill) = fill.as_deref_mut() {
                fill.items.insert(d.wire);
                fill.entries += own - arrays + deltas.1;
            }
            plan.items.push(Planned {
                id: d.id,
                wire: d.wire,
                work,
                whole: d.whole,
                key: self.store.get().slot(d.pos).key,
                since: d.since,
                span,
                inner: deltas,
                followed: false,
            });
        }
        *due = items;
        due.clear();
        Ok(self)
    }

    /// Adds `follows` to `plan`, each with its changed fields' encoding:
    /// found by its place among the frame's changed items if it was
    /// changed by this frame (among those the commit encoded, then those a
    /// write did), else by item and fields (the item's place in the store
    /// is looked up only then); made only if no connection made it this
    /// frame yet.
    fn follow(mut self, follows: &[Follow], plan: &mut Plan) -> Result<(), SendError> {
        let frame = self.store.get().frame();
        for f in follows {
            // A frame's changed fields of an item are the same for every
            // connection that follows them: one encoding per place.
            let place = (f.since == frame && f.index != NOT_CHANGED).then_some(f.index);
            let kept = place.and_then(|index| {
                (self.changed.get(frame, index)).or_else(|| self.encoded.changed(frame, index))
            });
            let span = match kept {
                Some(span) => span,
                None => {
                    let Some(pos) = self.store.get().position(f.id) else {
                        // Its removal is due (handed, or its exit), so it
                        // was not followed.
                        debug_assert!(false, "a followed item is in the array");
                        continue;
                    };
                    // Found by item and fields if a planned entry made it.
                    let span = self.encode_entry(f.id, pos, Work::Fields(f.fields), f.whole)?;
                    if let Some(index) = place {
                        self.encoded.keep_changed(index, span);
                    }
                    span
                }
            };
            plan.items.push(Planned {
                id: f.id,
                wire: f.wire,
                work: Work::Fields(f.fields),
                whole: f.whole,
                // An acknowledgement of a followed entry reads no key.
                key: ReplicationKey::default(),
                since: f.since,
                span,
                inner: (0, 0),
                followed: true,
            });
        }
        Ok(())
    }

    /// Whether this connection's whole items are kept from frame to frame
    /// ([`EncodeCache::whole`]): a scoped connection's, whose entering
    /// items are mostly items that did not change since other
    /// connections' scopes took them in. An item with arrays inside has
    /// them encoded with it, and is not kept.
    #[inline]
    fn whole_kept(&self) -> bool {
        T::ARRAY_FIELDS == 0 && self.state.scope().is_some()
    }

    /// The bits of an entry's name beyond its handle: a whole entry on a
    /// connection naming items by handles carries the item's id and how
    /// long ago the handle was taken.
    fn name_bits(&self, d: &Due, work: Work) -> u64 {
        match work {
            Work::Add { .. } if self.state.uses_handles() => {
                let age = self.state.handle_age(d.wire, self.store.get().frame());
                varint_bits(d.id.to_raw()) + gamma_bits(age)
            }
            _ => 0,
        }
    }

    /// The encoding of an item's entry after its flag and its framing
    /// (shared by every connection this frame): the whole item, or the
    /// changed fields' values. A whole item carries the fields `whole`
    /// (those the connection may see): when that is not every field, the
    /// same bits as those fields changed.
    fn encode_entry(
        &mut self,
        id: ReplicationId,
        pos: usize,
        work: Work,
        whole: FieldMask,
    ) -> Result<Span, SendError> {
        let payload = payload::<T>(work, whole);
        let store = self.store.get();
        let slot = store.slot(pos);
        let value = &slot.value;
        if payload == Payload::Full && self.whole_kept() {
            return self
                .encoded
                .whole(store.frame(), pos, id, slot.key_frame(), |w| {
                    value.encode(w)
                })
                .map_err(|error| SendError::Encode { id, error });
        }
        self.encoded
            .get_or_encode(store.frame(), id, payload, |w| match payload {
                Payload::Fields(mask) => value.encode_fields(FieldMask::from_bits(mask), w),
                Payload::Full => value.encode(w),
            })
            .map_err(|error| SendError::Encode { id, error })
    }

    /// Writes the deltas of an item's `#[replicate(array)]` fields into
    /// `scratch`, within `budget` if there is one: its bits are for the
    /// first array, and each array leaves the next what it did not take
    /// beyond its one-bit empty message (which the entry's cost counts).
    fn write_arrays(
        &mut self,
        d: &Due,
        budget: Option<Budget>,
        scratch: &mut BitWriter<'_>,
    ) -> Result<ArrayDeltas, SendError> {
        // The bits beyond each array's one-bit empty message.
        let mut left = budget.map(|budget| budget.bits - 1);
        let states = self.state.inner_states(d.id, T::ARRAY_FIELDS);
        let start = scratch.bits_written();
        let mut out = ArrayDeltas {
            bits: 0,
            wrote_nothing: true,
            unfinished: false,
            oversized: None,
            stats: DeltaStats::default(),
        };
        let mut failure = None;
        let mut index = 0;
        let packet = self.packet;
        let Items::Exclusive(store) = &mut self.store else {
            unreachable!("only a type without arrays inside is written from a shared store");
        };
        store.value_mut(d.pos).for_each_array_mut(&mut |array| {
            let Some(inner) = states.get_mut(index) else {
                return;
            };
            index += 1;
            if failure.is_some() {
                return;
            }
            let budget = budget.zip(left).map(|(budget, left)| Budget {
                bits: left + 1,
                alone: budget.alone,
            });
            match array.write_delta_into(inner, packet, scratch, budget) {
                Ok(part) => {
                    if let Some(left) = &mut left {
                        *left -= part.bits.saturating_sub(1).min(*left);
                    }
                    out.wrote_nothing &= part.bits <= 1;
                    out.unfinished |= part.deferred > 0;
                    out.oversized = Oversized::merge(out.oversized, part.oversized);
                    out.stats.absorb(&part);
                }
                Err(error) => failure = Some(error),
            }
        });
        if let Some(error) = failure {
            return Err(error);
        }
        out.bits = scratch.bits_written() - start;
        if let Some(inner) = &mut out.oversized {
            // Reported with the id of the item whose work cannot complete.
            inner.id = d.id;
        }
        Ok(out)
    }
}

/// The bits of an entry between its flag (and name) and its values, which
/// the message writes around the shared encoding. A partial entry: for an
/// item type with array fields, whether plain fields follow; then the
/// field set (which a message whose entries share one states once, so this
/// counts at most what is written). A whole entry of a type that can
/// withhold fields: whether it does, and if so which it carries (`whole`).
/// What an entry doing `work` encodes of an item whose connection may see
/// the fields `whole`: the changed fields, or the whole item (when that
/// is not every field, the same bits as those fields changed).
fn payload<T: Replicate>(work: Work, whole: FieldMask) -> Payload {
    match work {
        Work::Fields(mask) => Payload::Fields(mask.bits()),
        _ if whole != FieldMask::all(T::FIELD_COUNT) => Payload::Fields(whole.bits()),
        _ => Payload::Full,
    }
}

fn framing_bits<T: Replicate>(work: Work, whole: FieldMask) -> u64 {
    match work {
        Work::Fields(mask) => {
            let arrays = u64::from(T::ARRAY_FIELDS > 0);
            if mask.is_empty() {
                arrays
            } else {
                arrays + field_set_bits(mask, T::FIELD_COUNT)
            }
        }
        _ => whole_framing_bits::<T>(whole),
    }
}

/// The bits saying which fields a whole entry carries (`whole`): none for
/// a type that cannot withhold any; else one, and the field set when some
/// are withheld.
pub(crate) fn whole_framing_bits<T: Replicate>(whole: FieldMask) -> u64 {
    if !T::WITHHOLDS {
        0
    } else if whole == FieldMask::all(T::FIELD_COUNT) {
        1
    } else {
        1 + field_set_bits(whole, T::FIELD_COUNT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::send::encode_cache::Payload;

    #[test]
    fn planned_items_are_put_in_wire_order_each_whole() {
        let mut cache = EncodeCache::default();
        let id = ReplicationId::from_raw(0);
        let span = cache
            .get_or_encode(1, id, Payload::Full, |w| {
                w.write_bits(5, 3);
                Ok(())
            })
            .unwrap();
        let item = |wire: u64, since: u64| Planned {
            id: ReplicationId::from_raw(wire + 100),
            wire: ReplicationId::from_raw(wire),
            work: Work::Fields(FieldMask::single(0)),
            whole: FieldMask::EMPTY,
            key: ReplicationKey::default(),
            since,
            span,
            inner: (since, wire),
            followed: false,
        };
        let mut buffers = PlanBuffers::default();
        // Again and again, as the buffers are reused; the last list is
        // sorted already.
        for (round, wires) in [[7, 3, 9, 1, 4], [4, 9, 1, 7, 3], [1, 3, 4, 7, 9]]
            .into_iter()
            .enumerate()
        {
            let round = round as u64;
            let mut items: Vec<_> = wires.map(|w| item(w, 10 * w + round)).to_vec();
            buffers.sort_by_wire(&mut items);
            let sorted: Vec<_> = items
                .iter()
                .map(|p| (p.wire.to_raw(), p.id.to_raw(), p.since, p.inner))
                .collect();
            let expected =
                [1, 3, 4, 7, 9].map(|w| (w, w + 100, 10 * w + round, (10 * w + round, w)));
            assert_eq!(sorted, expected);
        }
    }

    /// Names too large to share a `u64` with their places (ids a relay
    /// read off a feed can be any) are sorted as pairs, to the same order.
    #[test]
    fn wire_order_holds_for_names_of_any_size() {
        let span = one_bit(&mut EncodeCache::default());
        let item = |wire: u64| named(wire, span);
        let mut buffers = PlanBuffers::default();
        let limit = 1u64 << (64 - PLACE_BITS);
        for wires in [
            vec![u64::MAX, 3, limit, 1, limit - 1, 1 << 63],
            vec![limit - 1, 9, limit - 2, 0],
            // Past the places a key holds: 2^24 items cannot be built
            // here, so the names decide the path.
            vec![5, limit + 5, 4],
        ] {
            let mut items: Vec<_> = wires.iter().map(|&w| item(w)).collect();
            buffers.sort_by_wire(&mut items);
            let mut expected = wires.clone();
            expected.sort_unstable();
            let sorted: Vec<_> = items.iter().map(|p| p.wire.to_raw()).collect();
            assert_eq!(sorted, expected);
            assert!(
                items
                    .iter()
                    .all(|p| told_by_name(p) == told_by_name(&named(p.wire.to_raw(), span)))
            );
        }
    }

    /// A one-bit encoding, for entries whose payload does not matter.
    fn one_bit(cache: &mut EncodeCache) -> Span {
        let encode = |w: &mut BitWriter<'_>| {
            w.write_bits(1, 1);
            Ok(())
        };
        (cache.get_or_encode(1, ReplicationId::from_raw(0), Payload::Full, encode)).unwrap()
    }

    /// An entry named `wire`, each of its other fields told by the name,
    /// so that a sort that mixes entries up shows.
    fn named(wire: u64, span: Span) -> Planned {
        Planned {
            id: ReplicationId::from_raw(wire ^ 1),
            wire: ReplicationId::from_raw(wire),
            work: Work::Fields(FieldMask::single(0)),
            whole: FieldMask::EMPTY,
            key: ReplicationKey::default(),
            since: wire / 2,
            span,
            inner: (wire, 0),
            followed: false,
        }
    }

    /// The fields of `p` that [`named`] tells by the name.
    fn told_by_name(p: &Planned) -> (u64, u64, u64, u64) {
        (p.wire.to_raw(), p.id.to_raw(), p.since, p.inner.0)
    }

    proptest::proptest! {
        /// Any distinct names, close together (ordered by the map of
        /// their range, whose places are reused from list to list with
        /// what earlier lists left in them), spread out, or too large to
        /// share a word with a place: each list comes out in the order of
        /// its names, every item with its own fields.
        #[test]
        fn wire_order_holds_by_every_path(
            lists in proptest::collection::vec(
                (
                    proptest::collection::hash_set(0u64..500, 1..200),
                    proptest::prop_oneof![
                        proptest::strategy::Just(0u64),
                        proptest::strategy::Just(1 << 20),
                        proptest::strategy::Just(u64::MAX - 3_000),
                    ],
                    proptest::prop_oneof![
                        3 => proptest::strategy::Just(1u64),
                        1 => 2u64..4,
                        1 => 4u64..400,
                    ],
                    proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..200),
                ),
                1..6,
            ),
        ) {
            let span = one_bit(&mut EncodeCache::default());
            let mut buffers = PlanBuffers::default();
            for (names, base, stride, swaps) in lists {
                // Spread by `stride` (1 is as dense as names go), from
                // `base` (past `u64::MAX`, some wrap to small names): still
                // distinct. Sorted first so that the shuffle alone, not the
                // set's own order, decides the case.
                let mut wires: Vec<u64> =
                    names.iter().map(|&n| base.wrapping_add(n * stride)).collect();
                wires.sort_unstable();
                for (at, swap) in swaps.iter().enumerate() {
                    let len = wires.len();
                    wires.swap(at % len, swap.index(len));
                }
                let mut items: Vec<_> = wires.iter().map(|&w| named(w, span)).collect();
                buffers.sort_by_wire(&mut items);
                let mut expected = wires.clone();
                expected.sort_unstable();
                let sorted: Vec<_> = items.iter().map(|p| p.wire.to_raw()).collect();
                proptest::prop_assert_eq!(sorted, expected);
                for p in &items {
                    proptest::prop_assert_eq!(told_by_name(p), told_by_name(&named(p.wire.to_raw(), span)));
                }
            }
        }
    }
}
