//! Replicated objects: plain fields and `FastArray` fields in one value.

use fastarray::{FastArray, Replicate, Replicated, SendError, SendState};
use fastarray_testkit::drive::ObjectSession;
use fastarray_testkit::{drive, exchange_object, link};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u16,
    #[replicate(quantize(min = -100, max = 100, bits = 12))]
    x: f32,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Shot {
    from: u32,
    #[replicate(bits = 3)]
    kind: u8,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Match {
    round: u8,
    #[replicate(array)]
    units: FastArray<Unit>,
    clock: u32,
    #[replicate(array)]
    shots: FastArray<Shot>,
    #[replicate(skip)]
    server_only: Vec<u8>,
}

/// The client holds the server's state, up to the quantization of `x`.
fn mirrored(server: &Replicated<Match>, client: &Replicated<Match>) -> bool {
    fn same<T: Replicate>(a: &FastArray<T>, b: &FastArray<T>) -> bool {
        a.len() == b.len()
            && a.iter()
                .all(|(id, x)| b.get(id).is_some_and(|y| x.diff(y).is_empty()))
    }
    let (s, c) = (server.get(), client.get());
    s.round == c.round && s.clock == c.clock && same(&s.units, &c.units) && same(&s.shots, &c.shots)
}

#[test]
fn plain_fields_are_the_mask_and_arrays_are_not() {
    assert_eq!(Match::FIELD_COUNT, 2, "round and clock");
}

#[test]
fn an_object_replicates_its_fields_and_arrays() {
    let mut server = Replicated::new(Match::default());
    let (mut conn, mut client) = (SendState::new(), Replicated::<Match>::mirror());
    {
        let mut m = server.get_mut();
        m.round = 1;
        m.server_only.push(1);
        for n in 0..10 {
            m.units.push(Unit { hp: n, x: 0.0 });
        }
    }
    exchange_object(&mut server, &mut conn, &mut client, 0);
    assert!(mirrored(&server, &client));
    assert!(client.get().server_only.is_empty());

    // Nothing changed: an empty message.
    assert_eq!(exchange_object(&mut server, &mut conn, &mut client, 1), 1);

    // One plain field: the object as item 0 of a one-item delta, with a
    // plain part and two empty array deltas.
    server.get_mut().clock = 7;
    // header (with the one-item list's gap code and the bit saying no
    // field set is shared), id 0, not whole, plain fields follow, mask of
    // 2, u32
    let plain = 2 + 16 + 1 + (2 + 1) + 1 + 1 + 1 + 1 + (1 + 2) + 32;
    assert_eq!(
        exchange_object(&mut server, &mut conn, &mut client, 2),
        plain + 1 + 1
    );

    // One item of one array: item 0 with no plain part, that array's
    // delta, and the other array's empty delta.
    let id = server.get().units.ids().nth(3).unwrap();
    server.get_mut().units.get_mut(id).unwrap().hp = 99;
    // header (no shared field set), id 0, not whole, no plain fields
    let object = 2 + 16 + 1 + (2 + 1) + 1 + 1 + 1 + 1;
    // header (no shared field set), id 3 (varint, 5), one of two fields, u16
    let array = 2 + 16 + 1 + (2 + 1) + 1 + 5 + 1 + (1 + 1 + 1) + 16;
    assert_eq!(
        exchange_object(&mut server, &mut conn, &mut client, 3),
        object + array + 1
    );
    assert!(mirrored(&server, &client));
}

#[test]
fn mutations_must_be_committed_and_packet_ids_not_reused() {
    let mut server = Replicated::new(Match::default());
    let mut conn = SendState::new();
    server.get_mut().shots.push(Shot { from: 1, kind: 2 });
    assert_eq!(
        server.write_delta(&mut conn, 0, &mut Vec::new()),
        Err(SendError::Uncommitted)
    );
    server.commit();
    server.write_delta(&mut conn, 0, &mut Vec::new()).unwrap();
    server.get_mut().clock = 1;
    server.commit();
    assert_eq!(
        server.write_delta(&mut conn, 0, &mut Vec::new()),
        Err(SendError::PacketInFlight { packet: 0 })
    );
}

#[test]
fn every_truncation_fails_and_leaves_the_mirror_unchanged() {
    let mut server = Replicated::new(Match::default());
    {
        let mut m = server.get_mut();
        m.round = 3;
        m.units.push(Unit { hp: 5, x: 1.0 });
        m.shots.push(Shot { from: 9, kind: 1 });
    }
    server.commit();
    let mut bytes = Vec::new();
    server
        .write_delta(&mut SendState::new(), 0, &mut bytes)
        .unwrap();
    let fresh = Replicated::<Match>::mirror();
    for len in 0..8 * bytes.len() {
        let mut prefix = bytes[..len.div_ceil(8)].to_vec();
        if len % 8 != 0 {
            *prefix.last_mut().unwrap() &= (1u8 << (len % 8)) - 1;
        }
        let mut client = fresh.clone();
        if client.apply_delta(&prefix, &mut ()).is_err() {
            assert_eq!(client, fresh, "{len} bits");
            assert_eq!(client.get(), &Match::default(), "{len} bits");
        }
    }
}

#[test]
fn array_element_types_are_part_of_the_schema() {
    mod other {
        use fastarray::{FastArray, Replicate};
        #[derive(Replicate, Clone)]
        pub struct Shot {
            pub from: u64,
        }
        #[derive(Replicate, Default)]
        pub struct Match {
            pub round: u8,
            #[replicate(array)]
            pub units: FastArray<super::Unit>,
            pub clock: u32,
            #[replicate(array)]
            pub shots: FastArray<Shot>,
        }
    }
    assert_ne!(Match::SCHEMA_HASH, other::Match::SCHEMA_HASH);
}

/// One tick of game logic on a `Match`: up to three random edits.
fn play(server: &mut Replicated<Match>, rng: &mut ChaCha8Rng) {
    let mut m = server.get_mut();
    for _ in 0..rng.random_range(0..4) {
        match rng.random_range(0..8) {
            0 => m.round = rng.random(),
            1 => m.clock += 1,
            2 => {
                m.units.push(Unit {
                    hp: rng.random(),
                    x: rng.random_range(-100.0..100.0),
                });
            }
            3 => {
                let first = m.units.ids().next();
                if let Some(id) = first {
                    m.units.remove(id);
                }
            }
            4 | 5 => {
                let ids: Vec<_> = m.units.ids().collect();
                if let Some(&id) = ids.get(rng.random_range(0..ids.len().max(1))) {
                    m.units.get_mut(id).unwrap().hp = rng.random();
                }
            }
            6 => {
                m.shots.push(Shot {
                    from: rng.random(),
                    kind: rng.random_range(0..8),
                });
            }
            _ => {
                let ids: Vec<_> = m.shots.ids().collect();
                if let Some(&id) = ids.get(rng.random_range(0..ids.len().max(1))) {
                    m.shots.remove(id);
                }
            }
        }
    }
}

#[test]
fn objects_converge_over_lossy_links() {
    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let start = (
                Replicated::new(Match::default()),
                SendState::new(),
                Replicated::mirror(),
            );
            let label = format!("{} seed {seed}", profile.name);
            let mut session = ObjectSession::new(start, seed, label, play, ());
            drive::drive(&profile, seed, 120, &mut session);
            assert!(
                mirrored(&session.server, &session.client),
                "{} seed {seed}: {:?} vs {:?}",
                profile.name,
                session.server.get(),
                session.client.get()
            );
        }
    }
}

