//! `FastArray::is_settled(&conn)`: true exactly when the client holds
//! what the array holds, every packet that carried it acknowledged. (The
//! old `SendState::is_settled` was true on a new state and right after a
//! commit, so "write until settled" loops never ran.)

use fastarray::{FastArray, Replicate, Replicated, SendState};
use fastarray_testkit::link::{Link, LinkProfile, Report};
use fastarray_testkit::{exchange, exchange_object};

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u16,
    #[replicate(quantize(min = 0.0, max = 100.0, bits = 10))]
    x: f32,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Squad {
    tag: u8,
    #[replicate(array)]
    members: FastArray<Unit>,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Match {
    round: u8,
    #[replicate(array)]
    units: FastArray<Unit>,
}

fn unit(hp: u16) -> Unit {
    Unit {
        hp,
        x: f32::from(hp) / 3.0,
    }
}

fn write(server: &mut FastArray<Unit>, conn: &mut SendState, packet: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    server.write_delta(conn, packet, &mut bytes).unwrap();
    bytes
}

#[test]
fn a_new_state_is_settled_only_on_an_array_with_nothing_to_send() {
    let conn = SendState::new();
    let mut server = FastArray::<Unit>::new();
    assert!(server.is_settled(&conn), "nothing to send");
    server.push(unit(1));
    assert!(!server.is_settled(&conn), "an uncommitted item");
    server.commit();
    assert!(!server.is_settled(&conn), "a committed item never written");

    // An array whose items came and went before this client joined has
    // nothing for it either, once a write has merged those frames.
    let mut gone = FastArray::new();
    let id = gone.push(unit(1));
    gone.commit();
    gone.remove(id);
    gone.commit();
    let mut conn = SendState::new();
    assert!(!gone.is_settled(&conn));
    let bytes = write(&mut gone, &mut conn, 0);
    assert_eq!(bytes, [0], "an empty message");
    assert!(gone.is_settled(&conn));
}

#[test]
fn settled_only_once_every_commit_is_written_and_acknowledged() {
    let mut server = FastArray::new();
    let id = server.push(unit(1));
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    exchange(&mut server, &mut conn, &mut client, 0);
    assert!(server.is_settled(&conn));

    server.get_mut(id).unwrap().hp = 2;
    assert!(!server.is_settled(&conn), "changed, not committed");
    server.commit();
    assert!(!server.is_settled(&conn), "committed, not written");
    let bytes = write(&mut server, &mut conn, 1);
    assert!(!server.is_settled(&conn), "written, not acknowledged");
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(1);
    assert!(server.is_settled(&conn), "acknowledged");
    assert!(client.wire_eq(&server));

    // Commits that change nothing leave it settled.
    server.commit();
    server.get_mut(id).unwrap().x += 0.001; // below the quantization step
    server.commit();
    assert!(server.is_settled(&conn));
}

#[test]
fn a_loss_unsettles_until_the_repair_is_acknowledged() {
    let mut server = FastArray::new();
    let id = server.push(unit(1));
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    exchange(&mut server, &mut conn, &mut client, 0);

    server.get_mut(id).unwrap().hp = 9;
    server.commit();
    write(&mut server, &mut conn, 1);
    conn.on_loss(1);
    assert!(!server.is_settled(&conn), "lost");
    let repair = write(&mut server, &mut conn, 2);
    assert!(!server.is_settled(&conn), "repair in flight");
    client.apply_delta(&repair, &mut ()).unwrap();
    conn.on_ack(2);
    assert!(server.is_settled(&conn));
    assert_eq!(client.get(id).unwrap().hp, 9);
}

#[test]
fn arrays_inside_items_settle_with_their_owner() {
    let mut server = FastArray::new();
    let mut members = FastArray::new();
    let first = members.push(unit(1));
    let squad = server.push(Squad { tag: 1, members });
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    exchange(&mut server, &mut conn, &mut client, 0);
    assert!(server.is_settled(&conn));

    server
        .get_mut(squad)
        .unwrap()
        .members
        .get_mut(first)
        .unwrap()
        .hp = 5;
    server.commit();
    assert!(!server.is_settled(&conn));
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    assert!(!server.is_settled(&conn), "the inner change is in flight");
    conn.on_loss(1);
    assert!(!server.is_settled(&conn), "the inner change was lost");
    exchange(&mut server, &mut conn, &mut client, 2);
    assert!(server.is_settled(&conn));
    assert!(client.wire_eq(&server));

    // Many members through small budgets: several packets, each settling
    // nothing until the last.
    for hp in 0..40 {
        server.get_mut(squad).unwrap().members.push(unit(hp));
    }
    server.commit();
    let mut packet = 3;
    while !server.is_settled(&conn) {
        let mut bytes = Vec::new();
        server
            .write_delta_with_budget(&mut conn, packet, &mut bytes, 200)
            .unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        packet += 1;
        assert!(packet < 100, "never settled");
    }
    assert!(packet > 5, "it took several packets: {packet}");
    assert_eq!(client.get(squad).unwrap().members.len(), 41);
    assert!(client.wire_eq(&server));
}

#[test]
fn a_replicated_object_settles_like_an_array() {
    let mut server = Replicated::new(Match::default());
    let (mut conn, mut client) = (SendState::new(), Replicated::<Match>::mirror());
    server.commit();
    assert!(!server.is_settled(&conn), "the object is not announced yet");
    exchange_object(&mut server, &mut conn, &mut client, 0);
    assert!(server.is_settled(&conn));

    server.get_mut().units.push(unit(3));
    assert!(!server.is_settled(&conn));
    server.commit();
    assert!(!server.is_settled(&conn));
    exchange_object(&mut server, &mut conn, &mut client, 1);
    assert!(server.is_settled(&conn));
    assert!(client.wire_eq(&server));
}

/// The loop users write: keep writing until the connection settles, over
/// a lossy link. It terminates, and the mirror then equals the server.
#[test]
fn write_until_settled_over_a_lossy_link_converges() {
    for seed in 0..20 {
        let mut server = FastArray::new();
        for hp in 0..50 {
            server.push(unit(hp));
        }
        server.commit();
        let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
        let mut link = Link::new(LinkProfile::lossy(0.3), seed);
        let mut now = 0;
        let mut written = 0;
        while !server.is_settled(&conn) || !link.idle() {
            if !server.is_settled(&conn) {
                let bytes = write(&mut server, &mut conn, now);
                link.send(now, now, bytes);
                written += 1;
            }
            for bytes in link.deliver(now) {
                client.apply_delta(&bytes, &mut ()).unwrap();
            }
            for report in link.reports(now) {
                match report {
                    Report::Acked(packet) => conn.on_ack(packet),
                    Report::Lost(packet) => conn.on_loss(packet),
                };
            }
            now += 1;
            assert!(now < 2_000, "seed {seed}: never settled");
        }
        assert!(written > 0);
        assert!(client.wire_eq(&server), "seed {seed}");
        assert_eq!(client.len(), 50);
    }
}
