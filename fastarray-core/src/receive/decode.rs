//! Decoding a delta: the whole message is read and checked against the
//! mirror before anything is applied, so a bad message changes nothing.
//! A delta whose contents will be dropped (inside an entry for a removed
//! item, or in a stale message) is read past without being kept.

use super::in_place::{self, InPlace};
use crate::bits::{BitReader, prealloc};
use crate::error::DecodeError;
use crate::id::ReplicationId;
use crate::inner_array::InnerDelta;
use crate::limits::ArrayLimits;
use crate::mask::FieldMask;
use crate::receive_state::early::FieldBits;
use crate::receive_state::mirror::{Mirror, Named, NamedWhole};
use crate::replicate::{Replicate, audience};
use crate::send_state::scope::MAX_DETAIL;
use crate::store::{Near, Slot, Store};
use crate::wire::MessageKind;
use crate::wire::exits::read_exits;
use crate::wire::field_set::read_field_set;
use crate::wire::frame::FrameField;
use crate::wire::id_list::IdReader;

/// One sent item, decoded.
pub(crate) enum Entry<T: Replicate> {
    /// The whole item, boxed: a message's entries then take a few words
    /// each whatever the size of the item type (an item with array fields
    /// holds a `FastArray` per field), and a whole value, which costs at
    /// least the type's `MIN_BITS`, is the only one that pays for its size.
    /// With the fields it carries: every field, or those the sender's
    /// detail level lets the receiver see (the others hold their
    /// `Default` in a new item, and stay as they are in a held one).
    Whole(Box<T>, FieldMask),
    /// Some of its plain fields: which, and the message's bit they start
    /// at. They were read once, to check them; the apply reads them again
    /// from [`Decoded::fields`], straight into the item. In a shared
    /// delta, for an item the mirror does not hold yet: they wait for its
    /// add ([`EarlyChanges`](crate::receive_state::early::EarlyChanges)).
    Fields(FieldMask, u64),
    /// None of its plain fields: only its arrays changed.
    Arrays,
}

/// A whole message, decoded and validated, not yet applied.
pub(crate) struct Decoded<T: Replicate> {
    /// `None` for an empty message.
    pub(crate) frame: Option<u64>,
    /// Whether the message is a window older than the mirror: it is read
    /// past, and nothing of it is kept.
    pub(crate) stale: bool,
    pub(crate) removals: Vec<ReplicationId>,
    /// Per removal, whether it only left the scope (empty when none did).
    pub(crate) exits: Vec<bool>,
    /// The entries for items that are not tombstoned, in id order.
    pub(crate) entries: Vec<(ReplicationId, Entry<T>)>,
    /// The array deltas of those entries that have something to apply,
    /// in entry order.
    pub(crate) inner: Vec<ArrayDelta>,
    /// Entries read past: for tombstoned items, or all of a stale message.
    pub(crate) skipped: usize,
    /// Of the kept entries, those with changed fields of items the mirror
    /// does not hold (in a shared delta: they wait for their adds).
    pub(crate) early: usize,
    /// Handles that whole entries gave a new item, with that item and the
    /// frame the sender gave it in.
    pub(crate) bindings: Vec<(u64, ReplicationId, u64)>,
    /// Handles removals named while they named nothing.
    pub(crate) vacated: Vec<u64>,
    /// The bits of the kept entries' changed fields; of every entry, when
    /// they apply in place.
    pub(crate) fields: FieldBits,
    /// Set when the entries are changed fields only, to apply in place
    /// (then `entries` is empty).
    pub(crate) in_place: Option<InPlace>,
}

/// Reads the changed fields of a message's entries into their items: one
/// reader for all of them, moved to each entry's bits. A reader made anew
/// per entry ([`BitReader::at`]) made a hot tick's apply 1.44× slower
/// (ab, 4 pairs of `apply 60 hot`; callgrind: 41 instructions more an
/// entry).
pub(crate) struct FieldReader<'a> {
    reader: BitReader<'a>,
    base: u64,
}

impl<'a> FieldReader<'a> {
    /// A reader of `bits`.
    pub(crate) fn new(bits: &'a FieldBits) -> Self {
        let (reader, base) = bits.reader();
        Self { reader, base }
    }

