//! Enums: variant tags, whole values on a variant change, changed fields
//! within a variant, convergence over a lossy link.

use fastarray::{
    BitCodec, BitReader, BitWriter, DecodeError, FastArray, FieldMask, Replicate, SendState,
};
use fastarray_testkit::{drive, exchange, link};

#[derive(Replicate, Clone, Debug, PartialEq)]
enum Order {
    Idle,
    Move {
        x: i16,
        y: i16,
        #[replicate(bits = 4)]
        speed: u8,
    },
    Attack(u32, #[replicate(skip)] u64),
    Build {
        kind: u8,
        progress: u16,
        name: String,
    },
}

fn encoded<T: BitCodec>(value: &T) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    value.encode(&mut w).unwrap();
    let bits = w.finish();
    (bytes, bits)
}

#[test]
fn enums_round_trip_with_a_two_bit_tag() {
    let values = [
        Order::Idle,
        Order::Move {
            x: -3,
            y: 7,
            speed: 15,
        },
        Order::Attack(99, 0),
        Order::Build {
            kind: 1,
            progress: 500,
            name: "tower".into(),
        },
    ];
    let sizes = [2, 2 + 16 + 16 + 4, 2 + 32, 2 + 8 + 16 + 5 + 40];
    for (value, size) in values.iter().zip(sizes) {
        let (bytes, bits) = encoded(value);
        assert_eq!(bits, size, "{value:?}");
        let mut reader = BitReader::new(&bytes);
        assert_eq!(&Order::decode(&mut reader).unwrap(), value);
        assert_eq!(reader.bit_offset(), bits);
    }
    assert_eq!(Order::FIELD_COUNT, 4);
    assert_eq!(Order::MIN_BITS, 2);
}

#[test]
fn skipped_variant_fields_come_back_as_default() {
    let (bytes, _) = encoded(&Order::Attack(5, 123));
    assert_eq!(
        Order::decode(&mut BitReader::new(&bytes)).unwrap(),
        Order::Attack(5, 0)
    );
}

#[test]
fn a_variant_change_is_the_whole_value_and_a_field_change_only_the_field() {
    let moving = Order::Move {
        x: 1,
        y: 2,
        speed: 3,
    };
    let building = Order::Build {
        kind: 1,
        progress: 0,
        name: "x".into(),
    };
    assert_eq!(building.diff(&moving), FieldMask::all(4));
    assert_eq!(moving.diff(&building), FieldMask::all(4));
    assert_eq!(Order::Idle.diff(&moving), FieldMask::single(0));
    let faster = Order::Move {
        x: 1,
        y: 2,
        speed: 4,
    };
    assert_eq!(faster.diff(&moving), FieldMask::single(3));
    assert!(moving.diff(&moving.clone()).is_empty());
    assert!(
        Order::Attack(1, 5).diff(&Order::Attack(1, 6)).is_empty(),
        "skipped field"
    );
}

#[test]
fn a_bad_tag_is_a_typed_error() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    enum Three {
        A,
        B,
        C,
    }
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_bits(3, 2);
    w.finish();
    assert_eq!(
        Three::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::InvalidVariant {
            bit_offset: 0,
            tag: 3,
            variants: 3
        })
    );
}

#[test]
fn single_variant_enums_cost_no_tag() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    enum Only {
        One(u8),
    }
    assert_eq!(encoded(&Only::One(7)).1, 8);
}

#[test]
fn variants_may_each_quantize_the_field_at_the_same_position() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    enum Shot {
        Near(#[replicate(quantize(min = 0, max = 1, bits = 8))] f32),
        Far(#[replicate(quantize(min = 0, max = 100, bits = 8))] f32),
    }
    assert_eq!(encoded(&Shot::Near(0.5)).1, 1 + 8);
    let (bytes, _) = encoded(&Shot::Far(100.0));
    assert_eq!(
        Shot::decode(&mut BitReader::new(&bytes)),
        Ok(Shot::Far(100.0))
    );
}

#[test]
fn recursive_enums_hash_the_recursive_field_as_written() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    enum Expr {
        Leaf(u8),
        Sum(Vec<Expr>),
    }
    #[derive(Replicate, Clone, Debug, PartialEq)]
    enum Tree<T> {
        Leaf(T),
        Node(Vec<Tree<T>>),
    }
    let value = Expr::Sum(vec![Expr::Leaf(1), Expr::Sum(vec![Expr::Leaf(2)])]);
    let (bytes, _) = encoded(&value);
    assert_eq!(Expr::decode(&mut BitReader::new(&bytes)), Ok(value));
    assert_ne!(Tree::<u8>::SCHEMA_HASH, Tree::<u16>::SCHEMA_HASH);
}

