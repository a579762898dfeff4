//! `#[replicate(default_baseline)]`: a whole value (an add, an entry into
//! a scope, a snapshot's item) carries only the fields in which it differs
//! from the type's `Default`, and peers whose defaults differ refuse each
//! other's handshake.

use fastarray::{
    BitCodec, BitReader, BitWriter, DecodeError, FastArray, FieldMask, Replicate, SendState,
};
use fastarray_testkit::{drive, exchange, link};

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Body {
    #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
    position: [f32; 3],
    heading: u16,
}

/// A monster as a game spawns it: full health, standing still, its kind's
/// name; only where it is differs from one to the next.
#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(default_baseline)]
struct Monster {
    #[replicate(flatten)]
    body: Body,
    velocity: [f32; 3],
    health: u8,
    name: String,
    /// Never sent: a decoded monster has the default's.
    #[replicate(skip)]
    ai_state: u32,
}

impl Default for Monster {
    fn default() -> Self {
        Monster {
            body: Body {
                position: [0.0; 3],
                heading: 0,
            },
            velocity: [0.0; 3],
            health: 100,
            name: "goblin".to_owned(),
            ai_state: 7,
        }
    }
}

/// The same fields without the attribute.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Plain {
    #[replicate(flatten)]
    body: Body,
    velocity: [f32; 3],
    health: u8,
    name: String,
    #[replicate(skip)]
    ai_state: u32,
}

fn plain(monster: &Monster) -> Plain {
    Plain {
        body: monster.body.clone(),
        velocity: monster.velocity,
        health: monster.health,
        name: monster.name.clone(),
        ai_state: monster.ai_state,
    }
}

fn spawned(x: f32) -> Monster {
    let mut monster = Monster::default();
    monster.body.position = [x, 2.0, -3.0];
    monster
}

fn encoded<T: BitCodec>(value: &T) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.encode(&mut writer).expect("encodes");
    let bits = writer.finish();
    (bytes, bits)
}

fn decoded<T: BitCodec>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut reader = BitReader::new(bytes);
    let value = T::decode(&mut reader)?;
    reader.expect_end()?;
    Ok(value)
}

// Leaves: body.position, body.heading, velocity, health, name.
const POSITION: u64 = 3 * 16;
const HEADING: u64 = 16;
const ONE_FIELD: u64 = 1 + 1 + 3; // selector, a count of 1, one 3-bit leaf index

#[test]
fn a_whole_value_carries_the_fields_that_differ_from_the_default() {
    // The default itself: two bits.
    let (bytes, bits) = encoded(&Monster::default());
    assert_eq!(bits, 2);
    let back: Monster = decoded(&bytes).unwrap();
    assert!(back.wire_eq(&Monster::default()));

    // A spawn differs in its position alone: two bits, the set, 48 bits.
    let monster = spawned(10.0);
    let (bytes, bits) = encoded(&monster);
    assert_eq!(bits, 2 + ONE_FIELD + POSITION);
    let back: Monster = decoded(&bytes).unwrap();
    assert!(back.wire_eq(&monster));
    assert_eq!(back.name, "goblin");
    let (_, plain_bits) = encoded(&plain(&monster));
    assert!(
        plain_bits > bits + 100,
        "{plain_bits} without the attribute"
    );

    // A value that differs everywhere: one bit more than without it.
    let mut odd = spawned(-5.0);
    odd.body.heading = 9;
    odd.velocity = [1.0, 0.0, 0.5];
    odd.health = 3;
    odd.name = "orc".to_owned();
    let (bytes, bits) = encoded(&odd);
    assert_eq!(bits, 1 + encoded(&plain(&odd)).1);
    let back: Monster = decoded(&bytes).unwrap();
    assert!(back.wire_eq(&odd));
}

#[test]
fn the_fields_of_a_flattened_field_are_leaves_against_the_default() {
    // Only the heading of the flattened body differs: its leaf alone.
    let mut monster = Monster::default();
    monster.body.heading = 90;
    let (bytes, bits) = encoded(&monster);
    assert_eq!(bits, 2 + ONE_FIELD + HEADING);
    let back: Monster = decoded(&bytes).unwrap();
    assert_eq!(back.body.heading, 90);
    assert_eq!(back.body.position, [0.0; 3], "the default's, exactly");
}

