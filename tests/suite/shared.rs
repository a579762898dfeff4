//! The frame's shared message: caught-up connections get the same bits,
//! written once, and each records it without visiting every changed item.
//! What it must not change: the bytes, loss repair, resynchronisation, and
//! convergence of many connections over different links at once.

use fastarray::{DeltaStats, FastArray, Replicate, ReplicationId, SendState};
use fastarray_testkit::exchange;
use fastarray_testkit::link::{Link, LinkProfile, Report};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u16,
    team: u8,
    name: String,
}

fn unit(n: u32) -> Unit {
    Unit {
        hp: n as u16,
        team: (n % 4) as u8,
        name: format!("u{n}"),
    }
}

/// A server with `items` units and `conns` connections whose clients hold
/// all of them, acknowledged.
struct Room {
    server: FastArray<Unit>,
    ids: Vec<ReplicationId>,
    conns: Vec<SendState>,
    clients: Vec<FastArray<Unit>>,
    packet: u32,
}

impl Room {
    fn new(items: u32, conns: usize) -> Self {
        let mut server = FastArray::new();
        let ids = (0..items).map(|n| server.push(unit(n))).collect();
        let mut room = Room {
            server,
            ids,
            conns: (0..conns).map(|_| SendState::new()).collect(),
            clients: (0..conns).map(|_| FastArray::new()).collect(),
            packet: 0,
        };
        room.tick();
        room
    }

    /// Commits, then [`send`](Self::send)s.
    fn tick(&mut self) -> Vec<(Vec<u8>, DeltaStats)> {
        self.server.commit();
        self.send()
    }

    /// Connection `conn`'s message for packet `packet`, written and not
    /// yet delivered, with what writing it counted.
    fn write(&mut self, conn: usize, packet: u32) -> (Vec<u8>, DeltaStats) {
        let mut bytes = Vec::new();
        let stats = self
            .server
            .write_delta(&mut self.conns[conn], packet, &mut bytes)
            .unwrap();
        (bytes, stats)
    }

    /// Delivers `bytes`, packet `packet`, to connection `conn`'s client
    /// and acknowledges it; the client then holds what the server does,
    /// and the connection has nothing left to send.
    fn deliver_and_settle(&mut self, conn: usize, bytes: &[u8], packet: u32) {
        self.clients[conn].apply_delta(bytes, &mut ()).unwrap();
        assert!(self.conns[conn].on_ack(packet));
        assert_eq!(self.clients[conn], self.server);
        assert!(self.server.is_settled(&self.conns[conn]));
    }

    /// 70 commits, more than the history ring holds, with no write; seven
    /// items (ids 300 to 306) change meanwhile.
    fn commit_while_away(&mut self) {
        for n in 0..70 {
            if n % 10 == 0 {
                self.server.get_mut(self.ids[300 + n / 10]).unwrap().team = 200;
            }
            self.server.commit();
        }
    }

    /// Writes one packet per connection, delivers and acks them all;
    /// returns each connection's bytes and what writing them counted.
    fn send(&mut self) -> Vec<(Vec<u8>, DeltaStats)> {
        let packet = self.packet;
        self.packet += 1;
        let mut sent = Vec::new();
        for (conn, client) in self.conns.iter_mut().zip(&mut self.clients) {
            let mut bytes = Vec::new();
            let stats = self.server.write_delta(conn, packet, &mut bytes).unwrap();
            client.apply_delta(&bytes, &mut ()).unwrap();
            assert!(conn.on_ack(packet) || bytes == [0]);
            sent.push((bytes, stats));
        }
        for client in &self.clients {
            assert_eq!(client, &self.server);
        }
        sent
    }
}

