//! The delta protocol, packet by packet: exact sizes, retirement, loss,
//! reordering, duplication, overflow, shared encoding, atomic apply.

use fastarray::{
    ApplyReport, Callbacks, DecodeError, FastArray, FieldMask, Replicate, ReplicationId, SendError,
    SendState,
};
use fastarray_testkit::counted;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    position: [f32; 3],
    velocity: [f32; 3],
    health: u8,
    ammo: u16,
    name: String,
}

fn agent(n: u32) -> Agent {
    Agent {
        position: [n as f32, 0.0, -(n as f32)],
        velocity: [0.0; 3],
        health: 100,
        ammo: n as u16,
        name: format!("a{n}"),
    }
}

/// A server with `n` agents and one client that holds all of them, acked.
struct Setup {
    server: FastArray<Agent>,
    conn: SendState,
    client: FastArray<Agent>,
    ids: Vec<ReplicationId>,
    next_packet: u32,
}

impl Setup {
    fn new(n: u32) -> Self {
        let mut server = FastArray::new();
        let ids = (0..n).map(|i| server.push(agent(i))).collect();
        server.commit();
        let mut setup = Setup {
            server,
            conn: SendState::new(),
            client: FastArray::new(),
            ids,
            next_packet: 0,
        };
        let (packet, bytes) = setup.write();
        setup.client.apply_delta(&bytes, &mut ()).unwrap();
        // An empty array sends an empty message, which needs no ack.
        assert_eq!(setup.conn.on_ack(packet), n > 0);
        assert_eq!(setup.client, setup.server);
        assert!(setup.server.is_settled(&setup.conn));
        setup
    }

    /// Writes the next packet; returns its id and bytes.
    fn write(&mut self) -> (u32, Vec<u8>) {
        let (packet, bytes, _) = self.write_stats();
        (packet, bytes)
    }

    fn write_stats(&mut self) -> (u32, Vec<u8>, fastarray::DeltaStats) {
        let packet = self.next_packet;
        self.next_packet += 1;
        let mut bytes = Vec::new();
        let stats = self
            .server
            .write_delta(&mut self.conn, packet, &mut bytes)
            .unwrap();
        assert_eq!(bytes.len() as u64, stats.bits.div_ceil(8));
        (packet, bytes, stats)
    }

    /// Writes, delivers and acks one packet; returns the message's bits.
    fn round(&mut self) -> u64 {
        let (packet, bytes, stats) = self.write_stats();
        self.client.apply_delta(&bytes, &mut ()).unwrap();
        self.conn.on_ack(packet);
        stats.bits
    }
}

/// Bits of a delta header: kind + short frame + the removal list's count
/// (`removals`) and the item list's count (`items`). A list that is not
/// empty also writes its gap code (see [`lone_id_bits`]).
fn header_bits(removals: u64, items: u64) -> u64 {
    let gamma = |v: u64| 2 * (64 - (v + 1).leading_zeros() as u64) - 1;
    let count = |n: u64| match n {
        0 => 1,
        1 => 2,
        _ => 2 + gamma(n - 2),
    };
    // With items, a bit says whether their entries share one field set.
    2 + 16 + count(removals) + count(items) + u64::from(items > 0)
}

/// Bits of a list of one id 9 to 14 bits long: its gap code (`1` + order
/// `N`, the id's bit length, in 4 bits), then `1` + `N` bits. Shorter ids
/// keep the Elias-delta code.
fn lone_id_bits(id: ReplicationId) -> u64 {
    let length = u64::from(64 - id.to_raw().leading_zeros());
    assert!((9..=14).contains(&length));
    5 + 1 + length
}

#[test]
fn nothing_to_send_costs_one_bit() {
    let mut s = Setup::new(100);
    s.server.commit();
    let (_, bytes, stats) = s.write_stats();
    assert_eq!((stats.bits, bytes.len()), (1, 1));
    // Touching without changing is not a change either.
    let id = s.ids[7];
    let hp = s.server.get(id).unwrap().health;
    s.server.get_mut(id).unwrap().health = hp;
    s.server.commit();
    assert_eq!(s.round(), 1);
    assert_eq!(s.client, s.server);
}