/// Issue 10, finding 1: a 4-byte packet whose removal list names the
/// object (#0) used to apply with `Ok`; every later `get` then panicked.
#[test]
fn a_message_removing_the_object_is_refused_and_changes_nothing() {
    use fastarray::{BitCodec, BitWriter, DecodeError, ReplicationId};
    let mut server = Replicated::new(Match::default());
    server.get_mut().round = 3;
    let mut conn = SendState::new();
    let mut client = Replicated::<Match>::mirror();
    exchange_object(&mut server, &mut conn, &mut client, 1);

    // kind `1 0`, long frame 9, one removal (Elias-delta code, id 0), no items.
    let mut evil = Vec::new();
    let mut w = BitWriter::new(&mut evil);
    w.write_bits(0b01, 2);
    w.write_bool(true);
    w.write_varint(9);
    w.write_bits(0b01, 2);
    w.write_bool(false);
    w.write_varint(0);
    w.write_bool(false);
    w.finish();
    assert!(evil.len() <= 4, "{} bytes", evil.len());
    let object = ReplicationId::from_raw(0);
    assert_eq!(
        client.apply_delta(&evil, &mut ()),
        Err(DecodeError::NotAnObjectChange { id: object })
    );
    assert_eq!(client.get().round, 3);

    // Nor may a message add a second item beside the object.
    let mut evil = Vec::new();
    let mut w = BitWriter::new(&mut evil);
    w.write_bits(0b01, 2);
    w.write_bool(true);
    w.write_varint(9);
    w.write_bool(false); // no removals
    w.write_bits(0b01, 2); // one item
    w.write_bool(false); // Elias-delta gaps
    w.write_bool(false); // no shared field set
    w.write_varint(5); // id 5
    w.write_bool(true); // whole
    Match {
        round: 1,
        ..Match::default()
    }
    .encode(&mut w)
    .unwrap();
    w.write_bool(false); // units: empty delta
    w.write_bool(false); // shots: empty delta
    w.finish();
    assert_eq!(
        client.apply_delta(&evil, &mut ()),
        Err(DecodeError::NotAnObjectChange {
            id: ReplicationId::from_raw(5)
        })
    );

    // The mirror still follows the server.
    server.get_mut().round = 4;
    exchange_object(&mut server, &mut conn, &mut client, 2);
    assert_eq!(client.get().round, 4);
    assert!(mirrored(&server, &client));
}