#[test]
fn caught_up_connections_take_one_message_written_once() {
    let mut room = Room::new(1_000, 4);
    for n in (0..1_000).step_by(97) {
        room.server.get_mut(room.ids[n]).unwrap().hp += 1;
    }
    room.server.remove(room.ids[500]);
    room.server.push(unit(5_000));
    room.server.commit();
    // A connection in the same state as the others, written under a
    // budget that holds the frame's message: it takes the shared message
    // too (the message a caught-up connection would plan for itself, byte
    // for byte: fastarray-core's `array::shared_tests`), and writes it.
    let mut reference = room.conns[0].clone();
    let mut expected = Vec::new();
    let stats = room
        .server
        .write_delta_with_budget(&mut reference, 99, &mut expected, u64::MAX)
        .unwrap();
    assert!(stats.shared);
    assert_eq!((stats.changed, stats.added, stats.removed), (11, 1, 1));

    let sent = room.send();
    for (index, (bytes, shared)) in sent.iter().enumerate() {
        assert_eq!(bytes, &expected, "connection {index}");
        // The first caught-up connection writes the shared message from
        // the frame's changes and keeps it, the others copy it; all count
        // what the per-connection path counts.
        assert!(shared.shared, "connection {index}");
        assert_eq!(*shared, stats, "connection {index}");
    }
    for conn in &room.conns {
        assert!(room.server.is_settled(conn));
    }
    // The next frames too, while they stay caught up.
    for round in 0..5 {
        room.server.get_mut(room.ids[round]).unwrap().team = 9;
        let sent = room.tick();
        assert!(sent.iter().all(|(_, stats)| stats.shared));
        assert!(sent.iter().all(|(bytes, _)| bytes == &sent[0].0));
    }
}

/// A room of 100 units and two connections, in which unit 100 was just
/// added: connection 0's client has it, connection 1's packet 50 with the
/// add is returned, not delivered. Then unit 100 and unit 3 change.
fn add_in_flight() -> (Room, ReplicationId, Vec<u8>) {
    let mut room = Room::new(100, 2);
    let added = room.server.push(unit(100));
    exchange(
        &mut room.server,
        &mut room.conns[0],
        &mut room.clients[0],
        50,
    );
    let (held, _) = room.write(1, 50);
    room.server.get_mut(added).unwrap().hp = 7;
    room.server.get_mut(room.ids[3]).unwrap().hp = 7;
    room.server.commit();
    (room, added, held)
}

/// The kind a message starts with: its first five bits.
fn kind_bits(bytes: &[u8]) -> u8 {
    bytes[0] & 0b1_1111
}

#[test]
fn a_connection_with_an_add_in_flight_takes_the_shared_message_as_a_shared_delta() {
    let (mut room, added, held) = add_in_flight();
    let (first, stats) = room.write(0, 51);
    assert!(stats.shared, "its client holds every item");
    assert_eq!(first[0] & 0b11, 0b01, "a delta");
    let (second, early) = room.write(1, 51);
    assert!(early.shared, "its add in flight does not keep it out");
    assert_eq!(kind_bits(&second), 0b1_0111, "a shared delta");
    assert_eq!(early.bits, stats.bits + 3, "the same bits but the kind's");

    // Its change of the new unit arrives first, and waits for the add.
    let report = room.clients[1].apply_delta(&second, &mut ()).unwrap();
    assert_eq!((report.changed, report.early), (1, 1));
    assert!(room.clients[1].get(added).is_none());
    let report = room.clients[1].apply_delta(&held, &mut ()).unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(
        room.clients[1].get(added).unwrap().hp,
        7,
        "the newer change"
    );
    room.clients[0].apply_delta(&first, &mut ()).unwrap();
    for conn in 0..2 {
        assert_eq!(room.clients[conn], room.server);
    }
    for (conn, packet) in [(0, 51), (1, 50), (1, 51)] {
        assert!(room.conns[conn].on_ack(packet));
    }
    for conn in &room.conns {
        assert!(room.server.is_settled(conn));
    }
    room.packet = 52;
    room.server.get_mut(room.ids[4]).unwrap().hp = 8;
    let sent = room.tick();
    assert!(sent.iter().all(|(_, stats)| stats.shared));
    assert_eq!(sent[0].0, sent[1].0, "both back to the one delta");
}

