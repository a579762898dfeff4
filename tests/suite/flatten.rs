//! Flattened `Replicate` fields: a changed leaf sends its path (one leaf
//! index) and its value, not the whole flattened struct.

use fastarray::{BitCodec, BitReader, BitWriter, FastArray, FieldMask, Replicate, SendState};
use fastarray_testkit::{drive, exchange, link};

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Vec3 {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Transform {
    #[replicate(flatten)]
    position: Vec3,
    #[replicate(flatten)]
    velocity: Vec3,
    heading: u16,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
enum Stance {
    Standing,
    Crouching(u8),
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u8,
    #[replicate(flatten)]
    transform: Transform,
    name: String,
    #[replicate(flatten)]
    stance: Stance,
}

fn unit(n: u32) -> Unit {
    let v = |a: f32| Vec3 {
        x: a,
        y: a + 1.0,
        z: a + 2.0,
    };
    Unit {
        hp: 100,
        transform: Transform {
            position: v(n as f32),
            velocity: v(0.0),
            heading: 0,
        },
        name: format!("u{n}"),
        stance: Stance::Standing,
    }
}

#[test]
fn leaves_are_numbered_depth_first() {
    // hp, position.{x,y,z}, velocity.{x,y,z}, heading, name, stance.{variant, 0}
    assert_eq!(Unit::FIELD_COUNT, 11);
    let before = unit(1);
    let mut after = before.clone();
    after.transform.velocity.y = 9.0;
    assert_eq!(after.diff(&before), FieldMask::single(5));
    after.name.push('!');
    assert_eq!(after.diff(&before), FieldMask::single(5).with(8));
    assert_eq!(
        Unit::STRUCTURE,
        FieldMask::single(9),
        "the flattened enum's variant"
    );
}

/// `nested`, the old name of `flatten`, still works (with a deprecation
/// warning, allowed here), and means the same.
mod old_name {
    #![allow(deprecated)]

    use super::{Stance, Transform, Vec3};
    use fastarray::Replicate;

    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Unit {
        pub hp: u8,
        #[replicate(nested)]
        pub transform: Transform,
        pub name: String,
        #[replicate(nested)]
        pub stance: Stance,
    }

    /// `#[allow(deprecated)]` on the type silences the warning too.
    #[derive(Replicate, Clone, Debug, PartialEq)]
    #[allow(deprecated)]
    pub struct Moved {
        #[replicate(nested)]
        pub to: Vec3,
    }
}

#[test]
fn the_old_name_nested_means_flatten() {
    assert_eq!(old_name::Unit::FIELD_COUNT, Unit::FIELD_COUNT);
    assert_eq!(old_name::Unit::STRUCTURE, Unit::STRUCTURE);
    assert_eq!(old_name::Unit::SCHEMA_HASH, Unit::SCHEMA_HASH);
    assert_eq!(old_name::Moved::FIELD_COUNT, 3);
    let old = |u: Unit| old_name::Unit {
        hp: u.hp,
        transform: u.transform,
        name: u.name,
        stance: u.stance,
    };
    let (before, mut after) = (unit(1), unit(1));
    after.transform.velocity.y = 9.0;
    assert_eq!(
        old(after.clone()).diff(&old(before.clone())),
        after.diff(&before)
    );
}

#[test]
fn a_changed_leaf_round_trips_alone() {
    let before = unit(1);
    let mut after = before.clone();
    after.transform.position.z = -4.5;
    let mask = after.diff(&before);
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    after.encode_fields(mask, &mut writer).unwrap();
    assert_eq!(writer.finish(), 32, "only the f32 leaf");
    let patch = Unit::decode_fields(mask, &mut BitReader::new(&bytes)).unwrap();
    let mut mirror = before.clone();
    mirror.apply_patch(patch);
    assert_eq!(mirror, after);
}

#[test]
fn one_changed_leaf_sends_its_index_and_value() {
    let mut server = FastArray::new();
    let ids: Vec<_> = (0..100).map(|n| server.push(unit(n))).collect();
    let mut conn = SendState::new();
    let mut client = FastArray::new();
    exchange(&mut server, &mut conn, &mut client, 0);

    let id = ids[50];
    server.get_mut(id).unwrap().transform.velocity.y = 3.25;
    server.commit();
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    // kind, short frame, no removals, one item, its gap code (Elias-delta),
    // no field set shared by the entries
    let header = 2 + 16 + 1 + 2 + 1 + 1;
    let id_bits = 10; // varint(50)
    let leaf = 1 + 1 + 4; // selector, gamma(0), one 4-bit leaf index of 11 leaves: the path
    assert_eq!(stats.bits, header + id_bits + 1 + leaf + 32);
    client.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(client, server);
}

#[test]
fn a_variant_change_in_a_flattened_enum_sends_the_whole_item() {
    let mut server = FastArray::new();
    let id = server.push(unit(1));
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    exchange(&mut server, &mut conn, &mut client, 0);

    server.get_mut(id).unwrap().stance = Stance::Crouching(3);
    server.commit();
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    assert_eq!((stats.added, stats.changed), (1, 0), "sent whole");
    client.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(client, server);
}

#[test]
fn whole_flattened_values_encode_like_their_fields() {
    let value = unit(3);
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.encode(&mut writer).unwrap();
    let bits = writer.finish();
    assert_eq!(bits, 8 + 6 * 32 + 16 + (4 + 16) + 1);
    assert_eq!(Unit::decode(&mut BitReader::new(&bytes)).unwrap(), value);
}

#[test]
fn flattened_leaves_converge_over_lossy_links() {
    use rand::Rng;

    for profile in link::LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let mut server = FastArray::new();
            let ids: Vec<_> = (0..6).map(|n| server.push(unit(n))).collect();
            let logic = |server: &mut FastArray<Unit>, rng: &mut rand_chacha::ChaCha8Rng| {
                for _ in 0..3 {
                    let mut u = server.get_mut(ids[rng.random_range(0..ids.len())]).unwrap();
                    match rng.random_range(0..6) {
                        0 => u.transform.position.x += 1.0,
                        1 => u.transform.velocity.z -= 1.0,
                        2 => u.transform.heading = rng.random(),
                        3 => u.hp = rng.random(),
                        4 => u.stance = Stance::Crouching(rng.random()),
                        _ => u.stance = Stance::Standing,
                    }
                }
            };
            let label = format!("{} seed {seed}", profile.name);
            let mut session = drive::ArraySession::new(server, seed, label.clone(), logic, ());
            drive::drive(&profile, seed, 100, &mut session);
            assert_eq!(session.client, session.server, "{label}");
        }
    }
}