#[test]
fn a_pure_reorder_costs_one_bit() {
    let mut s = Setup::new(10_000);
    s.server.sort_by(|a, b| b.ammo.cmp(&a.ammo));
    s.server.swap(s.ids[0], s.ids[9_999]);
    s.server.commit();
    assert_eq!(s.round(), 1);
    assert_eq!(s.client, s.server);
}

/// Entries that change the same fields state them once for the message;
/// entries that change different ones each carry their own.
#[test]
fn entries_changing_the_same_fields_share_one_field_set() {
    // Ids 0, 1, 2: the Elias-delta code (1 bit), a 1-bit gap each.
    let ids_bits = 1 + 3;
    // Selector + gamma(0) + a 3-bit handle of 5 fields.
    let set = 1 + 1 + 3;
    let mut s = Setup::new(100);
    for &id in &s.ids[..3] {
        s.server.get_mut(id).unwrap().ammo += 1;
    }
    s.server.commit();
    let shared = header_bits(0, 3) + ids_bits + set + 3 * (1 + 16);
    assert_eq!(s.round(), shared);
    assert_eq!(s.client, s.server);

    // Ammo for two, health for the third: each entry has its own set.
    for &id in &s.ids[..2] {
        s.server.get_mut(id).unwrap().ammo += 1;
    }
    s.server.get_mut(s.ids[2]).unwrap().health -= 1;
    s.server.commit();
    let own = header_bits(0, 3) + ids_bits + 2 * (1 + set + 16) + (1 + set + 8);
    assert_eq!(s.round(), own);
    assert_eq!(s.client, s.server);
}

#[test]
fn one_changed_u16_field_sends_only_that_field() {
    let mut s = Setup::new(10_000);
    let id = s.ids[5_000];
    s.server.get_mut(id).unwrap().ammo = 12_345;
    s.server.commit();
    // id + whole/fields flag + field set (selector + gamma(0) + 3-bit handle) + 16 bits.
    let expected = header_bits(0, 1) + lone_id_bits(id) + 1 + (1 + 1 + 3) + 16;
    assert_eq!(s.round(), expected);
    assert_eq!(expected, 63);
    assert_eq!(s.client.get(id).unwrap().ammo, 12_345);
    assert_eq!(s.client, s.server);
}

#[test]
fn removing_one_item_in_the_middle_sends_one_id() {
    let mut s = Setup::new(10_000);
    let id = s.ids[5_000];
    s.server.remove(id);
    s.server.commit();
    let expected = header_bits(1, 0) + lone_id_bits(id);
    assert_eq!(s.round(), expected);
    assert_eq!(expected, 40);
    assert!(s.client.get(id).is_none());
    assert_eq!(s.client, s.server);
}

#[test]
fn each_change_is_sent_once_without_loss() {
    let mut s = Setup::new(50);
    for round in 0..20u32 {
        for k in 0..3 {
            let id = s.ids[((round * 7 + k * 11) % 50) as usize];
            s.server.get_mut(id).unwrap().health = (round + k) as u8;
        }
        s.server.commit();
        s.round();
        assert_eq!(s.client, s.server);
        // Everything written is acked: the next write has nothing to send.
        s.server.commit();
        assert_eq!(s.round(), 1, "round {round}");
    }
}

#[test]
fn a_lost_packet_is_resent_exactly_once() {
    let mut s = Setup::new(10);
    s.server.get_mut(s.ids[3]).unwrap().ammo = 1;
    s.server.commit();
    let (lost, _) = s.write();
    assert!(s.conn.on_loss(lost));
    assert!(!s.conn.on_loss(lost), "a second report changes nothing");
    s.server.commit();
    let (p, bytes, stats) = s.write_stats();
    assert_eq!((stats.changed, stats.added, stats.removed), (1, 0, 0));
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    s.conn.on_ack(p);
    assert_eq!(s.client, s.server);
    s.server.commit();
    assert_eq!(s.round(), 1);
}

