//! `FastArray`s inside the items of a `FastArray`: per-id deltas at every
//! level, with loss recovery through the outer connection's packets.

use fastarray::{
    Callbacks, FastArray, FieldMask, Replicate, Replicated, ReplicationId, SendError, SendState,
};
use fastarray_testkit::fixtures::ranked::{Member, Squad, squad};
use fastarray_testkit::{drive, exchange, exchange_object, link};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Member `inner` of squad `outer`, for writing.
fn member(
    server: &mut FastArray<Squad>,
    outer: ReplicationId,
    inner: ReplicationId,
    edit: impl FnOnce(&mut Member),
) {
    edit(
        &mut server
            .get_mut(outer)
            .unwrap()
            .members
            .get_mut(inner)
            .unwrap(),
    );
}

/// 100 squads of 50 members each, synchronised and acknowledged.
fn synced() -> (FastArray<Squad>, SendState, FastArray<Squad>) {
    let mut server = FastArray::new();
    for tag in 0..100 {
        server.push(squad(tag, 50));
    }
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    exchange(&mut server, &mut conn, &mut client, 0);
    assert_eq!(client, server);
    // One more exchange so the arrays' frames are acknowledged too.
    exchange(&mut server, &mut conn, &mut client, 1);
    (server, conn, client)
}

#[test]
fn an_item_type_counts_its_arrays_apart_from_its_fields() {
    assert_eq!(Squad::FIELD_COUNT, 1);
    assert_eq!(Squad::ARRAY_FIELDS, 1);
    assert_eq!(Member::ARRAY_FIELDS, 0);
}

#[test]
fn a_single_inner_change_sends_outer_id_inner_id_and_field() {
    let (mut server, mut conn, mut client) = synced();
    let outer = ReplicationId::from_raw(70);
    let inner = ReplicationId::from_raw(30);
    member(&mut server, outer, inner, |m| m.hp = 999);
    let changes = server.commit();
    assert!(
        changes.changed().is_empty(),
        "no plain field of the squad changed"
    );
    assert_eq!(changes.arrays_changed(), [outer]);

    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 2, &mut bytes).unwrap();
    // Outer: kind, short frame, no removals, one item and its gap code
    // (Elias-delta), no shared field set, id 70 (varint, 11), not whole,
    // no plain fields.
    let outer_bits = 2 + 16 + 1 + (2 + 1) + 1 + 11 + 1 + 1;
    // Inner: kind, short frame, no removals, one item and its gap code, no
    // shared field set, id 30 (varint, 9), not whole, field set (selector
    // + 2-bit mask), the u16.
    let inner_bits = 2 + 16 + 1 + (2 + 1) + 1 + 9 + 1 + (1 + 2) + 16;
    assert_eq!(outer_bits + inner_bits, 88);
    assert_eq!(stats.bits, outer_bits + inner_bits);
    // Against sending the squad's whole member array (to a fresh connection).
    let mut members = server.get(outer).unwrap().members.clone();
    let whole = members.write_delta(&mut SendState::new(), 0, &mut Vec::new());
    assert_eq!(whole.unwrap().bits, 1_123);
    assert_eq!(
        (stats.added, stats.changed),
        (0, 2),
        "the squad and the member"
    );

    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(2);
    assert_eq!(client, server);
    assert_eq!(
        client.get(outer).unwrap().members.get(inner).unwrap().hp,
        999
    );
}

#[test]
fn a_plain_change_sends_no_member() {
    let (mut server, mut conn, mut client) = synced();
    server.get_mut(ReplicationId::from_raw(5)).unwrap().tag = 77;
    // Outer: header (with the bit saying no field set is shared), id 5
    // (varint, 5), not whole, plain fields follow, the one-field set
    // (selector + 1-bit mask), the u8; then an empty inner delta.
    let bits = exchange(&mut server, &mut conn, &mut client, 2);
    assert_eq!(bits, (2 + 16 + 1 + 2 + 1 + 1) + 5 + 1 + 1 + (1 + 1) + 8 + 1);
    assert_eq!(client, server);
}

