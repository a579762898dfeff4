//! Interest management: a connection's scope (`FastArray::scope`). Items
//! out of scope are never sent and cost the connection nothing; entering
//! sends the item whole; leaving is a removal the client tells from
//! destruction; and every mirror converges to the server's items in its
//! scope under loss, reordering, duplication and late packets, with the
//! scope changing while packets are in flight.

use std::collections::BTreeSet;

use fastarray::{
    BitWriter, Callbacks, DecodeError, DeltaStats, FastArray, Replicate, Replicated, ReplicationId,
    ScopeExit, SendError, SendState,
};
use fastarray_testkit::drive::{self, ArraySession, Logic, ObjectSession};
use fastarray_testkit::exchange;
use fastarray_testkit::fixtures::plain::{Member, Squad};
use fastarray_testkit::link::LinkProfile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    x: i32,
    hp: u16,
    /// Sent only to connections that see the unit at detail level 3 or
    /// more.
    #[replicate(detail = 3)]
    mood: u8,
}

/// The mirror's events, and the items its game would hold from them.
#[derive(Default)]
struct Events {
    spawned: BTreeSet<ReplicationId>,
    destroyed: Vec<ReplicationId>,
    left: Vec<ReplicationId>,
}

impl<T> Callbacks<T> for Events {
    fn post_add(&mut self, id: ReplicationId, _: &T) {
        assert!(self.spawned.insert(id), "{id} added twice");
    }
    fn pre_remove(&mut self, id: ReplicationId, _: &T) {
        assert!(self.spawned.remove(&id), "{id} removed, never added");
        self.destroyed.push(id);
    }
    fn pre_leave_scope(&mut self, id: ReplicationId, _: &T) {
        assert!(self.spawned.remove(&id), "{id} left, never added");
        self.left.push(id);
    }
}

/// One write, delivered and acknowledged (packet `packet`).
fn round<T: Replicate + Clone>(
    server: &mut FastArray<T>,
    conn: &mut SendState,
    client: &mut FastArray<T>,
    events: &mut Events,
    packet: u32,
) -> fastarray::DeltaStats {
    let mut bytes = Vec::new();
    let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
    client.apply_delta(&bytes, events).unwrap();
    conn.on_ack(packet);
    stats
}

fn units(n: i32) -> (FastArray<Unit>, Vec<ReplicationId>) {
    let mut server = FastArray::new();
    let ids = (0..n)
        .map(|x| {
            server.push(Unit {
                x,
                hp: 100,
                mood: 0,
            })
        })
        .collect();
    server.commit();
    (server, ids)
}

/// Whether `client` holds exactly the server's items in `conn`'s scope,
/// equal on the wire.
fn mirrors_scope<T: Replicate>(
    server: &mut FastArray<T>,
    conn: &mut SendState,
    client: &FastArray<T>,
) -> Result<(), String> {
    let scope: BTreeSet<ReplicationId> = server.scope(conn).unwrap().ids().collect();
    let held: BTreeSet<ReplicationId> = client.ids().collect();
    if scope != held {
        return Err(format!("scope {scope:?}, mirror holds {held:?}"));
    }
    for id in scope {
        if !server.get(id).unwrap().wire_eq(client.get(id).unwrap()) {
            return Err(format!("{id} differs"));
        }
    }
    Ok(())
}

#[test]
fn only_the_items_in_scope_are_sent() {
    let (mut server, ids) = units(100);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        assert!(scope.is_empty());
        for &id in &ids[10..20] {
            assert!(scope.include(id));
        }
        assert!(!scope.include(ids[10]), "already in scope");
        assert!(
            !scope.include(ReplicationId::from_raw(5_000)),
            "no such item"
        );
        assert_eq!(scope.len(), 10);
    }
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 1);
    assert_eq!((stats.added, stats.removed, stats.left_scope), (10, 0, 0));
    assert_eq!(client.len(), 10);
    assert_eq!(conn.client_items(), 10);
    mirrors_scope(&mut server, &mut conn, &client).unwrap();

    // Changes outside the scope send nothing and leave no work.
    for &id in &ids[50..100] {
        server.get_mut(id).unwrap().hp = 1;
    }
    server.remove(ids[99]);
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 2);
    assert_eq!(stats.bits, 1, "an empty message");
    assert_eq!(conn.pending_items(), 0);
    assert!(server.is_settled(&conn));

    // A change inside it sends that change only.
    server.get_mut(ids[15]).unwrap().hp = 7;
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 3);
    assert_eq!((stats.added, stats.changed), (0, 1));
    assert_eq!(client.get(ids[15]).unwrap().hp, 7);
}