#[test]
fn an_add_that_arrives_after_its_change_keeps_the_newer_value() {
    let (mut room, added, held) = add_in_flight();
    let (early, _) = room.write(1, 51);
    // In order, the change applies to the held unit: the same result.
    let mut in_order = room.clients[1].clone();
    in_order.apply_delta(&held, &mut ()).unwrap();
    let report = in_order.apply_delta(&early, &mut ()).unwrap();
    assert_eq!((report.changed, report.early), (2, 0));
    room.clients[1].apply_delta(&early, &mut ()).unwrap();
    room.clients[1].apply_delta(&held, &mut ()).unwrap();
    assert_eq!(room.clients[1], in_order);
    assert_eq!(room.clients[1].get(added).unwrap().hp, 7);
    // A copy of the change arriving again changes nothing.
    let report = room.clients[1].apply_delta(&early, &mut ()).unwrap();
    assert_eq!((report.changed, report.early), (0, 0));
    assert_eq!(room.clients[1], in_order);
}

#[test]
fn a_lost_add_goes_again_whole_and_the_change_that_waited_for_it_is_dropped() {
    let (mut room, added, _lost) = add_in_flight();
    let (early, _) = room.write(1, 51);
    room.clients[1].apply_delta(&early, &mut ()).unwrap();
    room.conns[1].on_loss(50);
    assert!(room.conns[1].on_ack(51));
    // The unit changes again, and goes whole with its current value.
    room.server.get_mut(added).unwrap().team = 3;
    room.server.commit();
    let (again, stats) = room.write(1, 52);
    assert!(!stats.shared, "the lost add makes its own message");
    assert_eq!(stats.added, 1);
    let report = room.clients[1].apply_delta(&again, &mut ()).unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(room.clients[1].get(added), room.server.get(added));
    assert!(room.conns[1].on_ack(52));
    assert_eq!(room.clients[1], room.server);
    assert!(room.server.is_settled(&room.conns[1]));
}

#[test]
fn a_change_whose_item_is_removed_before_its_add_arrives_is_dropped() {
    let (mut room, added, _never) = add_in_flight();
    let (early, _) = room.write(1, 51);
    room.clients[1].apply_delta(&early, &mut ()).unwrap();
    room.server.remove(added);
    room.server.commit();
    let (removal, stats) = room.write(1, 52);
    assert!(stats.shared && stats.removed == 1);
    room.clients[1].apply_delta(&removal, &mut ()).unwrap();
    room.conns[1].on_loss(50);
    for packet in [51, 52] {
        assert!(room.conns[1].on_ack(packet));
    }
    assert!(room.clients[1].get(added).is_none());
    assert_eq!(room.clients[1], room.server);
    assert!(room.server.is_settled(&room.conns[1]));
}

#[test]
fn a_mirror_keeps_no_more_early_changes_than_it_may_hold_items() {
    let (mut room, added, _) = add_in_flight();
    let (early, _) = room.write(1, 51);
    assert!(room.conns[1].on_ack(51));
    // A second change waits in the next frame's message.
    room.server.get_mut(added).unwrap().team = 2;
    room.server.commit();
    let (second, stats) = room.write(1, 52);
    assert!(stats.shared);
    let mut limits = room.clients[1].limits();
    limits.items = 1;
    room.clients[1].set_limits(limits);
    room.clients[1].apply_delta(&early, &mut ()).unwrap();
    let before = room.clients[1].clone();
    let refused = room.clients[1].apply_delta(&second, &mut ());
    assert!(
        matches!(
            refused,
            Err(fastarray::DecodeError::LimitExceeded { max: 1, .. })
        ),
        "{refused:?}"
    );
    assert_eq!(room.clients[1], before);
    limits.items = 2;
    room.clients[1].set_limits(limits);
    room.clients[1].apply_delta(&second, &mut ()).unwrap();
}

