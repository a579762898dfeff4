//! `InterestGrid` against a brute-force reference: after every update,
//! each viewer's set is what testing every item against every viewer
//! gives, and the events are exactly the difference from the previous
//! sets; between updates, `visible` and `is_visible` still say what the
//! last update saw.

use std::collections::{BTreeMap, BTreeSet};

use fastarray_core::{InterestGrid, Relevance, ReplicationId};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    SetItem(u8, [f32; 2]),
    /// Moves an item on the grid by a small step (often within its cell).
    Nudge(u8, [f32; 2]),
    RemoveItem(u8),
    SetViewer(u8, [f32; 2], f32),
    /// Walks a viewer by a small step, sometimes changing its radius a
    /// little: the refresh that skips what the step cannot change.
    Walk(u8, [f32; 2], f32),
    RemoveViewer(u8),
    Margin(f32),
    Update,
}

fn coord() -> impl Strategy<Value = f32> {
    prop_oneof![
        8 => -300.0f32..300.0,
        1 => Just(f32::NAN),
        1 => prop_oneof![Just(1e30f32), Just(-1e30f32), Just(f32::INFINITY)],
        2 => (-6i32..6).prop_map(|k| k as f32 * 25.0), // on cell borders
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..40, [coord(), coord()]).prop_map(|(i, p)| Op::SetItem(i, p)),
        4 => (0u8..40, [-4.0f32..4.0, -4.0f32..4.0]).prop_map(|(i, d)| Op::Nudge(i, d)),
        1 => (0u8..40).prop_map(Op::RemoveItem),
        2 => (0u8..5, [coord(), coord()], prop_oneof![0.0f32..150.0, Just(-1.0), Just(1e9)])
            .prop_map(|(v, c, r)| Op::SetViewer(v, c, r)),
        4 => (0u8..5, [-6.0f32..6.0, -6.0f32..6.0], prop_oneof![3 => Just(0.0f32), 1 => -5.0f32..5.0])
            .prop_map(|(v, d, dr)| Op::Walk(v, d, dr)),
        1 => (0u8..5).prop_map(Op::RemoveViewer),
        1 => prop_oneof![Just(0.0f32), 0.0f32..30.0].prop_map(Op::Margin),
        3 => Just(Op::Update),
    ]
}

/// The reference: every item tested against every viewer at each update.
#[derive(Default)]
struct Reference {
    items: BTreeMap<u8, [f32; 2]>,
    viewers: BTreeMap<u8, ([f32; 2], f32)>,
    margin: f32,
    seen: BTreeMap<u8, BTreeSet<u8>>,
}

impl Reference {
    fn sees(center: [f32; 2], radius: f32, p: [f32; 2], reach: f32) -> bool {
        let finite = |v: [f32; 2]| v.iter().all(|c| c.is_finite());
        if !finite(center) || !finite(p) || !radius.is_finite() || radius < 0.0 {
            return false;
        }
        let (dx, dy) = (p[0] - center[0], p[1] - center[1]);
        dx * dx + dy * dy <= reach * reach
    }

    /// The new sets, and the (viewer, item, relevance) events.
    fn update(&mut self) -> BTreeSet<(u8, u8, bool)> {
        let mut events = BTreeSet::new();
        let mut next = BTreeMap::new();
        for (&v, &(center, radius)) in &self.viewers {
            let old = self.seen.get(&v).cloned().unwrap_or_default();
            let now: BTreeSet<u8> = self
                .items
                .iter()
                .filter(|&(i, &p)| {
                    let reach = if old.contains(i) {
                        radius + self.margin
                    } else {
                        radius
                    };
                    Self::sees(center, radius, p, reach)
                })
                .map(|(&i, _)| i)
                .collect();
            events.extend(now.difference(&old).map(|&i| (v, i, true)));
            events.extend(old.difference(&now).map(|&i| (v, i, false)));
            next.insert(v, now);
        }
        self.seen = next;
        events
    }
}

/// A viewer's key, as a transport's client id: sparse and wide, not a
/// dense index.
fn key(v: u8) -> u64 {
    (u64::from(v) << 40) | 0x5eed
}

