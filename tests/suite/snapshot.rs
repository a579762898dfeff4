//! Full snapshots: round trips, exact sizes, and hostile input.

use fastarray::{BitWriter, DecodeError, FastArray, Replicate, ReplicationId};
use proptest::prelude::*;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    position: [f32; 3],
    health: u8,
    ammo: u16,
    name: String,
    #[replicate(skip)]
    scratch: u64,
}

/// Same shape as `Agent`, but one field is named differently.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct RenamedAgent {
    position: [f32; 3],
    hp: u8,
    ammo: u16,
    name: String,
}

/// One step of a server's frame, for generated scripts.
#[derive(Clone, Debug)]
enum Op {
    Push(u8, u16, String),
    Remove(usize),
    Damage(usize, u8),
    Move(usize, f32),
    Sort,
    Commit,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<u8>(), any::<u16>(), "[a-zé]{0,6}").prop_map(|(h, a, n)| Op::Push(h, a, n)),
        1 => any::<usize>().prop_map(Op::Remove),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(i, d)| Op::Damage(i, d)),
        2 => (any::<usize>(), -1e6f32..1e6).prop_map(|(i, x)| Op::Move(i, x)),
        1 => Just(Op::Sort),
        1 => Just(Op::Commit),
    ]
}

fn run(script: &[Op]) -> FastArray<Agent> {
    let mut server = FastArray::new();
    let mut ids: Vec<ReplicationId> = Vec::new();
    for step in script {
        match step {
            Op::Push(health, ammo, name) => ids.push(server.push(Agent {
                position: [0.0; 3],
                health: *health,
                ammo: *ammo,
                name: name.clone(),
                scratch: 1,
            })),
            Op::Remove(i) if !ids.is_empty() => {
                let id = ids.swap_remove(i % ids.len());
                server.remove(id);
            }
            Op::Damage(i, d) if !ids.is_empty() => {
                let mut a = server.get_mut(ids[i % ids.len()]).unwrap();
                a.health = a.health.saturating_sub(*d);
            }
            Op::Move(i, x) if !ids.is_empty() => {
                server.get_mut(ids[i % ids.len()]).unwrap().position[0] = *x;
            }
            Op::Sort => server.sort_by(|a, b| a.name.cmp(&b.name)),
            Op::Commit => {
                server.commit();
            }
            _ => {}
        }
    }
    server.commit();
    server
}

/// What a client holds: skipped fields come back as `Default`.
fn as_received(server: &FastArray<Agent>) -> Vec<(ReplicationId, Agent)> {
    let mut items: Vec<_> = server
        .iter()
        .map(|(id, a)| {
            (
                id,
                Agent {
                    scratch: 0,
                    ..a.clone()
                },
            )
        })
        .collect();
    items.sort_by_key(|&(id, _)| id);
    items
}

fn items(array: &FastArray<Agent>) -> Vec<(ReplicationId, Agent)> {
    let mut items: Vec<_> = array.iter().map(|(id, a)| (id, a.clone())).collect();
    items.sort_by_key(|&(id, _)| id);
    items
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn snapshots_round_trip(script in prop::collection::vec(op(), 0..60)) {
        let server = run(&script);
        let mut bytes = Vec::new();
        let bits = server.write_snapshot(&mut bytes).unwrap();
        prop_assert_eq!(bytes.len() as u64, bits.div_ceil(8));
        let client = FastArray::<Agent>::from_snapshot(&bytes).unwrap();
        prop_assert_eq!(client.frame(), server.frame());
        prop_assert_eq!(items(&client), as_received(&server));
    }

    #[test]
    fn random_bytes_never_panic_and_never_change_the_mirror(
        bytes in prop::collection::vec(any::<u8>(), 0..80),
    ) {
        let mut mirror = old_mirror();
        let before = items(&mirror);
        match mirror.apply_snapshot(&bytes) {
            Err(DecodeError::NotAMirror { .. }) => prop_assert!(false, "not a mirror"),
            Err(_) => prop_assert_eq!(items(&mirror), before),
            Ok(()) => {}
        }
    }
}

fn sample() -> (FastArray<Agent>, Vec<u8>) {
    let server = run(&[
        Op::Push(100, 30, "ann".into()),
        Op::Push(90, 7, "bo".into()),
        Op::Commit,
        Op::Push(80, 0, "çé".into()),
        Op::Remove(0),
        Op::Move(1, 2.5),
    ]);
    let mut bytes = Vec::new();
    server.write_snapshot(&mut bytes).unwrap();
    (server, bytes)
}

