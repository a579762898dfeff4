//! [`InterestGrid`]: area-of-interest relevancy on a uniform grid. It takes
//! item positions and each viewer's centre and radius, and says which
//! items enter and leave each viewer's area, in work proportional to what
//! moved, as Unreal's ReplicationGraph grid spatialization does. Feed its
//! events to [`FastArray::scope`](crate::FastArray::scope).

use hashbrown::{HashMap, HashSet};

use crate::id::ReplicationId;

/// Whether an item entered or left a viewer's area.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Relevance {
    /// The item is now within the viewer's radius.
    Enter,
    /// The item is no longer within the viewer's radius (plus the leave
    /// margin), or was removed.
    Leave,
}

/// Items on a plane, viewers with a centre and a radius, and which items
/// each viewer sees: those at most `radius` away from its centre (and,
/// once seen, until farther than `radius` plus the
/// [leave margin](Self::set_leave_margin), so that an item on the rim does
/// not flicker in and out).
///
/// Tell it what moved — [`set_item`](Self::set_item),
/// [`remove_item`](Self::remove_item), [`set_viewer`](Self::set_viewer),
/// [`remove_viewer`](Self::remove_viewer) — then call
/// [`update`](Self::update), which reports each item that entered or left
/// each viewer's area since the last update. An update costs, per item
/// moved, a distance test against the viewers whose area covers its old or
/// new cell; and per viewer moved, a pass over the cells its area covers,
/// in which an item is tested only if the step can change whether it is
/// seen (it lies on the rim, or it moved), and a cell wholly inside or
/// outside the area is passed over with only its moved items tested.
/// Items and viewers that did not move cost nothing. Whether a viewer saw
/// an item is told by where the item was listed and where the viewer stood
/// at the last update, not looked up: a viewer keeps a set only of the
/// items it sees beyond its radius, within the
/// [leave margin](Self::set_leave_margin) (none with the default margin of
/// 0). Choose a cell size near half the typical radius (in the
/// `grid_walking_100k` workload, cells a radius wide cost about 1.25× more,
/// and a quarter of it about 1.03×: instructions counted by callgrind).
///
/// Viewers are keyed by the caller's `u64` (the transport's client id,
/// say), each in a slot of its own, reused after
/// [`remove_viewer`](Self::remove_viewer). Positions are
/// `[x, y]` on the plane of the game's ground (`[x, z]` in a y-up 3D
/// world). A position that is not finite puts the item nowhere: no viewer
/// sees it until it gets a finite one.
///
/// Memory: per item, a 24-byte entry and a place (20 bytes) in its cell's
/// lists, and 16 bytes more in the update it moved in; per
/// viewer, a place in the viewer list of each cell its area covers, and a
/// hash set of the ids it sees within the leave margin beyond its radius
/// (8 bytes each and the set's overhead; empty with no margin).
/// A viewer whose area spans more than 4 096 cells is listed in none: it
/// is tested against every item that moves, and refreshing it (when it
/// moves) visits every item.
///
/// Below, each event changes its connection's scope at once; with many
/// connections, group the events per viewer and give each connection its
/// batch with [`ScopeMut::update`](crate::ScopeMut::update), which reads
/// the lookups of a run of changes ahead.
///
/// ```
/// use std::collections::HashMap;
/// use fastarray_core::{FastArray, InterestGrid, Relevance, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { pos: [f32; 2] }
///
/// let mut units = FastArray::new();
/// let mut grid = InterestGrid::new(50.0);
/// for x in [0.0, 30.0, 400.0] {
///     let id = units.push(Unit { pos: [x, 0.0] });
///     grid.set_item(id, [x, 0.0]);
/// }
/// units.commit();
///
/// // One connection, client 7_000_042 of the transport, whose player
/// // stands at the origin and sees 50 units. Viewers are keyed by the
/// // transport's client ids.
/// let client: u64 = 7_000_042;
/// let mut conns = HashMap::from([(client, SendState::new())]);
/// grid.set_viewer(client, [0.0, 0.0], 50.0);
/// grid.update(|viewer, id, relevance| {
///     let mut scope = units.scope(conns.get_mut(&viewer).unwrap()).unwrap();
///     match relevance {
///         Relevance::Enter => scope.include(id),
///         Relevance::Leave => scope.exclude(id),
///     };
/// });
/// assert_eq!(units.scope(conns.get_mut(&client).unwrap()).unwrap().len(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct InterestGrid {
    cell_size: f32,
    leave_margin: f32,
    items: HashMap<ReplicationId, Item>,
    cells: HashMap<Cell, CellContents>,
    viewers: Vec<Option<Viewer>>,
    /// The viewers' slots in `viewers`, by the caller's key (a
    /// transport's client id): keys are any `u64`, slots are dense and
    /// reused.
    slots: HashMap<u64, usize>,
    /// Per slot, the key of the viewer in it.
    keys: Vec<u64>,
    /// Slots whose viewer was removed, to reuse.
    free: Vec<usize>,
    /// Items set or removed since the last update, with the cell each was
    /// in at the last update (`None`: nowhere, or new).
    moved: HashMap<ReplicationId, Option<Cell>>,
    /// Viewers set since the last update (their slots, each once: see
    /// `moved_flags`; a slot whose viewer was removed since is skipped).
    moved_viewers: Vec<usize>,
    /// Per slot, whether it is in `moved_viewers`: its refresh tests the
    /// items that moved, not the items' pass. Kept apart from the viewers
    /// so that the items' pass reads a byte, not a viewer, to skip one.
    moved_flags: Vec<bool>,
    /// Viewers whose area spans more than [`WIDE_CELLS`] cells: listed in
    /// no cell, tested against every item that moves.
    wide: Vec<usize>,
    /// The items whose state changes for the viewer being refreshed (a
    /// list kept from refresh to refresh): what it had of each, and has.
    changes: Vec<(ReplicationId, Had, Had)>,
    /// Counts updates: an item moved in this one is stamped with it in its
    /// cell's lists (see [`CellContents::stamps`]).
    epoch: u32,
}

