//! `FastArray::iter_mut`: guards over every item that record changes
//! exactly as `get_mut`'s do, alive together; and the named iterators that
//! let an id taken from `ids()` be used to mutate at once.

use fastarray::{FastArray, FieldMask, Replicate, ReplicationId, SendState};
use fastarray_testkit::exchange;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    hp: u8,
    ammo: u16,
    name: String,
    #[replicate(quantize(min = -100.0, max = 100.0, bits = 12))]
    x: f32,
    #[replicate(skip)]
    cache: u32,
}

fn agent(n: u32) -> Agent {
    Agent {
        hp: (n % 200) as u8,
        ammo: n as u16,
        name: format!("a{n}"),
        x: n as f32 / 10.0,
        cache: 0,
    }
}

/// The same mutation, whichever way the item is reached.
fn edit(n: usize, agent: &mut Agent) {
    match n % 5 {
        0 => agent.hp = agent.hp.wrapping_add(1),
        1 => {
            agent.ammo += 3;
            agent.name.push('!');
        }
        2 => agent.name.push_str(""), // written, but equal: not a change
        3 => agent.cache += 1,        // skipped field: not a change
        _ => agent.x += 0.001,        // below the quantization step: not a change
    }
}

fn filled(n: u32) -> FastArray<Agent> {
    let mut array = FastArray::new();
    for i in 0..n {
        array.push(agent(i));
    }
    array.commit();
    array
}

#[test]
fn mutation_through_iter_mut_is_replicated_exactly_like_get_mut() {
    let (mut by_id, mut by_iter) = (filled(200), filled(200));
    let (mut conn_id, mut conn_iter) = (SendState::new(), SendState::new());
    let (mut client_id, mut client_iter) = (FastArray::mirror(), FastArray::mirror());
    exchange(&mut by_id, &mut conn_id, &mut client_id, 0);
    exchange(&mut by_iter, &mut conn_iter, &mut client_iter, 0);

    for frame in 1..4u32 {
        let ids: Vec<ReplicationId> = by_id.ids().collect();
        for (n, id) in ids.into_iter().enumerate() {
            if (n as u32 + frame) % 3 != 0 {
                edit(n + frame as usize, &mut by_id.get_mut(id).unwrap());
            }
        }
        for (n, (_, mut item)) in by_iter.iter_mut().enumerate() {
            if (n as u32 + frame) % 3 != 0 {
                edit(n + frame as usize, &mut item);
            }
        }
        let expected = by_id.commit().clone();
        assert!(!expected.changed().is_empty());
        assert_eq!(by_iter.commit(), &expected, "frame {frame}");

        let (mut a, mut b) = (Vec::new(), Vec::new());
        by_id.write_delta(&mut conn_id, frame, &mut a).unwrap();
        by_iter.write_delta(&mut conn_iter, frame, &mut b).unwrap();
        assert_eq!(a, b, "frame {frame}: the same bits");
        client_id.apply_delta(&a, &mut ()).unwrap();
        client_iter.apply_delta(&b, &mut ()).unwrap();
        conn_id.on_ack(frame);
        conn_iter.on_ack(frame);
    }
    for (id, item) in by_iter.iter() {
        assert_eq!(by_iter.key(id), by_id.key(id));
        assert_eq!(Some(item), by_id.get(id));
    }
    assert_eq!(client_iter, client_id);
}

#[test]
fn guards_record_the_changed_fields_only() {
    let mut array = filled(5);
    let ids: Vec<ReplicationId> = array.ids().collect();
    let keys: Vec<_> = ids.iter().map(|&id| array.key(id).unwrap()).collect();
    for (n, (id, mut item)) in array.iter_mut().enumerate() {
        assert_eq!(item.id(), id);
        edit(n, &mut item);
    }
    let changes = array.commit();
    // #0 `hp`, #1 `ammo` and `name`; #2, #3, #4 wrote nothing the wire sees.
    assert_eq!(
        changes.changed(),
        [
            (ids[0], FieldMask::single(0)),
            (ids[1], FieldMask::single(1).with(2))
        ]
    );
    assert_ne!(array.key(ids[0]), Some(keys[0]));
    for n in 2..5 {
        assert_eq!(array.key(ids[n]), Some(keys[n]), "item {n}");
    }
}