#[test]
fn leaving_is_told_apart_from_destruction_and_coming_back_sends_the_item_whole() {
    let (mut server, ids) = units(10);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        scope.include(ids[1]);
        scope.include(ids[2]);
    }
    round(&mut server, &mut conn, &mut client, &mut events, 1);

    // ids[1] leaves; ids[2] is destroyed.
    assert!(server.scope(&mut conn).unwrap().exclude(ids[1]));
    assert!(
        !server.scope(&mut conn).unwrap().exclude(ids[1]),
        "already out"
    );
    server.remove(ids[2]);
    server.commit();
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 2, &mut bytes).unwrap();
    assert_eq!((stats.removed, stats.left_scope), (1, 1));
    let report = client.apply_delta(&bytes, &mut events).unwrap();
    assert_eq!((report.removed, report.left_scope), (1, 1));
    assert_eq!(events.left, [ids[1]]);
    assert_eq!(events.destroyed, [ids[2]]);
    conn.on_ack(2);
    assert!(client.is_empty());
    assert_eq!(
        conn.client_items(),
        0,
        "nothing kept for items out of scope"
    );

    // Changed while away, it comes back whole with its current value.
    server.get_mut(ids[1]).unwrap().hp = 42;
    server.commit();
    server.scope(&mut conn).unwrap().include(ids[1]);
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 3);
    assert_eq!(stats.added, 1);
    assert_eq!(client.get(ids[1]).unwrap().hp, 42);
    assert!(events.spawned.contains(&ids[1]));
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
}

/// Found by the `stateful` fuzz target: an item pushed, put in scope and
/// removed before its first commit stayed in the scope for ever.
#[test]
fn an_item_gone_before_its_first_commit_leaves_the_scope() {
    let (mut server, _) = units(2);
    let mut conn = SendState::new();
    let ghost = server.push(Unit {
        x: 5,
        hp: 5,
        mood: 0,
    });
    assert!(server.scope(&mut conn).unwrap().include(ghost));
    server.remove(ghost);
    server.commit();
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    assert_eq!(stats.bits, 1);
    let scope = server.scope(&mut conn).unwrap();
    assert!(!scope.contains(ghost) && scope.is_empty());
}

#[test]
fn an_item_excluded_before_it_was_written_costs_nothing() {
    let (mut server, ids) = units(4);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    let mut scope = server.scope(&mut conn).unwrap();
    scope.include(ids[0]);
    scope.exclude(ids[0]);
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 1);
    assert_eq!(stats.bits, 1);
    assert!(client.is_empty());
}

#[test]
fn coming_back_waits_for_the_exit_to_be_acknowledged() {
    let (mut server, ids) = units(3);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    server.scope(&mut conn).unwrap().include(ids[0]);
    round(&mut server, &mut conn, &mut client, &mut events, 1);

    server.scope(&mut conn).unwrap().exclude(ids[0]);
    let mut exit = Vec::new();
    server.write_delta(&mut conn, 2, &mut exit).unwrap();
    // Back in scope before the exit is acknowledged: nothing yet.
    server.scope(&mut conn).unwrap().include(ids[0]);
    server.get_mut(ids[0]).unwrap().hp = 5;
    server.commit();
    let mut early = Vec::new();
    let stats = server.write_delta(&mut conn, 3, &mut early).unwrap();
    assert_eq!(stats.bits, 1, "the item waits for its exit's fate");

    // The exit is lost: it goes again (the client may still hold the item).
    conn.on_loss(2);
    conn.on_ack(3);
    server.commit();
    let mut again = Vec::new();
    let stats = server.write_delta(&mut conn, 4, &mut again).unwrap();
    assert_eq!((stats.left_scope, stats.added), (1, 0));
    client.apply_delta(&again, &mut events).unwrap();
    conn.on_ack(4);
    // The first copy of the exit arrives late: harmless.
    client.apply_delta(&exit, &mut events).unwrap();
    assert!(client.is_empty());

    // Acknowledged in this frame: the item returns in the next one.
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 5);
    assert_eq!(stats.bits, 1);
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 6);
    assert_eq!(stats.added, 1);
    assert_eq!(client.get(ids[0]).unwrap().hp, 5);
    assert!(server.is_settled(&conn));
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
}

#[test]
fn an_item_back_in_scope_in_the_frame_of_its_acknowledged_exit_waits_a_frame() {
    let (mut server, ids) = units(2);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    server.scope(&mut conn).unwrap().include(ids[0]);
    round(&mut server, &mut conn, &mut client, &mut events, 1);
    server.commit();
    server.scope(&mut conn).unwrap().exclude(ids[0]);
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 2);
    assert_eq!(stats.left_scope, 1);
    // No commit since: a message of this frame could not be told from the
    // ones before the exit.
    server.scope(&mut conn).unwrap().include(ids[0]);
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 3);
    assert_eq!(stats.bits, 1);
    assert!(!server.is_settled(&conn));
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 4);
    assert_eq!(stats.added, 1);
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
    assert!(server.is_settled(&conn));
}

