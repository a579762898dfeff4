//! A mirror's limits (`MirrorLimits`): a genuine message that would take
//! a mirror past one is refused with `DecodeError::LimitExceeded` and
//! changes nothing — items, ids, keys, field frames, tombstones (checked
//! with `mirror_state`) — and one at the limit is applied. Deltas (a
//! message that removes and adds around the cap included), snapshots,
//! arrays inside items, replicated objects, and packets of a
//! `MirrorConnection`.

use std::time::Instant;

use fastarray::{
    BitReader, BitWriter, Connection, ConnectionError, DecodeError, FastArray, Limit,
    MirrorConnection, MirrorLimits, Replicate, Replicated, ReplicationId, SendState,
};

/// An item of one bit: three bits a whole entry on the wire.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Tiny {
    #[replicate(bits = 1)]
    on: u8,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Squad {
    tag: u8,
    #[replicate(array)]
    members: FastArray<Tiny>,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct World {
    round: u8,
    #[replicate(array)]
    squads: FastArray<Squad>,
}

fn limits(items: usize) -> MirrorLimits {
    MirrorLimits {
        items,
        ..MirrorLimits::DEFAULT
    }
}

fn exceeded(limit: Limit, max: usize, would_be: usize) -> DecodeError {
    DecodeError::LimitExceeded {
        limit,
        max: max as u64,
        would_be: would_be as u64,
    }
}

/// A server of `n` tiny items, committed.
fn server_of(n: usize) -> (FastArray<Tiny>, Vec<ReplicationId>) {
    let mut server = FastArray::new();
    let ids = (0..n)
        .map(|i| server.push(Tiny { on: i as u8 & 1 }))
        .collect();
    server.commit();
    (server, ids)
}

/// The delta that brings a new client of `server` up to date.
fn first_delta<T: Replicate + Clone>(server: &mut FastArray<T>) -> Vec<u8> {
    let mut packet = Vec::new();
    server
        .write_delta(&mut SendState::new(), 1, &mut packet)
        .unwrap();
    packet
}

/// Applies `message` to `mirror`, expecting `error`, and checks that the
/// mirror's whole state is as it was.
fn refused<T: Replicate + Clone + PartialEq + std::fmt::Debug>(
    mirror: &mut FastArray<T>,
    message: &[u8],
    error: DecodeError,
) {
    let (before, state) = (mirror.clone(), mirror.mirror_state());
    assert_eq!(mirror.apply_delta(message, &mut ()), Err(error));
    assert_eq!(*mirror, before, "a refused message changed the items");
    assert_eq!(
        mirror.mirror_state(),
        state,
        "a refused message changed the mirror's state"
    );
}

#[test]
fn items_past_the_limit_are_refused_and_change_nothing() {
    let (mut server, _) = server_of(1_000);
    let message = first_delta(&mut server);
    let mut mirror = FastArray::<Tiny>::mirror_with_limits(limits(999));
    refused(&mut mirror, &message, exceeded(Limit::Items, 999, 1_000));
    assert!(mirror.is_empty());
    // At the limit.
    let mut mirror = FastArray::<Tiny>::mirror_with_limits(limits(1_000));
    mirror.apply_delta(&message, &mut ()).unwrap();
    assert_eq!(mirror, server);
}

/// A message that removes and adds: the items held after it count, not
/// the adds alone.
#[test]
fn removals_make_room_for_the_adds_of_the_same_message() {
    let (mut server, ids) = server_of(10);
    let mut conn = SendState::new();
    let mut mirror = FastArray::<Tiny>::mirror_with_limits(limits(10));
    let mut packet = Vec::new();
    server.write_delta(&mut conn, 1, &mut packet).unwrap();
    mirror.apply_delta(&packet, &mut ()).unwrap();
    conn.on_ack(1);
    // A tombstone and field frames to keep: one removal, one change.
    server.remove(ids[0]);
    server.get_mut(ids[1]).unwrap().on ^= 1;
    server.commit();
    packet.clear();
    server.write_delta(&mut conn, 2, &mut packet).unwrap();
    mirror.apply_delta(&packet, &mut ()).unwrap();
    conn.on_ack(2);
    assert_eq!(mirror.len(), 9);

    // Three removed, four added: 10 held after it, at the limit.
    for &id in &ids[2..5] {
        server.remove(id);
    }
    for _ in 0..4 {
        server.push(Tiny { on: 1 });
    }
    server.commit();
    packet.clear();
    let stats = server.write_delta(&mut conn, 3, &mut packet).unwrap();
    assert_eq!((stats.removed, stats.added), (3, 4));
    let mut at_limit = mirror.clone();
    at_limit.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(at_limit, server);

    // The same message to a mirror whose limit is one less.
    mirror.set_limits(limits(9));
    refused(&mut mirror, &packet, exceeded(Limit::Items, 9, 10));
}

#[test]
fn removals_past_the_limit_are_refused() {
    let (mut server, ids) = server_of(100);
    let mut conn = SendState::new();
    let mut mirror = FastArray::<Tiny>::mirror();
    let mut packet = Vec::new();
    server.write_delta(&mut conn, 1, &mut packet).unwrap();
    mirror.apply_delta(&packet, &mut ()).unwrap();
    conn.on_ack(1);
    for &id in &ids[..40] {
        server.remove(id);
    }
    server.commit();
    packet.clear();
    server.write_delta(&mut conn, 2, &mut packet).unwrap();
    let cap = |removals| MirrorLimits {
        removals,
        ..MirrorLimits::DEFAULT
    };
    mirror.set_limits(cap(39));
    refused(&mut mirror, &packet, exceeded(Limit::Removals, 39, 40));
    // At the limit; and a mirror past its item limit (100 held, 50
    // allowed) still takes a message that adds nothing.
    mirror.set_limits(MirrorLimits {
        items: 50,
        ..cap(40)
    });
    mirror.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(mirror, server);
}

/// The same rule on a connection that names items by handles (a scope):
/// a mirror past its item limit takes the messages that add nothing,
/// changes alone or with removals, and refuses one that adds while still
/// past it.
#[test]
fn a_mirror_past_its_item_limit_takes_what_adds_nothing_by_handles_too() {
    let (mut server, ids) = server_of(100);
    let mut conn = SendState::new();
    let mut scope = server.scope(&mut conn).unwrap();
    for &id in &ids {
        scope.include(id);
    }
    let mut mirror = FastArray::<Tiny>::mirror();
    let mut packet = Vec::new();
    let mut send = |server: &mut FastArray<Tiny>, conn: &mut SendState, packet_no: u32| {
        packet.clear();
        server.write_delta(conn, packet_no, &mut packet).unwrap();
        conn.on_ack(packet_no);
        packet.clone()
    };
    mirror
        .apply_delta(&send(&mut server, &mut conn, 1), &mut ())
        .unwrap();
    mirror.set_limits(limits(50));

    // Changes alone.
    for &id in &ids[..10] {
        server.get_mut(id).unwrap().on ^= 1;
    }
    server.commit();
    mirror
        .apply_delta(&send(&mut server, &mut conn, 2), &mut ())
        .unwrap();
    assert_eq!(mirror, server);
    // Changes and removals, still past the limit after them.
    for &id in &ids[10..20] {
        server.get_mut(id).unwrap().on ^= 1;
    }
    for &id in &ids[90..] {
        server.remove(id);
    }
    server.commit();
    mirror
        .apply_delta(&send(&mut server, &mut conn, 3), &mut ())
        .unwrap();
    assert_eq!(mirror, server);
    // An add, still past the limit: refused.
    let added = server.push(Tiny { on: 1 });
    server.scope(&mut conn).unwrap().include(added);
    server.commit();
    let adds = send(&mut server, &mut conn, 4);
    refused(&mut mirror, &adds, exceeded(Limit::Items, 50, 91));
}

#[test]
fn messages_longer_than_the_limit_are_refused_before_decoding() {
    let (mut server, _) = server_of(200);
    let message = first_delta(&mut server);
    let bytes = |message_bytes| MirrorLimits {
        message_bytes,
        ..MirrorLimits::DEFAULT
    };
    let len = message.len();
    let mut mirror = FastArray::<Tiny>::mirror_with_limits(bytes(len - 1));
    refused(
        &mut mirror,
        &message,
        exceeded(Limit::MessageBytes, len - 1, len),
    );
    // Even a message that is not one: it is not read.
    refused(
        &mut mirror,
        &vec![0xff; len],
        exceeded(Limit::MessageBytes, len - 1, len),
    );
    mirror.set_limits(bytes(len));
    mirror.apply_delta(&message, &mut ()).unwrap();
    assert_eq!(mirror, server);

    // From a shared bit stream: refused at the first read past the limit,
    // the stream holding the message and more after it.
    let mut stream = message.clone();
    stream.extend_from_slice(&[0; 100]);
    let mut mirror = FastArray::<Tiny>::mirror_with_limits(bytes(len - 1));
    let state = mirror.mirror_state();
    let mut reader = BitReader::new(&stream);
    assert_eq!(
        mirror.apply_delta_bits(&mut reader, &mut ()),
        Err(exceeded(Limit::MessageBytes, len - 1, len + 100))
    );
    assert!(mirror.is_empty());
    assert_eq!(mirror.mirror_state(), state);
    mirror.set_limits(bytes(len));
    let mut reader = BitReader::new(&stream);
    mirror.apply_delta_bits(&mut reader, &mut ()).unwrap();
    assert_eq!(mirror, server);
}

#[test]
fn snapshots_past_the_limits_are_refused() {
    let (server, _) = server_of(500);
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    assert_eq!(
        FastArray::<Tiny>::from_snapshot_with_limits(&snapshot, limits(499)).unwrap_err(),
        exceeded(Limit::Items, 499, 500)
    );
    let len = snapshot.len();
    let short = MirrorLimits {
        message_bytes: len - 1,
        ..MirrorLimits::DEFAULT
    };
    assert_eq!(
        FastArray::<Tiny>::from_snapshot_with_limits(&snapshot, short).unwrap_err(),
        exceeded(Limit::MessageBytes, len - 1, len)
    );
    let mirror = FastArray::<Tiny>::from_snapshot_with_limits(&snapshot, limits(500)).unwrap();
    assert_eq!(mirror, server);
    assert_eq!(mirror.limits(), limits(500));

    // `apply_snapshot` checks a mirror's own limits, and keeps them.
    let (small, _) = server_of(3);
    let mut mirror = FastArray::<Tiny>::mirror_with_limits(limits(499));
    let mut first = Vec::new();
    small.write_snapshot(&mut first).unwrap();
    mirror.apply_snapshot(&first).unwrap();
    let (before, state) = (mirror.clone(), mirror.mirror_state());
    assert_eq!(
        mirror.apply_snapshot(&snapshot),
        Err(exceeded(Limit::Items, 499, 500))
    );
    assert_eq!((&mirror, mirror.mirror_state()), (&before, state));
    assert_eq!(mirror.limits(), limits(499));
}

fn squad(members: usize) -> Squad {
    let mut squad = Squad {
        tag: 1,
        members: FastArray::new(),
    };
    for i in 0..members {
        squad.members.push(Tiny { on: i as u8 & 1 });
    }
    squad
}

fn inner(inner_items: usize) -> MirrorLimits {
    MirrorLimits {
        inner_items,
        ..MirrorLimits::DEFAULT
    }
}

/// Arrays inside items take the mirror's `inner_items`: in a new item's
/// whole entry, in a held item's array delta, and in a snapshot.
#[test]
fn arrays_inside_items_inherit_the_inner_limit() {
    let mut server = FastArray::new();
    let id = server.push(squad(50));
    server.commit();
    let mut conn = SendState::new();
    let mut packet = Vec::new();
    server.write_delta(&mut conn, 1, &mut packet).unwrap();
    let mut mirror = FastArray::<Squad>::mirror_with_limits(inner(49));
    refused(&mut mirror, &packet, exceeded(Limit::InnerItems, 49, 50));
    mirror.set_limits(inner(50));
    mirror.apply_delta(&packet, &mut ()).unwrap();
    conn.on_ack(1);

    // One more member: a delta of the held item's array.
    server.get_mut(id).unwrap().members.push(Tiny { on: 0 });
    server.commit();
    packet.clear();
    server.write_delta(&mut conn, 2, &mut packet).unwrap();
    refused(&mut mirror, &packet, exceeded(Limit::InnerItems, 50, 51));
    mirror.set_limits(inner(51));
    mirror.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(mirror, server);

    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    assert_eq!(
        FastArray::<Squad>::from_snapshot_with_limits(&snapshot, inner(50)).unwrap_err(),
        exceeded(Limit::InnerItems, 50, 51)
    );
    let mirror = FastArray::<Squad>::from_snapshot_with_limits(&snapshot, inner(51)).unwrap();
    assert_eq!(mirror, server);
}

/// A replicated object's arrays are the game's arrays (`items`); the
/// arrays inside their items are inner arrays.
#[test]
fn replicated_objects_hold_their_arrays_to_the_item_limit() {
    let mut server = Replicated::new(World::default());
    server.get_mut().squads.push(squad(3));
    server.get_mut().squads.push(squad(3));
    server.commit();
    let mut packet = Vec::new();
    server
        .write_delta(&mut SendState::new(), 1, &mut packet)
        .unwrap();
    let check = |limits: MirrorLimits, expected: Result<(), DecodeError>| {
        let mut mirror = Replicated::<World>::mirror_with_limits(limits);
        let (before, state) = (mirror.clone(), mirror.mirror_state());
        let result = mirror.apply_delta(&packet, &mut ()).map(|_| ());
        assert_eq!(result, expected);
        if result.is_err() {
            assert_eq!((&mirror, mirror.mirror_state()), (&before, state));
        } else {
            assert_eq!(mirror.get(), server.get());
        }
    };
    check(limits(1), Err(exceeded(Limit::Items, 1, 2)));
    check(inner(2), Err(exceeded(Limit::InnerItems, 2, 3)));
    check(
        MirrorLimits {
            items: 2,
            inner_items: 3,
            ..MirrorLimits::DEFAULT
        },
        Ok(()),
    );
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    assert_eq!(
        Replicated::<World>::from_snapshot_with_limits(&snapshot, limits(1)).unwrap_err(),
        exceeded(Limit::Items, 1, 2)
    );
    let mirror = Replicated::<World>::from_snapshot_with_limits(&snapshot, inner(3)).unwrap();
    assert_eq!(mirror.get(), server.get());
}

/// Through a `MirrorConnection`: the packet is refused, no mirror and not
/// the connection's acknowledgements change, and a mirror with room
/// takes the same packet.
#[test]
fn a_connection_refuses_a_packet_past_a_mirror_limit() {
    let now = Instant::now();
    let (mut units, _) = server_of(300);
    let mut others = FastArray::new();
    others.push(Tiny { on: 1 });
    others.commit();
    let mut conn = Connection::new(2);
    let mut packet = Vec::new();
    conn.write_packet(now, 1_200, &mut [&mut others, &mut units], &mut packet)
        .unwrap();

    let mut client = MirrorConnection::new(2);
    let mut first = FastArray::<Tiny>::mirror();
    let mut second = FastArray::<Tiny>::mirror_with_limits(limits(299));
    // Not `Clone` (a copy of a sealed session would reuse its nonces): its
    // `Debug` output is its whole state.
    let before = format!(
        "{:?}",
        (&client, first.mirror_state(), second.mirror_state())
    );
    let result = client.apply(now, &packet, &mut [&mut first, &mut second]);
    assert_eq!(
        result.unwrap_err(),
        ConnectionError::Decode {
            channel: 1,
            error: exceeded(Limit::Items, 299, 300)
        }
    );
    assert!(first.is_empty() && second.is_empty());
    assert_eq!(
        format!(
            "{:?}",
            (&client, first.mirror_state(), second.mirror_state())
        ),
        before
    );
    second.set_limits(limits(300));
    client
        .apply(now, &packet, &mut [&mut first, &mut second])
        .unwrap();
    assert_eq!((&first, &second), (&others, &units));
}

/// The state `mirror_state` compares covers what `==` does not: a
/// tombstone, a field's frame.
#[test]
fn mirror_state_sees_tombstones_and_field_frames() {
    let (mut server, ids) = server_of(3);
    let mut conn = SendState::new();
    let mut mirror = FastArray::<Tiny>::mirror();
    let mut packet = Vec::new();
    server.write_delta(&mut conn, 1, &mut packet).unwrap();
    mirror.apply_delta(&packet, &mut ()).unwrap();
    conn.on_ack(1);
    // A field written with its own value: the frame moves, the value not.
    let mut same = FastArray::<Tiny>::mirror();
    same.apply_delta(&packet, &mut ()).unwrap();
    server.get_mut(ids[0]).unwrap().on ^= 1;
    server.commit();
    server.get_mut(ids[0]).unwrap().on ^= 1;
    server.commit();
    packet.clear();
    server.write_delta(&mut conn, 2, &mut packet).unwrap();
    mirror.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(mirror, same);
    assert_ne!(mirror.mirror_state(), same.mirror_state());

    // A removal of an id never held: a tombstone only.
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    let held = mirror.clone();
    w.write_bits(0b01, 2); // a delta
    w.write_bool(true); // long frame
    w.write_varint(server.frame() + 1);
    w.write_bits(0b01, 2); // one removal
    w.write_bool(false); // ids' gaps in Elias-delta
    w.write_varint(1_000); // id 1 000
    w.write_bool(false); // no items
    w.finish();
    mirror.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(mirror, held);
    assert_ne!(mirror.mirror_state(), held.mirror_state());
}

/// A scoped connection names items by handles, and takes items out of
/// scope with exits: a message with exits and adds counts what the mirror
/// would hold once the handles are resolved.
#[test]
fn exits_and_adds_by_handles_count_around_the_cap() {
    let (mut server, ids) = server_of(20);
    let mut conn = SendState::new();
    {
        let mut scope = server.scope(&mut conn).unwrap();
        for &id in &ids[..5] {
            scope.include(id);
        }
    }
    let mut packet = Vec::new();
    server.write_delta(&mut conn, 1, &mut packet).unwrap();
    assert!(conn.on_ack(1));
    let mut mirror = FastArray::<Tiny>::mirror_with_limits(limits(5));
    mirror.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(mirror.len(), 5);

    // Two leave the scope, three enter: six held after it.
    server.commit();
    {
        let mut scope = server.scope(&mut conn).unwrap();
        for &id in &ids[..2] {
            scope.exclude(id);
        }
        for &id in &ids[10..13] {
            scope.include(id);
        }
    }
    packet.clear();
    server.write_delta(&mut conn, 2, &mut packet).unwrap();
    refused(&mut mirror, &packet, exceeded(Limit::Items, 5, 6));
    mirror.set_limits(limits(6));
    mirror.apply_delta(&packet, &mut ()).unwrap();
    let mut held: Vec<_> = mirror.ids().collect();
    held.sort();
    assert_eq!(held, [&ids[2..5], &ids[10..13]].concat());
}