/// The most cells a viewer's area is listed in; a wider one is tested
/// against every item that moves, and its refresh visits every item.
const WIDE_CELLS: u64 = 4_096;

/// A cell's coordinates.
type Cell = (i32, i32);

#[derive(Clone, Copy, Debug)]
struct Item {
    position: [f32; 2],
    /// The cell it is listed in (`None`: a position that is not finite,
    /// or not listed yet).
    cell: Option<Cell>,
    /// Its place in that cell's lists.
    slot: usize,
}

/// How many moved items ahead [`InterestGrid::update`] reads the entry of.
const AHEAD: usize = 8;

#[derive(Clone, Debug, Default)]
struct CellContents {
    items: Vec<ReplicationId>,
    /// The items' positions, in the same order: a viewer's refresh reads
    /// them here, not from the grid's map of every item.
    positions: Vec<[f32; 2]>,
    /// The update each item last moved in (or was listed in), in the same
    /// order. A refresh tests an item stamped with the current update
    /// whole; any other is where the viewers last tested it, which lets
    /// the refresh of a viewer that moved a little skip it (see
    /// [`Viewer::basis`]). A stamp that matches after the counter wraps
    /// costs a test, never a wrong answer.
    stamps: Vec<u32>,
    /// The items moved into or within this cell in update `fresh_epoch`:
    /// a refresh tests these apart from the others (and alone, in a cell
    /// wholly inside or outside what its viewer sees).
    fresh: Vec<Fresh>,
    fresh_epoch: u32,
    /// The viewers whose area (radius and margin) covers the cell.
    viewers: Vec<usize>,
}

/// An item moved in this update, as its new cell lists it.
#[derive(Clone, Copy, Debug)]
struct Fresh {
    id: ReplicationId,
    position: [f32; 2],
    /// Where the grid listed it at the last update (`None`: nowhere, so
    /// no viewer saw it).
    was: Option<[f32; 2]>,
}

impl CellContents {
    /// Marks the item in place `slot` as moved in update `epoch`.
    fn stamp(&mut self, slot: usize, fresh: Fresh, epoch: u32) {
        self.stamps[slot] = epoch;
        if self.fresh_epoch != epoch {
            self.fresh_epoch = epoch;
            self.fresh.clear();
        }
        self.fresh.push(fresh);
    }

    /// The items moved into or within this cell in update `epoch`.
    fn fresh(&self, epoch: u32) -> &[Fresh] {
        if self.fresh_epoch == epoch {
            &self.fresh
        } else {
            &[]
        }
    }

    /// Where item `id` (`item` if the grid has it) is in the lists of
    /// this cell, `cell`: the place it knows, if it is listed here by it,
    /// else looked for (an item removed, or removed and set again, since
    /// the last update).
    fn place_of(&self, id: ReplicationId, item: Option<&Item>, cell: Cell) -> Option<usize> {
        let known = item
            .filter(|item| item.cell == Some(cell))
            .map(|item| item.slot)
            .filter(|&slot| self.items.get(slot) == Some(&id));
        known.or_else(|| self.items.iter().position(|&other| other == id))
    }
}

#[derive(Clone, Debug)]
struct Viewer {
    center: [f32; 2],
    radius: f32,
    /// The cells listing this viewer: its area's bounding box at the last
    /// update (`None` before its first).
    listed: Option<CellRect>,
    /// Where it stood, how far it saw and the leave margin, when its set
    /// was last brought up to date with every item (its last refresh);
    /// `None` before its first. Its set holds every item not moved since
    /// within `radius` of `center` and none farther than `radius +
    /// margin`.
    basis: Option<Basis>,
    /// When it moved, the cells its area covers now (those it is listed
    /// in are [`listed`](Self::listed) until its refresh).
    next: Option<CellRect>,
    /// The items it saw at the last update that were listed beyond its
    /// radius (within the margin, then): where an item was listed and its
    /// basis tell whether it saw any other (see [`Basis::had`]). Exactly
    /// those: an item leaves the set when it leaves the band or the area.
    sticky: HashSet<ReplicationId>,
}

/// A viewer's centre, radius and leave margin at its last refresh: every
/// test of what it sees until its next is made with these, so that they
/// tell again, exactly, what an earlier test found.
#[derive(Clone, Copy, Debug)]
struct Basis {
    center: [f32; 2],
    radius: f32,
    margin: f32,
}

/// What a viewer saw of an item at the last update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Had {
    seen: bool,
    /// Seen, and listed beyond the radius: in the viewer's `sticky` set.
    sticky: bool,
}

impl Basis {
    /// The basis of a viewer at `center` seeing `radius` with leave margin
    /// `margin`. One that sees nothing keeps a NaN radius, which every
    /// test finds too far, with no check of its own.
    fn new(center: [f32; 2], radius: f32, margin: f32) -> Self {
        Self {
            center,
            radius: if valid(center, radius) {
                radius
            } else {
                f32::NAN
            },
            margin,
        }
    }

