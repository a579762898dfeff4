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
/// new cell, and per viewer moved, a test of the items in the cells its
/// area covers: items and viewers that did not move cost nothing. Choose
/// a cell size near the typical radius.
///
/// Viewers are keyed by the caller's `u64` (the transport's client id,
/// say), each in a slot of its own, reused after
/// [`remove_viewer`](Self::remove_viewer). Positions are
/// `[x, y]` on the plane of the game's ground (`[x, z]` in a y-up 3D
/// world). A position that is not finite puts the item nowhere: no viewer
/// sees it until it gets a finite one.
///
/// Memory: per item, a 24-byte entry and a place in its cell's list; per
/// viewer, a hash set of the ids it sees (8 bytes each and the set's
/// overhead) and a place in the viewer list of each cell its area covers.
/// A viewer whose area spans more than 4 096 cells is listed in none: it
/// is tested against every item that moves, and refreshing it (when it
/// moves) visits every item.
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
    /// Viewers set since the last update (their slots).
    moved_viewers: HashSet<usize>,
    /// Viewers whose area spans more than [`WIDE_CELLS`] cells: listed in
    /// no cell, tested against every item that moves.
    wide: Vec<usize>,
    /// The items entering or leaving the viewer being refreshed (a list
    /// kept from refresh to refresh).
    changes: Vec<ReplicationId>,
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

#[derive(Clone, Debug, Default)]
struct CellContents {
    items: Vec<ReplicationId>,
    /// The items' positions, in the same order: a viewer's refresh reads
    /// them here, not from the grid's map of every item.
    positions: Vec<[f32; 2]>,
    /// The viewers whose area (radius and margin) covers the cell.
    viewers: Vec<usize>,
}