    /// Reads the fields `sent` of the entry whose fields start at the
    /// message's bit `at`, storing those in `keep` into `item`; returns
    /// those whose value changed ([`Replicate::apply_fields`]). The same
    /// bits were checked with the same mask ([`Replicate::check_fields`])
    /// when the message was, so they decode.
    #[inline]
    pub(crate) fn apply<T: Replicate>(
        &mut self,
        at: u64,
        item: &mut T,
        sent: FieldMask,
        keep: FieldMask,
    ) -> FieldMask {
        self.reader.seek(at - self.base);
        let applied = item.apply_fields(sent, keep, &mut self.reader);
        debug_assert!(applied.is_ok(), "checked fields failed to decode again");
        applied.unwrap_or(FieldMask::EMPTY)
    }
}

/// How a delta is laid out, from its kind.
#[derive(Clone, Copy)]
struct Layout {
    /// Its removals carry exit flags.
    exits: bool,
    /// It names items by handles, and its whole entries carry their ids.
    handles: bool,
    /// Its changes may come before their items' adds (a shared delta).
    early: bool,
}

/// The decoded delta of one `#[replicate(array)]` field of an entry.
pub(crate) struct ArrayDelta {
    /// The entry's index in [`Decoded::entries`].
    pub(crate) entry: usize,
    /// The array field's index, in declaration order.
    pub(crate) field: usize,
    pub(crate) delta: InnerDelta,
}

impl<T: Replicate> Decoded<T> {
    fn empty() -> Self {
        Self {
            frame: None,
            stale: false,
            removals: Vec::new(),
            exits: Vec::new(),
            entries: Vec::new(),
            inner: Vec::new(),
            skipped: 0,
            early: 0,
            bindings: Vec::new(),
            vacated: Vec::new(),
            fields: FieldBits::default(),
            in_place: None,
        }
    }

    /// Whether applying it can change anything (a message with a frame that
    /// is not stale: even with every entry skipped it moves the window).
    pub(crate) fn has_effect(&self) -> bool {
        self.frame.is_some() && !self.stale
    }
}