#[test]
fn a_late_copy_from_before_an_exit_does_not_bring_the_item_back() {
    let (mut server, ids) = units(2);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    server.scope(&mut conn).unwrap().include(ids[0]);
    let mut add = Vec::new();
    server.write_delta(&mut conn, 1, &mut add).unwrap();
    // The add is held up in the network; the item leaves meanwhile.
    server.scope(&mut conn).unwrap().exclude(ids[0]);
    server.commit();
    let mut exit = Vec::new();
    server.write_delta(&mut conn, 2, &mut exit).unwrap();
    client.apply_delta(&exit, &mut events).unwrap();
    client.apply_delta(&add, &mut events).unwrap();
    assert!(client.is_empty(), "the late add is from before the exit");
    assert!(events.spawned.is_empty());
    conn.on_ack(2);
    conn.on_ack(1);
    // Back in scope: the return is of a later frame and applies.
    server.scope(&mut conn).unwrap().include(ids[0]);
    server.commit();
    round(&mut server, &mut conn, &mut client, &mut events, 3);
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
    // And a duplicate of the old exit changes nothing now.
    client.apply_delta(&exit, &mut events).unwrap();
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
}

#[test]
fn a_connection_that_saw_everything_drops_what_its_new_scope_leaves_out() {
    let (mut server, ids) = units(5);
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    exchange(&mut server, &mut conn, &mut client, 0);
    assert_eq!(client.len(), 5);
    server.scope(&mut conn).unwrap().include(ids[3]);
    let mut events = Events {
        spawned: client.ids().collect(),
        ..Events::default()
    };
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 1);
    assert_eq!(stats.left_scope, 4);
    assert_eq!(events.left.len(), 4);
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
}

#[test]
fn several_connections_see_their_own_scopes() {
    let (mut server, ids) = units(30);
    let mut conns: Vec<(SendState, FastArray<Unit>, Events)> = (0..3)
        .map(|_| (SendState::new(), FastArray::mirror(), Events::default()))
        .collect();
    for (n, (conn, _, _)) in conns.iter_mut().enumerate() {
        let mut scope = server.scope(conn).unwrap();
        for &id in &ids[n * 10..n * 10 + 15.min(30 - n * 10)] {
            scope.include(id);
        }
    }
    for tick in 1..20u32 {
        for &id in ids.iter().step_by(tick as usize % 5 + 1) {
            if let Some(mut unit) = server.get_mut(id) {
                unit.hp = unit.hp.wrapping_add(1);
            }
        }
        server.commit();
        for (conn, client, events) in &mut conns {
            round(&mut server, conn, client, events, tick);
        }
    }
    for (conn, client, _) in &mut conns {
        mirrors_scope(&mut server, conn, client).unwrap();
    }
    assert_eq!(server.scoped_connections(), 3);
    conns.pop();
    server.commit();
    assert_eq!(
        server.scoped_connections(),
        2,
        "a dropped connection is freed"
    );
}

#[test]
fn a_scope_belongs_to_its_array() {
    let (mut server, ids) = units(3);
    let mut conn = SendState::new();
    server.scope(&mut conn).unwrap().include(ids[0]);
    let (mut other, _) = units(3);
    let mut bytes = Vec::new();
    assert_eq!(
        other.write_delta(&mut conn, 1, &mut bytes),
        Err(SendError::ScopedElsewhere)
    );
    assert!(matches!(
        other.scope(&mut conn),
        Err(SendError::ScopedElsewhere)
    ));
    let mut copy = server.clone();
    assert_eq!(
        copy.write_delta(&mut conn, 1, &mut bytes),
        Err(SendError::ScopedElsewhere)
    );
    assert!(bytes.is_empty());
    assert_eq!(conn.packets_in_flight(), 0);
    let mut mirror = FastArray::<Unit>::mirror();
    assert!(matches!(
        mirror.scope(&mut SendState::new()),
        Err(SendError::NotAnAuthority { .. })
    ));
}

#[test]
fn a_connection_a_window_behind_compares_its_scope() {
    let (mut server, ids) = units(20);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        for &id in &ids[..10] {
            scope.include(id);
        }
    }
    round(&mut server, &mut conn, &mut client, &mut events, 1);
    for tick in 0..100 {
        let id = ids[tick % 20];
        if let Some(mut unit) = server.get_mut(id) {
            unit.x += 1;
        }
        if tick == 50 {
            server.remove(ids[3]);
        }
        server.commit();
    }
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 2);
    assert!(stats.resynced);
    assert_eq!(stats.removed, 1);
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
    assert!(server.is_settled(&conn));
}