/// Issue 10, finding 2: a `Replicated` message delivered 70 frames late,
/// whose inner delta has a short frame of 64 or more, is ignored whole (it
/// used to be refused with `FrameWithoutReference`).
#[test]
fn a_message_70_frames_late_is_ignored_whole() {
    let mut server = Replicated::new(Match::default());
    let unit = server.get_mut().units.push(Unit { hp: 1, x: 0.0 });
    server.commit();
    let mut conn = SendState::new();
    let mut client = Replicated::<Match>::mirror();
    let mut packet = 0;
    // Past 64 inner frames, every one acknowledged: inner frames go short.
    for hp in 0..80 {
        server.get_mut().units.get_mut(unit).unwrap().hp = hp;
        exchange_object(&mut server, &mut conn, &mut client, packet);
        packet += 1;
    }
    server.get_mut().units.get_mut(unit).unwrap().hp = 500;
    server.commit();
    let mut late = Vec::new();
    server.write_delta(&mut conn, packet, &mut late).unwrap();
    conn.on_loss(packet);
    packet += 1;
    for round in 0..70u8 {
        server.get_mut().round = round;
        exchange_object(&mut server, &mut conn, &mut client, packet);
        packet += 1;
    }
    let report = client.apply_delta(&late, &mut ()).unwrap();
    assert!(report.stale);
    assert!(mirrored(&server, &client));
}

// Any `#[derive(Replicate)]` struct is an object, with the whole surface of
// a `FastArray` (issue 12).

/// An object without array fields.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Rules {
    round: u8,
    time_left: u16,
    motd: String,
    #[replicate(varint)]
    score: i64,
}

/// One tick of game logic on the `Rules`.
fn referee(server: &mut Replicated<Rules>, rng: &mut ChaCha8Rng) {
    let mut rules = server.get_mut();
    match rng.random_range(0..5) {
        0 => rules.round = rng.random(),
        1 => rules.time_left = rules.time_left.wrapping_sub(1),
        2 => rules.motd = format!("round {}", rng.random::<u8>()),
        3 => rules.score += rng.random_range(-5..5),
        _ => {} // written, and nothing changed
    }
}

#[test]
fn a_plain_object_converges_over_lossy_links() {
    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let start = (
                Replicated::new(Rules::default()),
                SendState::new(),
                Replicated::mirror(),
            );
            let label = format!("{} seed {seed}", profile.name);
            let mut session = ObjectSession::new(start, seed, label, referee, ());
            drive::drive(&profile, seed, 120, &mut session);
            assert_eq!(
                session.client.get(),
                session.server.get(),
                "{} seed {seed}",
                profile.name
            );
        }
    }
}

#[test]
fn a_plain_object_sends_only_its_changed_fields() {
    let mut server = Replicated::new(Rules::default());
    let (mut conn, mut client) = (SendState::new(), Replicated::<Rules>::mirror());
    exchange_object(&mut server, &mut conn, &mut client, 0);
    assert!(!server.commit(), "nothing written: nothing changed");
    let key = server.key();

    server.get_mut().time_left = 300;
    assert!(server.has_uncommitted_work());
    assert!(server.commit());
    assert_ne!(server.key(), key);
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    assert_eq!((stats.added, stats.changed), (0, 1));
    // header (no shared field set), id 0, not whole, a field handle of 4
    // fields, the u16
    assert_eq!(
        stats.bits,
        2 + 16 + 1 + (2 + 1) + 1 + 1 + 1 + (1 + 1 + 2) + 16
    );
    client.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(client, server);
    assert_eq!(
        format!("{client:?}"),
        "Replicated(Rules { round: 0, time_left: 300, motd: \"\", score: 0 })"
    );
}