    /// Whether a viewer with this basis sees an item at `position`, given
    /// whether it saw it (then it keeps it within the margin): the one
    /// test of the grid.
    fn sees(&self, [x, y]: [f32; 2], seen: bool) -> bool {
        let (dx, dy) = (x - self.center[0], y - self.center[1]);
        let reach = if seen {
            self.radius + self.margin
        } else {
            self.radius
        };
        dx * dx + dy * dy <= reach * reach
    }

    /// What a viewer with this basis sees of an item at `position`, given
    /// whether it saw it.
    fn has(&self, position: [f32; 2], seen: bool) -> Had {
        let seen = self.sees(position, seen);
        Had {
            seen,
            sticky: seen && self.margin > 0.0 && !self.sees(position, false),
        }
    }

    /// What a viewer with this basis and this `sticky` set saw of item
    /// `id` listed at `position`: within the radius, seen; beyond the
    /// radius and the margin, not; in between, seen if the set has it
    /// (only then is the set asked, so never with no margin).
    fn had(&self, sticky: &HashSet<ReplicationId>, id: ReplicationId, position: [f32; 2]) -> Had {
        if self.sees(position, false) {
            return Had {
                seen: true,
                sticky: false,
            };
        }
        let banded = self.margin > 0.0 && self.sees(position, true) && sticky.contains(&id);
        Had {
            seen: banded,
            sticky: banded,
        }
    }
}

/// A rectangle of cells, both corners included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CellRect {
    min: Cell,
    max: Cell,
}

impl CellRect {
    /// How many cells it spans.
    fn area(&self) -> u64 {
        let side = |a: i32, b: i32| (i64::from(b) - i64::from(a) + 1) as u64;
        side(self.min.0, self.max.0).saturating_mul(side(self.min.1, self.max.1))
    }

    /// Whether a viewer of this area is listed in no cell (see
    /// [`WIDE_CELLS`]).
    fn is_wide(&self) -> bool {
        self.area() > WIDE_CELLS
    }

    /// Whether a refresh of a viewer with this area visits cell `cell`:
    /// every cell, if the area is wide.
    fn holds(&self, cell: Cell) -> bool {
        self.contains(cell) || self.is_wide()
    }

    fn contains(&self, (x, y): Cell) -> bool {
        (self.min.0..=self.max.0).contains(&x) && (self.min.1..=self.max.1).contains(&y)
    }

    fn cells(self) -> impl Iterator<Item = Cell> {
        (self.min.0..=self.max.0).flat_map(move |x| (self.min.1..=self.max.1).map(move |y| (x, y)))
    }
}

impl InterestGrid {
    /// An empty grid of square cells `cell_size` wide.
    ///
    /// # Panics
    /// If `cell_size` is not a positive finite number.
    pub fn new(cell_size: f32) -> Self {
        assert!(
            cell_size.is_finite() && cell_size > 0.0,
            "InterestGrid::new: the cell size must be positive and finite, not {cell_size}"
        );
        Self {
            cell_size,
            leave_margin: 0.0,
            items: HashMap::new(),
            cells: HashMap::new(),
            viewers: Vec::new(),
            slots: HashMap::new(),
            keys: Vec::new(),
            free: Vec::new(),
            moved: HashMap::new(),
            moved_viewers: Vec::new(),
            moved_flags: Vec::new(),
            wide: Vec::new(),
            changes: Vec::new(),
            epoch: 0,
        }
    }

    /// Sets how much farther than its radius an item a viewer sees may go
    /// before it leaves (0 by default; a negative or non-finite margin
    /// counts as 0). It applies from the next update.
    pub fn set_leave_margin(&mut self, margin: f32) {
        self.leave_margin = if margin.is_finite() {
            margin.max(0.0)
        } else {
            0.0
        };
        for v in 0..self.viewers.len() {
            self.mark_moved(v);
        }
    }

    /// Puts item `id` at `position`, or moves it there.
    pub fn set_item(&mut self, id: ReplicationId, position: [f32; 2]) {
        match self.items.get_mut(&id) {
            Some(item) if item.position == position => {}
            Some(item) => {
                let was = item.cell;
                item.position = position;
                self.moved.entry(id).or_insert(was);
            }
            None => {
                self.items.insert(
                    id,
                    Item {
                        position,
                        cell: None,
                        slot: 0,
                    },
                );
                self.moved.entry(id).or_insert(None);
            }
        }
    }

    /// Removes item `id`: every viewer that saw it is told it left, at the
    /// next update.
    pub fn remove_item(&mut self, id: ReplicationId) {
        if let Some(item) = self.items.remove(&id) {
            self.moved.entry(id).or_insert(item.cell);
        }
    }

    /// Where item `id` is, if the grid has it.
    pub fn item_position(&self, id: ReplicationId) -> Option<[f32; 2]> {
        self.items.get(&id).map(|item| item.position)
    }

    /// Places the viewer keyed `key` at `center`, seeing `radius` around
    /// it (a negative or non-finite radius sees nothing, as does a centre
    /// that is not finite). A key is any `u64` (a transport's client id,
    /// as renet and the game's own tables name clients), new or known;
    /// [`update`](Self::update) names the viewer by it.
    pub fn set_viewer(&mut self, key: u64, center: [f32; 2], radius: f32) {
        let viewer = self.slot_for(key);
        let radius = if radius.is_finite() { radius } else { -1.0 };
        match &mut self.viewers[viewer] {
            Some(v) if v.center == center && v.radius == radius => return,
            Some(v) => {
                v.center = center;
                v.radius = radius;
            }
            slot @ None => {
                *slot = Some(Viewer {
                    center,
                    radius,
                    listed: None,
                    basis: None,
                    next: None,
                    sticky: HashSet::new(),
                });
            }
        }
        self.mark_moved(viewer);
    }