/// Many connections whose acknowledgements come one and two ticks late,
/// over a churning array: they take the shared message while their adds are in
/// flight, and every client converges whatever order the packets arrive
/// in, or if some are lost.
#[test]
fn connections_acknowledging_late_share_the_message_and_converge() {
    let mut room = Room::new(300, 4);
    let mut rng = ChaCha8Rng::seed_from_u64(32);
    let mut next = 300;
    let mut in_flight: Vec<Vec<(u32, Vec<u8>)>> = vec![Vec::new(); 4];
    let mut shared = 0;
    for tick in 0..200u32 {
        for _ in 0..3 {
            let ids: Vec<ReplicationId> = room.server.iter().map(|(id, _)| id).collect();
            let id = ids[rng.random_range(0..ids.len())];
            room.server.remove(id);
            room.server.push(unit(next));
            next += 1;
        }
        let ids: Vec<ReplicationId> = room.server.iter().map(|(id, _)| id).collect();
        for _ in 0..10 {
            let id = ids[rng.random_range(0..ids.len())];
            room.server.get_mut(id).unwrap().hp = rng.random();
        }
        room.server.commit();
        let packet = 100 + tick;
        for (conn, flight) in in_flight.iter_mut().enumerate() {
            let (bytes, stats) = room.write(conn, packet);
            shared += usize::from(stats.shared);
            flight.push((packet, bytes));
            // Every other tick the two oldest, one and two ticks late and
            // out of order; connection 3 loses one packet in ten.
            if flight.len() == 3 {
                let mut due: Vec<_> = flight.drain(..2).collect();
                due.reverse();
                for (packet, bytes) in due {
                    if conn == 3 && rng.random_ratio(1, 10) {
                        room.conns[conn].on_loss(packet);
                    } else {
                        room.clients[conn].apply_delta(&bytes, &mut ()).unwrap();
                        room.conns[conn].on_ack(packet);
                    }
                }
            }
        }
    }
    // Then a quiet link until every client settles.
    for round in 0..4u32 {
        room.server.commit();
        for (conn, flight) in in_flight.iter_mut().enumerate() {
            for (packet, bytes) in flight.drain(..) {
                room.clients[conn].apply_delta(&bytes, &mut ()).unwrap();
                room.conns[conn].on_ack(packet);
            }
            let packet = 1_000 + round;
            let (bytes, _) = room.write(conn, packet);
            room.clients[conn].apply_delta(&bytes, &mut ()).unwrap();
            room.conns[conn].on_ack(packet);
        }
    }
    for conn in 0..4 {
        assert_eq!(room.clients[conn], room.server, "connection {conn}");
        assert!(room.server.is_settled(&room.conns[conn]));
    }
    // Before shared deltas, a connection with adds in flight wrote its
    // own message: with acks two ticks late, every one of them.
    assert!(shared > 4 * 200 * 3 / 4, "{shared} of 800 writes shared");
}

#[test]
fn a_lost_shared_message_is_resent_and_nothing_else() {
    let mut room = Room::new(1_000, 3);
    let changed = [room.ids[10], room.ids[400], room.ids[900]];
    for &id in &changed {
        room.server.get_mut(id).unwrap().hp = 4_242;
    }
    room.server.commit();
    let mut messages = Vec::new();
    for (index, conn) in room.conns.iter_mut().enumerate() {
        let mut bytes = Vec::new();
        let stats = room.server.write_delta(conn, 7, &mut bytes).unwrap();
        assert!(stats.shared, "connection {index}");
        messages.push(bytes);
    }
    // Connection 2 loses it; the others get it.
    let delivered = room.clients.iter_mut().zip(&mut room.conns).zip(&messages);
    for ((client, conn), bytes) in delivered.take(2) {
        client.apply_delta(bytes, &mut ()).unwrap();
        conn.on_ack(7);
    }
    assert!(room.conns[2].on_loss(7));
    assert_eq!(room.conns[2].pending_items(), 3);

    room.server.commit();
    let mut repair = Vec::new();
    let stats = room
        .server
        .write_delta(&mut room.conns[2], 8, &mut repair)
        .unwrap();
    assert!(!stats.shared);
    assert_eq!(
        (stats.changed, stats.added),
        (3, 0),
        "the same three fields"
    );
    room.deliver_and_settle(2, &repair, 8);
}

