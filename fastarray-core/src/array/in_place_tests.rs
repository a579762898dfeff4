//! A message of changed fields only applies in place (`receive::in_place`)
//! exactly as the general path applies it: given the same messages in the
//! same order (late, repeated, some never delivered), a mirror that takes
//! them in place and one that takes every message the general way return
//! the same results, report the same events, and end in the same state,
//! message after message.

use proptest::prelude::*;

use super::FastArray;
use crate::bits::BitReader;
use crate::id::ReplicationId;
use crate::mask::FieldMask;
use crate::receive::in_place::general_only;
use crate::receive_state::events::{ApplyReport, Callbacks};
use crate::send_state::SendState;

#[derive(fastarray_derive::Replicate, Clone, Debug, PartialEq)]
struct Unit {
    x: i32,
    hp: u16,
    #[replicate(quantize(min = -64.0, max = 64.0, bits = 12))]
    heading: f32,
    name: String,
}

/// The events a mirror reports, in order.
#[derive(Default, Debug, PartialEq)]
struct Log(Vec<String>);

impl Callbacks<Unit> for Log {
    fn pre_remove(&mut self, id: ReplicationId, item: &Unit) {
        self.0.push(format!("remove {id} {item:?}"));
    }
    fn pre_leave_scope(&mut self, id: ReplicationId, item: &Unit) {
        self.0.push(format!("leave {id} {item:?}"));
    }
    fn post_add(&mut self, id: ReplicationId, item: &Unit) {
        self.0.push(format!("add {id} {item:?}"));
    }
    fn post_change(&mut self, id: ReplicationId, item: &Unit, changed: FieldMask) {
        self.0.push(format!("change {id} {changed:?} {item:?}"));
    }
    fn post_change_whole(&mut self, id: ReplicationId, item: &Unit, changed: FieldMask) {
        self.0.push(format!("whole {id} {changed:?} {item:?}"));
    }
    fn post_receive(&mut self, report: &ApplyReport) {
        self.0.push(format!("receive {report:?}"));
    }
}

/// One server tick of [`applying_in_place_is_applying_generally`].
#[derive(Clone, Debug)]
struct Tick {
    /// Units changed: which (by index among the live ones) and which of
    /// their four fields.
    changes: Vec<(u8, u8)>,
    /// A unit pushed.
    add: bool,
    /// A unit removed (by index among the live ones).
    remove: Option<u8>,
}

fn tick() -> impl Strategy<Value = Tick> {
    (
        prop::collection::vec((any::<u8>(), 1..16u8), 0..12),
        prop::bool::weighted(0.15),
        prop::option::weighted(0.15, any::<u8>()),
    )
        .prop_map(|(changes, add, remove)| Tick {
            changes,
            add,
            remove,
        })
}

/// The server's messages, one a tick, each acknowledged as it is written
/// (so each carries only that tick's work); to a connection whose scope
/// holds every unit if `scoped` (its messages name them by handles).
fn messages(ticks: &[Tick], scoped: bool) -> Vec<Vec<u8>> {
    let mut server = FastArray::new();
    let mut live: Vec<ReplicationId> = (0..24)
        .map(|n| {
            server.push(Unit {
                x: n,
                hp: 100,
                heading: 0.0,
                name: format!("u{n}"),
            })
        })
        .collect();
    server.commit();
    let mut state = SendState::new();
    if scoped {
        let mut scope = server.scope(&mut state).unwrap();
        for &id in &live {
            scope.include(id);
        }
    }
    let mut out = Vec::new();
    for (packet, tick) in (0u32..).zip(core::iter::once(None).chain(ticks.iter().map(Some))) {
        if let Some(tick) = tick {
            for (n, &(pick, fields)) in (0i32..).zip(&tick.changes) {
                let Some(&id) = live.get(usize::from(pick) % live.len().max(1)) else {
                    continue;
                };
                let mut unit = server.get_mut(id).unwrap();
                if fields & 1 != 0 {
                    unit.x += n + 1;
                }
                if fields & 2 != 0 {
                    unit.hp = unit.hp.wrapping_sub(3);
                }
                if fields & 4 != 0 {
                    unit.heading = (unit.heading + 1.5) % 60.0;
                }
                if fields & 8 != 0 {
                    unit.name.push('!');
                }
            }
            if let Some(pick) = tick.remove.filter(|_| live.len() > 1) {
                let id = live.remove(usize::from(pick) % live.len());
                server.remove(id);
            }
            if tick.add {
                let id = server.push(Unit {
                    x: -1,
                    hp: 1,
                    heading: 2.0,
                    name: String::new(),
                });
                live.push(id);
                if scoped {
                    server.scope(&mut state).unwrap().include(id);
                }
            }
            server.commit();
        }
        let mut bytes = Vec::new();
        server.write_delta(&mut state, packet, &mut bytes).unwrap();
        state.on_ack(packet);
        out.push(bytes);
    }
    out
}