impl Mirror {
    /// Decodes one delta and validates it against this mirror and its
    /// items, `store`, and against `limits`.
    pub(crate) fn decode<T: Replicate>(
        &self,
        store: &Store<T>,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<Decoded<T>, DecodeError> {
        let mut decoded = Decoded::empty();
        let Some(layout) = read_kind(reader)? else {
            return Ok(decoded);
        };
        let frame = FrameField::read(reader)?.resolve(self.newest())?;
        decoded.frame = Some(frame);
        decoded.stale = self.is_stale(frame);
        read_body(reader, layout, Some((self, store, limits, &mut decoded)))?;
        Ok(decoded)
    }
}

/// Reads past one delta whose contents will be dropped (the entry that
/// carries it is for a removed item, or its message is stale): every
/// value is decoded and dropped at once, nothing is checked against a
/// mirror, and a short frame needs no reference.
pub(crate) fn skip_delta<T: Replicate>(reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
    if let Some(layout) = read_kind(reader)? {
        FrameField::read(reader)?;
        read_body::<T>(reader, layout, None)?;
    }
    Ok(())
}

/// Reads a delta's removals and items. With a mirror and its items,
/// checks them and keeps in `decoded` what there is to apply (nothing of a
/// stale message); without, only reads past them. Items named by handles
/// are kept under the ids the handles name. The items the mirror would
/// hold, and the ids removed, are checked against the limits as they are
/// read (see [`Room`]).
fn read_body<T: Replicate>(
    reader: &mut BitReader<'_>,
    layout: Layout,
    check: Option<(&Mirror, &Store<T>, ArrayLimits, &mut Decoded<T>)>,
) -> Result<(), DecodeError> {
    let Layout {
        exits,
        handles,
        early,
    } = layout;
    let (mirror, limits, mut into) = match check {
        Some((mirror, store, limits, decoded)) => {
            (Some((mirror, store)), Some(limits), Some(decoded))
        }
        None => (None, None, None),
    };
    let object = mirror.is_some_and(|(mirror, _)| mirror.is_object());
    let frame = into
        .as_deref()
        .and_then(|decoded| decoded.frame)
        .unwrap_or(0);
    // Each removal takes at least one bit; each item at least two, plus
    // one per array field.
    let (mut ids, count) = IdReader::start(reader, 1)?;
    let mut removals = Vec::new();
    if into.is_some() {
        if let Some(limits) = limits {
            limits.check_removals(count)?;
        }
        removals.reserve(prealloc::<ReplicationId>(count));
    }
    for _ in 0..count {
        let id = ids.read(reader)?;
        if object {
            return Err(DecodeError::NotAnObjectChange { id });
        }
        if into.is_some() {
            removals.push(id);
        }
    }
    let mut flags = Vec::new();
    if exits {
        read_exits(reader, count, &mut |exit| {
            if into.is_some() {
                flags.push(exit);
            }
        })?;
    }
    let (mut ids, count) = IdReader::start(reader, 2 + u64::from(T::ARRAY_FIELDS))?;
    let keep = into.as_deref().is_some_and(|decoded| !decoded.stale);
    if let Some(decoded) = into.as_deref_mut() {
        if keep {
            decoded
                .entries
                .reserve(prealloc::<(ReplicationId, Entry<T>)>(count));
        } else {
            decoded.skipped = removals.len() + count;
        }
    }
    // Whether every entry with changed fields carries one field set,
    // stated here once.
    let common = if count > 0 && reader.read_bool()? {
        Some(read_field_set(reader, T::FIELD_COUNT)?)
    } else {
        None
    };
    let mut checks = match (mirror, limits, into.as_deref_mut()) {
        (Some((mirror, store)), Some(limits), Some(decoded)) => {
            let removed = (&removals[..], &flags[..]);
            let room = if keep {
                Room::new(mirror, store, limits, count, removed, frame, handles)
            } else {
                None
            };
            Some(Checks {
                mirror,
                store,
                limits,
                decoded,
                handles,
                early: early && T::ARRAY_FIELDS == 0,
                object,
                frame,
                removed: removals.iter().peekable(),
                near: Near::default(),
                room,
            })
        }
        _ => None,
    };
    // Changed fields only, of items the mirror holds: checked, then
    // applied, in place; anything else is read again from here.
    let plain = T::ARRAY_FIELDS == 0 && !object && removals.is_empty() && in_place::allowed();
    if let Some(checks) = checks.as_mut().filter(|_| plain && keep && count > 0) {
        let start = reader.bit_offset();
        let (mirror, store) = (checks.mirror, checks.store);
        match in_place::check(reader, &ids, count, common, handles, (mirror, store, frame)) {
            Some(found) => {
                checks.decoded.fields = FieldBits::copy(reader, start, reader.bit_offset());
                checks.decoded.in_place = Some(found);
                return Ok(());
            }
            None => reader.seek(start),
        }
    }
    // Where the first kept entry's changed fields start.
    let mut first_fields = None;
    for _ in 0..count {
        let (wire, carried, entry) = read_entry::<T>(reader, &mut ids, handles, frame, common)?;
        match checks.as_mut() {
            Some(checks) => {
                if let Some(id) = checks.entry(wire, carried, &entry, reader)? {
                    if let Entry::Fields(_, at) = entry {
                        first_fields.get_or_insert(at);
                    }
                    checks.decoded.entries.push((id, entry));
                }
            }
            None => skip_arrays::<T>(reader)?,
        }
    }
    if let (Some(start), Some(checks)) = (first_fields, checks.as_mut()) {
        checks.decoded.fields = FieldBits::copy(reader, start, reader.bit_offset());
    }
    let room = checks.and_then(|checks| checks.room);
    if let (Some(decoded), Some((mirror, store))) = (into, mirror) {
        if handles && keep {
            // The items the handles name. A removal naming a handle's
            // earlier item has nothing left to remove; one naming nothing
            // (the item's whole entry is late or lost) removes nothing
            // here. Either way the handle names nothing after it, and
            // entries up to its frame are read past.
            let mut kept = 0;
            for index in 0..removals.len() {
                let handle = removals[index].to_raw();
                match mirror.named(handle, frame) {
                    Named::Item(id) => {
                        decoded.vacated.push(handle);
                        removals[kept] = id;
                        if exits {
                            flags[kept] = flags[index];
                        }
                        kept += 1;
                    }
                    Named::Unknown => decoded.vacated.push(handle),
                    Named::Gone => {}
                }
            }
            removals.truncate(kept);
            flags.truncate(if exits { kept } else { 0 });
        }
        if let Some(room) = room {
            room.recount(store, &decoded.entries, (&removals, &flags), frame)?;
        }
        decoded.removals = removals;
        decoded.exits = flags;
    }
    Ok(())
}

/// What a whole entry by handle carries: the item's id, and the frame the
/// sender gave it the handle in.
type Carried = Option<(ReplicationId, u64)>;

/// Reads one entry of a message of `frame`, up to its arrays' deltas: the
/// id or handle it names on the wire, what it carries if it is whole and
/// by handle, and the entry. `common` is the field set every entry with
/// changed fields carries, if the message states one.
#[inline]
fn read_entry<T: Replicate>(
    reader: &mut BitReader<'_>,
    ids: &mut IdReader,
    handles: bool,
    frame: u64,
    common: Option<FieldMask>,
) -> Result<(ReplicationId, Carried, Entry<T>), DecodeError> {
    let wire = ids.read(reader)?;
    let whole = reader.read_bool()?;
    // A whole entry by handle: the item's id, and how many frames
    // before this one the sender gave it the handle.
    let carried = if whole && handles {
        let id = ReplicationId::from_raw(reader.read_varint()?);
        let age = reader.read_gamma()?;
        Some((id, frame.saturating_sub(age)))
    } else {
        None
    };
    let entry = if whole {
        let fields = read_whole_fields::<T>(reader)?;
        let value = if fields == FieldMask::all(T::FIELD_COUNT) {
            T::decode(reader)?
        } else {
            T::decode_visible(fields, reader)?
        };
        Entry::Whole(Box::new(value), fields)
    } else if T::ARRAY_FIELDS > 0 && !reader.read_bool()? {
        Entry::Arrays
    } else {
        let mask = match common {
            Some(mask) => mask,
            None => read_field_set(reader, T::FIELD_COUNT)?,
        };
        // Checked here, and read again into the item when applied.
        let at = reader.bit_offset();
        T::check_fields(mask, reader)?;
        Entry::Fields(mask, at)
    };
    Ok((wire, carried, entry))
}

/// Checks a message's entries, in order, against the mirror and its items,
/// keeping in `decoded` those there are to apply.
struct Checks<'a, 'r, T: Replicate> {
    mirror: &'a Mirror,
    store: &'a Store<T>,
    limits: ArrayLimits,
    decoded: &'a mut Decoded<T>,
    /// Whether the message names items by handles.
    handles: bool,
    /// Whether changed fields of an item the mirror does not hold wait
    /// for its add (a shared delta of a type without array fields).
    early: bool,
    /// Whether the mirror is a replicated object's.
    object: bool,
    frame: u64,
    /// The message's removals not yet passed (removals and entries are
    /// both ascending, so a duplicate is found walking them together).
    removed: core::iter::Peekable<core::slice::Iter<'r, ReplicationId>>,
    near: Near,
    /// Room for the items the message adds, if it could take the array
    /// past its limit.
    room: Option<Room>,
}

impl<T: Replicate> Checks<'_, '_, T> {
    /// Checks one entry, `wire` naming its item on the wire, then reads
    /// its arrays' deltas (against the arrays they apply to) or past them.
    /// Returns the id of its item if it applies, `None` if it is read past.
    fn entry(
        &mut self,
        wire: ReplicationId,
        carried: Carried,
        entry: &Entry<T>,
        reader: &mut BitReader<'_>,
    ) -> Result<Option<ReplicationId>, DecodeError> {
        let (mirror, store, frame) = (self.mirror, self.store, self.frame);
        let decoded = &mut *self.decoded;
        // A stale message's entries are read past, not kept.
        let keep = !decoded.stale;
        // Checks that need no other entry.
        while self.removed.next_if(|&&r| r < wire).is_some() {}
        if self.removed.peek() == Some(&&wire) {
            return Err(DecodeError::DuplicateId { id: wire });
        }
        if !keep && self.handles {
            // A stale message is read past whole: its handles need not
            // name anything.
            skip_arrays::<T>(reader)?;
            return Ok(None);
        }
        // The item the entry is for: its id, or what its handle names (a
        // whole entry names it itself, and may give the handle a new
        // item; an entry for an item already removed here is read past).
        let handle = wire.to_raw();
        let (id, earlier) = match (self.handles, carried) {
            (false, _) => (wire, false),
            (true, Some((id, start))) => match mirror.named_whole(handle, frame, start) {
                NamedWhole::Gone => (id, true),
                NamedWhole::Current => (id, false),
                NamedWhole::New => {
                    decoded.bindings.push((handle, id, start));
                    (id, false)
                }
            },
            (true, None) => match mirror.named(handle, frame) {
                Named::Item(id) => (id, false),
                Named::Gone => (wire, true),
                Named::Unknown => return Err(DecodeError::UnknownHandle { handle }),
            },
        };
        if self.object && !earlier && id != OBJECT {
            return Err(DecodeError::NotAnObjectChange { id });
        }
        // Entries of an earlier stay of the item are read past.
        let held = store.locate(id, &mut self.near).map(|pos| store.slot(pos));
        let dropped = earlier || mirror.drops_entry(id, frame, held.and_then(Slot::returned_after));
        let held = held.map(|slot| &slot.value);
        if !matches!(entry, Entry::Whole(..)) && keep && !dropped && held.is_none() {
            if !(self.early && matches!(entry, Entry::Fields(..))) {
                return Err(DecodeError::UnknownItem { id });
            }
            // A change of an item whose add is on its way: it waits for
            // it, as many as the array may hold items.
            decoded.early += 1;
            self.limits
                .check_items(mirror.early_len().saturating_add(decoded.early))?;
        }
        if !keep || dropped {
            if keep {
                decoded.skipped += 1;
            }
            skip_arrays::<T>(reader)?;
            return Ok(None);
        }
        // The arrays' deltas are checked against the arrays they will be
        // applied to: the mirror's item, or the new item the entry carries
        // (a partial entry for an item the mirror does not hold was
        // refused above).
        let new = match entry {
            Entry::Whole(value, _) => Some(&**value),
            _ => None,
        };
        if let Some(room) = self
            .room
            .as_mut()
            .filter(|_| held.is_none() && new.is_some())
        {
            room.add()?;
        }
        if let Some(target) = held.or(new) {
            let limits = self.limits.for_arrays(self.object);
            read_arrays(
                reader,
                target,
                limits,
                decoded.entries.len(),
                &mut decoded.inner,
            )?;
        }
        Ok(Some(id))
    }
}

/// The items an array would hold after a message that could take it past
/// its item limit, counted while the message's entries are read, so that
/// the entry past the limit is refused before the arrays inside it are
/// read or any later entry is: the items held, less those the message
/// removes, plus each whole entry for an item not held.
struct Room {
    limits: ArrayLimits,
    items: usize,
    /// Whether the removals are handles: they are resolved only once the
    /// entries are read, so the count is checked again then
    /// ([`recount`](Self::recount)).
    handles: bool,
}

impl Room {
    /// Room for the adds of a message of `entries` entries and these
    /// removals (ids or handles, and exit flags) of `frame`; `None` if even
    /// every entry adding an item would not take the array past its limit.
    fn new<T: Replicate>(
        mirror: &Mirror,
        store: &Store<T>,
        limits: ArrayLimits,
        entries: usize,
        (removals, exits): (&[ReplicationId], &[bool]),
        frame: u64,
        handles: bool,
    ) -> Option<Self> {
        if store.len().saturating_add(entries) <= limits.items() {
            return None;
        }
        // With handles, an estimate from below (a handle naming an item
        // counts as removing it), bounded by the removals' count.
        let exits = exits.iter().copied().chain(core::iter::repeat(false));
        let removed = removals.iter().zip(exits).filter(|&(&wire, exit)| {
            let id = match (handles, mirror.named(wire.to_raw(), frame)) {
                (false, _) => wire,
                (true, Named::Item(id)) => id,
                (true, _) => return false,
            };
            removes_held(store, id, exit, frame)
        });
        let items = store.len().saturating_sub(removed.count());
        Some(Self {
            limits,
            items,
            handles,
        })
    }