#[test]
fn squads_come_and_go_with_their_members() {
    let (mut server, mut conn, mut client) = synced();
    let added = server.push(squad(200, 7));
    server.remove(ReplicationId::from_raw(3));
    exchange(&mut server, &mut conn, &mut client, 2);
    assert_eq!(client.get(added).unwrap().members.len(), 7);
    assert!(!client.contains(ReplicationId::from_raw(3)));

    // Members join, leave and change in one squad, in one frame.
    {
        let mut squad = server.get_mut(added).unwrap();
        let first = squad.members.ids().next().unwrap();
        squad.members.remove(first);
        squad.members.push(Member { hp: 1, rank: 9 });
        let last = squad.members.ids().next_back().unwrap();
        squad.members.get_mut(last).unwrap().rank = 3;
    }
    exchange(&mut server, &mut conn, &mut client, 3);
    assert_eq!(client, server);
    assert!(server.is_settled(&conn));
    // One send state per squad the client holds, none for the removed one.
    assert_eq!(conn.inner_arrays(), server.len());
    assert_eq!(conn.client_items(), server.len());
}

#[test]
fn a_lost_inner_change_is_resent_alone() {
    let (mut server, mut conn, mut client) = synced();
    let outer = ReplicationId::from_raw(8);
    let inner = ReplicationId::from_raw(2);
    member(&mut server, outer, inner, |m| m.rank = 7);
    server.commit();
    let mut lost = Vec::new();
    let first = server.write_delta(&mut conn, 2, &mut lost).unwrap();
    assert!(conn.on_loss(2));

    // Nothing else changed: the repair is the same change again.
    server.commit();
    let mut bytes = Vec::new();
    let repair = server.write_delta(&mut conn, 3, &mut bytes).unwrap();
    assert_eq!((repair.changed, repair.added), (2, 0));
    assert_eq!(repair.bits, first.bits);
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(3);
    assert_eq!(client, server);
    assert!(server.is_settled(&conn));

    // The lost packet arriving late changes nothing.
    client.apply_delta(&lost, &mut ()).unwrap();
    assert_eq!(client, server);
}

#[test]
fn a_lost_add_is_resent_with_its_members() {
    let mut server = FastArray::new();
    let id = server.push(squad(1, 4));
    server.commit();
    let mut conn = SendState::new();
    server.write_delta(&mut conn, 0, &mut Vec::new()).unwrap();
    // Members change while the add is in flight, then the add is lost.
    server
        .get_mut(id)
        .unwrap()
        .members
        .push(Member { hp: 5, rank: 5 });
    server.commit();
    let mut second = Vec::new();
    server.write_delta(&mut conn, 1, &mut second).unwrap();
    conn.on_loss(0);

    let mut client = FastArray::<Squad>::new();
    // The second packet alone is a whole squad with the new member only…
    client.apply_delta(&second, &mut ()).unwrap();
    assert_eq!(client.get(id).unwrap().members.len(), 1);
    conn.on_ack(1);
    // …and the repair brings the other four.
    exchange(&mut server, &mut conn, &mut client, 2);
    assert_eq!(client, server);
    assert!(server.is_settled(&conn));
}

#[derive(Default)]
struct ChangeLog(Vec<(ReplicationId, FieldMask)>);

impl Callbacks<Squad> for ChangeLog {
    fn post_change(&mut self, id: ReplicationId, _item: &Squad, changed: FieldMask) {
        self.0.push((id, changed));
    }
}

#[test]
fn a_change_inside_the_arrays_reports_an_empty_field_mask() {
    let (mut server, mut conn, mut client) = synced();
    let outer = ReplicationId::from_raw(1);
    server
        .get_mut(outer)
        .unwrap()
        .members
        .push(Member { hp: 1, rank: 1 });
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 2, &mut bytes).unwrap();
    let mut log = ChangeLog::default();
    let report = client.apply_delta(&bytes, &mut log).unwrap();
    assert_eq!(log.0, [(outer, FieldMask::EMPTY)]);
    assert_eq!(report.changed, 1);
}