/// A client's mirror holding one old item. (Found by review: three tests
/// here applied snapshots to a server's own array, which has refused them
/// as not a mirror since the authority/mirror split, so they decoded
/// nothing.)
fn old_mirror() -> FastArray<Agent> {
    let mut old = Vec::new();
    run(&[Op::Push(5, 5, "old".into())])
        .write_snapshot(&mut old)
        .unwrap();
    FastArray::<Agent>::from_snapshot(&old).unwrap()
}

#[test]
fn every_truncation_fails_and_leaves_the_mirror_unchanged() {
    let (server, bytes) = sample();
    let total_bits = 8 * bytes.len();
    let mut mirror = old_mirror();
    let before = items(&mirror);
    let mut complete = 0;
    for len in 0..total_bits {
        let mut prefix = bytes[..len.div_ceil(8)].to_vec();
        if len % 8 != 0 {
            *prefix.last_mut().unwrap() &= (1u8 << (len % 8)) - 1;
        }
        // The zero padding of the final byte is optional.
        let result = mirror.apply_snapshot(&prefix);
        if len.div_ceil(8) == bytes.len() && prefix == bytes {
            assert!(result.is_ok(), "complete message at {len} bits: {result:?}");
            complete += 1;
            mirror = old_mirror();
            continue;
        }
        assert!(
            matches!(&result, Err(error) if !matches!(error, DecodeError::NotAMirror { .. })),
            "a {len}-bit prefix: {result:?}"
        );
        assert_eq!(
            items(&mirror),
            before,
            "mirror changed by a {len}-bit prefix"
        );
    }
    // The message ends inside its last byte: its own length was among
    // the prefixes, and decoded.
    assert!(complete > 0);
    assert_eq!(
        items(&FastArray::<Agent>::from_snapshot(&bytes).unwrap()),
        as_received(&server)
    );
}

#[test]
fn every_single_bit_flip_is_rejected_or_decodes_cleanly() {
    let (_, bytes) = sample();
    for bit in 0..8 * bytes.len() {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let mut mirror = old_mirror();
        let before = items(&mirror);
        match mirror.apply_snapshot(&flipped) {
            Ok(()) => assert_ne!(items(&mirror), before),
            Err(DecodeError::NotAMirror { .. }) => panic!("not a mirror"),
            Err(_) => assert_eq!(items(&mirror), before, "bit {bit}"),
        }
    }
}

#[test]
fn a_snapshot_of_another_schema_is_refused_by_name() {
    let (_, bytes) = sample();
    match FastArray::<RenamedAgent>::from_snapshot(&bytes) {
        Err(DecodeError::SchemaMismatch {
            type_name,
            expected,
            found,
        }) => {
            assert_eq!(type_name, "RenamedAgent");
            assert_eq!(expected, RenamedAgent::SCHEMA_HASH);
            assert_eq!(found, Agent::SCHEMA_HASH);
        }
        other => panic!("expected a schema mismatch, got {other:?}"),
    }
}

#[test]
fn other_message_kinds_are_refused() {
    assert_eq!(
        FastArray::<Agent>::from_snapshot(&[0b0000_0000]),
        Err(DecodeError::UnexpectedMessageKind {
            bit_offset: 0,
            expected: "snapshot",
            found: "empty delta"
        })
    );
    assert_eq!(
        FastArray::<Agent>::from_snapshot(&[0b0000_0001]),
        Err(DecodeError::UnexpectedMessageKind {
            bit_offset: 0,
            expected: "snapshot",
            found: "delta"
        })
    );
    assert!(matches!(
        FastArray::<Agent>::from_snapshot(&[]),
        Err(DecodeError::UnexpectedEnd { bit_offset: 0, .. })
    ));
}

#[test]
fn a_huge_item_count_is_refused_before_allocating() {
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_bits(0b011, 3); // snapshot
    w.write_bits(Agent::SCHEMA_HASH, 64);
    w.write_varint(1); // frame
    w.write_varint(1 << 40); // count
    w.write_bits(0, 32);
    w.finish();
    assert!(matches!(
        FastArray::<Agent>::from_snapshot(&bytes),
        Err(DecodeError::LengthTooLarge { claimed, .. }) if claimed == 1 << 40
    ));
}

#[test]
fn data_after_the_snapshot_is_refused() {
    let (_, mut bytes) = sample();
    bytes.push(0);
    assert!(matches!(
        FastArray::<Agent>::from_snapshot(&bytes),
        Err(DecodeError::TrailingData { .. })
    ));
}

#[test]
fn consecutive_ids_cost_one_bit_each() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Flag(bool);
    let mut server = FastArray::new();
    for n in 0..1000 {
        server.push(Flag(n % 2 == 0));
    }
    server.commit();
    let mut bytes = Vec::new();
    let bits = server.write_snapshot(&mut bytes).unwrap();
    // kind + schema + frame(1) + count(1000) + 1000 × (gap + flag)
    assert_eq!(bits, 3 + 64 + 4 + 16 + 1000 * 2);
}