#[test]
fn reading_through_iter_mut_is_not_work() {
    let mut array = filled(50);
    let total: u32 = array.iter_mut().map(|(_, item)| u32::from(item.hp)).sum();
    assert_eq!(total, (0..50).sum::<u32>());
    // Twice in a frame: the cells lent the first time are not counted twice.
    assert_eq!(array.iter_mut().count(), 50);
    assert!(!array.has_uncommitted_work());
    assert!(array.commit().is_empty());
}

#[test]
fn guards_alive_together_record_each_item() {
    let mut array = filled(4);
    let ids: Vec<ReplicationId> = array.ids().collect();
    let mut guards: Vec<_> = array.iter_mut().collect();
    // Written in reverse order, while every guard is alive.
    for (_, guard) in guards.iter_mut().rev() {
        guard.ammo += 100;
    }
    drop(guards);
    assert!(array.has_uncommitted_work());
    let changed: Vec<_> = ids.iter().map(|&id| (id, FieldMask::single(1))).collect();
    assert_eq!(array.commit().changed(), changed);
}

#[test]
fn iter_mut_from_the_back_pairs_each_item_with_its_pre_image() {
    let mut array = filled(6);
    let ids: Vec<ReplicationId> = array.ids().collect();
    // Items 1 and 4 already written this frame: they take no cell.
    array.get_mut(ids[1]).unwrap().hp = 99;
    array.get_mut(ids[4]).unwrap().ammo = 999;
    let mut iter = array.iter_mut();
    let (last, mut item) = iter.next_back().unwrap();
    item.name = "last".into();
    let (first, mut item) = iter.next().unwrap();
    item.name = "first".into();
    for (_, mut item) in iter.rev() {
        item.hp = 7;
    }
    let name = FieldMask::single(2);
    let hp = FieldMask::single(0);
    assert_eq!((first, last), (ids[0], ids[5]));
    assert_eq!(
        array.commit().changed(),
        [
            (ids[0], name),
            (ids[1], hp), // 1 → 99 → 7: still a change of `hp` against frame start
            (ids[2], hp),
            (ids[3], hp),
            (ids[4], hp.with(1)),
            (ids[5], name),
        ]
    );
}

#[test]
fn a_write_through_iter_mut_then_get_mut_keeps_the_first_pre_image() {
    let mut array = filled(3);
    let ids: Vec<ReplicationId> = array.ids().collect();
    for (_, mut item) in array.iter_mut() {
        item.hp += 1;
    }
    // Back to the value the frame started with: no change at all.
    array.get_mut(ids[1]).unwrap().hp -= 1;
    // A pushed item written through iter_mut stays an add.
    let new = array.push(agent(7));
    for (id, mut item) in array.iter_mut() {
        if id == new {
            item.ammo = 1;
        }
    }
    array.remove(ids[2]);
    let changes = array.commit();
    assert_eq!(changes.changed(), [(ids[0], FieldMask::single(0))]);
    assert_eq!(changes.added(), [new]);
    assert_eq!(changes.removed(), [ids[2]]);
    assert_eq!(array.get(new).unwrap().ammo, 1);
}

#[test]
fn an_id_from_ids_or_iter_can_be_used_to_mutate_at_once() {
    // Edition 2024 keeps an `if let` scrutinee's temporaries to the end of
    // the block: with opaque iterators these lines did not compile.
    let mut array = filled(3);
    if let Some(id) = array.ids().next() {
        array.get_mut(id).unwrap().hp = 42;
    }
    if let Some(id) = array.ids().next_back() {
        array.remove(id);
    }
    if let Some((id, _)) = array.iter().find(|(_, item)| item.ammo == 1) {
        array.get_mut(id).unwrap().ammo = 2;
    }
    while let Some(id) = array.ids().next() {
        array.remove(id);
    }
    let changes = array.commit();
    assert_eq!(changes.removed().len(), 3);
    assert!(array.is_empty());
}