/// The viewer a key names.
fn unkey(key: u64) -> u8 {
    assert_eq!(key & 0xff_ffff_ffff, 0x5eed, "not a viewer's key: {key:#x}");
    (key >> 40) as u8
}

fn id(i: u8) -> ReplicationId {
    ReplicationId::from_raw(u64::from(i))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_grid_agrees_with_brute_force(ops in prop::collection::vec(op(), 1..120)) {
        let mut grid = InterestGrid::new(25.0);
        let mut reference = Reference::default();
        for op in ops.iter().chain([&Op::Update]) {
            match *op {
                Op::SetItem(i, p) => {
                    grid.set_item(id(i), p);
                    reference.items.insert(i, p);
                }
                Op::Nudge(i, [dx, dy]) => {
                    if let Some(&[x, y]) = reference.items.get(&i) {
                        let p = [x + dx, y + dy];
                        grid.set_item(id(i), p);
                        reference.items.insert(i, p);
                    }
                }
                Op::RemoveItem(i) => {
                    grid.remove_item(id(i));
                    reference.items.remove(&i);
                }
                Op::SetViewer(v, c, r) => {
                    grid.set_viewer(key(v), c, r);
                    reference.viewers.insert(v, (c, r));
                }
                Op::Walk(v, [dx, dy], dr) => {
                    if let Some(&([x, y], r)) = reference.viewers.get(&v) {
                        let (c, r) = ([x + dx, y + dy], r + dr);
                        grid.set_viewer(key(v), c, r);
                        reference.viewers.insert(v, (c, r));
                    }
                }
                Op::RemoveViewer(v) => {
                    grid.remove_viewer(key(v));
                    reference.viewers.remove(&v);
                    reference.seen.remove(&v);
                }
                Op::Margin(m) => {
                    grid.set_leave_margin(m);
                    reference.margin = m;
                }
                Op::Update => {
                    let mut events = BTreeSet::new();
                    grid.update(|v, item, relevance| {
                        let fresh = events.insert((
                            unkey(v),
                            item.to_raw() as u8,
                            relevance == Relevance::Enter,
                        ));
                        assert!(fresh, "event reported twice");
                    });
                    prop_assert_eq!(&events, &reference.update());
                }
            }
            // After every step, not only at updates: what each viewer saw
            // at the last update, whatever moved or went since.
            for v in 0..5 {
                let seen = reference.seen.get(&v).cloned().unwrap_or_default();
                let grid_seen: Vec<u8> = grid.visible(key(v)).map(|i| i.to_raw() as u8).collect();
                prop_assert_eq!(grid_seen.len(), seen.len(), "an item listed twice");
                prop_assert_eq!(&grid_seen.into_iter().collect::<BTreeSet<u8>>(), &seen);
                for i in 0..40 {
                    prop_assert_eq!(grid.is_visible(key(v), id(i)), seen.contains(&i));
                }
            }
        }
        prop_assert_eq!(grid.len(), reference.items.len());
    }
}