proptest! {
    /// See the module's documentation. The messages go in order, each
    /// maybe held back and delivered a few messages later, or twice, or
    /// never (but the first, which adds every unit).
    #[test]
    fn applying_in_place_is_applying_generally(
        ticks in prop::collection::vec(tick(), 1..24),
        fates in prop::collection::vec(prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => 2..4u8, 1 => Just(9u8)], 24),
        scoped in any::<bool>(),
    ) {
        let messages = messages(&ticks, scoped);
        // The order of delivery: a message with fate 1 is lost, 2 or 3 is
        // delivered that many messages late, 9 is delivered twice.
        let mut order: Vec<(usize, usize)> = Vec::new();
        for (at, fate) in messages.iter().enumerate().map(|(at, _)| (at, fates[at % fates.len()])) {
            match (at, fate) {
                (0, _) | (_, 0) => order.push((at, at)),
                (_, 1) => {}
                (_, 9) => {
                    order.push((at, at));
                    order.push((at, at + 1));
                }
                (_, late) => order.push((at, at + usize::from(late))),
            }
        }
        order.sort_by_key(|&(_, when)| when);
        let (mut in_place, mut general) = (FastArray::<Unit>::mirror(), FastArray::<Unit>::mirror());
        // Per message, whether it went in place when first delivered.
        let mut went = vec![None; messages.len()];
        for (at, _) in order {
            let bytes = &messages[at];
            let decoded = in_place.decode_delta(&mut BitReader::new(bytes));
            went[at].get_or_insert(decoded.is_ok_and(|decoded| decoded.in_place.is_some()));
            let (mut a, mut b) = (Log::default(), Log::default());
            let one = in_place.apply_delta(bytes, &mut a);
            let other = general_only(|| general.apply_delta(bytes, &mut b));
            prop_assert_eq!(one, other, "message {}", at);
            prop_assert_eq!(a, b, "message {}", at);
            prop_assert_eq!(&in_place, &general, "message {}", at);
            prop_assert_eq!(in_place.mirror_state(), general.mirror_state(), "message {}", at);
        }
        // The first tick's message, delivered right after the first one,
        // goes in place if it only changes fields.
        let plain = !ticks[0].add && ticks[0].remove.is_none() && !ticks[0].changes.is_empty();
        if fates[1] == 0 {
            prop_assert_eq!(went[1], Some(plain));
        }
    }
}

/// A message of changed fields only goes in place; one that also removes
/// an item, or changes an item the mirror does not hold, goes the general
/// way (and the latter is refused, as it always was).
#[test]
fn only_changed_fields_of_held_items_go_in_place() {
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..4)
        .map(|n| {
            server.push(Unit {
                x: n,
                hp: 1,
                heading: 0.0,
                name: String::new(),
            })
        })
        .collect();
    server.commit();
    let mut state = SendState::new();
    let mut write = |server: &mut FastArray<Unit>, packet: u32| {
        let mut bytes = Vec::new();
        server.write_delta(&mut state, packet, &mut bytes).unwrap();
        state.on_ack(packet);
        bytes
    };
    let sync = write(&mut server, 0);
    server.get_mut(ids[1]).unwrap().hp = 7;
    server.get_mut(ids[2]).unwrap().name = "two".into();
    server.commit();
    let changes = write(&mut server, 1);
    server.get_mut(ids[3]).unwrap().x = 30;
    server.remove(ids[0]);
    server.commit();
    let with_removal = write(&mut server, 2);

    let goes_in_place = |mirror: &FastArray<Unit>, bytes: &[u8]| {
        mirror
            .decode_delta(&mut BitReader::new(bytes))
            .map(|decoded| decoded.in_place.is_some())
    };
    let mut client = FastArray::<Unit>::mirror();
    // Before the sync, the changes name items the mirror does not hold.
    assert!(goes_in_place(&client, &changes).is_err());
    client.apply_delta(&sync, &mut ()).unwrap();
    assert_eq!(goes_in_place(&client, &changes), Ok(true));
    assert_eq!(goes_in_place(&client, &with_removal), Ok(false));
    client.apply_delta(&changes, &mut ()).unwrap();
    client.apply_delta(&with_removal, &mut ()).unwrap();
    // (A quantized heading is the step nearest the server's.)
    let held = |array: &FastArray<Unit>| {
        let units = array
            .iter()
            .map(|(id, unit)| (id, unit.x, unit.hp, unit.name.clone()));
        units.collect::<Vec<_>>()
    };
    assert_eq!(held(&client), held(&server));
}
