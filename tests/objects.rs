//! Replicated objects: plain fields and `FastArray` fields in one value.

use fastarray::{FastArray, Replicate, Replicated, SendError, SendState};
use fastarray_testkit::{drive, exchange_object, link};

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

#[derive(Replicate, Debug, PartialEq, Default)]
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
    // header (with the one-item list's gap code), id 0, not whole, plain
    // fields follow, mask of 2, u32
    let plain = 2 + 16 + 1 + (2 + 1) + 1 + 1 + 1 + (1 + 2) + 32;
    assert_eq!(
        exchange_object(&mut server, &mut conn, &mut client, 2),
        plain + 1 + 1
    );

    // One item of one array: item 0 with no plain part, that array's
    // delta, and the other array's empty delta.
    let id = server.get().units.ids().nth(3).unwrap();
    server.get_mut().units.get_mut(id).unwrap().hp = 99;
    let object = 2 + 16 + 1 + (2 + 1) + 1 + 1 + 1; // header, id 0, not whole, no plain fields
    // header, id 3 (varint, 5), one of two fields, u16
    let array = 2 + 16 + 1 + (2 + 1) + 5 + 1 + (1 + 1 + 1) + 16;
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
    for len in 0..8 * bytes.len() {
        let mut prefix = bytes[..len.div_ceil(8)].to_vec();
        if len % 8 != 0 {
            *prefix.last_mut().unwrap() &= (1u8 << (len % 8)) - 1;
        }
        let mut client = Replicated::<Match>::mirror();
        if client.apply_delta(&prefix, &mut ()).is_err() {
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

/// A `Replicated<Match>` and its mirror, for the shared lossy-link driver.
struct ObjectSession {
    server: Replicated<Match>,
    conn: SendState,
    client: Replicated<Match>,
    rng: rand_chacha::ChaCha8Rng,
    label: String,
}

impl drive::Session for ObjectSession {
    fn mutate(&mut self, _tick: u32) {
        use rand::Rng;
        let rng = &mut self.rng;
        let mut m = self.server.get_mut();
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

    fn write(&mut self, packet: u32) -> Vec<u8> {
        self.server.commit();
        let mut bytes = Vec::new();
        self.server
            .write_delta(&mut self.conn, packet, &mut bytes)
            .unwrap();
        bytes
    }

    fn apply(&mut self, bytes: &[u8]) {
        self.client
            .apply_delta(bytes, &mut ())
            .unwrap_or_else(|e| panic!("{}: {e}", self.label));
    }

    fn report(&mut self, report: link::Report) {
        match report {
            link::Report::Acked(p) => self.conn.on_ack(p),
            link::Report::Lost(p) => self.conn.on_loss(p),
        };
    }

    fn idle_commit(&mut self) {
        self.server.commit();
    }

    fn settled(&self) -> bool {
        self.server.is_settled(&self.conn)
    }
}

#[test]
fn objects_converge_over_lossy_links() {
    use rand::SeedableRng;

    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let mut session = ObjectSession {
                server: Replicated::new(Match::default()),
                conn: SendState::new(),
                client: Replicated::mirror(),
                rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
                label: format!("{} seed {seed}", profile.name),
            };
            drive::drive(&profile, seed, 120, &mut session);
            assert!(
                mirrored(&session.server, &session.client),
                "{}: {:?} vs {:?}",
                session.label,
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