    /// One more item.
    fn add(&mut self) -> Result<(), DecodeError> {
        self.items += 1;
        self.limits.check_items(self.items)
    }

    /// The exact count for a message that names items by handles, once
    /// its removals are resolved to ids (`removals`, with their exit
    /// flags): an id removed twice counts once, and a whole entry for an
    /// item the message removes adds it back. Checked only if the message
    /// adds an item.
    fn recount<T: Replicate>(
        self,
        store: &Store<T>,
        entries: &[(ReplicationId, Entry<T>)],
        (removals, exits): (&[ReplicationId], &[bool]),
        frame: u64,
    ) -> Result<(), DecodeError> {
        if !self.handles {
            return Ok(());
        }
        let exits = exits.iter().copied().chain(core::iter::repeat(false));
        let mut removed: Vec<ReplicationId> = removals
            .iter()
            .zip(exits)
            .filter(|&(&id, exit)| removes_held(store, id, exit, frame))
            .map(|(&id, _)| id)
            .collect();
        removed.sort_unstable();
        removed.dedup();
        let adds = entries.iter().filter(|(id, entry)| {
            matches!(entry, Entry::Whole(..))
                && (store.position(*id).is_none() || removed.binary_search(id).is_ok())
        });
        let adds = adds.count();
        if adds == 0 {
            // A mirror past its limit takes a message that adds nothing
            // (see `FastArray::set_limits`), as by ids (`add`).
            return Ok(());
        }
        self.limits.check_items(store.len() - removed.len() + adds)
    }
}

/// Whether a removal of `id` of `frame` (an exit, if `exit`) takes an item
/// out of `store`: it holds the item, and an exit applies
/// ([`Store::exit_applies`], as `Mirror::apply` asks).
fn removes_held<T: Replicate>(store: &Store<T>, id: ReplicationId, exit: bool, frame: u64) -> bool {
    store.position(id).is_some() && (!exit || store.exit_applies(id, frame))
}

/// Decodes the deltas of the array fields of entry `entry`, checked
/// against `target`'s arrays, keeping those with something to apply.
fn read_arrays<T: Replicate>(
    reader: &mut BitReader<'_>,
    target: &T,
    limits: ArrayLimits,
    entry: usize,
    out: &mut Vec<ArrayDelta>,
) -> Result<(), DecodeError> {
    if T::ARRAY_FIELDS == 0 {
        return Ok(());
    }
    let mut field = 0;
    let mut failure = None;
    target.for_each_array(&mut |array| {
        if failure.is_none() {
            match array.decode_delta_from(reader, limits) {
                Ok(Some(delta)) => out.push(ArrayDelta {
                    entry,
                    field,
                    delta,
                }),
                Ok(None) => {}
                Err(error) => failure = Some(error),
            }
        }
        field += 1;
    });
    failure.map_or(Ok(()), Err)
}

/// Reads which fields a whole entry carries: every field, unless the type
/// can withhold some and the entry says it does; then a set some
/// connection may be sent (see [`sendable_whole`]; any other set, every
/// field included, is refused).
fn read_whole_fields<T: Replicate>(reader: &mut BitReader<'_>) -> Result<FieldMask, DecodeError> {
    let all = FieldMask::all(T::FIELD_COUNT);
    if !T::WITHHOLDS || !reader.read_bool()? {
        return Ok(all);
    }
    let bit_offset = reader.bit_offset();
    let fields = read_field_set(reader, T::FIELD_COUNT)?;
    if fields == all || !sendable_whole::<T>(fields) {
        return Err(DecodeError::InvalidFieldSet {
            bit_offset,
            field_count: T::FIELD_COUNT,
        });
    }
    Ok(fields)
}

/// Whether a whole value of a `T` carrying `fields` is one a server sends:
/// the fields of a detail level, less those the audience rule denies an
/// owner or a non-owner.
fn sendable_whole<T: Replicate>(fields: FieldMask) -> bool {
    let audience = audience::<T>(None);
    (0..=MAX_DETAIL).any(|level| {
        let mask = T::detail_mask(level);
        [false, true]
            .into_iter()
            .any(|owns| mask & audience.fields_for(owns) == fields)
    })
}

/// The item of a replicated object's array.
const OBJECT: ReplicationId = ReplicationId::from_raw(0);

/// Reads a message's kind: for a delta, its layout; `None` for an empty
/// one.
fn read_kind(reader: &mut BitReader<'_>) -> Result<Option<Layout>, DecodeError> {
    let bit_offset = reader.bit_offset();
    let layout = |exits, handles| {
        Ok(Some(Layout {
            exits,
            handles,
            early: false,
        }))
    };
    match MessageKind::read(reader)? {
        MessageKind::Empty => Ok(None),
        MessageKind::Delta => layout(false, false),
        MessageKind::SharedDelta => Ok(Some(Layout {
            exits: false,
            handles: false,
            early: true,
        })),
        MessageKind::DeltaWithExits => layout(true, false),
        MessageKind::HandleDelta => layout(false, true),
        MessageKind::HandleDeltaWithExits => layout(true, true),
        MessageKind::Snapshot => Err(DecodeError::UnexpectedMessageKind {
            bit_offset,
            expected: MessageKind::Delta.name(),
            found: MessageKind::Snapshot.name(),
        }),
    }
}

/// Reads past the array deltas of an entry whose contents are dropped.
fn skip_arrays<T: Replicate>(reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
    if T::ARRAY_FIELDS == 0 {
        return Ok(());
    }
    let mut result = Ok(());
    T::for_each_empty_array(&mut |array| {
        if result.is_ok() {
            result = array.skip_delta_from(reader);
        }
    });
    result
}