#[test]
fn a_decoded_value_has_the_defaults_skipped_fields_in_either_form() {
    let mut differs_everywhere = spawned(1.0);
    differs_everywhere.body.heading = 1;
    differs_everywhere.velocity[0] = 1.0;
    differs_everywhere.health = 1;
    differs_everywhere.name.clear();
    for mut monster in [spawned(1.0), differs_everywhere] {
        monster.ai_state = 99;
        let back: Monster = decoded(&encoded(&monster).0).unwrap();
        assert_eq!(back.ai_state, 7);
    }
}

#[test]
fn other_forms_of_a_value_are_refused() {
    // `1 1` then a set of every field: the plain form's job.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bool(true);
    writer.write_bool(true);
    writer.write_bool(false);
    writer.write_bits(
        FieldMask::all(Monster::FIELD_COUNT).bits(),
        Monster::FIELD_COUNT,
    );
    writer.finish();
    assert!(matches!(
        decoded::<Monster>(&bytes),
        Err(DecodeError::InvalidFieldSet { bit_offset: 1, .. })
    ));
    // An empty set written as a set rather than `1 0`.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bool(true);
    writer.write_bool(true);
    writer.write_bool(false);
    writer.write_bits(0, Monster::FIELD_COUNT);
    writer.finish();
    assert!(matches!(
        decoded::<Monster>(&bytes),
        Err(DecodeError::InvalidFieldSet { .. })
    ));
    // Every cut of a value is an error, never a panic.
    let (bytes, bits) = encoded(&spawned(4.0));
    for keep in 0..bits.div_ceil(8) as usize {
        assert!(decoded::<Monster>(&bytes[..keep]).is_err(), "{keep} bytes");
    }
}

#[test]
fn adds_and_snapshots_cost_what_differs_from_the_default() {
    let mut server = FastArray::new();
    let mut twin = FastArray::new();
    for n in 0..50 {
        let monster = spawned(n as f32);
        twin.push(plain(&monster));
        server.push(monster);
    }
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    let (mut twin_conn, mut twin_client) = (SendState::new(), FastArray::new());
    let bits = exchange(&mut server, &mut conn, &mut client, 0);
    let twin_bits = exchange(&mut twin, &mut twin_conn, &mut twin_client, 0);
    assert!(client.wire_eq(&server));
    // Each add saves what its whole value saves: the heading, velocity,
    // health and name, less the form and the set.
    let saved = encoded(&plain(&spawned(0.0))).1 - encoded(&spawned(0.0)).1;
    let name = encoded(&"goblin".to_owned()).1;
    assert_eq!(saved, HEADING + 96 + 8 + name - 2 - ONE_FIELD);
    assert_eq!(twin_bits - bits, 50 * saved);

    // A snapshot's items are whole values too.
    let (mut snapshot, mut twin_snapshot) = (Vec::new(), Vec::new());
    server.write_snapshot(&mut snapshot).unwrap();
    twin.write_snapshot(&mut twin_snapshot).unwrap();
    let joined = FastArray::<Monster>::from_snapshot(&snapshot).unwrap();
    assert!(joined.wire_eq(&server));
    assert!(snapshot.len() + 50 * 20 < twin_snapshot.len());
}