impl CellContents {
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
    visible: HashSet<ReplicationId>,
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
            moved_viewers: HashSet::new(),
            wide: Vec::new(),
            changes: Vec::new(),
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
        self.moved_viewers
            .extend((0..self.viewers.len()).filter(|&v| self.viewers[v].is_some()));
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
                    visible: HashSet::new(),
                });
            }
        }
        self.moved_viewers.insert(viewer);
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
        self.moved_viewers.remove(&viewer);
    }

    /// Whether the viewer keyed `viewer` saw item `id` at the last update.
    pub fn is_visible(&self, viewer: u64, id: ReplicationId) -> bool {
        self.viewer(viewer).is_some_and(|v| v.visible.contains(&id))
    }

    /// The items the viewer keyed `viewer` saw at the last update, in no
    /// order.
    pub fn visible(&self, viewer: u64) -> impl Iterator<Item = ReplicationId> + '_ {
        self.viewer(viewer)
            .into_iter()
            .flat_map(|v| v.visible.iter().copied())
    }

    /// Items on the grid.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the grid has no items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Brings every viewer's set up to date with what was set and removed
    /// since the last update, calling `events` with each item that entered
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
        let mut near: Vec<usize> = Vec::new();
        for (&id, &was) in &moved {
            // Read once, written once: the item's place in its cell's lists
            // (others' places move as items leave those lists).
            let item = self.items.get(&id).copied();
            let now = item.map(|item| item.position);
            let cell = now.and_then(|position| self.cell_of(position));
            let mut slot = item.map_or(0, |item| item.slot);
            if was != cell {
                if let Some(was) = was {
                    self.unlist_item(id, was);
                }
                if let (Some(cell), Some(position)) = (cell, now) {
                    let contents = self.cells.entry(cell).or_default();
                    slot = contents.items.len();
                    contents.items.push(id);
                    contents.positions.push(position);
                }
            } else if let (Some(cell), Some(position)) = (cell, now)
                && let Some(contents) = self.cells.get_mut(&cell)
            {
                // Moved within its cell: its listed position follows. (An
                // item removed and set again since the last update is
                // listed here, its place not known: it is looked for.)
                if let Some(found) = contents.place_of(id, item.as_ref(), cell) {
                    contents.positions[found] = position;
                    slot = found;
                }
            }
            if let Some(item) = self.items.get_mut(&id) {
                item.cell = cell;
                item.slot = slot;
            }
            near.clear();
            near.extend(&self.wide);
            for c in [was, cell].into_iter().flatten() {
                if let Some(contents) = self.cells.get(&c) {
                    near.extend(&contents.viewers);
                }
            }
            near.sort_unstable();
            near.dedup();
            for &v in &near {
                if self.moved_viewers.contains(&v) {
                    continue;
                }
                let (margin, Some(viewer)) = (self.leave_margin, self.viewers[v].as_mut()) else {
                    continue;
                };
                let seen = viewer.visible.contains(&id);
                let sees = now.is_some_and(|p| viewer.sees(p, seen, margin));
                if sees != seen {
                    if sees {
                        viewer.visible.insert(id);
                        events(v, id, Relevance::Enter);
                    } else {
                        viewer.visible.remove(&id);
                        events(v, id, Relevance::Leave);
                    }
                }
            }
            // A removed item may be seen by a viewer whose area no longer
            // covers its last cell (it moved away, then the item went):
            // those viewers moved, and are handled below.
        }
        let mut viewers: Vec<usize> = self.moved_viewers.drain().collect();
        viewers.sort_unstable();
        for v in viewers {
            self.refresh_viewer(v, &mut events);
        }
    }

    /// Brings viewer `v`'s set up to date with the items of the cells its
    /// area covers (tested at the positions the cells list, with no lookup
    /// per item), changing only what enters or leaves, and relists it in
    /// them.
    fn refresh_viewer(
        &mut self,
        v: usize,
        events: &mut impl FnMut(usize, ReplicationId, Relevance),
    ) {
        let margin = self.leave_margin;
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
        // The set is diffed in place: each item of the area's cells is
        // tested once, and only those that enter or leave touch the set.
        let mut changes = core::mem::take(&mut self.changes);
        let mut confirmed = 0;
        let mut test = |id: ReplicationId, position: [f32; 2]| {
            let seen = viewer.visible.contains(&id);
            confirmed += usize::from(seen);
            if viewer.sees(position, seen, margin) != seen {
                changes.push(id);
            }
        };
        match rect {
            Some(rect) if rect.is_wide() => {
                for (&id, item) in &self.items {
                    test(id, item.position);
                }
            }
            rect => {
                for cell in rect.into_iter().flat_map(CellRect::cells) {
                    let Some(contents) = self.cells.get(&cell) else {
                        continue;
                    };
                    for (&id, &position) in contents.items.iter().zip(&contents.positions) {
                        test(id, position);
                    }
                }
            }
        }
        // Items it saw that no cell of its area lists (gone, or far away)
        // leave too.
        if confirmed < viewer.visible.len() {
            let scanned = |id: &ReplicationId| match (self.items.get(id), rect) {
                (Some(_), Some(rect)) if rect.is_wide() => true,
                (Some(item), Some(rect)) => item.cell.is_some_and(|cell| rect.contains(cell)),
                _ => false,
            };
            changes.extend(viewer.visible.iter().filter(|id| !scanned(id)));
        }
        for id in changes.drain(..) {
            if viewer.visible.remove(&id) {
                events(v, id, Relevance::Leave);
            } else {
                viewer.visible.insert(id);
                events(v, id, Relevance::Enter);
            }
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

    /// Takes item `id` off cell `cell`'s lists. An item still on the grid
    /// knows its place there; a removed one is looked for.
    fn unlist_item(&mut self, id: ReplicationId, cell: Cell) {
        let Some(contents) = self.cells.get_mut(&cell) else {
            return;
        };
        let Some(slot) = contents.place_of(id, self.items.get(&id), cell) else {
            return;
        };
        contents.items.swap_remove(slot);
        contents.positions.swap_remove(slot);
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
    }

    fn viewer(&self, key: u64) -> Option<&Viewer> {
        let slot = *self.slots.get(&key)?;
        self.viewers.get(slot).and_then(Option::as_ref)
    }

    /// The cell of a position (`None` if it is not finite); coordinates
    /// beyond `i32` saturate.
    fn cell_of(&self, [x, y]: [f32; 2]) -> Option<Cell> {
        (x.is_finite() && y.is_finite()).then(|| {
            (
                (x / self.cell_size).floor() as i32,
                (y / self.cell_size).floor() as i32,
            )
        })
    }

    /// The cells a circle of `radius` around `center` touches (`None` if
    /// it sees nothing).
    fn rect_of(&self, center: [f32; 2], radius: f32) -> Option<CellRect> {
        if radius.is_nan() || radius < 0.0 || !radius.is_finite() {
            return None;
        }
        let min = self.cell_of([center[0] - radius, center[1] - radius])?;
        let max = self.cell_of([center[0] + radius, center[1] + radius])?;
        Some(CellRect { min, max })
    }
}

impl Viewer {
    /// Whether the viewer sees an item at `position`, given whether it saw
    /// it (then it keeps it within the leave margin).
    fn sees(&self, [x, y]: [f32; 2], seen: bool, margin: f32) -> bool {
        if self.radius.is_nan() || self.radius < 0.0 || !self.center.iter().all(|c| c.is_finite()) {
            return false;
        }
        let (dx, dy) = (x - self.center[0], y - self.center[1]);
        let reach = if seen {
            self.radius + margin
        } else {
            self.radius
        };
        dx * dx + dy * dy <= reach * reach
    }
}