/// Within a budget, items go by priority times frames waited: an item of
/// priority 0.1 waits about ten times as long as one of priority 1, and
/// every item gets its turn.
#[test]
fn priorities_share_a_budget_and_nothing_starves() {
    let (mut server, ids) = units(20);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        for (n, &id) in ids.iter().enumerate() {
            scope.include(id);
            if n >= 10 {
                assert!(scope.set_priority(id, 0.1));
            }
        }
        assert_eq!(scope.priority(ids[0]), 1.0);
        // Kept to 8 significant bits: 0.1 is 0.10009765625.
        assert_eq!(scope.priority(ids[19]), 0.100_097_656);
        assert!((scope.priority(ids[19]) - 0.1).abs() < 0.1 / 256.0);
        assert!(!scope.set_priority(ReplicationId::from_raw(999), 2.0));
    }
    round(&mut server, &mut conn, &mut client, &mut events, 0);
    // Every item changes every frame; a packet holds about two of them.
    let mut last_sent = [0u32; 20];
    let mut waits: Vec<Vec<u32>> = vec![Vec::new(); 20];
    for tick in 1..=600u32 {
        for &id in &ids {
            server.get_mut(id).unwrap().hp = tick as u16;
        }
        server.commit();
        let mut bytes = Vec::new();
        let stats = server
            .write_delta_with_budget(&mut conn, tick, &mut bytes, 80)
            .unwrap();
        assert!(stats.changed >= 1 && stats.changed <= 3, "{stats:?}");
        let before: Vec<u16> = ids.iter().map(|&id| client.get(id).unwrap().hp).collect();
        client.apply_delta(&bytes, &mut events).unwrap();
        conn.on_ack(tick);
        for (n, &id) in ids.iter().enumerate() {
            if client.get(id).unwrap().hp != before[n] {
                if tick > 100 {
                    waits[n].push(tick - last_sent[n]);
                }
                last_sent[n] = tick;
            }
        }
    }
    let mean = |group: &[Vec<u32>]| {
        let all: Vec<u32> = group.iter().flatten().copied().collect();
        f64::from(all.iter().sum::<u32>()) / all.len() as f64
    };
    let (near, far) = (mean(&waits[..10]), mean(&waits[10..]));
    let far_max = waits[10..].iter().flatten().copied().max().unwrap();
    println!("mean wait: near {near:.1} frames, far {far:.1}; far at most {far_max}");
    assert!(waits.iter().all(|w| !w.is_empty()), "every item is sent");
    let ratio = far / near;
    assert!(
        (8.0..=12.0).contains(&ratio),
        "far waits {ratio:.1}x as long"
    );
    assert!(
        f64::from(far_max) <= 1.5 * far,
        "far waits at most {far_max}"
    );
}

/// Items seen at a detail level with an interval update that often: their
/// changes wait until due that many frames, then go together.
#[test]
fn a_detail_level_with_an_interval_updates_its_items_less_often() {
    let (mut server, ids) = units(10);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        scope.set_interval(2, 4);
        for (n, &id) in ids.iter().enumerate() {
            scope.include(id);
            if n >= 5 {
                assert!(scope.set_detail(id, 2));
            }
        }
        assert_eq!(scope.detail(ids[0]), fastarray::MAX_DETAIL);
        assert_eq!(scope.detail(ids[9]), 2);
    }
    round(&mut server, &mut conn, &mut client, &mut events, 0);
    let mut updates = [0u32; 10];
    for tick in 1..=40u32 {
        for &id in &ids {
            server.get_mut(id).unwrap().hp = tick as u16;
        }
        server.commit();
        round(&mut server, &mut conn, &mut client, &mut events, tick);
        for (n, &id) in ids.iter().enumerate() {
            if client.get(id).unwrap().hp == tick as u16 {
                updates[n] += 1;
            }
        }
    }
    assert!(updates[..5].iter().all(|&n| n == 40), "{updates:?}");
    assert!(updates[5..].iter().all(|&n| n == 10), "{updates:?}");
    // Once nothing changes, the last change arrives and the link settles.
    for tick in 41..45 {
        server.commit();
        round(&mut server, &mut conn, &mut client, &mut events, tick);
    }
    assert!(server.is_settled(&conn));
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
}

/// `ScopeExit::Persist`: the client keeps a frozen copy; coming back sends
/// what changed meanwhile; destruction while frozen removes the copy.
#[test]
fn a_persisted_copy_is_frozen_updated_on_return_and_removed_on_destruction() {
    let (mut server, ids) = units(4);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        scope.set_exit(ScopeExit::Persist);
        assert_eq!(scope.exit(), ScopeExit::Persist);
        scope.include(ids[0]);
        scope.include(ids[1]);
    }
    round(&mut server, &mut conn, &mut client, &mut events, 1);
    {
        let mut scope = server.scope(&mut conn).unwrap();
        assert!(scope.exclude(ids[0]) && scope.exclude(ids[1]));
        assert!(scope.is_frozen(ids[0]) && !scope.contains(ids[0]));
    }
    server.get_mut(ids[0]).unwrap().hp = 1;
    server.get_mut(ids[1]).unwrap().x = 99;
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 2);
    assert_eq!(stats.bits, 1, "nothing for frozen items");
    assert!(server.is_settled(&conn), "withheld work is not due");
    assert_eq!(client.get(ids[0]).unwrap().hp, 100, "frozen");
    assert_eq!(client.len(), 2);

    // ids[1] is destroyed while frozen: its copy goes.
    server.remove(ids[1]);
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 3);
    assert_eq!(stats.removed, 1);
    assert_eq!(events.destroyed, [ids[1]]);

    // ids[0] comes back: only its changed field goes.
    server.scope(&mut conn).unwrap().include(ids[0]);
    let stats = round(&mut server, &mut conn, &mut client, &mut events, 4);
    assert_eq!((stats.changed, stats.added), (1, 0));
    assert_eq!(client.get(ids[0]).unwrap(), server.get(ids[0]).unwrap());
    assert!(events.left.is_empty());
    mirrors_scope(&mut server, &mut conn, &client).unwrap();
}

