//! `ReplicationId` fields: references between items survive replication,
//! and the mirror resolves them with `get`, because it holds the server's ids.

use fastarray::{BitCodec, BitReader, BitWriter, FastArray, Replicate, ReplicationId, SendState};

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u8,
    owner: ReplicationId,
    target: Option<ReplicationId>,
}

/// Sends `server`'s pending changes to `mirror` over a perfect link.
fn sync(
    server: &mut FastArray<Unit>,
    conn: &mut SendState,
    packet: u32,
    mirror: &mut FastArray<Unit>,
) {
    let mut bytes = Vec::new();
    server.write_delta(conn, packet, &mut bytes).unwrap();
    mirror.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(packet);
}

#[test]
fn mirror_resolves_id_fields() {
    let mut server = FastArray::new();
    // The first item owns itself: its id is known only after the push.
    let base = server.push(Unit {
        hp: 100,
        owner: ReplicationId::from_raw(0),
        target: None,
    });
    server.get_mut(base).unwrap().owner = base;
    let scout = server.push(Unit {
        hp: 30,
        owner: base,
        target: None,
    });
    let enemy = server.push(Unit {
        hp: 50,
        owner: base,
        target: Some(scout),
    });
    server.commit();

    let (mut conn, mut mirror) = (SendState::new(), FastArray::new());
    sync(&mut server, &mut conn, 0, &mut mirror);

    let received = mirror.get(enemy).unwrap();
    let target = mirror.get(received.target.unwrap()).unwrap();
    assert_eq!(target.hp, 30);
    assert_eq!(mirror.get(target.owner).unwrap().hp, 100);

    // Retargeting is a field change like any other; a reference to a
    // removed item finds nothing on the mirror either.
    server.get_mut(enemy).unwrap().target = Some(base);
    server.remove(scout);
    server.commit();
    sync(&mut server, &mut conn, 1, &mut mirror);
    assert_eq!(mirror.get(enemy).unwrap().target, Some(base));
    assert_eq!(
        mirror
            .get(mirror.get(enemy).unwrap().target.unwrap())
            .unwrap()
            .hp,
        100
    );
    assert_eq!(mirror.get(scout), None);
    assert_eq!(mirror, server);
}

#[test]
fn small_ids_are_a_few_bits() {
    let unit = Unit {
        hp: 7,
        owner: ReplicationId::from_raw(0),
        target: Some(ReplicationId::from_raw(3)),
    };
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    unit.encode(&mut writer).unwrap();
    // hp: 8 bits. owner #0: Elias-delta of 1 = "1", 1 bit.
    // target: 1 presence bit, then #3 as Elias-delta of 4 = 0b100: its
    // length 3 as Elias-gamma "011" (3 bits) and the 2 bits below the
    // leading one, "00": 5 bits. 8 + 1 + 1 + 5 = 15.
    assert_eq!(writer.finish(), 8 + 1 + (1 + 5));
    assert_eq!(Unit::decode(&mut BitReader::new(&bytes)), Ok(unit));
}
