//! `Callbacks::post_change` names exactly the fields whose value changed on
//! the mirror, as each field's encoding compares values: not every field an
//! entry carried from a newer frame. A field that went A → B → A on the
//! server while the packet with B was lost arrives newer but unchanged.

use core::fmt::Debug;

use fastarray::{
    ApplyReport, Callbacks, FastArray, FieldMask, Replicate, ReplicationId, SendState,
};
use fastarray_testkit::exchange;

/// Every `post_change` call, in order.
#[derive(Default)]
struct Changes(Vec<(ReplicationId, FieldMask)>);

impl<T> Callbacks<T> for Changes {
    fn post_change(&mut self, id: ReplicationId, _item: &T, changed: FieldMask) {
        self.0.push((id, changed));
    }
}

/// What the mirror saw of the packet that arrived.
struct Outcome<T> {
    id: ReplicationId,
    changes: Vec<(ReplicationId, FieldMask)>,
    report: ApplyReport,
    server: FastArray<T>,
    client: FastArray<T>,
}

/// Replicates `start` to a mirror, then writes a packet with `lost`'s
/// change and reports it lost, then applies `then` and delivers the next
/// packet, which carries the item's due fields with their current values.
fn lose_then_deliver<T: Replicate + Clone + Debug + PartialEq>(
    start: T,
    lost: impl FnOnce(&mut T),
    then: impl FnOnce(&mut T),
) -> Outcome<T> {
    let mut server = FastArray::new();
    let id = server.push(start);
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    exchange(&mut server, &mut conn, &mut client, 0);

    lost(&mut server.get_mut(id).unwrap());
    server.commit();
    let mut dropped = Vec::new();
    server.write_delta(&mut conn, 1, &mut dropped).unwrap();
    assert!(conn.on_loss(1));

    then(&mut server.get_mut(id).unwrap());
    server.commit();
    let mut delivered = Vec::new();
    server.write_delta(&mut conn, 2, &mut delivered).unwrap();
    let mut changes = Changes::default();
    let report = client.apply_delta(&delivered, &mut changes).unwrap();
    conn.on_ack(2);
    Outcome {
        id,
        changes: changes.0,
        report,
        server,
        client,
    }
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u8,
    ammo: u16,
}

#[test]
fn a_field_back_to_the_value_the_mirror_holds_is_not_named() {
    let out = lose_then_deliver(Unit { hp: 10, ammo: 3 }, |u| u.hp = 20, |u| u.hp = 10);
    assert_eq!(out.changes, [], "nothing changed on the mirror");
    assert_eq!((out.report.changed, out.report.skipped), (0, 1));
    assert_eq!(out.client, out.server);
}