    /// Lists the viewer in slot `v` (if any) for a refresh at the next
    /// update.
    fn mark_moved(&mut self, v: usize) {
        if self.moved_flags.len() <= v {
            self.moved_flags.resize(v + 1, false);
        }
        if self.viewers[v].is_some() && !self.moved_flags[v] {
            self.moved_flags[v] = true;
            self.moved_viewers.push(v);
        }
    }

    /// Removes the viewer keyed `key` and forgets what it saw (no events:
    /// its connection is going). Its key may name a new viewer later.
    pub fn remove_viewer(&mut self, key: u64) {
        let Some(viewer) = self.slots.remove(&key) else {
            return;
        };
        self.free.push(viewer);
        let Some(Some(v)) = self.viewers.get_mut(viewer).map(Option::take) else {
            return;
        };
        match v.listed {
            Some(rect) if rect.is_wide() => self.wide.retain(|&other| other != viewer),
            Some(rect) => self.unlist(viewer, rect, None),
            None => {}
        }
    }

    /// Whether the viewer keyed `viewer` saw item `id` at the last update.
    pub fn is_visible(&self, viewer: u64, id: ReplicationId) -> bool {
        let Some((viewer, basis)) = self.viewer(viewer).and_then(|v| Some((v, v.basis?))) else {
            return false;
        };
        self.listed_position(id)
            .is_some_and(|position| basis.had(&viewer.sticky, id, position).seen)
    }