#[test]
fn a_loss_covered_by_a_later_packet_is_not_resent() {
    let mut s = Setup::new(10);
    let id = s.ids[2];
    s.server.get_mut(id).unwrap().ammo = 101;
    s.server.commit();
    let (first, _) = s.write();
    s.server.get_mut(id).unwrap().ammo = 102;
    s.server.commit();
    // The second packet carries the newer `ammo` and nothing else.
    let (second, bytes, stats) = s.write_stats();
    assert_eq!(stats.changed, 1);
    let mut events = Recorder::default();
    s.client.apply_delta(&bytes, &mut events).unwrap();
    assert_eq!(
        events.0,
        [
            format!("change {id:?} {:?}", FieldMask::single(3)),
            "receive".into()
        ]
    );
    s.conn.on_loss(first);
    s.conn.on_ack(second);
    s.server.commit();
    assert_eq!(s.round(), 1, "the loss was covered by the second packet");
    assert_eq!(s.client, s.server);
}

#[test]
fn a_loss_resends_only_the_fields_no_later_packet_carried() {
    let mut s = Setup::new(10);
    let id = s.ids[2];
    {
        let mut a = s.server.get_mut(id).unwrap();
        a.ammo = 101;
        a.health = 7;
    }
    s.server.commit();
    let (first, _) = s.write();
    s.server.get_mut(id).unwrap().health = 8;
    s.server.commit();
    let (second, bytes) = s.write();
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    s.conn.on_ack(second);
    s.conn.on_loss(first);
    s.server.commit();
    let (p, bytes) = s.write();
    let mut events = Recorder::default();
    s.client.apply_delta(&bytes, &mut events).unwrap();
    s.conn.on_ack(p);
    assert_eq!(
        events.0,
        [
            format!("change {id:?} {:?}", FieldMask::single(3)),
            "receive".into()
        ],
        "only `ammo` is resent; the later packet carried `health`"
    );
    assert_eq!(s.client, s.server);
}

#[test]
fn a_late_older_copy_still_delivers_fields_the_newer_one_lacks() {
    let mut s = Setup::new(5);
    let id = s.ids[1];
    s.server.get_mut(id).unwrap().ammo = 111;
    s.server.commit();
    let (p1, older) = s.write();
    s.server.get_mut(id).unwrap().health = 9;
    s.server.commit();
    let (p2, newer) = s.write();
    s.client.apply_delta(&newer, &mut ()).unwrap();
    s.client.apply_delta(&older, &mut ()).unwrap();
    s.conn.on_ack(p2);
    s.conn.on_ack(p1);
    assert_eq!(s.client, s.server, "each field keeps its newest value");
    s.server.commit();
    assert_eq!(s.round(), 1);
}

#[test]
fn a_lost_change_of_a_removed_item_becomes_just_the_removal() {
    let mut s = Setup::new(10);
    let id = s.ids[4];
    s.server.get_mut(id).unwrap().ammo = 9;
    s.server.commit();
    let (lost, _) = s.write();
    s.server.remove(id);
    s.server.commit();
    s.conn.on_loss(lost);
    let (p, bytes, stats) = s.write_stats();
    assert_eq!((stats.removed, stats.changed, stats.added), (1, 0, 0));
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    s.conn.on_ack(p);
    assert_eq!(s.client, s.server);
}

#[test]
fn a_lost_removal_is_resent() {
    let mut s = Setup::new(10);
    s.server.remove(s.ids[1]);
    s.server.commit();
    let (lost, _) = s.write();
    s.conn.on_loss(lost);
    s.server.commit();
    let (_, _, stats) = s.write_stats();
    assert_eq!(stats.removed, 1);
}

#[test]
fn stale_and_duplicate_acks_do_nothing() {
    let mut s = Setup::new(10);
    s.server.get_mut(s.ids[0]).unwrap().ammo = 3;
    s.server.commit();
    let (p, bytes) = s.write();
    assert!(!s.conn.on_ack(p + 100), "unknown packet");
    assert!(s.conn.on_ack(p));
    assert!(!s.conn.on_ack(p), "duplicate ack");
    assert!(!s.conn.on_loss(p), "loss after ack");
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    s.server.commit();
    assert_eq!(s.round(), 1);
    assert_eq!(s.client, s.server);
}

#[test]
fn a_packet_id_still_in_flight_cannot_be_reused() {
    let mut s = Setup::new(3);
    s.server.get_mut(s.ids[0]).unwrap().ammo = 3;
    s.server.commit();
    let mut out = Vec::new();
    s.server.write_delta(&mut s.conn, 77, &mut out).unwrap();
    let before = out.clone();
    assert_eq!(
        s.server.write_delta(&mut s.conn, 77, &mut out),
        Err(SendError::PacketInFlight { packet: 77 })
    );
    assert_eq!(out, before, "nothing written on error");
    s.conn.on_ack(77);
    assert!(s.server.write_delta(&mut s.conn, 77, &mut out).is_ok());
}