#[test]
fn budgets_hold_for_the_whole_message_and_everything_arrives() {
    let mut server = FastArray::new();
    for tag in 0..20 {
        server.push(squad(tag, 30));
    }
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    let budget = 600;
    for packet in 0..1000 {
        let mut bytes = Vec::new();
        let stats = server
            .write_delta_with_budget(&mut conn, packet, &mut bytes, budget)
            .unwrap();
        assert!(stats.bits <= budget, "{} > {budget}", stats.bits);
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        if server.is_settled(&conn) {
            break;
        }
        server.commit();
    }
    assert!(server.is_settled(&conn));
    assert_eq!(client, server);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Tiny {
    #[replicate(bits = 2)]
    level: u8,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Holder {
    #[replicate(array)]
    tinies: FastArray<Tiny>,
}

#[test]
fn an_inner_encode_error_leaves_nothing_in_flight() {
    let mut server = FastArray::new();
    let holder = server.push(Holder {
        tinies: FastArray::new(),
    });
    let fine = server
        .get_mut(holder)
        .unwrap()
        .tinies
        .push(Tiny { level: 1 });
    let mut conn = SendState::new();
    let mut client = FastArray::new();
    exchange(&mut server, &mut conn, &mut client, 0);

    let bad = server
        .get_mut(holder)
        .unwrap()
        .tinies
        .push(Tiny { level: 9 });
    server.commit();
    let error = server
        .write_delta(&mut conn, 1, &mut Vec::new())
        .unwrap_err();
    assert!(
        matches!(error, SendError::Encode { id, .. } if id == bad),
        "{error}"
    );

    // Fixed, the same packet id can be used again and everything arrives.
    server
        .get_mut(holder)
        .unwrap()
        .tinies
        .get_mut(bad)
        .unwrap()
        .level = 3;
    exchange(&mut server, &mut conn, &mut client, 1);
    assert_eq!(client, server);
    assert!(client.get(holder).unwrap().tinies.contains(fine));
    assert!(server.is_settled(&conn));
}

#[test]
fn an_item_removed_after_a_failed_write_leaves_no_state() {
    let mut server = FastArray::new();
    let mut tinies = FastArray::new();
    tinies.push(Tiny { level: 9 }); // does not fit in 2 bits
    let holder = server.push(Holder { tinies });
    server.commit();
    let mut conn = SendState::new();
    assert!(server.write_delta(&mut conn, 0, &mut Vec::new()).is_err());
    server.remove(holder);
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 0, &mut bytes).unwrap();
    assert_eq!(bytes, [0], "nothing to send");
    assert_eq!(conn.inner_arrays(), 0);
    assert!(server.is_settled(&conn));
}

#[test]
fn snapshots_carry_the_arrays_inside_items() {
    let (server, _, _) = synced();
    let mut bytes = Vec::new();
    server.write_snapshot(&mut bytes).unwrap();
    let copy = FastArray::<Squad>::from_snapshot(&bytes).unwrap();
    assert_eq!(copy, server);

    let mut small = FastArray::new();
    for tag in 0..10 {
        small.push(squad(tag, 5));
    }
    small.commit();
    let mut bytes = Vec::new();
    small.write_snapshot(&mut bytes).unwrap();
    for len in 0..bytes.len() {
        assert!(FastArray::<Squad>::from_snapshot(&bytes[..len]).is_err());
    }
}

#[test]
fn every_truncation_and_bit_flip_is_all_or_nothing() {
    let (mut server, mut conn, client) = synced();
    let outer = ReplicationId::from_raw(40);
    {
        let mut squad = server.get_mut(outer).unwrap();
        squad.tag = 1;
        squad.members.push(Member { hp: 3, rank: 2 });
        let id = squad.members.ids().nth(4).unwrap();
        squad.members.get_mut(id).unwrap().hp = 4;
    }
    server.push(squad(9, 3));
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 2, &mut bytes).unwrap();
    for len in 0..8 * bytes.len() {
        let mut prefix = bytes[..len.div_ceil(8)].to_vec();
        if len % 8 != 0 {
            *prefix.last_mut().unwrap() &= (1u8 << (len % 8)) - 1;
        }
        let mut mirror = client.clone();
        if mirror.apply_delta(&prefix, &mut ()).is_err() {
            assert_eq!(mirror, client, "{len} bits");
        }
    }
    for bit in 0..8 * bytes.len() {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let mut mirror = client.clone();
        if mirror.apply_delta(&flipped, &mut ()).is_err() {
            assert_eq!(mirror, client, "bit {bit}");
        }
    }
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct World {
    round: u16,
    #[replicate(array)]
    squads: FastArray<Squad>,
}

#[test]
fn a_replicated_object_holds_arrays_of_items_with_arrays() {
    let mut server = Replicated::new(World::default());
    let mut conn = SendState::new();
    let mut client = Replicated::<World>::mirror();
    let id = server.get_mut().squads.push(squad(1, 3));
    exchange_object(&mut server, &mut conn, &mut client, 0);
    assert_eq!(client.get(), server.get());

    let member = server.get().squads.get(id).unwrap().members.ids().nth(1);
    server
        .get_mut()
        .squads
        .get_mut(id)
        .unwrap()
        .members
        .get_mut(member.unwrap())
        .unwrap()
        .hp = 42;
    exchange_object(&mut server, &mut conn, &mut client, 1);
    assert_eq!(client.get(), server.get());
    assert!(server.is_settled(&conn));
}

/// Random game logic on squads and their members.
fn squad_logic(squads: &mut FastArray<Squad>, rng: &mut ChaCha8Rng) {
    for _ in 0..rng.random_range(0..5) {
        let ids: Vec<ReplicationId> = squads.ids().collect();
        let pick = (!ids.is_empty()).then(|| ids[rng.random_range(0..ids.len())]);
        match (rng.random_range(0..10), pick) {
            (0, _) | (_, None) => {
                let size = rng.random_range(0..4);
                squads.push(squad(rng.random(), size));
            }
            (1, Some(id)) => {
                squads.remove(id);
            }
            (2, Some(id)) => squads.get_mut(id).unwrap().tag = rng.random(),
            (3 | 4, Some(id)) => {
                squads.get_mut(id).unwrap().members.push(Member {
                    hp: rng.random(),
                    rank: rng.random_range(0..16),
                });
            }
            (5, Some(id)) => {
                let mut squad = squads.get_mut(id).unwrap();
                let first = squad.members.ids().next();
                if let Some(member) = first {
                    squad.members.remove(member);
                }
            }
            (_, Some(id)) => {
                let mut squad = squads.get_mut(id).unwrap();
                let members: Vec<_> = squad.members.ids().collect();
                if !members.is_empty() {
                    let member = members[rng.random_range(0..members.len())];
                    let mut member = squad.members.get_mut(member).unwrap();
                    if rng.random_bool(0.5) {
                        member.hp = rng.random();
                    } else {
                        member.rank = rng.random_range(0..16);
                    }
                }
            }
        }
    }
}

#[test]
fn inner_arrays_converge_over_lossy_links() {
    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let label = format!("{} seed {seed}", profile.name);
            let mut session =
                drive::ArraySession::new(FastArray::new(), seed, label, squad_logic, ());
            drive::drive(&profile, seed, 120, &mut session);
            assert_eq!(session.client, session.server, "{}", profile.name);
        }
    }
}