    /// The items the viewer keyed `viewer` saw at the last update, in no
    /// order: those of the cells its area covered then (every cell, for a
    /// wide area), tested where they were listed.
    pub fn visible(&self, viewer: u64) -> impl Iterator<Item = ReplicationId> + '_ {
        let seen = self
            .viewer(viewer)
            .and_then(|v| Some((v, v.basis?, v.listed?)));
        let wide = seen.filter(|&(_, _, rect)| rect.is_wide());
        let narrow = seen.filter(|&(_, _, rect)| !rect.is_wide());
        let every = wide.into_iter().flat_map(|(v, basis, _)| {
            self.cells
                .values()
                .map(move |contents| (v, basis, contents))
        });
        let some = narrow.into_iter().flat_map(|(v, basis, rect)| {
            rect.cells()
                .filter_map(|cell| self.cells.get(&cell))
                .map(move |contents| (v, basis, contents))
        });
        every.chain(some).flat_map(|(v, basis, contents)| {
            contents
                .items
                .iter()
                .zip(&contents.positions)
                .filter(move |&(&id, &position)| basis.had(&v.sticky, id, position).seen)
                .map(|(&id, _)| id)
        })
    }

    /// Where item `id` was listed at the last update, if it was: its cell
    /// then is the one it left since, if it moved or went, else its own.
    fn listed_position(&self, id: ReplicationId) -> Option<[f32; 2]> {
        let item = self.items.get(&id);
        let cell = match self.moved.get(&id) {
            Some(&was) => was,
            None => item.and_then(|item| item.cell),
        }?;
        let contents = self.cells.get(&cell)?;
        let slot = contents.place_of(id, item, cell)?;
        Some(contents.positions[slot])
    }

    /// Items on the grid.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the grid has no items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Brings what every viewer sees up to date with what was set and
    /// removed since the last update, calling `events` with each item that entered
    /// or left each viewer's area: (viewer, item, what happened). A
    /// viewer's events come in no particular order; an item that left and
    /// came back between two updates reports nothing.
    pub fn update(&mut self, mut events: impl FnMut(u64, ReplicationId, Relevance)) {
        let keys = core::mem::take(&mut self.keys);
        self.update_slots(|slot, id, relevance| events(keys[slot], id, relevance));
        self.keys = keys;
    }

    /// The slot of the viewer keyed `key`: its own, or a free one.
    fn slot_for(&mut self, key: u64) -> usize {
        if let Some(&slot) = self.slots.get(&key) {
            return slot;
        }
        let slot = self.free.pop().unwrap_or(self.viewers.len());
        if slot == self.viewers.len() {
            self.viewers.push(None);
            self.keys.push(key);
        } else {
            self.keys[slot] = key;
        }
        self.slots.insert(key, slot);
        slot
    }

    /// [`update`](Self::update), with viewers named by their slots.
    fn update_slots(&mut self, mut events: impl FnMut(usize, ReplicationId, Relevance)) {
        // Items first: relist them, and test them against the viewers
        // that did not move (those that did are tested whole below).
        let moved = core::mem::take(&mut self.moved);
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        for &v in &self.moved_viewers {
            if let Some(viewer) = self.viewers[v].as_mut() {
                let reach = viewer.radius + self.leave_margin;
                viewer.next = area_at(self.cell_size, viewer.center, reach);
            }
        }
        let mut near: Vec<usize> = Vec::new();
        // The items' entries are read a few items ahead, so that their
        // cache misses (a large grid's map is far bigger than the caches)
        // overlap instead of taking turns.
        let mut ahead = moved.keys();
        for id in ahead.by_ref().take(AHEAD) {
            core::hint::black_box(self.items.get(id).map(|item| item.slot));
        }
        for (&id, &was) in &moved {
            if let Some(next) = ahead.next() {
                core::hint::black_box(self.items.get(next).map(|item| item.slot));
            }
            // Read once, written once: the item's place in its cell's lists
            // (others' places move as items leave those lists).
            let item = self.items.get(&id).copied();
            let now = item.map(|item| item.position);
            let cell = now.and_then(|position| self.cell_of(position));
            let mut slot = item.map_or(0, |item| item.slot);
            // Where the viewers saw it last, read off its listing.
            let mut was_at = None;
            if was != cell {
                if let Some(was) = was {
                    was_at = self.unlist_item(id, was);
                }
                if let (Some(cell), Some(position)) = (cell, now) {
                    let contents = self.cells.entry(cell).or_default();
                    slot = contents.items.len();
                    contents.items.push(id);
                    contents.positions.push(position);
                    contents.stamps.push(epoch);
                    let fresh = Fresh {
                        id,
                        position,
                        was: was_at,
                    };
                    contents.stamp(slot, fresh, epoch);
                }
            } else if let (Some(cell), Some(position)) = (cell, now)
                && let Some(contents) = self.cells.get_mut(&cell)
            {
                // Moved within its cell: its listed position follows. (An
                // item removed and set again since the last update is
                // listed here, its place not known: it is looked for.)
                if let Some(found) = contents.place_of(id, item.as_ref(), cell) {
                    was_at = Some(contents.positions[found]);
                    contents.positions[found] = position;
                    let fresh = Fresh {
                        id,
                        position,
                        was: was_at,
                    };
                    contents.stamp(found, fresh, epoch);
                    slot = found;
                }
            }
            if let Some(item) = self.items.get_mut(&id) {
                item.cell = cell;
                item.slot = slot;
            }
            let (flags, viewers) = (&self.moved_flags, &mut self.viewers);
            let mut visit = |v: usize| {
                // Listed in `cell` (or wide), a viewer that moved visits
                // it in its refresh: only an item that changed cells may
                // need more.
                let moved = flags.get(v).copied().unwrap_or(false);
                if moved && cell == was {
                    return;
                }
                let Some(viewer) = viewers[v].as_mut() else {
                    return;
                };
                let had = viewer.had(id, was_at);
                if moved {
                    // Its refresh visits the cells of the area it had and
                    // of the one it has: an item it saw that is in neither
                    // now (or is gone) leaves here.
                    let areas = [viewer.listed, viewer.next];
                    let visited = |cell| areas.iter().flatten().any(|area| area.holds(cell));
                    if !cell.is_some_and(visited) && had.seen {
                        viewer.change(id, had, Had::default(), &mut |relevance| {
                            events(v, id, relevance);
                        });
                    }
                    return;
                }
                // A viewer that did not move stands where its basis says.
                let has = match (viewer.basis, now) {
                    (Some(basis), Some(now)) => basis.has(now, had.seen),
                    _ => Had::default(),
                };
                viewer.change(id, had, has, &mut |relevance| events(v, id, relevance));
            };
            // The viewers listed in the cell it was in or is in (or wide).
            // An item that stayed in its cell, as most do, has one list,
            // which names each viewer once: walked in place.
            let cells = [was, cell.filter(|&cell| Some(cell) != was)];
            match cells {
                [Some(one), None] | [None, Some(one)] if self.wide.is_empty() => {
                    if let Some(contents) = self.cells.get(&one) {
                        contents.viewers.iter().for_each(|&v| visit(v));
                    }
                }
                _ => {
                    near.clear();
                    near.extend(&self.wide);
                    for contents in cells
                        .into_iter()
                        .flatten()
                        .filter_map(|c| self.cells.get(&c))
                    {
                        near.extend(&contents.viewers);
                    }
                    near.sort_unstable();
                    near.dedup();
                    near.iter().for_each(|&v| visit(v));
                }
            }
            // A removed item may be seen by a viewer whose area no longer
            // covers its last cell (it moved away, then the item went):
            // those viewers moved, and are handled below.
        }
        let mut viewers = core::mem::take(&mut self.moved_viewers);
        viewers.sort_unstable();
        for &v in &viewers {
            self.refresh_viewer(v, &mut events);
        }
        viewers.clear();
        self.moved_viewers = viewers;
    }

    /// Brings what viewer `v` sees up to date with the items of the cells
    /// its area covers (tested at the positions the cells list, with no
    /// lookup per item), reporting what enters or leaves, and relists it
    /// in them.
    fn refresh_viewer(
        &mut self,
        v: usize,
        events: &mut impl FnMut(usize, ReplicationId, Relevance),
    ) {
        let margin = self.leave_margin;
        if let Some(flag) = self.moved_flags.get_mut(v) {
            *flag = false;
        }
        let Some(viewer) = self.viewers[v].as_ref() else {
            return;
        };
        let rect = self.rect_of(viewer.center, viewer.radius + margin);
        let listed = viewer.listed;
        if listed != rect {
            // A wide area is listed in no cell; a narrow one in each.
            let cells = |r: Option<CellRect>| r.filter(|r| !r.is_wide());
            if let Some(old) = listed {
                if old.is_wide() {
                    self.wide.retain(|&other| other != v);
                } else {
                    self.unlist(v, old, cells(rect));
                }
            }
            match rect {
                Some(new) if new.is_wide() => self.wide.push(v),
                Some(new) => {
                    for cell in new.cells() {
                        if cells(listed).is_none_or(|old| !old.contains(cell)) {
                            self.cells.entry(cell).or_default().viewers.push(v);
                        }
                    }
                }
                None => {}
            }
        }
        let Some(viewer) = self.viewers[v].as_mut() else {
            return;
        };
        viewer.listed = rect;
        let zones = viewer.zones(margin);
        // The old basis stays the viewer's until every item is tested.
        let (basis, next) = (
            viewer.basis,
            Basis::new(viewer.center, viewer.radius, margin),
        );
        // Each item of the area's cells is tested once, and only those
        // whose state changes are listed. An item that did not move since
        // the viewer's last refresh and lies well inside (or well outside)
        // what it saw then and sees now is known to stay seen (or unseen)
        // with no test.
        let (epoch, mut changes) = (self.epoch, core::mem::take(&mut self.changes));
        // Tests an item at `position`, listed at `was` at the last update
        // (`None`: nowhere): what the old basis saw there, what the new one
        // sees here.
        let mut test = |id: ReplicationId, position: [f32; 2], was: Option<[f32; 2]>| {
            let had = viewer.had(id, was);
            let has = next.has(position, had.seen);
            if has != had {
                changes.push((id, had, has));
            }
        };
        let mut visit = |cell: Cell, contents: &CellContents| {
            // A cell wholly inside or outside: its items that did not move
            // are known, the others are tested alone. Elsewhere, most
            // unmoved items lie well inside or outside too: passed over
            // here, with no call.
            let whole = zones.of_cell(cell, self.cell_size);
            if cfg!(debug_assertions) {
                check_zones(contents, basis, next, &zones, whole, epoch);
            }
            if let Zone::Rim = whole {
                let (positions, stamps) = (&contents.positions, &contents.stamps);
                for (run, (places, stamps)) in
                    positions.chunks(64).zip(stamps.chunks(64)).enumerate()
                {
                    // Which of a run of 64 lie on the rim: flagged without
                    // a branch, which the compiler can do several at a
                    // time; only those are tested.
                    let mut rim = zones.rim_of(places, stamps, epoch);
                    while rim != 0 {
                        let at = 64 * run + rim.trailing_zeros() as usize;
                        rim &= rim - 1;
                        test(contents.items[at], positions[at], Some(positions[at]));
                    }
                }
            }
            for fresh in contents.fresh(epoch) {
                // Surely seen where it was and where it is, or surely
                // unseen at both (the zones bound the old basis's test at
                // the old position as well as the new one's at the new):
                // nothing to test. (Listed nowhere before, it was unseen.)
                if let Some(was) = fresh.was {
                    match (zones.of(was), zones.of(fresh.position)) {
                        (Zone::Inside, Zone::Inside) | (Zone::Outside, Zone::Outside) => continue,
                        _ => {}
                    }
                }
                test(fresh.id, fresh.position, fresh.was);
            }
        };
        // Every item it saw is in the cells of the area it has or of the
        // one it had, or left at the items' pass (removed, or moved out of
        // both areas). A wide area is listed in no cell: every cell is
        // visited then.
        if rect.is_some_and(|new| new.is_wide()) || listed.is_some_and(|old| old.is_wide()) {
            for (&cell, contents) in &self.cells {
                visit(cell, contents);
            }
        } else {
            // The area's cells, and those of the area it had that it left
            // (their items it saw leave, unless they moved into the area,
            // where they are found).
            let left = listed.into_iter().flat_map(CellRect::cells);
            let left = left.filter(|&cell| rect.is_none_or(|rect| !rect.contains(cell)));
            for cell in rect.into_iter().flat_map(CellRect::cells).chain(left) {
                if let Some(contents) = self.cells.get(&cell) {
                    visit(cell, contents);
                }
            }
        }
        viewer.basis = Some(next);
        for (id, had, has) in changes.drain(..) {
            viewer.change(id, had, has, &mut |relevance| events(v, id, relevance));
        }
        self.changes = changes;
    }

    /// Takes viewer `v` off the cells of `old` that `keep` does not cover.
    fn unlist(&mut self, v: usize, old: CellRect, keep: Option<CellRect>) {
        for cell in old.cells() {
            if keep.is_some_and(|keep| keep.contains(cell)) {
                continue;
            }
            if let Some(contents) = self.cells.get_mut(&cell) {
                contents.viewers.retain(|&other| other != v);
                if contents.viewers.is_empty() && contents.items.is_empty() {
                    self.cells.remove(&cell);
                }
            }
        }
    }

    /// Takes item `id` off cell `cell`'s lists, and says at what position
    /// they listed it. An item still on the grid knows its place there; a
    /// removed one is looked for.
    fn unlist_item(&mut self, id: ReplicationId, cell: Cell) -> Option<[f32; 2]> {
        let contents = self.cells.get_mut(&cell)?;
        let slot = contents.place_of(id, self.items.get(&id), cell)?;
        contents.items.swap_remove(slot);
        let position = contents.positions.swap_remove(slot);
        contents.stamps.swap_remove(slot);
        // The last item took its place.
        if let Some(&moved) = contents.items.get(slot)
            && let Some(item) = self.items.get_mut(&moved)
            && item.cell == Some(cell)
        {
            item.slot = slot;
        }
        if contents.viewers.is_empty() && contents.items.is_empty() {
            self.cells.remove(&cell);
        }
        Some(position)
    }

    fn viewer(&self, key: u64) -> Option<&Viewer> {
        let slot = *self.slots.get(&key)?;
        self.viewers.get(slot).and_then(Option::as_ref)
    }

    /// The cell of a position (`None` if it is not finite); coordinates
    /// beyond `i32` saturate.
    fn cell_of(&self, position: [f32; 2]) -> Option<Cell> {
        cell_at(self.cell_size, position)
    }

    /// The cells a circle of `radius` around `center` touches (`None` if
    /// it sees nothing).
    fn rect_of(&self, center: [f32; 2], radius: f32) -> Option<CellRect> {
        area_at(self.cell_size, center, radius)
    }
}