#[test]
fn writing_with_uncommitted_changes_is_refused() {
    let mut s = Setup::new(3);
    s.server.get_mut(s.ids[0]).unwrap().ammo = 3;
    let mut out = Vec::new();
    assert_eq!(
        s.server.write_delta(&mut s.conn, 1, &mut out),
        Err(SendError::Uncommitted)
    );
    assert!(out.is_empty());
}

#[test]
fn u16_packet_ids_wrap_around() {
    let mut s = Setup::new(20);
    let mut seq: u16 = 65_530;
    let mut in_flight = Vec::new();
    for round in 0..40u32 {
        let id = s.ids[(round % 20) as usize];
        s.server.get_mut(id).unwrap().ammo = 1000 + round as u16;
        s.server.commit();
        let mut bytes = Vec::new();
        s.server
            .write_delta(&mut s.conn, u32::from(seq), &mut bytes)
            .unwrap();
        in_flight.push((seq, bytes));
        seq = seq.wrapping_add(1);
        // Deliver and ack two rounds late, newest first.
        if in_flight.len() == 3 {
            for (p, bytes) in in_flight.drain(..).rev() {
                s.client.apply_delta(&bytes, &mut ()).unwrap();
                assert!(s.conn.on_ack(u32::from(p)));
            }
        }
    }
    for (p, bytes) in in_flight.drain(..) {
        s.client.apply_delta(&bytes, &mut ()).unwrap();
        s.conn.on_ack(u32::from(p));
    }
    s.server.commit();
    s.round();
    assert_eq!(s.client, s.server);
}

#[test]
fn a_stale_change_does_not_regress_a_newer_one() {
    let mut s = Setup::new(5);
    let id = s.ids[1];
    s.server.get_mut(id).unwrap().ammo = 11;
    s.server.commit();
    let (p1, older) = s.write();
    s.server.get_mut(id).unwrap().ammo = 12;
    s.server.commit();
    let (p2, newer) = s.write();
    s.client.apply_delta(&newer, &mut ()).unwrap();
    let report = s.client.apply_delta(&older, &mut ()).unwrap();
    assert_eq!((report.changed, report.skipped), (0, 1));
    assert_eq!(s.client.get(id).unwrap().ammo, 12);
    s.conn.on_ack(p2);
    s.conn.on_ack(p1);
    assert_eq!(s.client, s.server);
}

#[test]
fn a_stale_add_does_not_resurrect_a_removed_item() {
    let mut s = Setup::new(2);
    let id = s.server.push(agent(99));
    s.server.commit();
    let (p1, add) = s.write();
    s.server.remove(id);
    s.server.commit();
    let (p2, removal) = s.write();
    let report = s.client.apply_delta(&removal, &mut ()).unwrap();
    assert_eq!(report.removed, 0, "the removal overtook the add");
    let report = s.client.apply_delta(&add, &mut ()).unwrap();
    assert_eq!((report.added, report.skipped), (0, 1));
    assert!(s.client.get(id).is_none());
    s.conn.on_ack(p1);
    s.conn.on_ack(p2);
    s.server.commit();
    s.round();
    assert_eq!(s.client, s.server);
}

#[test]
fn a_late_copy_of_a_packet_counted_lost_is_harmless() {
    let mut s = Setup::new(5);
    let id = s.ids[0];
    s.server.get_mut(id).unwrap().ammo = 5;
    s.server.commit();
    let (p1, late) = s.write();
    s.conn.on_loss(p1);
    s.server.get_mut(id).unwrap().ammo = 6;
    s.server.commit();
    let (p2, bytes) = s.write();
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    s.conn.on_ack(p2);
    s.client.apply_delta(&late, &mut ()).unwrap();
    assert_eq!(s.client.get(id).unwrap().ammo, 6);
    assert_eq!(s.client, s.server);
}