#[test]
fn exit_flags_that_name_no_exit_are_refused() {
    let (mut server, ids) = units(3);
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    server.scope(&mut conn).unwrap().include(ids[2]);
    round(&mut server, &mut conn, &mut client, &mut events, 1);
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_bits(0b0_0111, 5); // a delta with scope exits...
    w.write_bool(true); // long frame
    w.write_varint(2);
    w.write_bits(0b01, 2); // one removal
    w.write_bool(false); // Elias-delta gaps
    w.write_varint(2);
    w.write_bool(false); // ...but this removal is not one
    w.write_bool(false); // no items
    w.finish();
    let before = client.clone();
    let result = client.apply_delta(&bytes, &mut ());
    assert!(
        matches!(result, Err(DecodeError::InvalidExits { bit_offset: 17 })),
        "{result:?}"
    );
    assert_eq!(client, before);
}

/// A connection with a scope names its items by handles of its own: in a
/// large array, a scope of a few items spread across it costs what a
/// small array of just those items would, not what their ids, far apart,
/// would cost.
#[test]
fn handles_make_a_scope_cost_what_a_small_array_of_it_would() {
    let (mut big, ids) = units(20_000);
    let (mut small, small_ids) = units(200);
    let seen: Vec<ReplicationId> = ids.iter().copied().step_by(100).collect();
    let (mut conn, mut client, mut events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    {
        let mut scope = big.scope(&mut conn).unwrap();
        for &id in &seen {
            scope.include(id);
        }
    }
    let (mut plain, mut plain_client, mut plain_events) =
        (SendState::new(), FastArray::mirror(), Events::default());
    round(&mut big, &mut conn, &mut client, &mut events, 1);
    round(
        &mut small,
        &mut plain,
        &mut plain_client,
        &mut plain_events,
        1,
    );
    let (mut scoped_bits, mut plain_bits) = (0, 0);
    for tick in 2..20u32 {
        // A third of the items change, the same ones in both arrays.
        for (n, (&id, &small_id)) in seen.iter().zip(&small_ids).enumerate() {
            if (n + tick as usize) % 3 == 0 {
                big.get_mut(id).unwrap().hp = tick as u16;
                small.get_mut(small_id).unwrap().hp = tick as u16;
            }
        }
        big.commit();
        small.commit();
        scoped_bits += round(&mut big, &mut conn, &mut client, &mut events, tick).bits;
        plain_bits += round(
            &mut small,
            &mut plain,
            &mut plain_client,
            &mut plain_events,
            tick,
        )
        .bits;
    }
    mirrors_scope(&mut big, &mut conn, &client).unwrap();
    assert_eq!(plain_client, small);
    // By ids 100 apart (a connection scoped after its first message) this
    // run took 33 168 bits against 24 780: 34% more.
    assert!(
        scoped_bits <= plain_bits + plain_bits / 50,
        "{scoped_bits} bits scoped, {plain_bits} for the small array"
    );
}

/// A handle goes to another item only once the client dropped the one it
/// named, and in a later frame; the mirror tells their messages apart
/// however they arrive: the next item's exit before its add, an old
/// removal again after the handle names another item.
#[test]
fn a_reused_handle_is_never_mistaken_for_its_earlier_item() {
    let (mut server, ids) = units(3);
    let (a, b) = (ids[0], ids[1]);
    let mut conn = SendState::new();
    let write = |server: &mut FastArray<Unit>, conn: &mut SendState, packet: u32| {
        let mut bytes = Vec::new();
        server.write_delta(conn, packet, &mut bytes).unwrap();
        assert!(conn.on_ack(packet));
        bytes
    };
    server.scope(&mut conn).unwrap().include(a);
    let add_a = write(&mut server, &mut conn, 1);
    server.scope(&mut conn).unwrap().exclude(a);
    let exit_a = write(&mut server, &mut conn, 2);
    // A later frame: the handle `a` gave back is free again.
    server.commit();
    server.scope(&mut conn).unwrap().include(b);
    // b takes the handle a gave back (0: the last check below shows it).
    let add_b = write(&mut server, &mut conn, 3);
    server.get_mut(b).unwrap().hp = 7;
    server.commit();
    let change_b = write(&mut server, &mut conn, 4);
    server.commit();
    server.scope(&mut conn).unwrap().exclude(b);
    let exit_b = write(&mut server, &mut conn, 5);

    let deliver = |packets: &[&Vec<u8>]| {
        let (mut client, mut events) = (FastArray::<Unit>::mirror(), Events::default());
        for packet in packets {
            client.apply_delta(packet, &mut events).unwrap();
        }
        (client, events)
    };
    // b's exit overtakes its add and its change: b never shows.
    let (client, events) = deliver(&[&add_a, &exit_a, &exit_b, &add_b, &change_b]);
    assert!(client.is_empty());
    assert_eq!((events.left, events.destroyed), (vec![a], vec![]));
    // a's exit again, after the handle named b: b stays, changed.
    let (client, events) = deliver(&[&add_a, &exit_a, &add_b, &exit_a, &change_b, &add_a]);
    assert_eq!(client.ids().collect::<Vec<_>>(), vec![b]);
    assert_eq!(client.get(b).unwrap().hp, 7);
    assert_eq!(events.left, vec![a]);
    // b's change before its add: refused whole (its handle names nothing
    // yet), and nothing changes.
    let (mut client, mut events) = deliver(&[&add_a, &exit_a]);
    let before = client.clone();
    assert!(matches!(
        client.apply_delta(&change_b, &mut events),
        Err(DecodeError::UnknownHandle { handle: 0 })
    ));
    assert_eq!(client, before);
}

/// The game of one scoped connection over a seeded lossy link: units are
/// added, destroyed and changed, enter and leave the scope at random (also
/// between the commit and the write), and one flips in and out every tick.
struct ScopeLogic<T> {
    make: fn(&mut ChaCha8Rng) -> T,
    change: fn(&mut T, &mut ChaCha8Rng),
}

/// A session of [`ScopeLogic`], with the mirror's [`Events`].
type ScopedSession<T> = ArraySession<T, ScopeLogic<T>, Events>;

/// A scoped session: 20 items, every other one in scope, leaving it as
/// `exit` says.
fn scoped_session<T: Replicate + Clone>(
    seed: u64,
    label: String,
    exit: ScopeExit,
    make: fn(&mut ChaCha8Rng) -> T,
    change: fn(&mut T, &mut ChaCha8Rng),
) -> ScopedSession<T> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut server = FastArray::new();
    for _ in 0..20 {
        server.push(make(&mut rng));
    }
    server.commit();
    let logic = ScopeLogic { make, change };
    let mut session = ArraySession::with_logic(server, seed, label, logic, Events::default());
    let ids: Vec<ReplicationId> = session.server.ids().collect();
    let mut scope = session.server.scope(&mut session.conn).unwrap();
    scope.set_exit(exit);
    for id in ids.into_iter().step_by(2) {
        scope.include(id);
    }
    session
}