/// A record of a shared message names none of the items whose fields it
/// carried: a loss reads them from the frame's changeset in the history
/// ring at the next write. If the ring no longer holds that frame by then,
/// the connection compares with the array, and every item changed since
/// the lost frame may have been in it: those go whole, the others not —
/// even one whose later change the client acknowledged (its acknowledged
/// key is current, but the lost message's field is not in the client).
#[test]
fn a_shared_message_lost_after_its_frame_left_the_ring_is_resent_by_comparing() {
    let mut room = Room::new(500, 1);
    // Packet 6, shared, carries item 1's change; packet 7, shared too,
    // the three `lost` items'.
    room.server.get_mut(room.ids[1]).unwrap().hp = 7_777;
    room.server.commit();
    let (six, stats) = room.write(0, 6);
    assert!(stats.shared);
    let lost = [room.ids[10], room.ids[200], room.ids[499]];
    for &id in &lost {
        room.server.get_mut(id).unwrap().hp = 4_242;
    }
    room.server.commit();
    assert!(room.write(0, 7).1.shared);
    // Packet 6 is lost: packet 8 is the connection's own message, with
    // item 1's repair and a later change of the first lost item, which
    // arrives (its key, acknowledged, is then the item's current key).
    assert!(room.conns[0].on_loss(6));
    room.server.get_mut(lost[0]).unwrap().team = 99;
    room.server.commit();
    let (eight, stats) = room.write(0, 8);
    assert!(!stats.shared);
    assert_eq!(stats.changed, 2);
    room.clients[0].apply_delta(&six, &mut ()).ok();
    room.clients[0].apply_delta(&eight, &mut ()).unwrap();
    assert!(room.conns[0].on_ack(8));
    // Packet 7 is lost, and the ring moves past it before the next write.
    assert!(room.conns[0].on_loss(7));
    assert_eq!(
        room.conns[0].pending_items(),
        3,
        "the three items it carried"
    );
    room.commit_while_away();
    let (bytes, stats) = room.write(0, 9);
    assert!(stats.resynced);
    assert_eq!(
        (stats.added, stats.changed, stats.removed),
        (10, 0, 0),
        "the three the lost message carried and the seven changed since, whole"
    );
    room.deliver_and_settle(0, &bytes, 9);
}

/// A shared message lost after its connection was given a scope: the
/// scoped catch-up reads what the array routed to the scope, not the
/// history ring, so it compares the items in scope instead, and the
/// connection settles.
#[test]
fn a_shared_message_lost_once_the_connection_has_a_scope_is_resent() {
    let mut room = Room::new(200, 1);
    room.server.get_mut(room.ids[5]).unwrap().hp = 999;
    room.server.get_mut(room.ids[150]).unwrap().team = 77;
    room.server.commit();
    assert!(room.write(0, 7).1.shared);
    {
        let mut scope = room.server.scope(&mut room.conns[0]).unwrap();
        for &id in &room.ids {
            scope.include(id);
        }
    }
    assert!(room.conns[0].on_loss(7));
    room.server.commit();
    let (repair, stats) = room.write(0, 8);
    // Every item went whole anyway, as included items do; what matters
    // is that the loss is resolved, not left waiting for a history read.
    assert!(stats.resynced);
    room.deliver_and_settle(0, &repair, 8);
}

/// A connection that followed shared messages for a while, then fell more
/// than `HISTORY_LEN` commits behind, is compared against the array: only
/// the items that changed while it was away are sent, although none of the
/// changes it took in shared messages touched its per-item view.
#[test]
fn resync_after_shared_messages_sends_only_what_changed_while_away() {
    let mut room = Room::new(500, 2);
    for round in 0..20 {
        for n in 0..10 {
            room.server.get_mut(room.ids[round * 10 + n]).unwrap().hp += 1;
        }
        let sent = room.tick();
        assert!(sent[1].1.shared, "connection 1 takes the shared message");
    }
    // Connection 1 goes quiet for 70 commits; 7 items change meanwhile.
    room.commit_while_away();
    let (bytes, stats) = room.write(1, 1_000);
    assert!(stats.resynced);
    assert_eq!(
        (stats.added, stats.changed, stats.removed),
        (7, 0, 0),
        "only the items changed while away, resent whole"
    );
    room.clients[1].apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(room.clients[1], room.server);
}