#[test]
fn a_packet_delivered_twice_changes_nothing_the_second_time() {
    let mut s = Setup::new(5);
    s.server.get_mut(s.ids[0]).unwrap().ammo = 5;
    s.server.remove(s.ids[1]);
    s.server.push(agent(50));
    s.server.commit();
    let (_, bytes) = s.write();
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    let after_first = s.client.clone();
    let mut events = Recorder::default();
    let report = s.client.apply_delta(&bytes, &mut events).unwrap();
    assert_eq!((report.added, report.changed, report.removed), (0, 0, 0));
    assert_eq!(events.0, ["receive"]);
    assert_eq!(s.client, after_first);
}

#[test]
fn a_connection_silent_for_100_commits_converges_with_one_write() {
    let mut s = Setup::new(300);
    for tick in 0..100u32 {
        let id = s.ids[(tick * 3 % 300) as usize];
        if let Some(mut a) = s.server.get_mut(id) {
            a.health = tick as u8;
        }
        if tick % 10 == 0 {
            s.server.remove(s.ids[(tick * 7 % 300) as usize]);
            s.server.push(agent(1000 + tick));
        }
        s.server.commit();
    }
    let (p, bytes, stats) = s.write_stats();
    assert!(stats.resynced);
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(s.client, s.server);
    s.conn.on_ack(p);
    s.server.commit();
    assert_eq!(s.round(), 1);
}

#[test]
fn a_new_connection_late_in_the_game_gets_everything() {
    let mut server = FastArray::new();
    for n in 0..100 {
        server.push(agent(n));
        server.commit();
    }
    let mut conn = SendState::new();
    let mut client = FastArray::new();
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 0, &mut bytes).unwrap();
    assert!(stats.resynced);
    assert_eq!(stats.added, 100);
    client.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(client, server);
}

#[test]
fn a_partial_change_for_an_unknown_item_is_an_error() {
    let mut s = Setup::new(3);
    s.server.get_mut(s.ids[2]).unwrap().ammo = 7;
    s.server.commit();
    let (_, bytes) = s.write();
    let mut stranger: FastArray<Agent> = FastArray::new();
    // Give the stranger a frame reference so the short frame decodes.
    let mut snapshot = Vec::new();
    s.server.write_snapshot(&mut snapshot).unwrap();
    let mut empty_server = FastArray::<Agent>::new();
    empty_server.commit();
    let mut empty = Vec::new();
    empty_server.write_snapshot(&mut empty).unwrap();
    stranger.apply_snapshot(&empty).unwrap();
    assert_eq!(
        stranger.apply_delta(&bytes, &mut ()),
        Err(DecodeError::UnknownItem { id: s.ids[2] })
    );
    assert!(stranger.is_empty());
}

#[test]
fn a_snapshot_is_not_a_delta() {
    let s = Setup::new(3);
    let mut snapshot = Vec::new();
    s.server.write_snapshot(&mut snapshot).unwrap();
    let mut client = FastArray::<Agent>::new();
    assert!(matches!(
        client.apply_delta(&snapshot, &mut ()),
        Err(DecodeError::UnexpectedMessageKind {
            found: "snapshot",
            ..
        })
    ));
}

#[derive(Default)]
struct Recorder(Vec<String>);

impl Callbacks<Agent> for Recorder {
    fn pre_remove(&mut self, id: ReplicationId, _: &Agent) {
        self.0.push(format!("remove {id:?}"));
    }
    fn post_add(&mut self, id: ReplicationId, _: &Agent) {
        self.0.push(format!("add {id:?}"));
    }
    fn post_change(&mut self, id: ReplicationId, _: &Agent, changed: FieldMask) {
        self.0.push(format!("change {id:?} {changed:?}"));
    }
    fn post_receive(&mut self, _: &ApplyReport) {
        self.0.push("receive".into());
    }
}