/// Checks a scoped session's mirror once it settled: the items in scope
/// (with persisted exits, frozen copies of items that still exist too),
/// and events that say what it holds.
fn check_scoped<T: Replicate + Clone>(session: &mut ScopedSession<T>) {
    let label = &session.label;
    let exit = session.server.scope(&mut session.conn).unwrap().exit();
    if exit == ScopeExit::Persist {
        let scope = session.server.scope(&mut session.conn).unwrap();
        let in_scope: BTreeSet<ReplicationId> = scope.ids().collect();
        for id in session.client.ids() {
            assert!(
                in_scope.contains(&id) || scope.is_frozen(id),
                "{label}: {id} held, neither in scope nor frozen"
            );
        }
        for id in in_scope {
            let (ours, theirs) = (session.server.get(id).unwrap(), session.client.get(id));
            assert!(
                theirs.is_some_and(|theirs| ours.wire_eq(theirs)),
                "{label}: {id} in scope differs"
            );
        }
        assert!(session.callbacks.left.is_empty(), "{label}: nothing leaves");
    } else {
        mirrors_scope(&mut session.server, &mut session.conn, &session.client)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
    }
    let held: BTreeSet<ReplicationId> = session.client.ids().collect();
    assert_eq!(session.callbacks.spawned, held, "{label}: events");
    for id in &session.callbacks.destroyed {
        assert!(
            !session.server.contains(*id),
            "{label}: {id} reported destroyed"
        );
    }
}

