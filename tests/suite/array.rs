//! `FastArray` container semantics: ids, keys, change capture, commit.

use fastarray::{FastArray, FieldMask, Replicate, ReplicationId};
use fastarray_testkit::counted;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    x: f32,
    hp: u8,
    ammo: u16,
    name: String,
}

fn agent(n: u32) -> Agent {
    Agent {
        x: n as f32,
        hp: (n % 200) as u8,
        ammo: n as u16,
        name: format!("agent{n}"),
    }
}

fn filled(n: u32) -> (FastArray<Agent>, Vec<ReplicationId>) {
    let mut array = FastArray::new();
    let ids = (0..n).map(|i| array.push(agent(i))).collect();
    array.commit();
    (array, ids)
}

#[test]
fn pushes_are_reported_as_added_in_id_order() {
    let mut array = FastArray::new();
    let a = array.push(agent(1));
    let b = array.push(agent(2));
    let changes = array.commit();
    assert_eq!(changes.added(), [a, b]);
    assert!(changes.removed().is_empty() && changes.changed().is_empty());
    assert_eq!(changes.frame(), 1);
    assert!(a < b);
    assert!(array.commit().is_empty());
    assert_eq!(array.frame(), 2);
}

#[test]
fn a_write_reports_exactly_the_changed_fields_and_bumps_the_key() {
    let (mut array, ids) = filled(10);
    let key_before = array.key(ids[3]).unwrap();
    let array_key_before = array.array_key();
    {
        let mut item = array.get_mut(ids[3]).unwrap();
        item.ammo += 1;
        item.name.push('!');
    }
    let changes = array.commit();
    assert_eq!(changes.changed(), [(ids[3], FieldMask::single(2).with(3))]);
    assert_ne!(array.key(ids[3]).unwrap(), key_before);
    assert_ne!(array.array_key(), array_key_before);
    assert_eq!(array.key(ids[4]), Some(Default::default()));
}

#[test]
fn writing_an_equal_value_is_not_a_change_and_bumps_no_key() {
    let (mut array, ids) = filled(5);
    let key = array.key(ids[0]);
    let array_key = array.array_key();
    array.get_mut(ids[0]).unwrap().hp += 0;
    {
        // Change and change back within the frame.
        let mut item = array.get_mut(ids[1]).unwrap();
        item.ammo = 999;
        item.ammo = 1;
    }
    assert!(array.has_uncommitted_work());
    assert!(array.commit().is_empty());
    assert_eq!(array.key(ids[0]), key);
    assert_eq!(array.array_key(), array_key);
}

#[test]
fn reading_through_a_guard_is_not_a_touch() {
    let (mut array, ids) = filled(3);
    let hp = array.get_mut(ids[2]).unwrap().hp;
    assert_eq!(hp, 2);
    assert!(!array.has_uncommitted_work());
}

#[test]
fn reordering_is_never_a_change() {
    let (mut array, ids) = filled(100);
    let array_key = array.array_key();
    assert!(array.swap(ids[0], ids[99]));
    array.sort_by(|a, b| b.ammo.cmp(&a.ammo));
    array.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(!array.swap(ids[0], ReplicationId::from_raw(1_000_000)));
    assert!(array.commit().is_empty());
    assert_eq!(array.array_key(), array_key);
    // Items are still found by id after reordering.
    for (n, &id) in ids.iter().enumerate() {
        assert_eq!(array.get(id), Some(&agent(n as u32)));
    }
}

#[test]
fn sort_and_swap_reorder_items() {
    let (mut array, ids) = filled(5);
    array.sort_by(|a, b| b.ammo.cmp(&a.ammo));
    let order: Vec<u16> = array.iter().map(|(_, a)| a.ammo).collect();
    assert_eq!(order, [4, 3, 2, 1, 0]);
    array.swap(ids[4], ids[0]);
    assert_eq!(array.ids().next(), Some(ids[0]));
    assert_eq!(array.ids().next_back(), Some(ids[4]));
}

#[test]
fn removing_from_the_middle_and_pushing_reports_exactly_those_ids() {
    let (mut array, ids) = filled(1000);
    assert_eq!(array.remove(ids[500]), Some(agent(500)));
    assert_eq!(array.remove(ids[500]), None);
    let new = array.push(agent(5000));
    let changes = array.commit();
    assert_eq!(changes.removed(), [ids[500]]);
    assert_eq!(changes.added(), [new]);
    assert!(changes.changed().is_empty());
    assert_eq!(array.len(), 1000);
    assert!(array.get(ids[500]).is_none());
    for (n, &id) in ids.iter().enumerate().filter(|&(n, _)| n != 500) {
        assert_eq!(array.get(id), Some(&agent(n as u32)), "item {n}");
    }
}