#[test]
fn only_the_fields_whose_value_changed_are_named() {
    let out = lose_then_deliver(
        Unit { hp: 10, ammo: 3 },
        |u| {
            u.hp = 20;
            u.ammo = 4;
        },
        |u| u.hp = 10,
    );
    // The entry carries `hp` (back to 10) and `ammo` (4, due again).
    assert_eq!(out.changes, [(out.id, FieldMask::single(1))]);
    assert_eq!((out.report.changed, out.report.skipped), (1, 0));
    assert_eq!(out.client, out.server);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Marker {
    // Steps of exactly 1.0.
    #[replicate(quantize(min = 0.0, max = 1023.0, bits = 10))]
    x: f32,
    tag: u8,
}

#[test]
fn a_change_below_the_quantization_step_is_not_named() {
    let out = lose_then_deliver(
        Marker { x: 10.0, tag: 1 },
        |m| m.x = 500.0,
        // 10.2 is sent as 10.0, which the mirror holds.
        |m| m.x = 10.2,
    );
    assert_eq!(out.changes, []);
    assert_eq!((out.report.changed, out.report.skipped), (0, 1));
    assert_eq!(out.client.get(out.id).unwrap().x, 10.0);
}

#[test]
fn a_change_of_a_quantization_step_is_named() {
    let out = lose_then_deliver(Marker { x: 10.0, tag: 1 }, |m| m.x = 500.0, |m| m.x = 11.0);
    assert_eq!(out.changes, [(out.id, FieldMask::single(0))]);
    assert_eq!(out.client, out.server);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Pos {
    x: i16,
    y: i16,
}

/// Leaves: 0 `tag`, 1 `pos.x`, 2 `pos.y`, 3 `hp`.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Mover {
    tag: u8,
    #[replicate(flatten)]
    pos: Pos,
    hp: u8,
}

#[test]
fn flattened_leaves_are_named_only_when_they_changed() {
    let out = lose_then_deliver(
        Mover {
            tag: 1,
            pos: Pos { x: 0, y: 0 },
            hp: 100,
        },
        |m| {
            m.pos.x = 5;
            m.hp = 90;
        },
        |m| {
            m.pos.x = 0;
            m.pos.y = 7;
        },
    );
    // The entry carries `pos.x` (back to 0), `pos.y` and `hp`.
    let expected = FieldMask::single(2).with(3);
    assert_eq!(out.changes, [(out.id, expected)]);
    assert_eq!(out.client, out.server);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
enum Order {
    Idle,
    Move { x: i16, y: i16 },
}

#[test]
fn an_enum_field_back_to_its_value_is_not_named() {
    let out = lose_then_deliver(
        Order::Move { x: 1, y: 2 },
        |o| *o = Order::Move { x: 5, y: 2 },
        |o| *o = Order::Move { x: 1, y: 2 },
    );
    assert_eq!(out.changes, []);
    assert_eq!((out.report.changed, out.report.skipped), (0, 1));
    assert_eq!(out.client, out.server);
}

#[test]
fn an_enum_names_only_its_changed_fields() {
    let out = lose_then_deliver(
        Order::Move { x: 1, y: 2 },
        |o| *o = Order::Move { x: 5, y: 2 },
        |o| *o = Order::Move { x: 1, y: 3 },
    );
    // Bit 0 is the variant, bit 1 `x`, bit 2 `y`.
    assert_eq!(out.changes, [(out.id, FieldMask::single(2))]);
    assert_eq!(out.client, out.server);
}

#[test]
fn a_variant_change_names_what_diff_names() {
    let out = lose_then_deliver(
        Order::Move { x: 1, y: 2 },
        |o| *o = Order::Move { x: 5, y: 2 },
        |o| *o = Order::Idle,
    );
    let expected = Order::Idle.diff(&Order::Move { x: 1, y: 2 });
    assert_eq!(expected, FieldMask::single(0));
    assert_eq!(out.changes, [(out.id, expected)]);
    assert_eq!(out.client, out.server);
}

/// `apply_patch` itself, which `post_change` reports from.
#[test]
fn apply_patch_returns_the_fields_whose_value_changed() {
    let mut mover = Mover {
        tag: 1,
        pos: Pos { x: 0, y: 0 },
        hp: 100,
    };
    let target = Mover {
        tag: 1,
        pos: Pos { x: 0, y: 7 },
        hp: 90,
    };
    let expected = target.diff(&mover);
    assert_eq!(expected, FieldMask::single(2).with(3));
    assert_eq!(mover.apply_patch(target.clone().into_patch()), expected);
    assert_eq!(mover, target);
    assert_eq!(
        mover.apply_patch(target.clone().into_patch()),
        FieldMask::EMPTY
    );

    let mut marker = Marker { x: 10.0, tag: 1 };
    let mut patch = Marker { x: 10.2, tag: 2 }.into_patch();
    Marker::retain_fields(&mut patch, FieldMask::single(0));
    assert_eq!(
        marker.apply_patch(patch),
        FieldMask::EMPTY,
        "10.2 quantizes as 10.0"
    );

    // A whole value of another variant: what `diff` names.
    let mut order = Order::Idle;
    let moving = Order::Move { x: 1, y: 2 };
    let expected = moving.diff(&order);
    assert_eq!(expected, FieldMask::all(3));
    assert_eq!(order.apply_patch(moving.clone().into_patch()), expected);
    assert_eq!(order, moving);
    // A partial patch of another variant cannot apply.
    let mut patch = moving.clone().into_patch();
    Order::retain_fields(&mut patch, FieldMask::single(1));
    let mut idle = Order::Idle;
    assert_eq!(idle.apply_patch(patch), FieldMask::EMPTY);
    assert_eq!(idle, Order::Idle);
}

/// Every change, and whether a whole value made it.
#[derive(Default)]
struct Kinds(Vec<(ReplicationId, FieldMask, bool)>);

impl<T> Callbacks<T> for Kinds {
    fn post_change(&mut self, id: ReplicationId, _item: &T, changed: FieldMask) {
        self.0.push((id, changed, false));
    }
    fn post_change_whole(&mut self, id: ReplicationId, _item: &T, changed: FieldMask) {
        self.0.push((id, changed, true));
    }
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Hp {
    hp: u16,
    team: u8,
}

/// A client can tell a change that a whole value made (here the repair of
/// a lost whole entry) from one that came as changed fields; a game that
/// does not override `post_change_whole` hears both as `post_change`.
#[test]
fn a_change_made_by_a_whole_value_is_told_apart() {
    let mut server = FastArray::new();
    let id = server.push(Hp { hp: 10, team: 1 });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Hp>::mirror());
    let write = |server: &mut FastArray<Hp>, conn: &mut SendState, packet| {
        let mut bytes = Vec::new();
        server.write_delta(conn, packet, &mut bytes).unwrap();
        bytes
    };
    let first = write(&mut server, &mut conn, 1);
    server.get_mut(id).unwrap().hp = 11;
    server.commit();
    let _lost = write(&mut server, &mut conn, 2); // the add is in flight
    let mut kinds = Kinds::default();
    client.apply_delta(&first, &mut kinds).unwrap();
    conn.on_ack(1);
    conn.on_loss(2);
    let repair = write(&mut server, &mut conn, 3);
    client.apply_delta(&repair, &mut kinds).unwrap();
    conn.on_ack(3);
    server.get_mut(id).unwrap().hp = 12;
    server.commit();
    let change = write(&mut server, &mut conn, 4);
    client.apply_delta(&change, &mut kinds).unwrap();
    let hp = FieldMask::single(0);
    assert_eq!(kinds.0, [(id, hp, true), (id, hp, false)]);

    // By default, both are `post_change`.
    let mut changes = Changes::default();
    let mut other = FastArray::<Hp>::mirror();
    for bytes in [&first, &repair, &change] {
        other.apply_delta(bytes, &mut changes).unwrap();
    }
    assert_eq!(changes.0, [(id, hp), (id, hp)]);
}

mod snapshot_events {
    use fastarray::{
        ApplyReport, Callbacks, FastArray, FieldMask, InnerEvent, ReplicationId, SendState,
    };
    use fastarray_testkit::fixtures::plain::{Member, Squad};

    /// Every event, as text.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl<T> Callbacks<T> for Log {
        fn pre_remove(&mut self, id: ReplicationId, _: &T) {
            self.0.push(format!("remove {id}"));
        }
        fn post_add(&mut self, id: ReplicationId, _: &T) {
            self.0.push(format!("add {id}"));
        }
        fn post_change(&mut self, id: ReplicationId, _: &T, changed: FieldMask) {
            self.0.push(format!("change {id} {changed:?}"));
        }
        fn post_change_whole(&mut self, id: ReplicationId, _: &T, changed: FieldMask) {
            self.0.push(format!("whole {id} {changed:?}"));
        }
        fn inner_event(&mut self, event: &InnerEvent<'_>) {
            let owner = event.owner();
            let (id, change) = (event.id(), event.change());
            self.0.push(format!("inner {} {change:?} {id}", owner.id));
        }
        fn post_receive(&mut self, report: &ApplyReport) {
            let ApplyReport {
                added,
                changed,
                removed,
                ..
            } = *report;
            self.0
                .push(format!("received +{added} ~{changed} -{removed}"));
        }
    }

    fn squad(tag: u8, hps: &[u16]) -> Squad {
        let mut members = FastArray::new();
        for &hp in hps {
            members.push(Member { hp });
        }
        Squad { tag, members }
    }

    fn snapshot(server: &FastArray<Squad>) -> Vec<u8> {
        let mut bytes = Vec::new();
        server.write_snapshot(&mut bytes).unwrap();
        bytes
    }

    /// Joining by snapshot tells the game what joining by delta does: the
    /// same adds, with the same events of the arrays inside them.
    #[test]
    fn a_snapshot_join_fires_the_callbacks_a_delta_join_does() {
        let mut server = FastArray::new();
        server.push(squad(1, &[10, 20]));
        server.push(squad(2, &[]));
        server.commit();

        let (mut by_delta, mut delta_log) = (FastArray::<Squad>::mirror(), Log::default());
        let mut bytes = Vec::new();
        server
            .write_delta(&mut SendState::new(), 0, &mut bytes)
            .unwrap();
        by_delta.apply_delta(&bytes, &mut delta_log).unwrap();

        let (mut by_snapshot, mut snapshot_log) = (FastArray::<Squad>::mirror(), Log::default());
        let report = by_snapshot
            .apply_snapshot_with(&snapshot(&server), &mut snapshot_log)
            .unwrap();
        assert_eq!((report.added, report.changed, report.removed), (2, 0, 0));
        // Both squads added, and the first one's two members with it.
        let adds = |log: &Log| log.0.iter().filter(|line| line.starts_with("add")).count();
        let inner = |log: &Log| {
            log.0
                .iter()
                .filter(|line| line.starts_with("inner"))
                .count()
        };
        assert_eq!(
            (adds(&delta_log), inner(&delta_log)),
            (2, 2),
            "{:?}",
            delta_log.0
        );
        assert_eq!(snapshot_log.0, delta_log.0);
        assert!(by_snapshot.wire_eq(&server) && by_delta.wire_eq(&server));
    }

    /// A snapshot applied over a mirror (a resynchronisation) reports the
    /// items it drops, adds and changes, and the inner arrays it replaces;
    /// an item it holds unchanged reports nothing.
    #[test]
    fn a_snapshot_over_a_mirror_reports_what_it_changed() {
        let mut server = FastArray::new();
        let a = server.push(squad(1, &[10]));
        let b = server.push(squad(2, &[20]));
        let c = server.push(squad(3, &[30]));
        let same = server.push(squad(4, &[40]));
        server.commit();
        let mut client = FastArray::<Squad>::from_snapshot(&snapshot(&server)).unwrap();

        server.remove(a);
        server.get_mut(b).unwrap().tag = 9;
        let member = server.get(c).unwrap().members.ids().next().unwrap();
        server
            .get_mut(c)
            .unwrap()
            .members
            .get_mut(member)
            .unwrap()
            .hp = 31;
        let d = server.push(squad(5, &[]));
        server.commit();

        let mut log = Log::default();
        let before = client.clone();
        let report = client
            .apply_snapshot_with(&snapshot(&server), &mut log)
            .unwrap();
        assert_eq!((report.added, report.changed, report.removed), (1, 2, 1));
        let tag = Squad::TAG;
        assert_eq!(
            log.0,
            [
                format!("inner {a} Removed #0"),
                format!("remove {a}"),
                format!("add {d}"),
                format!("whole {b} {tag:?}"),
                format!("inner {c} Removed {member}"),
                format!("inner {c} Added {member}"),
                format!("whole {c} {:?}", FieldMask::EMPTY),
                "received +1 ~2 -1".to_string(),
            ]
        );
        assert!(client.wire_eq(&server));
        assert!(!log.0.iter().any(|line| line.contains(&same.to_string())));

        // A bad snapshot changes nothing and reports nothing.
        let mut bad = snapshot(&server);
        bad.truncate(bad.len() / 2);
        let mut log = Log::default();
        let mut again = before.clone();
        assert!(again.apply_snapshot_with(&bad, &mut log).is_err());
        assert!(log.0.is_empty());
        assert_eq!(again.mirror_state(), before.mirror_state());
    }
}