impl<T: Replicate + Clone> Logic<FastArray<T>> for ScopeLogic<T> {
    fn mutate(
        &mut self,
        server: &mut FastArray<T>,
        state: &mut SendState,
        rng: &mut ChaCha8Rng,
        tick: u32,
    ) {
        let ids: Vec<ReplicationId> = server.ids().collect();
        if rng.random_bool(0.3) {
            let id = server.push((self.make)(rng));
            if rng.random_bool(0.5) {
                server.scope(state).unwrap().include(id);
            }
        }
        if rng.random_bool(0.15) && ids.len() > 5 {
            server.remove(ids[rng.random_range(1..ids.len())]);
        }
        for _ in 0..3 {
            let id = ids[rng.random_range(0..ids.len())];
            if let Some(mut item) = server.get_mut(id) {
                (self.change)(&mut item, rng);
            }
        }
        let picks: Vec<(ReplicationId, bool)> = (0..2)
            .map(|_| (ids[rng.random_range(0..ids.len())], rng.random_bool(0.5)))
            .collect();
        let mut scope = server.scope(state).unwrap();
        for (id, include) in picks {
            if include {
                scope.include(id);
            } else {
                scope.exclude(id);
            }
        }
        // Detail levels (with intervals) change now and then.
        if rng.random_bool(0.2) {
            let level = rng.random_range(0..=fastarray::MAX_DETAIL);
            scope.set_detail(ids[rng.random_range(0..ids.len())], level);
            scope.set_interval(level, rng.random_range(1..4));
        }
        // Before the link heals, every item is seen at every detail again,
        // so the mirror can be compared whole.
        if tick == 149 {
            let ids: Vec<ReplicationId> = scope.ids().collect();
            for id in ids {
                scope.set_detail(id, fastarray::MAX_DETAIL);
            }
        }
        // The first item flips every tick.
        if tick % 2 == 0 {
            scope.include(ids[0]);
        } else {
            scope.exclude(ids[0]);
        }
    }

    /// Scope changes between the commit and the write, too.
    fn before_write(
        &mut self,
        server: &mut FastArray<T>,
        state: &mut SendState,
        rng: &mut ChaCha8Rng,
    ) {
        if rng.random_bool(0.2) {
            let ids: Vec<ReplicationId> = server.ids().collect();
            let id = ids[rng.random_range(0..ids.len())];
            let mut scope = server.scope(state).unwrap();
            if !scope.exclude(id) {
                scope.include(id);
            }
        }
    }
}

fn unit(rng: &mut ChaCha8Rng) -> Unit {
    Unit {
        mood: rng.random(),
        x: rng.random_range(-100..100),
        hp: rng.random(),
    }
}

fn change_unit(unit: &mut Unit, rng: &mut ChaCha8Rng) {
    match rng.random_range(0..3) {
        0 => unit.x += 1,
        1 => unit.hp = rng.random(),
        _ => unit.mood = rng.random(),
    }
}

fn squad(rng: &mut ChaCha8Rng) -> Squad {
    let mut members = FastArray::new();
    for _ in 0..rng.random_range(0..4) {
        members.push(Member { hp: rng.random() });
    }
    Squad {
        tag: rng.random(),
        members,
    }
}

fn change_squad(squad: &mut Squad, rng: &mut ChaCha8Rng) {
    match rng.random_range(0..4) {
        0 => squad.tag = rng.random(),
        1 => {
            squad.members.push(Member { hp: rng.random() });
        }
        2 => {
            if let Some(id) = squad.members.ids().next() {
                squad.members.remove(id);
            }
        }
        _ => {
            let ids: Vec<ReplicationId> = squad.members.ids().collect();
            if let Some(&id) = ids.last() {
                squad.members.get_mut(id).unwrap().hp = rng.random();
            }
        }
    }
}

/// Seeds per profile: 30 by default, `FASTARRAY_SEEDS` if set.
fn seeds() -> u64 {
    drive::seeds_or(30)
}

fn converge<T: Replicate + Clone>(
    exit: ScopeExit,
    make: fn(&mut ChaCha8Rng) -> T,
    change: fn(&mut T, &mut ChaCha8Rng),
) {
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..seeds() {
            let label = format!("{} seed {seed} ({exit:?}, {})", profile.name, T::TYPE_NAME);
            let mut session = scoped_session(seed, label, exit, make, change);
            drive::drive(&profile, seed, 150, &mut session);
            check_scoped(&mut session);
        }
    }
}

#[test]
fn mirrors_converge_to_their_scope_over_lossy_links() {
    converge(ScopeExit::Despawn, unit, change_unit);
}

#[test]
fn items_with_arrays_converge_to_their_scope_over_lossy_links() {
    converge(ScopeExit::Despawn, squad, change_squad);
}

#[test]
fn persisted_copies_converge_over_lossy_links() {
    converge(ScopeExit::Persist, unit, change_unit);
}

#[test]
fn persisted_items_with_arrays_converge_over_lossy_links() {
    converge(ScopeExit::Persist, squad, change_squad);
}

/// A replicated object shown to and hidden from one connection over a
/// lossy link; shown for good before the link heals.
struct VisibilityLogic;

impl Logic<Replicated<Squad>> for VisibilityLogic {
    fn mutate(
        &mut self,
        server: &mut Replicated<Squad>,
        state: &mut SendState,
        rng: &mut ChaCha8Rng,
        tick: u32,
    ) {
        change_squad(&mut server.get_mut(), rng);
        let visible = tick >= 149 || (tick % 3 != 0 && rng.random_bool(0.6));
        server.set_visible(state, visible).unwrap();
        assert_eq!(server.is_visible(state), visible);
    }

    fn written(&mut self, server: &Replicated<Squad>, state: &SendState, stats: &DeltaStats) {
        if !server.is_visible(state) {
            // A hidden object's message carries nothing of it but its
            // arrays' repairs: never a new value.
            assert_eq!((stats.added, stats.changed), (0, 0));
        }
    }
}