#[test]
fn peers_whose_defaults_differ_refuse_each_others_handshake() {
    mod goblins {
        #[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
        #[replicate(default_baseline)]
        pub struct Monster {
            pub health: u8,
        }
        impl Default for Monster {
            fn default() -> Self {
                Monster { health: 100 }
            }
        }
    }
    mod ogres {
        #[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
        #[replicate(default_baseline)]
        pub struct Monster {
            pub health: u8,
        }
        impl Default for Monster {
            fn default() -> Self {
                Monster { health: 250 }
            }
        }
    }
    mod plain {
        #[derive(fastarray::Replicate, Clone, Debug, PartialEq, Default)]
        pub struct Monster {
            pub health: u8,
        }
    }
    // An item holding one as a flattened field, as the Bevy plugin holds a
    // component: its whole values write the field against its default.
    #[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
    struct Holder<M: Replicate> {
        tag: u8,
        #[replicate(flatten)]
        monster: M,
    }
    let hello = FastArray::<goblins::Monster>::schema_handshake();
    assert_eq!(FastArray::<goblins::Monster>::check_schema(&hello), Ok(()));
    assert!(FastArray::<ogres::Monster>::check_schema(&hello).is_err());
    assert!(FastArray::<plain::Monster>::check_schema(&hello).is_err());
    let held = FastArray::<Holder<goblins::Monster>>::schema_handshake();
    assert_eq!(
        FastArray::<Holder<goblins::Monster>>::check_schema(&held),
        Ok(())
    );
    assert!(FastArray::<Holder<ogres::Monster>>::check_schema(&held).is_err());
    // A snapshot says so too.
    let mut server = FastArray::new();
    server.push(goblins::Monster { health: 100 });
    server.commit();
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    assert!(FastArray::<goblins::Monster>::from_snapshot(&snapshot).is_ok());
    assert!(matches!(
        FastArray::<ogres::Monster>::from_snapshot(&snapshot),
        Err(DecodeError::SchemaMismatch { .. })
    ));
}

#[test]
fn a_relay_follows_whole_values_against_the_default_and_serves_them_so() {
    let mut server = FastArray::new();
    for n in 0..10 {
        server.push(spawned(n as f32));
    }
    server.commit();
    let mut relay = FastArray::<Monster>::relay();
    let mut bytes = Vec::new();
    server.write_feed_snapshot(&mut bytes).unwrap();
    relay.apply_feed(&bytes).unwrap();
    // Spawns reach the relay in a frame of the feed, and its client in
    // its delta, each against the default.
    let mut odd = spawned(50.0);
    odd.name = "orc".to_owned();
    let ids = [server.push(spawned(40.0)), server.push(odd)];
    server.commit();
    bytes.clear();
    server.write_feed(&mut bytes).unwrap();
    relay.apply_feed(&bytes).unwrap();
    assert!(relay.wire_eq(&server));
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    let mut packet = Vec::new();
    relay.write_delta(&mut conn, 1, &mut packet).unwrap();
    client.apply_delta(&packet, &mut ()).unwrap();
    assert!(client.wire_eq(&server));
    assert_eq!(client.get(ids[0]).unwrap().name, "goblin");
    assert_eq!(client.get(ids[1]).unwrap().name, "orc");
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
#[replicate(default_baseline)]
struct Tagged<T> {
    tag: T,
    count: u8,
}

#[test]
fn a_generic_type_takes_its_default_too() {
    let value = Tagged {
        tag: 0u32,
        count: 5,
    };
    let (bytes, bits) = encoded(&value);
    assert_eq!(bits, 2 + 1 + 2 + 8, "the form, the set, the count");
    assert_eq!(decoded::<Tagged<u32>>(&bytes).unwrap(), value);
}

#[test]
fn whole_values_against_the_default_converge_over_lossy_links() {
    use rand::Rng;

    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let mut server = FastArray::new();
            for n in 0..4 {
                server.push(spawned(n as f32));
            }
            let logic = |server: &mut FastArray<Monster>, rng: &mut rand_chacha::ChaCha8Rng| {
                let ids: Vec<_> = server.ids().collect();
                if let Some(&id) = ids.get(rng.random_range(0..ids.len().max(1))) {
                    let mut monster = server.get_mut(id).unwrap();
                    match rng.random_range(0..4) {
                        0 => monster.body.position[0] += 1.0,
                        1 => monster.health = rng.random_range(99..=100),
                        2 => monster.velocity[2] = rng.random_range(0..2) as f32,
                        _ => monster.name = ["goblin", "orc"][rng.random_range(0..2)].to_owned(),
                    }
                }
                if rng.random_bool(0.3) && !ids.is_empty() {
                    server.remove(ids[rng.random_range(0..ids.len())]);
                }
                if rng.random_bool(0.4) {
                    server.push(spawned(rng.random_range(-9..9) as f32));
                }
            };
            let label = format!("{} seed {seed}", profile.name);
            let mut session = drive::ArraySession::new(server, seed, label.clone(), logic, ());
            drive::drive(&profile, seed, 100, &mut session);
            assert!(session.client.wire_eq(&session.server), "{label}");
        }
    }
}