/// Mostly field changes, now and then an add or a removal.
fn mutate(server: &mut FastArray<Unit>, rng: &mut ChaCha8Rng, next: &mut u32) {
    let ids: Vec<ReplicationId> = server.ids().collect();
    for _ in 0..rng.random_range(0..6) {
        if let Some(&id) = ids.get(rng.random_range(0..ids.len().max(1))) {
            let mut unit = server.get_mut(id).unwrap();
            match rng.random_range(0..3) {
                0 => unit.hp = rng.random(),
                1 => unit.team = rng.random(),
                _ => unit.name.push('x'),
            }
        }
    }
    if rng.random_bool(0.05) && !ids.is_empty() {
        server.remove(ids[rng.random_range(0..ids.len())]);
    }
    if rng.random_bool(0.05) || server.len() < 5 {
        *next += 1;
        server.push(unit(*next));
    }
}

/// One server, one connection per link profile (a perfect link twice, so
/// there are always two to share with), all written every tick: every
/// client converges, and shared messages were taken along the way.
fn run_many(seed: u64, ticks: u32) -> u64 {
    let mut profiles = LinkProfile::all_for_tests();
    profiles.push(LinkProfile::perfect());
    run_links(seed, ticks, profiles)
}

/// One server and one connection per profile in `profiles`, all written
/// every tick, until every client converges; returns how many messages
/// were the frame's shared one.
fn run_links(seed: u64, ticks: u32, profiles: Vec<LinkProfile>) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut server = FastArray::new();
    let mut next = 0;
    for _ in 0..20 {
        next += 1;
        server.push(unit(next));
    }
    let mut links: Vec<Link> = profiles
        .iter()
        .enumerate()
        .map(|(n, p)| Link::new(p.clone(), seed * 31 + n as u64))
        .collect();
    let mut conns: Vec<SendState> = profiles.iter().map(|_| SendState::new()).collect();
    let mut clients: Vec<FastArray<Unit>> = profiles.iter().map(|_| FastArray::new()).collect();
    let mut shared = 0;
    for now in 0..ticks + 400 {
        if now < ticks {
            mutate(&mut server, &mut rng, &mut next);
        } else if now == ticks {
            links.iter_mut().for_each(Link::heal);
        }
        server.commit();
        let packet = u32::from((65_500 + now) as u16);
        for ((conn, link), client) in conns.iter_mut().zip(&mut links).zip(&mut clients) {
            if now < ticks || !server.is_settled(conn) {
                let mut bytes = Vec::new();
                let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
                shared += u64::from(stats.shared);
                link.send(now, packet, bytes);
            }
            for bytes in link.deliver(now) {
                client
                    .apply_delta(&bytes, &mut ())
                    .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", link.profile().name));
            }
            for report in link.reports(now) {
                match report {
                    Report::Acked(id) => conn.on_ack(id),
                    Report::Lost(id) => conn.on_loss(id),
                };
            }
        }
        if now > ticks && links.iter().all(Link::idle) && conns.iter().all(|c| server.is_settled(c))
        {
            for (client, profile) in clients.iter().zip(&profiles) {
                assert_eq!(client, &server, "{} seed {seed}", profile.name);
            }
            return shared;
        }
    }
    panic!("seed {seed}: not settled 400 ticks after healing");
}

#[test]
fn many_connections_over_different_links_converge() {
    let mut shared = 0;
    for seed in 0..30 {
        shared += run_many(seed, 120);
    }
    assert!(shared > 1_000, "only {shared} shared messages were taken");
}

/// A lone caught-up connection takes the shared message too (it writes it
/// straight from the frame's changes and records no per-item work), and
/// converges over every link, loss repair included.
#[test]
fn a_lone_connection_takes_the_shared_message_and_converges() {
    for profile in LinkProfile::all_for_tests() {
        let mut shared = 0;
        for seed in 0..8 {
            shared += run_links(seed, 120, vec![profile.clone()]);
        }
        assert!(shared > 100, "{}: {shared} shared messages", profile.name);
    }
}

/// The long version of the above.
/// Run with `cargo test --release --test suite shared:: -- --ignored`.
#[test]
#[ignore = "soak: minutes of work"]
fn many_connections_over_different_links_converge_soak() {
    for seed in 0..1_000 {
        run_many(seed, 400);
    }
}