#[test]
fn enum_items_send_what_the_spec_says() {
    let mut server = FastArray::new();
    let id = server.push(Order::Move {
        x: 0,
        y: 0,
        speed: 1,
    });
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    exchange(&mut server, &mut conn, &mut client, 0);

    // Same variant, one field: tag (2) + that field only.
    if let Order::Move { x, .. } = &mut *server.get_mut(id).unwrap() {
        *x = 9;
    }
    // kind, frame, no removals, one item, its gap code (Elias-delta), no
    // field set shared by the entries
    let header = 2 + 16 + 1 + 2 + 1 + 1;
    let id_bits = 1; // id 0
    let one_field = 1 + 1 + 2; // selector + gamma(0) + 2-bit handle (4 fields)
    assert_eq!(
        exchange(&mut server, &mut conn, &mut client, 1),
        header + id_bits + 1 + one_field + 2 + 16
    );
    assert_eq!(client, server);

    // Another variant: the whole value, as a whole item.
    *server.get_mut(id).unwrap() = Order::Attack(7, 0);
    assert_eq!(
        exchange(&mut server, &mut conn, &mut client, 2),
        header + id_bits + 1 + 2 + 32
    );
    assert_eq!(client, server);
}

#[test]
fn a_lost_change_to_an_old_variant_is_not_resent_into_the_new_one() {
    let mut server = FastArray::new();
    let id = server.push(Order::Build {
        kind: 1,
        progress: 0,
        name: "b".into(),
    });
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    exchange(&mut server, &mut conn, &mut client, 0);

    // R1: a field of `Build` (bit 3, `name`), in flight.
    if let Order::Build { name, .. } = &mut *server.get_mut(id).unwrap() {
        name.push('!');
    }
    server.commit();
    let mut r1 = Vec::new();
    server.write_delta(&mut conn, 1, &mut r1).unwrap();

    // R2: the variant changes to one with a single field; the whole value
    // arrives and is acked.
    *server.get_mut(id).unwrap() = Order::Attack(1, 0);
    exchange(&mut server, &mut conn, &mut client, 2);
    // R3: that field (bit 1), in flight.
    if let Order::Attack(target, _) = &mut *server.get_mut(id).unwrap() {
        *target = 2;
    }
    server.commit();
    let mut r3 = Vec::new();
    server.write_delta(&mut conn, 3, &mut r3).unwrap();

    // R1 is reported lost now: its `name` belongs to a variant the item no
    // longer has (`Attack` has no bit 3), and R2's whole value superseded it.
    conn.on_loss(1);
    client.apply_delta(&r3, &mut ()).unwrap();
    conn.on_ack(3);
    server.commit();
    let mut r4 = Vec::new();
    let stats = server.write_delta(&mut conn, 4, &mut r4).unwrap();
    assert_eq!(stats.bits, 1, "nothing to resend");
    client.apply_delta(&r4, &mut ()).unwrap();
    assert_eq!(client, server);
}

#[test]
fn enum_items_converge_over_lossy_links() {
    use rand::Rng;

    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let mut server = FastArray::new();
            let ids: Vec<_> = (0..8).map(|_| server.push(Order::Idle)).collect();
            let logic = |server: &mut FastArray<Order>, rng: &mut rand_chacha::ChaCha8Rng| {
                for _ in 0..3 {
                    let id = ids[rng.random_range(0..ids.len())];
                    let mut order = server.get_mut(id).unwrap();
                    match (&mut *order, rng.random_range(0..6)) {
                        (Order::Move { x, .. }, 0..=2) => *x = x.wrapping_add(1),
                        (Order::Build { progress, .. }, 0..=2) => *progress += 1,
                        (_, 0) => *order = Order::Idle,
                        (_, 1) => {
                            *order = Order::Move {
                                x: 0,
                                y: rng.random(),
                                speed: 2,
                            }
                        }
                        (_, 2) => *order = Order::Attack(rng.random(), 0),
                        _ => {
                            *order = Order::Build {
                                kind: rng.random(),
                                progress: 0,
                                name: "b".into(),
                            }
                        }
                    }
                }
            };
            let label = format!("{} seed {seed}", profile.name);
            let mut session = drive::ArraySession::new(server, seed, label.clone(), logic, ());
            drive::drive(&profile, seed, 120, &mut session);
            assert_eq!(session.client, session.server, "{label}");
        }
    }
}