/// Checks (in debug builds) what a refresh passes over in a cell, whose
/// zone is `whole`: each item of `contents` that did not move in update
/// `epoch` lies, if its zone (or the cell's) is inside, within the radius
/// of both the viewer's old basis and its new one, `next` (seen, and in
/// neither sticky set); if outside, beyond the old radius and margin and
/// the new radius (unseen, and staying so).
fn check_zones(
    contents: &CellContents,
    basis: Option<Basis>,
    next: Basis,
    zones: &Zones,
    whole: Zone,
    epoch: u32,
) {
    let listed = contents.items.iter().zip(&contents.positions);
    for ((id, &position), _) in listed
        .zip(&contents.stamps)
        .filter(|&(_, &stamp)| stamp != epoch)
    {
        let zone = match whole {
            Zone::Rim => zones.of(position),
            whole => whole,
        };
        let old = |seen| basis.is_some_and(|basis| basis.sees(position, seen));
        match zone {
            Zone::Inside => assert!(
                old(false) && next.sees(position, false),
                "{id} inside, not within both radii"
            ),
            Zone::Outside => assert!(
                !old(true) && !next.sees(position, false),
                "{id} outside, within reach"
            ),
            Zone::Rim => {}
        }
    }
    // A moved item is passed over when both its positions are in one
    // zone: the old basis's at the old position, the new one's at the new.
    for fresh in contents.fresh(epoch) {
        let Some(was) = fresh.was else { continue };
        let old = |seen| basis.is_some_and(|basis| basis.sees(was, seen));
        match (zones.of(was), zones.of(fresh.position)) {
            (Zone::Inside, Zone::Inside) => assert!(
                old(false) && next.sees(fresh.position, false),
                "{} inside, not within both radii",
                fresh.id
            ),
            (Zone::Outside, Zone::Outside) => assert!(
                !old(true) && !next.sees(fresh.position, false),
                "{} outside, within reach",
                fresh.id
            ),
            _ => {}
        }
    }
}