/// `Match`es after 50 ticks of play, started from `seed`.
fn played(seed: u64) -> Replicated<Match> {
    use rand::SeedableRng;
    let mut server = Replicated::new(Match::default());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..50 {
        play(&mut server, &mut rng);
        server.commit();
    }
    server
}

#[test]
fn a_late_joiner_starts_from_a_snapshot_then_follows_deltas() {
    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds().div_ceil(4) {
            let mut server = played(seed);
            let mut conn = SendState::new();
            let mut snapshot = Vec::new();
            server.write_snapshot_for(&mut conn, &mut snapshot).unwrap();
            let client = Replicated::<Match>::from_snapshot(&snapshot).unwrap();
            assert!(mirrored(&server, &client));

            // The connection knows what the snapshot holds: nothing due.
            server.commit();
            let mut bytes = Vec::new();
            let stats = server.write_delta(&mut conn, 7, &mut bytes).unwrap();
            assert_eq!(stats.bits, 1, "an empty message");
            conn.on_ack(7);

            let label = format!("{} seed {seed}", profile.name);
            let mut session = ObjectSession::new((server, conn, client), seed, label, play, ());
            drive::drive(&profile, seed, 120, &mut session);
            assert!(
                mirrored(&session.server, &session.client),
                "{} seed {seed}",
                profile.name
            );
        }
    }
}

#[test]
fn a_plain_object_joins_from_a_snapshot_without_default() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Clock {
        tick: u32,
    }
    let mut server = Replicated::new(Clock { tick: 5 });
    server.commit();
    let mut conn = SendState::new();
    let mut snapshot = Vec::new();
    let bits = server.write_snapshot_for(&mut conn, &mut snapshot).unwrap();
    // kind, schema, frame 1, one item, id gap 0, the u32
    assert_eq!(bits, 3 + 64 + 4 + 4 + 1 + 32);
    let mut client = Replicated::<Clock>::from_snapshot(&snapshot).unwrap();
    assert_eq!(client.get(), &Clock { tick: 5 });
    assert_eq!(client.frame(), server.frame());

    server.get_mut().tick = 6;
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 0, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(client.get(), &Clock { tick: 6 });

    // A snapshot taken later replaces what the mirror holds.
    server.get_mut().tick = 9;
    server.commit();
    let mut later = Vec::new();
    server.write_snapshot(&mut later).unwrap();
    client.apply_snapshot(&later).unwrap();
    assert_eq!(client.get(), &Clock { tick: 9 });
    // The delta of before is now older than the snapshot: ignored whole.
    assert!(client.apply_delta(&bytes, &mut ()).unwrap().stale);
    assert_eq!(client.get(), &Clock { tick: 9 });
}

#[test]
fn a_snapshot_that_is_not_one_object_is_refused() {
    use fastarray::{DecodeError, ReplicationId};

    let snapshot_of = |array: &FastArray<Rules>| {
        let mut bytes = Vec::new();
        array.write_snapshot(&mut bytes).unwrap();
        bytes
    };
    let mut array = FastArray::new();
    assert_eq!(
        Replicated::<Rules>::from_snapshot(&snapshot_of(&array)).err(),
        Some(DecodeError::MissingObject)
    );
    let first = array.push(Rules::default());
    array.push(Rules::default());
    array.commit();
    assert_eq!(
        Replicated::<Rules>::from_snapshot(&snapshot_of(&array)).err(),
        Some(DecodeError::NotAnObjectChange {
            id: ReplicationId::from_raw(1)
        })
    );
    array.remove(first);
    array.commit();
    assert_eq!(
        Replicated::<Rules>::from_snapshot(&snapshot_of(&array)).err(),
        Some(DecodeError::NotAnObjectChange {
            id: ReplicationId::from_raw(1)
        })
    );

    // Another type's snapshot, and every truncation of a good one.
    let mut server = Replicated::new(Rules {
        motd: "hello".into(),
        ..Rules::default()
    });
    server.commit();
    let mut good = Vec::new();
    server.write_snapshot(&mut good).unwrap();
    assert!(matches!(
        Replicated::<Match>::from_snapshot(&good),
        Err(DecodeError::SchemaMismatch { .. })
    ));
    let mut client = Replicated::<Rules>::mirror();
    for len in 0..good.len() {
        assert!(client.apply_snapshot(&good[..len]).is_err(), "{len} bytes");
        assert_eq!(client.get(), &Rules::default());
    }
    client.apply_snapshot(&good).unwrap();
    assert_eq!(client.get(), server.get());
}