#[test]
fn same_frame_add_then_remove_leaves_no_trace() {
    let (mut array, _) = filled(3);
    let temp = array.push(agent(9));
    array.get_mut(temp).unwrap().hp = 1;
    array.remove(temp);
    assert!(array.commit().is_empty());
}

#[test]
fn same_frame_add_then_modify_is_only_an_add() {
    let mut array = FastArray::new();
    let a = array.push(agent(1));
    array.get_mut(a).unwrap().hp = 77;
    let changes = array.commit();
    assert_eq!(changes.added(), [a]);
    assert!(changes.changed().is_empty());
}

#[test]
fn modify_then_remove_is_only_a_remove() {
    let (mut array, ids) = filled(3);
    array.get_mut(ids[1]).unwrap().hp = 77;
    array.remove(ids[1]);
    let changes = array.commit();
    assert_eq!(changes.removed(), [ids[1]]);
    assert!(changes.changed().is_empty() && changes.added().is_empty());
}

#[test]
fn retain_keeps_order_and_reports_removals() {
    let (mut array, ids) = filled(10);
    let fresh = array.push(agent(10));
    array.retain(|id, a| a.ammo % 2 == 0 && id != fresh);
    let kept: Vec<u16> = array.iter().map(|(_, a)| a.ammo).collect();
    assert_eq!(kept, [0, 2, 4, 6, 8]);
    let changes = array.commit();
    let odd: Vec<ReplicationId> = ids.iter().copied().skip(1).step_by(2).collect();
    assert_eq!(changes.removed(), odd);
    assert!(
        changes.added().is_empty(),
        "a fresh item removed in its frame is no add"
    );
    for &id in &ids[..] {
        assert_eq!(array.get(id).is_some(), array.contains(id));
    }
}

#[test]
fn clear_removes_everything() {
    let (mut array, mut ids) = filled(4);
    array.clear();
    assert!(array.is_empty());
    ids.sort();
    assert_eq!(array.commit().removed(), ids);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Tag(u32);

#[test]
fn ids_never_repeat_across_100k_push_remove_cycles() {
    let mut array = FastArray::new();
    let mut seen = std::collections::HashSet::new();
    let mut live = Vec::new();
    for n in 0..100_000u32 {
        let id = array.push(Tag(n));
        assert!(seen.insert(id), "id {id:?} reused");
        live.push(id);
        if n % 3 != 0 {
            let victim = live.swap_remove((n as usize * 7919) % live.len());
            assert!(array.remove(victim).is_some());
        }
        if n % 1000 == 0 {
            array.commit();
        }
    }
    assert_eq!(array.len(), live.len());
}

#[test]
fn clones_and_equality_ignore_order() {
    let (mut array, ids) = filled(20);
    let copy = array.clone();
    assert_eq!(copy, array);
    array.sort_by(|a, b| b.ammo.cmp(&a.ammo));
    assert_eq!(copy, array);
    array.get_mut(ids[7]).unwrap().hp = 250;
    assert_ne!(copy, array);
    // The clone carries the frame's pending work too.
    let mut pending = array.clone();
    assert_eq!(pending.commit().changed(), array.commit().changed());
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Probe {
    value: counted::Counted,
}

#[test]
fn commit_looks_only_at_touched_items() {
    let mut array = FastArray::new();
    let ids: Vec<_> = (0..10_000)
        .map(|n| {
            array.push(Probe {
                value: counted::Counted(n),
            })
        })
        .collect();
    array.commit();
    counted::take_comparisons();
    for &id in &ids[100..103] {
        array.get_mut(id).unwrap().value.0 += 1;
    }
    array.remove(ids[5000]);
    array.push(Probe {
        value: counted::Counted(0),
    });
    let changes = array.commit();
    assert_eq!(changes.changed().len(), 3);
    assert_eq!(
        counted::take_comparisons(),
        3,
        "one comparison per touched item"
    );
    counted::take_comparisons();
    assert!(array.commit().is_empty());
    assert_eq!(counted::take_comparisons(), 0);
}

#[test]
fn debug_lists_items_by_id() {
    let mut array = FastArray::new();
    let id = array.push(7u8);
    assert_eq!(format!("{array:?}"), format!("{{{id:?}: 7}}"));
}