/// Where an item that did not move lies for a viewer that did: known
/// seen before and now, known unseen before and now, or to be tested.
#[derive(Clone, Copy, Debug)]
enum Zone {
    Inside,
    Outside,
    Rim,
}

/// Squared distances from a centre within which an item is surely seen,
/// and beyond which it is surely not: for a refresh, of the unmoved items
/// around the new centre (from [`Viewer::zones`]).
#[derive(Clone, Copy, Debug)]
struct Zones {
    center: [f32; 2],
    inside: f32,
    outside: f32,
}

impl Zones {
    /// Zones that say nothing: every item is on the rim, and tested.
    const UNKNOWN: Self = Self {
        center: [0.0; 2],
        inside: -1.0,
        outside: f32::INFINITY,
    };

    /// Surely inside within distance `inside` of `center`, surely outside
    /// beyond `outside` (saying nothing if that is not finite).
    fn new(center: [f32; 2], inside: f32, outside: f32) -> Self {
        if !outside.is_finite() {
            return Self::UNKNOWN;
        }
        Self {
            center,
            inside: if inside > 0.0 { inside * inside } else { -1.0 },
            outside: outside * outside,
        }
    }

    fn of(&self, position: [f32; 2]) -> Zone {
        self.of_squared(self.squared_distance(position))
    }

    /// The squared distance of `position` from the centre.
    fn squared_distance(&self, [x, y]: [f32; 2]) -> f32 {
        let (dx, dy) = (x - self.center[0], y - self.center[1]);
        dx * dx + dy * dy
    }

    /// The zone every point of cell `cell` (`size` wide) lies in, if one.
    fn of_cell(&self, (cx, cy): Cell, size: f32) -> Zone {
        // The cell's nearest and farthest offsets from the centre, per axis.
        let span = |c: i32, center: f32| {
            let (low, high) = (c as f32 * size - center, (c as f32 + 1.0) * size - center);
            let near = if low > 0.0 {
                low
            } else if high < 0.0 {
                -high
            } else {
                0.0
            };
            (near, low.abs().max(high.abs()))
        };
        let ((near_x, far_x), (near_y, far_y)) =
            (span(cx, self.center[0]), span(cy, self.center[1]));
        match self.of_squared(far_x * far_x + far_y * far_y) {
            Zone::Inside => Zone::Inside,
            _ => match self.of_squared(near_x * near_x + near_y * near_y) {
                Zone::Outside => Zone::Outside,
                _ => Zone::Rim,
            },
        }
    }

    /// Which of `positions` (64 at most), of items whose stamps are
    /// `stamps`, did not move in update `epoch` and lie on the rim, as
    /// bits: what [`of`](Self::of) says, item by item, with no branch. The
    /// tests write a byte each, which the compiler does four at a time,
    /// and a multiplication gathers eight of those bytes into eight bits
    /// (shifting each test's bit into the word as it went kept them one
    /// at a time: the grid's whole update 1.075× slower, `ab` on `mmo`).
    fn rim_of(&self, positions: &[[f32; 2]], stamps: &[u32], epoch: u32) -> u64 {
        debug_assert!(positions.len() <= 64 && positions.len() == stamps.len());
        let mut on = [0u8; 64];
        for ((flag, &position), &stamp) in on.iter_mut().zip(positions).zip(stamps) {
            let distance = self.squared_distance(position);
            // As `of_squared`: neither surely inside nor surely outside (a
            // NaN distance is neither).
            let (inside, outside) = (distance <= self.inside, distance > self.outside);
            *flag = u8::from(!inside & !outside & (stamp != epoch));
        }
        // Eight flags (bytes of 0 or 1) to eight bits at a time.
        let mut rim = 0u64;
        for (at, bytes) in on.chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
            rim |= (word.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * at);
        }
        rim
    }

    fn of_squared(&self, distance: f32) -> Zone {
        if distance <= self.inside {
            Zone::Inside
        } else if distance > self.outside {
            Zone::Outside
        } else {
            Zone::Rim
        }
    }
}