#[test]
fn a_replicated_object_shown_and_hidden_converges_over_lossy_links() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..seeds() {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let ends = (
                Replicated::new(squad(&mut rng)),
                SendState::new(),
                Replicated::mirror(),
            );
            let label = format!("{} seed {seed} (object)", profile.name);
            let mut session = ObjectSession::with_logic(ends, seed, label, VisibilityLogic, ());
            drive::drive(&profile, seed, 150, &mut session);
            assert!(
                session.client.wire_eq(&session.server),
                "{}: the object differs",
                session.label
            );
        }
    }
}

/// One server, its connections (half keep what leaves their scope) and
/// their mirrors, for `ScopeMut::update` against the same changes one by
/// one.
struct Batches {
    server: FastArray<Unit>,
    ids: Vec<ReplicationId>,
    conns: Vec<SendState>,
    clients: Vec<FastArray<Unit>>,
}

impl Batches {
    fn new() -> Self {
        let (server, ids) = units(60);
        let mut conns: Vec<SendState> = (0..4).map(|_| SendState::new()).collect();
        let mut server = server;
        for (n, conn) in conns.iter_mut().enumerate() {
            let mut scope = server.scope(conn).unwrap();
            if n % 2 == 1 {
                scope.set_exit(ScopeExit::Persist);
            }
        }
        Self {
            server,
            ids,
            conns,
            clients: (0..4).map(|_| FastArray::mirror()).collect(),
        }
    }
}

#[test]
fn a_batch_of_scope_changes_does_what_the_changes_one_by_one_do() {
    use fastarray::Relevance::{Enter, Leave};
    for seed in 0..3 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut batched, mut one_by_one) = (Batches::new(), Batches::new());
        // Ids gone from the array stay in the pool, so that changes name
        // them too.
        let mut named = batched.ids.clone();
        for tick in 1..=30u32 {
            // The game: changes, a death and a birth, the same in both.
            let dead = rng.random_range(0..batched.ids.len());
            let born = unit(&mut rng);
            for world in [&mut batched, &mut one_by_one] {
                let id = world.ids[(tick as usize * 7) % world.ids.len()];
                world.server.get_mut(id).unwrap().hp += 1;
                world.server.remove(world.ids[dead]);
                world.ids[dead] = world.server.push(born.clone());
                world.server.commit();
            }
            named.push(batched.ids[dead]);
            for n in 0..batched.conns.len() {
                // Repeated ids, an id that enters and leaves in the batch,
                // ids the array no longer holds.
                let mut changes = Vec::new();
                for _ in 0..rng.random_range(0..40) {
                    let id = named[rng.random_range(0..named.len())];
                    changes.push((id, if rng.random_bool(0.6) { Enter } else { Leave }));
                    if rng.random_bool(0.1) {
                        changes.push((id, Leave));
                    }
                }
                let got = (batched.server.scope(&mut batched.conns[n]).unwrap())
                    .update(changes.iter().copied());
                let mut scope = one_by_one.server.scope(&mut one_by_one.conns[n]).unwrap();
                let expected = changes
                    .iter()
                    .filter(|&&(id, relevance)| match relevance {
                        Enter => scope.include(id),
                        Leave => scope.exclude(id),
                    })
                    .count();
                let context = format!("seed {seed} tick {tick} conn {n}");
                assert_eq!(got, expected, "{context}");
                let scope_of = |world: &mut Batches| -> BTreeSet<ReplicationId> {
                    let scope = world.server.scope(&mut world.conns[n]).unwrap();
                    scope.ids().collect()
                };
                assert_eq!(
                    scope_of(&mut batched),
                    scope_of(&mut one_by_one),
                    "{context}"
                );
                // The same messages, through the same losses.
                let lost = rng.random_bool(0.1);
                let mut bytes = [Vec::new(), Vec::new()];
                for (world, out) in [&mut batched, &mut one_by_one].into_iter().zip(&mut bytes) {
                    let conn = &mut world.conns[n];
                    world.server.write_delta(conn, tick, out).unwrap();
                    world.clients[n].apply_delta(out, &mut ()).unwrap();
                    if lost {
                        conn.on_loss(tick);
                    } else {
                        conn.on_ack(tick);
                    }
                }
                assert_eq!(bytes[0], bytes[1], "{context}: bytes");
            }
        }
        // With the losses repaired, each mirror holds its scope (and the
        // persisted copies).
        for n in 0..batched.conns.len() {
            for packet in 31..=32 {
                let mut out = Vec::new();
                let conn = &mut batched.conns[n];
                batched.server.write_delta(conn, packet, &mut out).unwrap();
                batched.clients[n].apply_delta(&out, &mut ()).unwrap();
                conn.on_ack(packet);
            }
            if n % 2 == 0 {
                let (server, conn) = (&mut batched.server, &mut batched.conns[n]);
                mirrors_scope(server, conn, &batched.clients[n]).unwrap();
            }
        }
    }
}