mod join {
    use fastarray::{FastArray, Replicate, ReplicationId, SendError, SendState};
    use fastarray_testkit::fixtures::plain::{Member, Squad};

    fn squads(count: u8) -> FastArray<Squad> {
        let mut server = FastArray::new();
        for tag in 0..count {
            let mut members = FastArray::new();
            for hp in 0..3 {
                members.push(Member { hp });
            }
            server.push(Squad { tag, members });
        }
        server.commit();
        server
    }

    /// Issue 10, finding 6: items in the snapshot and removed before any
    /// delta carries them get a removal, with or without a budget, at
    /// whatever frame the client joins.
    #[test]
    fn a_snapshot_joiner_is_told_of_removals_of_snapshot_items() {
        for join_at in [1u32, 5, 70, 200] {
            for budget in [None, Some(120u64)] {
                let mut server = squads(6);
                for frame in 1..join_at {
                    let id = ReplicationId::from_raw(u64::from(frame % 6));
                    server.get_mut(id).unwrap().tag = frame as u8;
                    server.commit();
                }
                let mut conn = SendState::new();
                let mut bytes = Vec::new();
                server.write_snapshot_for(&mut conn, &mut bytes).unwrap();
                let mut client = FastArray::<Squad>::from_snapshot(&bytes).unwrap();
                assert!(server.is_settled(&conn));
                assert_eq!(conn.client_items(), 6);

                // Removed and changed before any delta carries them.
                server.remove(ReplicationId::from_raw(1));
                let squad = ReplicationId::from_raw(2);
                let member = ReplicationId::from_raw(0);
                server.get_mut(squad).unwrap().members.remove(member);
                server.get_mut(ReplicationId::from_raw(3)).unwrap().tag = 99;
                server.commit();
                for packet in 0..20 {
                    let mut bytes = Vec::new();
                    let stats = match budget {
                        None => server.write_delta(&mut conn, packet, &mut bytes),
                        Some(bits) => {
                            server.write_delta_with_budget(&mut conn, packet, &mut bytes, bits)
                        }
                    }
                    .unwrap();
                    if packet == 0 {
                        assert_eq!(stats.added, 0, "nothing is resent whole");
                    }
                    client.apply_delta(&bytes, &mut ()).unwrap();
                    conn.on_ack(packet);
                    server.commit();
                    if server.is_settled(&conn) {
                        break;
                    }
                }
                assert_eq!(client, server, "joined at {join_at}, budget {budget:?}");
            }
        }
    }

    /// A mirror loaded from a snapshot ignores older messages: an add
    /// written before the snapshot, of an item removed before it, cannot
    /// bring it back.
    #[test]
    fn messages_older_than_the_snapshot_are_ignored() {
        let mut server = FastArray::new();
        server.commit();
        let mut old_conn = SendState::new();
        let ghost = server.push(Squad {
            tag: 1,
            members: FastArray::new(),
        });
        server.commit();
        let mut late = Vec::new();
        server.write_delta(&mut old_conn, 0, &mut late).unwrap();
        server.remove(ghost);
        server.commit();

        let mut conn = SendState::new();
        let mut bytes = Vec::new();
        server.write_snapshot_for(&mut conn, &mut bytes).unwrap();
        let mut client = FastArray::<Squad>::from_snapshot(&bytes).unwrap();
        let report = client.apply_delta(&late, &mut ()).unwrap();
        assert!(report.stale);
        assert!(!client.contains(ghost));
        assert_eq!(client, server);
    }

    /// Uncommitted work cannot go into a joiner's snapshot, and an encode
    /// error leaves the connection as it was.
    #[test]
    fn a_joiners_snapshot_needs_committed_encodable_items() {
        #[derive(Replicate, Clone, Debug, PartialEq)]
        struct Small {
            #[replicate(bits = 3)]
            n: u8,
        }
        let mut server = FastArray::new();
        server.push(Small { n: 1 });
        let mut conn = SendState::new();
        let mut out = Vec::new();
        assert_eq!(
            server.write_snapshot_for(&mut conn, &mut out),
            Err(SendError::Uncommitted)
        );
        server.commit();
        let bad = server.push(Small { n: 9 });
        server.commit();
        assert!(matches!(
            server.write_snapshot_for(&mut conn, &mut out),
            Err(SendError::Encode { id, .. }) if id == bad
        ));
        assert!(out.is_empty());
        assert_eq!(conn.client_items(), 0);
    }
}
