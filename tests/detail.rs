//! Detail levels: `#[replicate(detail = N)]` and `ScopeMut::set_detail`.
//! A connection that sees an item at a level below a field's detail is not
//! sent that field's changes; when the level rises, exactly the withheld
//! fields that changed are sent.

use fastarray::{FastArray, FieldMask, MAX_DETAIL, Replicate, ReplicationId, SendState};

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Plain {
    a: u8,
    b: u16,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    #[replicate(quantize(min = -100.0, max = 100.0, bits = 12))]
    pos: [f32; 2],
    #[replicate(bits = 7, detail = 1)]
    hp: u8,
    #[replicate(detail = 2)]
    name: String,
    #[replicate(detail = 7)]
    emote: u16,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Outer {
    #[replicate(detail = 3)]
    id: u32,
    #[replicate(flatten, detail = 1)]
    unit: Unit,
    #[replicate(flatten)]
    plain: Plain,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Pair(#[replicate(detail = 4)] u8, u8);

fn mask(bits: u64) -> FieldMask {
    FieldMask::from_bits(bits)
}

#[test]
fn detail_masks_follow_the_attributes() {
    for level in 0..=MAX_DETAIL {
        assert_eq!(Plain::detail_mask(level), FieldMask::all(2));
    }
    let unit = [
        0b0001, 0b0011, 0b0111, 0b0111, 0b0111, 0b0111, 0b0111, 0b1111,
    ];
    for level in 0..=MAX_DETAIL {
        assert_eq!(
            Unit::detail_mask(level),
            mask(unit[level as usize]),
            "Unit at {level}"
        );
    }
    // Outer: id (bit 0), unit's 4 leaves (bits 1-4, from level 1), plain's
    // 2 leaves (bits 5-6, always).
    for level in 0..=MAX_DETAIL {
        let id = u64::from(level >= 3);
        let unit = if level >= 1 {
            unit[level as usize] << 1
        } else {
            0
        };
        let expected = id | unit | 0b110_0000;
        assert_eq!(
            Outer::detail_mask(level),
            mask(expected),
            "Outer at {level}"
        );
    }
    assert_eq!(Pair::detail_mask(3), mask(0b10));
    assert_eq!(Pair::detail_mask(4), mask(0b11));
}

/// A type of the same name and fields without `detail`: the schema hash
/// is a type's name, fields and encodings, so the two must agree.
mod same {
    use fastarray::Replicate;

    #[derive(Replicate, Clone, Debug, PartialEq)]
    #[allow(dead_code)]
    pub struct Unit {
        #[replicate(quantize(min = -100.0, max = 100.0, bits = 12))]
        pos: [f32; 2],
        #[replicate(bits = 7)]
        hp: u8,
        name: String,
        emote: u16,
    }
}

#[test]
fn detail_is_not_part_of_the_schema() {
    assert_eq!(Unit::SCHEMA_HASH, <same::Unit as Replicate>::SCHEMA_HASH);
}

fn unit(x: f32) -> Unit {
    Unit {
        pos: [x, 0.0],
        hp: 100,
        name: "far".into(),
        emote: 0,
    }
}

fn round(
    server: &mut FastArray<Unit>,
    conn: &mut SendState,
    client: &mut FastArray<Unit>,
    packet: u32,
) -> fastarray::DeltaStats {
    let mut bytes = Vec::new();
    let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(packet);
    stats
}

/// A unit in a connection's scope at detail level 0, not yet written.
fn far_unit() -> (FastArray<Unit>, ReplicationId, SendState, FastArray<Unit>) {
    let mut server = FastArray::new();
    let id = server.push(unit(1.0));
    server.commit();
    let (mut conn, client) = (SendState::new(), FastArray::<Unit>::mirror());
    let mut scope = server.scope(&mut conn).unwrap();
    scope.include(id);
    assert!(scope.set_detail(id, 0));
    assert_eq!(scope.detail(id), 0);
    (server, id, conn, client)
}

#[test]
fn fields_above_the_level_wait_and_exactly_those_that_changed_go_when_it_rises() {
    let (mut server, id, mut conn, mut client) = far_unit();
    // The add carries every field, whatever the level.
    let stats = round(&mut server, &mut conn, &mut client, 1);
    assert_eq!(stats.added, 1);
    assert!(client.wire_eq(&server));

    // At level 0 only `pos` goes.
    {
        let mut unit = server.get_mut(id).unwrap();
        unit.pos = [2.0, 0.0];
        unit.hp = 50;
        unit.name = "near".into();
    }
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, 2);
    assert_eq!(stats.changed, 1);
    let seen = client.get(id).unwrap();
    assert_eq!((seen.hp, seen.name.as_str()), (100, "far"));
    assert!((seen.pos[0] - 2.0).abs() < 0.05);
    assert!(server.is_settled(&conn), "withheld fields are not due");

    // Nothing changes at level 0: nothing goes.
    server.get_mut(id).unwrap().emote = 9;
    server.commit();
    assert_eq!(round(&mut server, &mut conn, &mut client, 3).bits, 1);

    // Level 1: `hp` goes, alone (not `pos`, which the client has).
    server.scope(&mut conn).unwrap().set_detail(id, 1);
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 4, &mut bytes).unwrap();
    assert_eq!(stats.changed, 1);
    let mut only_hp = FastArray::<Unit>::mirror();
    only_hp.apply_delta(&bytes, &mut ()).unwrap_err(); // a partial change for an unknown item
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(4);
    assert_eq!(client.get(id).unwrap().hp, 50);
    assert_eq!(client.get(id).unwrap().name, "far");

    // Every detail: `name` and `emote` go.
    server.scope(&mut conn).unwrap().set_detail(id, MAX_DETAIL);
    round(&mut server, &mut conn, &mut client, 5);
    assert!(client.wire_eq(&server));
    assert!(server.is_settled(&conn));
}

#[test]
fn a_whole_value_clears_what_was_withheld() {
    let (mut server, id, mut conn, mut client) = far_unit();
    // Changed before the add was written: the add carries it.
    server.get_mut(id).unwrap().name = "x".into();
    server.commit();
    round(&mut server, &mut conn, &mut client, 1);
    assert!(client.wire_eq(&server));
    server.scope(&mut conn).unwrap().set_detail(id, MAX_DETAIL);
    assert_eq!(round(&mut server, &mut conn, &mut client, 2).bits, 1);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Secretive {
    hp: u16,
    #[replicate(detail = 2)]
    secret: u32,
}

/// The repro: an item seen at level 0 whose add is in flight
/// twice; the second copy is lost after the first was acknowledged, and
/// its repair goes whole. A whole value is only what the connection may
/// see: `secret`, withheld at level 0, must not ride along.
#[test]
fn a_repair_sent_whole_does_not_carry_a_withheld_field() {
    let mut server = FastArray::new();
    let id = server.push(Secretive { hp: 10, secret: 0 });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Secretive>::mirror());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        scope.include(id);
        scope.set_detail(id, 0);
    }
    let write = |server: &mut FastArray<Secretive>, conn: &mut SendState, packet| {
        let mut bytes = Vec::new();
        let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
        (bytes, stats)
    };
    let (first, _) = write(&mut server, &mut conn, 1);
    server.get_mut(id).unwrap().hp = 11;
    server.commit();
    let (_second, stats) = write(&mut server, &mut conn, 2);
    assert_eq!(stats.added, 1, "the add is in flight: whole again");
    client.apply_delta(&first, &mut ()).unwrap();
    conn.on_ack(1);

    server.get_mut(id).unwrap().secret = 2;
    server.commit();
    let (third, _) = write(&mut server, &mut conn, 3);
    client.apply_delta(&third, &mut ()).unwrap();
    assert_eq!(client.get(id).unwrap().secret, 0, "withheld at level 0");

    conn.on_loss(2);
    let (fourth, _) = write(&mut server, &mut conn, 4);
    client.apply_delta(&fourth, &mut ()).unwrap();
    conn.on_ack(3);
    conn.on_ack(4);
    assert_eq!(client.get(id).unwrap().hp, 11, "the repair arrived");
    assert_eq!(
        client.get(id).unwrap().secret,
        0,
        "a field withheld from the connection reached it through loss repair"
    );

    // Once the level sends it, it goes.
    server.scope(&mut conn).unwrap().set_detail(id, 2);
    let (fifth, _) = write(&mut server, &mut conn, 5);
    client.apply_delta(&fifth, &mut ()).unwrap();
    conn.on_ack(5);
    assert_eq!(client.get(id).unwrap().secret, 2);
    assert!(client.wire_eq(&server));
}

/// An item that enters the scope at a low level goes whole with only the
/// fields that level sends; the others hold `Default` on the client until
/// the level rises.
#[test]
fn an_add_at_a_low_level_carries_only_what_the_level_sends() {
    let mut server = FastArray::new();
    let id = server.push(Secretive { hp: 10, secret: 7 });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Secretive>::mirror());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        scope.include(id);
        scope.set_detail(id, 1);
    }
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    assert_eq!(stats.added, 1);
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(1);
    assert_eq!(*client.get(id).unwrap(), Secretive { hp: 10, secret: 0 });
    assert!(server.is_settled(&conn), "withheld fields are not due");

    server.scope(&mut conn).unwrap().set_detail(id, 2);
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 2, &mut bytes).unwrap();
    assert_eq!((stats.added, stats.changed), (0, 1));
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(2);
    assert_eq!(*client.get(id).unwrap(), Secretive { hp: 10, secret: 7 });
}