#[test]
fn a_viewer_walking_across_a_crowded_cell_agrees_with_brute_force() {
    // 256 items in one cell (and a few beside it), so a refresh scans its
    // lists in several runs of 64; some move each update, and two viewers
    // walk through with their rims across the crowd.
    let mut grid = InterestGrid::new(25.0);
    let mut reference = Reference::default();
    let (mut moved, mut most) = (0u32, 0);
    let place = |i: u8, shift: f32| {
        let (a, b) = (f32::from(i % 16), f32::from(i / 16));
        [1.0 + 1.5 * a + shift, 1.0 + 1.5 * b - shift]
    };
    for i in 0..=u8::MAX {
        grid.set_item(id(i), place(i, 0.0));
        reference.items.insert(i, place(i, 0.0));
    }
    grid.set_leave_margin(0.5);
    reference.margin = 0.5;
    for step in 0..60u8 {
        for v in 0..2u8 {
            let center = [-12.0 + f32::from(step) * 0.8, 12.0 + f32::from(v) * 3.0];
            let radius = 9.0 + f32::from(v) * 4.0;
            grid.set_viewer(key(v), center, radius);
            reference.viewers.insert(v, (center, radius));
        }
        for _ in 0..7 {
            moved = (moved + 37) % 256;
            let i = moved as u8;
            let p = place(i, f32::from(step % 3) * 0.3);
            grid.set_item(id(i), p);
            reference.items.insert(i, p);
        }
        let mut events = BTreeSet::new();
        grid.update(|v, item, relevance| {
            events.insert((unkey(v), item.to_raw() as u8, relevance == Relevance::Enter));
        });
        assert_eq!(events, reference.update(), "step {step}");
        for (&v, seen) in &reference.seen {
            let grid_seen: BTreeSet<u8> = grid.visible(key(v)).map(|i| i.to_raw() as u8).collect();
            assert_eq!(&grid_seen, seen, "step {step}, viewer {v}");
            most = most.max(seen.len());
        }
    }
    assert!(most > 64, "a viewer saw {most} at most");
}

#[test]
fn an_update_with_nothing_moved_reports_nothing() {
    let mut grid = InterestGrid::new(10.0);
    for i in 0..100u8 {
        grid.set_item(id(i), [f32::from(i), 0.0]);
    }
    grid.set_viewer(0, [50.0, 0.0], 20.0);
    let mut count = 0;
    grid.update(|_, _, _| count += 1);
    assert_eq!(count, 41);
    grid.set_item(id(3), [3.0, 0.0]); // same place
    grid.update(|_, _, _| panic!("nothing moved"));
    assert!(grid.is_visible(0, id(50)) && !grid.is_visible(0, id(3)));
}

#[test]
fn the_leave_margin_keeps_an_item_on_the_rim() {
    let mut grid = InterestGrid::new(10.0);
    grid.set_leave_margin(5.0);
    grid.set_viewer(1, [0.0, 0.0], 10.0);
    grid.set_item(id(0), [9.0, 0.0]);
    grid.update(|_, _, relevance| assert_eq!(relevance, Relevance::Enter));
    grid.set_item(id(0), [14.0, 0.0]); // past the radius, within the margin
    grid.update(|_, _, _| panic!("still seen"));
    grid.set_item(id(0), [15.5, 0.0]);
    let mut left = false;
    grid.update(|_, _, relevance| left = relevance == Relevance::Leave);
    assert!(left);
    grid.set_item(id(0), [12.0, 0.0]); // not seen: must come within the radius
    grid.update(|_, _, _| panic!("outside the radius"));
}

#[test]
#[should_panic(expected = "cell size must be positive")]
fn a_cell_size_of_zero_is_refused() {
    InterestGrid::new(0.0);
}

/// Viewers are named by any `u64` (a transport's client id): a removed
/// viewer's place is reused by the next, whose events carry its own key.
#[test]
fn viewers_are_keyed_by_client_ids() {
    let mut grid = InterestGrid::new(10.0);
    grid.set_item(id(1), [0.0, 0.0]);
    grid.set_viewer(u64::MAX, [0.0, 0.0], 5.0);
    grid.set_viewer(10, [100.0, 0.0], 5.0);
    let mut events = Vec::new();
    grid.update(|viewer, item, relevance| events.push((viewer, item, relevance)));
    assert_eq!(events, [(u64::MAX, id(1), Relevance::Enter)]);
    grid.remove_viewer(u64::MAX);
    grid.set_viewer(7_000_042, [1.0, 0.0], 5.0);
    events.clear();
    grid.update(|viewer, item, relevance| events.push((viewer, item, relevance)));
    assert_eq!(events, [(7_000_042, id(1), Relevance::Enter)]);
    assert!(grid.is_visible(7_000_042, id(1)));
    assert!(!grid.is_visible(u64::MAX, id(1)) && !grid.is_visible(10, id(1)));
    assert_eq!(grid.visible(7_000_042).collect::<Vec<_>>(), [id(1)]);
}