/// Whether a viewer at `center` seeing `radius` sees anything.
fn valid(center: [f32; 2], radius: f32) -> bool {
    center.iter().all(|c| c.is_finite()) && radius >= 0.0
}

/// How far from a bound an item must lie for a zone to tell, at distances
/// of magnitude `scale`: far above `f32` rounding.
fn slack(scale: f32) -> f32 {
    1e-4 * scale + 1e-3
}

/// The cell of a position on a grid of cells `size` wide (`None` if it is
/// not finite); coordinates beyond `i32` saturate.
fn cell_at(size: f32, [x, y]: [f32; 2]) -> Option<Cell> {
    (x.is_finite() && y.is_finite()).then(|| ((x / size).floor() as i32, (y / size).floor() as i32))
}

/// The cells of a grid of cells `size` wide that a circle of `radius`
/// around `center` touches (`None` if it sees nothing).
fn area_at(size: f32, center: [f32; 2], radius: f32) -> Option<CellRect> {
    if radius.is_nan() || radius < 0.0 || !radius.is_finite() {
        return None;
    }
    let min = cell_at(size, [center[0] - radius, center[1] - radius])?;
    let max = cell_at(size, [center[0] + radius, center[1] + radius])?;
    Some(CellRect { min, max })
}

impl Viewer {
    /// What it saw of item `id`, listed at `was` at the last update
    /// (`None`: not listed, so seen by none).
    fn had(&self, id: ReplicationId, was: Option<[f32; 2]>) -> Had {
        match (self.basis, was) {
            (Some(basis), Some(was)) => basis.had(&self.sticky, id, was),
            _ => Had::default(),
        }
    }

    /// Item `id` goes from what it had to what it has: its set follows,
    /// and `event` hears if it entered or left.
    fn change(&mut self, id: ReplicationId, had: Had, has: Had, event: &mut impl FnMut(Relevance)) {
        if has.sticky != had.sticky {
            if has.sticky {
                self.sticky.insert(id);
            } else {
                self.sticky.remove(&id);
            }
        }
        if has.seen != had.seen {
            event(if has.seen {
                Relevance::Enter
            } else {
                Relevance::Leave
            });
        }
    }

    /// The zones of a refresh under leave margin `margin`, from its basis:
    /// [`Zones::UNKNOWN`] (test every item) before its first refresh, or
    /// when either the basis or now sees nothing.
    ///
    /// With `d` the distance moved, an item at distance `x` from the new
    /// centre was at most `x + d` and at least `x - d` from the old one.
    /// So if `x + d <= r0`, it was seen (within the old radius), and if
    /// also `x <= r1` it stays seen, within the new radius (neither then
    /// nor now in the sticky set); if `x - d > r0 + m0` it was not seen
    /// (beyond the old radius and margin), and it stays out if `x > r1`.
    /// A slack far above `f32` rounding keeps an item on either bound
    /// tested.
    fn zones(&self, margin: f32) -> Zones {
        let Some(basis) = self.basis else {
            return Zones::UNKNOWN;
        };
        if !valid(basis.center, basis.radius) || !valid(self.center, self.radius) {
            return Zones::UNKNOWN;
        }
        let (dx, dy) = (
            self.center[0] - basis.center[0],
            self.center[1] - basis.center[1],
        );
        let moved = (dx * dx + dy * dy).sqrt();
        let scale = basis.radius + self.radius + basis.margin + margin + moved;
        let slack = slack(scale + self.center[0].abs() + self.center[1].abs());
        let inside = (basis.radius - moved).min(self.radius) - slack;
        let outside = (basis.radius + basis.margin + moved).max(self.radius) + slack;
        Zones::new(self.center, inside, outside)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rim test of a run flags exactly the items, in order, that did
    /// not move and that [`Zones::of`] puts on the rim, for runs of every
    /// length up to 64 (NaN positions included: on the rim, as `of` says).
    #[test]
    fn a_runs_rim_bits_are_each_items_zone() {
        let zones = Zones::new([3.0, -2.0], 5.0, 9.0);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in 0..=64 {
            let positions: Vec<[f32; 2]> = (0..len)
                .map(|_| match next() % 17 {
                    0 => [f32::NAN, 0.0],
                    _ => [
                        (next() % 300) as f32 / 10.0 - 12.0,
                        (next() % 300) as f32 / 10.0 - 17.0,
                    ],
                })
                .collect();
            let stamps: Vec<u32> = (0..len).map(|_| (next() % 3) as u32).collect();
            let rim = zones.rim_of(&positions, &stamps, 1);
            for (at, (&position, &stamp)) in positions.iter().zip(&stamps).enumerate() {
                let expected = matches!(zones.of(position), Zone::Rim) && stamp != 1;
                assert_eq!(rim >> at & 1 == 1, expected, "item {at} of {len}");
            }
            if len < 64 {
                assert_eq!(rim >> len, 0, "nothing past {len}");
            }
        }
    }
}