/// Issue 10, finding 2: packet A carries a change inside squad X (whose
/// member array is past frame 64, so its frame is short) and a change to
/// squad Y; packet B removes X. B arrives first, then A: A must apply,
/// Y's change with it (reading past X's inner delta needs no reference).
#[test]
fn an_entry_read_past_needs_no_frame_reference() {
    let (mut server, mut conn, mut client) = synced();
    let (x, y) = (ReplicationId::from_raw(10), ReplicationId::from_raw(20));
    let inner = ReplicationId::from_raw(3);
    let mut packet = 2;
    for hp in 0..70 {
        member(&mut server, x, inner, |m| m.hp = hp);
        exchange(&mut server, &mut conn, &mut client, packet);
        packet += 1;
    }
    member(&mut server, x, inner, |m| m.hp = 1_000);
    server.get_mut(y).unwrap().tag = 99;
    server.commit();
    let mut a = Vec::new();
    server.write_delta(&mut conn, packet, &mut a).unwrap();
    server.remove(x);
    server.commit();
    let mut b = Vec::new();
    server.write_delta(&mut conn, packet + 1, &mut b).unwrap();

    client.apply_delta(&b, &mut ()).unwrap();
    let report = client.apply_delta(&a, &mut ()).unwrap();
    assert_eq!(report.skipped, 1, "the entry of the removed squad");
    assert_eq!(client.get(y).unwrap().tag, 99);
    conn.on_ack(packet + 1);
    conn.on_ack(packet);
    assert_eq!(client, server);
}