/// A `Match` with 300 units and 100 shots, committed.
fn crowded() -> Replicated<Match> {
    let mut server = Replicated::new(Match::default());
    {
        let mut m = server.get_mut();
        m.round = 1;
        for hp in 0..300 {
            m.units.push(Unit {
                hp,
                x: f32::from(hp % 200) - 100.0,
            });
        }
        for from in 0..100 {
            m.shots.push(Shot { from, kind: 3 });
        }
    }
    server.commit();
    server
}

#[test]
fn a_budgeted_write_splits_the_object_over_packets() {
    let mut server = crowded();
    let mut whole = Vec::new();
    let whole_bits = server
        .write_delta(&mut SendState::new(), 0, &mut whole)
        .unwrap()
        .bits;

    let (mut conn, mut client) = (SendState::new(), Replicated::<Match>::mirror());
    let budget = 1_000;
    let mut packet = 0;
    // (A new connection has nothing in flight yet: write before asking.)
    loop {
        let mut bytes = Vec::new();
        let stats = server
            .write_delta_with_budget(&mut conn, packet, &mut bytes, budget)
            .unwrap();
        assert!(stats.bits <= budget, "packet {packet}: {} bits", stats.bits);
        assert!(
            stats.added + stats.changed > 0,
            "packet {packet} carries work"
        );
        assert_eq!(stats.oversized, None);
        if packet == 0 {
            assert!(stats.deferred > 0);
        }
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        packet += 1;
        if server.is_settled(&conn) {
            break;
        }
        assert!(packet < 100, "not settled after 100 packets");
    }
    assert!(
        u64::from(packet) >= whole_bits / budget,
        "{whole_bits} bits in {packet} packets"
    );
    assert!(mirrored(&server, &client));
}

#[test]
fn budgeted_objects_converge_over_lossy_links() {
    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds().div_ceil(4) {
            let start = (crowded(), SendState::new(), Replicated::mirror());
            let label = format!("{} seed {seed}", profile.name);
            let mut session = ObjectSession::new(start, seed, label, play, ());
            session.budget = Some(600);
            drive::drive(&profile, seed, 60, &mut session);
            assert!(
                mirrored(&session.server, &session.client),
                "{} seed {seed}",
                profile.name
            );
        }
    }
}

#[test]
fn an_object_delta_reads_from_between_other_fields() {
    use fastarray::{BitReader, BitWriter};

    let mut game = crowded();
    let mut rules = Replicated::new(Rules::default());
    rules.commit();
    let (mut game_conn, mut rules_conn) = (SendState::new(), SendState::new());
    let mut game_mirror = Replicated::<Match>::mirror();
    let mut rules_mirror = Replicated::<Rules>::mirror();
    for packet in 0..3u32 {
        rules.get_mut().time_left = 300 - packet as u16;
        rules.commit();
        game.get_mut().clock = packet;
        game.commit();

        // One packet: a sequence number, both objects' deltas, a trailer.
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        writer.write_bits(u64::from(packet), 5);
        rules
            .write_delta_bits(&mut rules_conn, packet, &mut writer, None)
            .unwrap();
        game.write_delta_bits(&mut game_conn, packet, &mut writer, Some(2_000))
            .unwrap();
        writer.write_bits(0x2a5, 11);
        writer.finish();

        let mut reader = BitReader::new(&bytes);
        assert_eq!(reader.read_bits(5).unwrap(), u64::from(packet));
        rules_mirror.apply_delta_bits(&mut reader, &mut ()).unwrap();
        game_mirror.apply_delta_bits(&mut reader, &mut ()).unwrap();
        assert_eq!(reader.read_bits(11).unwrap(), 0x2a5);
        reader.expect_end().unwrap();
        rules_conn.on_ack(packet);
        game_conn.on_ack(packet);
        assert_eq!(rules_mirror.get(), rules.get());
        assert_eq!(game_mirror.get().clock, packet);
    }

    // Snapshots share a stream the same way.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bits(1, 1);
    rules
        .write_snapshot_for_bits(&mut rules_conn, &mut writer)
        .unwrap();
    game.write_snapshot_bits(&mut writer).unwrap();
    writer.write_bits(1, 1);
    writer.finish();
    let mut reader = BitReader::new(&bytes);
    assert_eq!(reader.read_bits(1).unwrap(), 1);
    let joined = Replicated::<Rules>::from_snapshot_bits(&mut reader).unwrap();
    let joined_game = Replicated::<Match>::from_snapshot_bits(&mut reader).unwrap();
    assert_eq!(reader.read_bits(1).unwrap(), 1);
    reader.expect_end().unwrap();
    assert_eq!(joined.get(), rules.get());
    assert!(mirrored(&game, &joined_game));
}