#[test]
fn callbacks_come_in_unreal_order() {
    let mut s = Setup::new(5);
    let changed = s.ids[0];
    let removed = s.ids[4];
    s.server.get_mut(changed).unwrap().health = 1;
    s.server.remove(removed);
    let added = s.server.push(agent(7));
    s.server.commit();
    let (_, bytes) = s.write();
    let mut events = Recorder::default();
    s.client.apply_delta(&bytes, &mut events).unwrap();
    assert_eq!(
        events.0,
        [
            format!("remove {removed:?}"),
            format!("add {added:?}"),
            format!("change {changed:?} {:?}", FieldMask::single(2)),
            "receive".into(),
        ]
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Probe {
    value: counted::Counted,
    other: u8,
}

#[test]
fn caught_up_connections_share_one_encoding_per_item_per_frame() {
    let mut server = FastArray::new();
    let ids: Vec<_> = (0..200)
        .map(|n| {
            server.push(Probe {
                value: counted::Counted(n),
                other: 0,
            })
        })
        .collect();
    server.commit();
    let mut conns: Vec<SendState> = (0..64).map(|_| SendState::new()).collect();
    let mut clients: Vec<FastArray<Probe>> = (0..64).map(|_| FastArray::new()).collect();

    for (tick, packet) in (0..3u32).zip(0..) {
        if tick > 0 {
            for &id in ids.iter().skip(tick as usize).step_by(10) {
                server.get_mut(id).unwrap().value.0 += 1;
            }
            server.commit();
        }
        counted::take_encodes();
        let mut first: Option<Vec<u8>> = None;
        for (conn, client) in conns.iter_mut().zip(&mut clients) {
            let mut bytes = Vec::new();
            server.write_delta(conn, packet, &mut bytes).unwrap();
            match &first {
                None => first = Some(bytes.clone()),
                Some(first) => {
                    assert_eq!(&bytes, first, "identical bytes for caught-up connections")
                }
            }
            client.apply_delta(&bytes, &mut ()).unwrap();
            conn.on_ack(packet);
        }
        let items_sent = if tick == 0 { 200 } else { 20 };
        assert_eq!(
            counted::take_encodes(),
            items_sent,
            "tick {tick}: one encoding per item, not per connection"
        );
    }
    for client in &clients {
        assert_eq!(client, &server);
    }
}

#[test]
fn a_budget_is_never_exceeded_and_the_rest_follows() {
    let mut s = Setup::new(0);
    for n in 0..500 {
        s.server.push(agent(n));
    }
    s.server.commit();
    let mut packets = 0;
    loop {
        let packet = s.next_packet;
        s.next_packet += 1;
        let mut bytes = Vec::new();
        let stats = s
            .server
            .write_delta_with_budget(&mut s.conn, packet, &mut bytes, 1200)
            .unwrap();
        assert!(stats.bits <= 1200, "{} bits", stats.bits);
        s.client.apply_delta(&bytes, &mut ()).unwrap();
        s.conn.on_ack(packet);
        packets += 1;
        if stats.deferred == 0 {
            break;
        }
        assert!(stats.added > 0, "progress every packet");
        s.server.commit();
    }
    assert!(packets > 10);
    assert_eq!(s.client, s.server);
    assert_eq!(
        s.server
            .write_delta_with_budget(&mut s.conn, 9999, &mut Vec::new(), 0),
        Err(SendError::BudgetTooSmall { budget: 0 })
    );
}

#[test]
fn a_budget_sends_removals_first_then_the_oldest_work() {
    let mut s = Setup::new(100);
    s.server.get_mut(s.ids[90]).unwrap().ammo = 1; // older change
    s.server.commit();
    let (lost, _) = s.write();
    s.conn.on_loss(lost);
    s.server.get_mut(s.ids[10]).unwrap().ammo = 2; // newer change
    s.server.remove(s.ids[50]);
    s.server.commit();
    let mut bytes = Vec::new();
    // Room for the header, one removal and one change, not two changes.
    let stats = s
        .server
        .write_delta_with_budget(&mut s.conn, 100, &mut bytes, 80)
        .unwrap();
    assert_eq!((stats.removed, stats.changed, stats.deferred), (1, 1, 1));
    s.client.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(
        s.client.get(s.ids[90]).unwrap().ammo,
        1,
        "the older change went first"
    );
    assert_ne!(s.client.get(s.ids[10]).unwrap().ammo, 2);
}

/// Sends a few messages of every kind and returns them with the mirror
/// state each applies to.
fn sample_messages() -> Vec<(FastArray<Agent>, Vec<u8>)> {
    let mut s = Setup::new(20);
    let mut out = Vec::new();
    for round in 0..6u32 {
        let id = s.ids[(round * 3) as usize];
        s.server.get_mut(id).unwrap().name.push('x');
        s.server.get_mut(s.ids[19 - round as usize]).unwrap().health = round as u8;
        if round % 2 == 0 {
            s.server.remove(s.ids[1 + round as usize]);
            s.server.push(agent(100 + round));
        }
        s.server.commit();
        let (p, bytes) = s.write();
        out.push((s.client.clone(), bytes.clone()));
        s.client.apply_delta(&bytes, &mut ()).unwrap();
        s.conn.on_ack(p);
    }
    out
}

fn contents(array: &FastArray<Agent>) -> Vec<(ReplicationId, Agent)> {
    let mut items: Vec<_> = array.iter().map(|(id, a)| (id, a.clone())).collect();
    items.sort_by_key(|&(id, _)| id);
    items
}

#[test]
fn every_prefix_and_bit_flip_is_applied_whole_or_not_at_all() {
    for (mirror, bytes) in sample_messages() {
        let before = contents(&mirror);
        for len in 0..8 * bytes.len() {
            let mut prefix = bytes[..len.div_ceil(8)].to_vec();
            if len % 8 != 0 {
                *prefix.last_mut().unwrap() &= (1u8 << (len % 8)) - 1;
            }
            let mut m = mirror.clone();
            if m.apply_delta(&prefix, &mut ()).is_err() {
                assert_eq!(
                    contents(&m),
                    before,
                    "a failed {len}-bit prefix changed the mirror"
                );
            }
        }
        for bit in 0..8 * bytes.len() {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let mut m = mirror.clone();
            if m.apply_delta(&flipped, &mut ()).is_err() {
                assert_eq!(
                    contents(&m),
                    before,
                    "a failed flip of bit {bit} changed the mirror"
                );
            }
        }
    }
}

/// A delta written by hand: kind, long-form `frame`, an optional removal of
/// `removal`, no items.
fn crafted_delta(frame: u64, removal: Option<u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut w = fastarray::BitWriter::new(&mut bytes);
    w.write_bits(0b01, 2); // `1 0`: a delta
    w.write_bool(true); // long frame
    w.write_varint(frame);
    match removal {
        Some(id) => {
            w.write_bits(0b01, 2); // one removal
            w.write_bool(false); // Elias-delta gaps
            w.write_varint(id);
        }
        None => w.write_bool(false),
    }
    w.write_bool(false); // no items
    w.finish();
    bytes
}

/// Found by review: a frame near `u64::MAX` overflowed the mirror's
/// arithmetic (`tombstone + WINDOW`, `newest + WINDOW`), a panic in debug
/// builds. Frames above `u64::MAX − 128` are refused now.
#[test]
fn frames_near_u64_max_are_refused_not_overflowed() {
    let mut mirror = FastArray::<Agent>::new();
    for frame in [u64::MAX, u64::MAX - 1, u64::MAX - 127] {
        let result = mirror.apply_delta(&crafted_delta(frame, Some(3)), &mut ());
        assert!(
            matches!(
                result,
                Err(DecodeError::VarintOutOfRange {
                    target: "frame",
                    ..
                })
            ),
            "{frame}: {result:?}"
        );
        assert_eq!(mirror, FastArray::new());
    }
    // The largest frame allowed, then a short frame resolved against it.
    let highest = u64::MAX - 128;
    mirror
        .apply_delta(&crafted_delta(highest, Some(3)), &mut ())
        .unwrap();
    let mut bytes = Vec::new();
    let mut w = fastarray::BitWriter::new(&mut bytes);
    w.write_bits(0b01, 2);
    w.write_bool(false); // short frame
    w.write_bits(highest + 1, 15);
    w.write_bits(0b01, 2); // one removal
    w.write_bool(false);
    w.write_varint(4);
    w.write_bool(false);
    w.finish();
    mirror.apply_delta(&bytes, &mut ()).unwrap();
    // A snapshot cannot name such a frame either.
    let mut bytes = Vec::new();
    let mut w = fastarray::BitWriter::new(&mut bytes);
    w.write_bits(0b011, 3); // snapshot
    w.write_bits(<Agent as Replicate>::SCHEMA_HASH, 64);
    w.write_varint(u64::MAX);
    w.write_varint(0);
    w.finish();
    assert!(matches!(
        FastArray::<Agent>::from_snapshot(&bytes),
        Err(DecodeError::VarintOutOfRange {
            target: "frame",
            ..
        })
    ));
}