/// Issue 10, finding 7: an array inside an item replaced wholesale through
/// `get_mut` restarts at frame 0 and id 0 while the mirror keeps its frames
/// and tombstones, so it diverged silently. The commit now refuses it.
#[test]
#[should_panic(expected = "was replaced by another FastArray")]
fn replacing_an_inner_array_is_refused_loudly() {
    let (mut server, mut conn, mut client) = synced();
    let squad = ReplicationId::from_raw(4);
    let mut fresh = FastArray::new();
    fresh.push(Member { hp: 1, rank: 2 });
    server.get_mut(squad).unwrap().members = fresh;
    exchange(&mut server, &mut conn, &mut client, 2);
}

/// Swapping two items' arrays is a replacement too.
#[test]
#[should_panic(expected = "was replaced by another FastArray")]
fn swapping_inner_arrays_is_refused_loudly() {
    let (mut server, _, _) = synced();
    let (a, b) = (ReplicationId::from_raw(4), ReplicationId::from_raw(5));
    let mut members = core::mem::take(&mut server.get_mut(a).unwrap().members);
    core::mem::swap(&mut members, &mut server.get_mut(b).unwrap().members);
    server.get_mut(a).unwrap().members = members;
    server.commit();
}

/// Writing back an edited clone of the array itself is an edit, not a
/// replacement: it converges.
#[test]
fn an_edited_clone_written_back_is_an_edit() {
    let (mut server, mut conn, mut client) = synced();
    let squad = ReplicationId::from_raw(4);
    let mut members = server.get(squad).unwrap().members.clone();
    let first = members.ids().next().unwrap();
    members.remove(first);
    members.push(Member { hp: 5, rank: 5 });
    server.get_mut(squad).unwrap().members = members;
    exchange(&mut server, &mut conn, &mut client, 2);
    assert_eq!(client, server);
    // The mirror's copy of the squad has the new member at its new id.
    assert_eq!(client.get(squad).unwrap().members.len(), 50);
}

/// The supported way to replace an array's contents: clear it and push.
#[test]
fn clearing_and_refilling_an_inner_array_converges() {
    let (mut server, mut conn, mut client) = synced();
    let squad = ReplicationId::from_raw(4);
    {
        let mut squad = server.get_mut(squad).unwrap();
        squad.members.clear();
        squad.members.push(Member { hp: 1, rank: 2 });
    }
    exchange(&mut server, &mut conn, &mut client, 2);
    assert_eq!(client, server);
    assert_eq!(client.get(squad).unwrap().members.len(), 1);
}
