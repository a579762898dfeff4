//! `#[derive(Replicate)]` end to end: the code it generates for every kind
//! of struct, checked through the runtime's `BitCodec` and `Replicate`.

use fastarray::{BitCodec, BitReader, BitWriter, FieldMask, Replicate};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// Encodes `value` in full and decodes it back, checking that the reader
/// consumed exactly the bits the writer wrote.
fn round_trip<T: BitCodec>(value: &T) -> T {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.encode(&mut writer).unwrap();
    let written = writer.finish();
    let mut reader = BitReader::new(&bytes);
    let decoded = T::decode(&mut reader).unwrap();
    assert_eq!(reader.bit_offset(), written, "bits written vs bits read");
    assert!(
        written >= T::MIN_BITS,
        "{written} bits < MIN_BITS {}",
        T::MIN_BITS
    );
    decoded
}

/// Sends the fields of `new` in `mask` and applies them to a copy of `old`,
/// checking that the reader consumed exactly the bits the writer wrote.
fn send_fields<T: Replicate + Clone>(new: &T, old: &T, mask: FieldMask) -> T {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    new.encode_fields(mask, &mut writer).unwrap();
    let written = writer.finish();
    let mut reader = BitReader::new(&bytes);
    let patch = T::decode_fields(mask, &mut reader).unwrap();
    assert_eq!(reader.bit_offset(), written, "bits written vs bits read");
    let mut mirror = old.clone();
    mirror.apply_patch(patch);
    mirror
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    hp: u8,
    name: String,
    position: (i32, i32),
    alive: bool,
}

#[test]
fn named_struct() {
    assert_eq!(Agent::FIELD_COUNT, 4);
    assert_eq!(Agent::TYPE_NAME, "Agent");
    assert_eq!(Agent::MIN_BITS, 8 + 1 + 64 + 1);
    assert_eq!(Agent::TYPE_HASH, Agent::SCHEMA_HASH);

    let agent = Agent {
        hp: 200,
        name: "ann".into(),
        position: (-3, 7),
        alive: true,
    };
    assert_eq!(round_trip(&agent), agent);

    let moved = Agent {
        position: (0, 8),
        ..agent.clone()
    };
    assert_eq!(moved.diff(&agent), FieldMask::single(2));
    assert!(agent.same(&agent.clone()));
    assert!(!agent.same(&moved));
    assert_eq!(send_fields(&moved, &agent, moved.diff(&agent)), moved);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Rgb(u8, u8, u8);

#[test]
fn tuple_struct() {
    assert_eq!(Rgb::FIELD_COUNT, 3);
    assert_eq!(Rgb::MIN_BITS, 24);
    let color = Rgb(1, 2, 3);
    assert_eq!(round_trip(&color), color);
    assert_eq!(Rgb(1, 9, 3).diff(&color), FieldMask::single(1));
    assert_eq!(
        send_fields(&Rgb(4, 5, 6), &color, FieldMask::single(2)),
        Rgb(1, 2, 6)
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Marker;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Empty {}

#[test]
fn unit_struct() {
    assert_eq!(Marker::FIELD_COUNT, 0);
    assert_eq!(Marker::MIN_BITS, 0);
    assert_eq!(Marker.diff(&Marker), FieldMask::EMPTY);
    assert!(Marker.same(&Marker));
    assert_eq!(send_fields(&Marker, &Marker, FieldMask::EMPTY), Marker);

    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    Marker.encode(&mut writer).unwrap();
    assert_eq!(writer.finish(), 0);
    assert_eq!(round_trip(&Marker), Marker);

    assert_eq!(Empty::FIELD_COUNT, 0);
    assert_eq!(round_trip(&Empty {}), Empty {});
    assert_ne!(
        Marker::SCHEMA_HASH,
        Empty::SCHEMA_HASH,
        "the type name is hashed"
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Pair<T>
where
    T: Clone,
{
    left: T,
    right: T,
}

#[test]
fn generic_struct() {
    let pair = Pair {
        left: 1u16,
        right: 2,
    };
    assert_eq!(Pair::<u16>::MIN_BITS, 32);
    assert_eq!(Pair::<u32>::MIN_BITS, 64);
    assert_eq!(round_trip(&pair), pair);
    assert_eq!(
        Pair {
            left: 1u16,
            right: 5
        }
        .diff(&pair),
        FieldMask::single(1)
    );

    let strings = Pair {
        left: "a".to_string(),
        right: "b".to_string(),
    };
    assert_eq!(round_trip(&strings), strings);

    // A derived struct is itself a field type.
    let nested = Pair {
        left: pair.clone(),
        right: Pair { left: 3, right: 4 },
    };
    assert_eq!(round_trip(&nested), nested);
    assert_eq!(Pair::<Pair<u16>>::MIN_BITS, 64);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Grid<const N: usize> {
    cells: [u8; N],
    cursor: u8,
}

#[test]
fn const_generic_struct() {
    assert_eq!(Grid::<3>::MIN_BITS, 3 * 8 + 8);
    let grid = Grid {
        cells: [1, 2, 3],
        cursor: 1,
    };
    assert_eq!(round_trip(&grid), grid);
    assert_eq!(
        Grid {
            cells: [1, 2, 4],
            cursor: 1
        }
        .diff(&grid),
        FieldMask::single(0)
    );
    assert_ne!(Grid::<3>::SCHEMA_HASH, Grid::<4>::SCHEMA_HASH);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Cached {
    hp: u8,
    #[replicate(skip)]
    cache: Vec<u32>,
    name: String,
    #[replicate(skip)]
    dirty: bool,
}

#[test]
fn skipped_fields_are_not_sent_and_decode_as_default() {
    assert_eq!(Cached::FIELD_COUNT, 2);
    assert_eq!(Cached::MIN_BITS, 8 + 1);
    let value = Cached {
        hp: 5,
        cache: vec![1, 2],
        name: "x".into(),
        dirty: true,
    };
    let expected = Cached {
        cache: Vec::new(),
        dirty: false,
        ..value.clone()
    };
    assert_eq!(round_trip(&value), expected);

    // Skipped fields never show up in a diff; `name` is bit 1, not bit 2.
    let other = Cached {
        cache: vec![9],
        dirty: false,
        ..value.clone()
    };
    assert_eq!(value.diff(&other), FieldMask::EMPTY);
    let renamed = Cached {
        name: "y".into(),
        ..value.clone()
    };
    assert_eq!(renamed.diff(&value), FieldMask::single(1));

    // Applying a patch leaves the receiver's own skipped fields alone.
    let mirror = send_fields(&renamed, &other, FieldMask::all(2));
    assert_eq!(
        mirror,
        Cached {
            cache: vec![9],
            dirty: false,
            ..renamed
        }
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Four {
    a: u8,
    b: bool,
    c: String,
    d: f32,
}

#[test]
fn diff_sets_exactly_the_changed_fields() {
    let base = Four {
        a: 1,
        b: false,
        c: "c".into(),
        d: 0.0,
    };
    let changed = [
        Four {
            a: 2,
            ..base.clone()
        },
        Four {
            b: true,
            ..base.clone()
        },
        Four {
            c: "d".into(),
            ..base.clone()
        },
        Four {
            d: -0.0,
            ..base.clone()
        }, // floats compare bits: -0.0 is a change
    ];
    for (index, value) in (0..).zip(&changed) {
        assert_eq!(value.diff(&base), FieldMask::single(index), "field {index}");
        assert_eq!(base.diff(value), FieldMask::single(index), "field {index}");
    }
    assert_eq!(base.diff(&base.clone()), FieldMask::EMPTY);

    let nan = Four {
        d: f32::NAN,
        ..base.clone()
    };
    assert_eq!(nan.diff(&nan.clone()), FieldMask::EMPTY, "NaN is stable");
}

#[test]
fn every_subset_of_fields_round_trips() {
    let old = Four {
        a: 1,
        b: false,
        c: "old".into(),
        d: 1.5,
    };
    let new = Four {
        a: 9,
        b: true,
        c: "new value".into(),
        d: -2.25,
    };
    for bits in 0..16 {
        let mask = FieldMask::from_bits(bits);
        let expected = Four {
            a: if mask.contains(0) { new.a } else { old.a },
            b: if mask.contains(1) { new.b } else { old.b },
            c: if mask.contains(2) {
                new.c.clone()
            } else {
                old.c.clone()
            },
            d: if mask.contains(3) { new.d } else { old.d },
        };
        assert_eq!(send_fields(&new, &old, mask), expected, "mask {mask:?}");
    }
}

#[test]
fn encode_fields_writes_only_the_masked_fields() {
    let value = Four {
        a: 1,
        b: true,
        c: String::new(),
        d: 0.0,
    };
    let bits_for = |mask| {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        value.encode_fields(mask, &mut writer).unwrap();
        writer.finish()
    };
    assert_eq!(bits_for(FieldMask::EMPTY), 0);
    assert_eq!(bits_for(FieldMask::single(0)), 8);
    assert_eq!(
        bits_for(FieldMask::single(1) | FieldMask::single(3)),
        1 + 32
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Node {
    id: u8,
    children: Vec<Node>,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Tree<T> {
    value: T,
    children: Vec<Tree<T>>,
    parent: Option<Box<Self>>,
}

#[test]
fn recursive_structs() {
    let leaf = Node {
        id: 2,
        children: Vec::new(),
    };
    let root = Node {
        id: 1,
        children: vec![leaf.clone(), leaf],
    };
    assert_eq!(round_trip(&root), root);
    assert_eq!(Node::MIN_BITS, 8 + 1);

    let tree = Tree {
        value: 'x',
        children: vec![Tree {
            value: 'y',
            children: Vec::new(),
            parent: None,
        }],
        parent: Some(Box::new(Tree {
            value: 'z',
            children: Vec::new(),
            parent: None,
        })),
    };
    assert_eq!(round_trip(&tree), tree);
    assert_ne!(Tree::<u8>::SCHEMA_HASH, Tree::<u16>::SCHEMA_HASH);
}

/// Definitions of one `Item` type as different builds might have it.
mod schema {
    use fastarray::Replicate;

    macro_rules! item {
        ($module:ident { $($field:ident: $ty:ty),* }) => {
            pub mod $module {
                #[derive(fastarray::Replicate)]
                pub struct Item { $(pub $field: $ty),* }
            }
        };
    }

    item!(base { a: u8, b: u16 });
    item!(same { a: u8, b: u16 });
    item!(renamed { a: u8, c: u16 });
    item!(retyped { a: u8, b: u32 });
    item!(reordered { b: u16, a: u8 });
    item!(extended {
        a: u8,
        b: u16,
        c: bool
    });

    #[derive(Replicate)]
    pub struct Other {
        pub a: u8,
        pub b: u16,
    }

    #[derive(Replicate)]
    pub struct WithSkip {
        pub a: u8,
        #[replicate(skip)]
        pub cache: u64,
        pub b: u16,
    }
}

#[test]
fn schema_hash_tracks_names_types_and_order() {
    use fastarray::Replicate as _;
    let base = schema::base::Item::SCHEMA_HASH;
    assert_eq!(
        schema::same::Item::SCHEMA_HASH,
        base,
        "same definition, same hash"
    );
    assert_ne!(schema::renamed::Item::SCHEMA_HASH, base, "renamed field");
    assert_ne!(schema::retyped::Item::SCHEMA_HASH, base, "retyped field");
    assert_ne!(
        schema::reordered::Item::SCHEMA_HASH,
        base,
        "reordered fields"
    );
    assert_ne!(schema::extended::Item::SCHEMA_HASH, base, "added field");
    assert_ne!(schema::Other::SCHEMA_HASH, base, "renamed type");

    // Skipped fields are neither on the wire nor in the hash.
    use fastarray::schema::{START, str, u64};
    let expected = [("a", u8::TYPE_HASH), ("b", u16::TYPE_HASH)]
        .into_iter()
        .fold(str(START, "WithSkip"), |hash, (name, ty)| {
            u64(str(hash, name), ty)
        });
    assert_eq!(schema::WithSkip::SCHEMA_HASH, expected);
    let value = schema::WithSkip {
        a: 1,
        cache: 2,
        b: 3,
    };
    assert_eq!(round_trip(&value).cache, 0);

    // Generic parameters are resolved: the field types' own hashes differ.
    assert_ne!(Pair::<u8>::SCHEMA_HASH, Pair::<u32>::SCHEMA_HASH);
    assert_ne!(Pair::<u8>::SCHEMA_HASH, Pair::<i8>::SCHEMA_HASH);
    assert_eq!(Pair::<u8>::SCHEMA_HASH, Pair::<u8>::TYPE_HASH);
}

/// `#[replicate(crate = "...")]` names the runtime by another path: the
/// runtime crate itself, or any module that re-exports its `__private_0_1`.
mod crate_override {
    pub mod rt {
        pub use ::fastarray::__private_0_1;
    }

    #[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
    #[replicate(crate = "fastarray_core")]
    pub struct ThroughCore {
        pub hp: u8,
    }

    #[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
    #[replicate(crate = "crate::derive::crate_override::rt")]
    pub struct ThroughModule(pub u16, #[replicate(skip)] pub u8);

    #[derive(fastarray::Replicate, Clone, Debug, PartialEq)]
    #[replicate(crate = "rt")]
    pub struct ThroughRelativePath {
        pub on: bool,
    }
}

#[test]
fn crate_path_override() {
    use crate_override::{ThroughCore, ThroughModule, ThroughRelativePath};
    assert_eq!(round_trip(&ThroughCore { hp: 3 }), ThroughCore { hp: 3 });
    assert_eq!(round_trip(&ThroughModule(7, 1)), ThroughModule(7, 0));
    assert_eq!(ThroughModule::FIELD_COUNT, 1);
    assert_eq!(
        round_trip(&ThroughRelativePath { on: true }),
        ThroughRelativePath { on: true }
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Everything {
    flag: bool,
    small: u8,
    signed: i64,
    wide: u128,
    size: usize,
    ratio: f64,
    letter: char,
    name: String,
    list: Vec<u16>,
    maybe: Option<i32>,
    array: [u8; 3],
    tuple: (bool, u32),
    boxed: Box<Rgb>,
    #[replicate(skip)]
    local: u64,
    nested: Pair<i16>,
}

prop_compose! {
    fn everything()(
        flag: bool, small: u8, signed: i64, wide: u128, size: usize, ratio: f64,
        letter: char, name: String, list: Vec<u16>, maybe: Option<i32>,
        array: [u8; 3], tuple: (bool, u32), rgb: (u8, u8, u8), local: u64,
        nested: (i16, i16),
    ) -> Everything {
        Everything {
            flag, small, signed, wide, size, ratio, letter, name, list, maybe, array, tuple,
            boxed: Box::new(Rgb(rgb.0, rgb.1, rgb.2)),
            local,
            nested: Pair { left: nested.0, right: nested.1 },
        }
    }
}

/// Equality as the wire sees it: floats by bits, the skipped field ignored.
fn wire_eq(a: &Everything, b: &Everything) -> bool {
    a.diff(b).is_empty()
}

/// Reads the fields of `new` in `sent` into a copy of `old`, keeping
/// those in `keep`, both ways a mirror can: through a patch
/// (`decode_fields`, `retain_fields`, `apply_patch`) and in place
/// (`apply_fields`, what a mirror applies a delta's changed fields with,
/// once `check_fields` has checked them). Both must leave the same item,
/// name the same changed fields and read the same bits, and the check
/// must refuse what decoding refuses. Returns the item.
fn in_place_matches_patch<T: Replicate + Clone + core::fmt::Debug>(
    new: &T,
    old: &T,
    sent: FieldMask,
    keep: FieldMask,
) -> T {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    new.encode_fields(sent, &mut writer).unwrap();
    let written = writer.finish();

    let mut reader = BitReader::new(&bytes);
    let mut patch = T::decode_fields(sent, &mut reader).unwrap();
    assert_eq!(reader.bit_offset(), written, "patch: bits written vs read");
    T::retain_fields(&mut patch, keep);
    let mut patched = old.clone();
    let patch_changed = patched.apply_patch(patch);

    // Checked without the values: the same bits, and on every cut of the
    // input the same error, as decoding them.
    for cut in 0..=bytes.len() {
        let (mut checked, mut decoded) =
            (BitReader::new(&bytes[..cut]), BitReader::new(&bytes[..cut]));
        let check = T::check_fields(sent, &mut checked);
        let decode = T::decode_fields(sent, &mut decoded).map(drop);
        assert_eq!(check, decode, "check vs decode, {cut} bytes of {sent:?}");
        if check.is_ok() {
            assert_eq!(checked.bit_offset(), written, "check: bits written vs read");
        }
    }

    let mut reader = BitReader::new(&bytes);
    let mut in_place = old.clone();
    let changed = in_place.apply_fields(sent, keep, &mut reader).unwrap();
    assert_eq!(
        reader.bit_offset(),
        written,
        "in place: bits written vs read"
    );
    assert_eq!(
        changed, patch_changed,
        "changed fields, sent {sent:?} keep {keep:?}"
    );
    // Compared as printed: exact, and a NaN equals itself.
    assert_eq!(
        format!("{in_place:?}"),
        format!("{patched:?}"),
        "sent {sent:?} keep {keep:?}"
    );
    in_place
}

/// A type with every kind of field `apply_fields` reads differently: a
/// quantized array, a raw float array, a string, a flattened struct
/// (whose type reads its own leaves) and a skipped field.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Mover {
    #[replicate(quantize(min = -64.0, max = 64.0, bits = 12))]
    position: [f32; 3],
    velocity: [f32; 2],
    name: String,
    #[replicate(flatten)]
    colour: Rgb,
    #[replicate(skip)]
    local: u32,
    hp: u8,
}

fn mover(seed: u8) -> Mover {
    let f = f32::from(seed);
    Mover {
        position: [f - 40.0, f / 3.0, -f],
        velocity: [f * 0.25, -f],
        name: format!("m{seed}"),
        colour: Rgb(seed, seed / 2, 255 - seed),
        local: u32::from(seed) * 7,
        hp: seed / 5,
    }
}

/// An item read in place takes exactly what a patch would give it, for
/// every pair of sent and kept fields: values, changed fields and bits.
#[test]
fn fields_applied_in_place_match_a_patch() {
    let all = FieldMask::all(Mover::FIELD_COUNT);
    assert_eq!(Mover::FIELD_COUNT, 7, "the colour's three leaves count");
    let (old, new) = (mover(10), mover(200));
    for sent in 0..=all.bits() {
        for keep in 0..=all.bits() {
            let (sent, keep) = (FieldMask::from_bits(sent), FieldMask::from_bits(keep));
            let item = in_place_matches_patch(&new, &old, sent, keep);
            assert_eq!(item.local, old.local, "a skipped field is not read");
            // What is sent and kept arrives; everything else stays.
            assert_eq!(new.diff(&item) & (sent & keep), FieldMask::EMPTY);
            let moved = FieldMask::from_bits(old.diff(&item).bits() & !(sent & keep).bits());
            assert_eq!(moved, FieldMask::EMPTY);
        }
    }
    // The value an item holds, sent: a quantized field takes its step's
    // value, and is changed if that differs from the one it held (here
    // clamped to the range), as a mirror's apply reports it; the same
    // value read again changes nothing.
    let mut same = new.clone();
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    new.encode_fields(all, &mut writer).unwrap();
    writer.finish();
    let mut apply = || {
        same.apply_fields(all, all, &mut BitReader::new(&bytes))
            .unwrap()
    };
    assert_eq!(apply(), FieldMask::single(0), "only the position moved");
    assert_eq!(apply(), FieldMask::EMPTY);
    assert_eq!(same.position, [64.0, 64.0, -64.0], "clamped to the range");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: RngSeed::Fixed(0x5eed_fa57),
        ..ProptestConfig::default()
    })]

    #[test]
    fn derived_struct_round_trips(value in everything(), other in everything(), bits in 0u64..1 << 14) {
        prop_assert_eq!(Everything::FIELD_COUNT, 14);

        // Full encoding: every replicated field, the skipped one defaulted.
        let decoded = round_trip(&value);
        prop_assert!(wire_eq(&decoded, &value));
        prop_assert_eq!(decoded.local, 0);

        // Partial encoding of an arbitrary mask, applied to another value.
        let mask = FieldMask::from_bits(bits);
        let mirror = send_fields(&value, &other, mask);
        prop_assert_eq!(mirror.local, other.local);
        prop_assert!(value.diff(&mirror).bits() & mask.bits() == 0, "sent fields arrive");
        prop_assert!(other.diff(&mirror).bits() & !mask.bits() == 0, "other fields stay");

        // Sending the diff makes the copies equal.
        let synced = send_fields(&value, &other, value.diff(&other));
        prop_assert!(wire_eq(&synced, &value));

        // Read in place, keeping some of the sent fields: as a patch.
        let keep = FieldMask::from_bits(bits.rotate_left(5) & ((1 << 14) - 1));
        in_place_matches_patch(&value, &other, mask, keep);
    }
}

mod field_names {
    use fastarray::{FastArray, FieldMask, Replicate};

    #[derive(Replicate, Clone, Debug, PartialEq, Default)]
    pub struct Leaf {
        pub a: u8,
        pub b: u8,
    }

    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Agent {
        pub position: [f32; 3],
        #[replicate(skip)]
        pub cache: u32,
        pub health: u8,
        #[replicate(flatten)]
        pub leaf: Leaf,
        pub r#type: u8,
    }

    /// The same fields in another order: the constants follow the fields.
    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Reordered {
        pub health: u8,
        pub position: [f32; 3],
    }

    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Pair(pub u8, #[replicate(skip)] pub u8, pub u16);

    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Wrap<T> {
        pub value: T,
        pub count: u8,
    }

    /// Each replicated field has a constant named after it: its mask bit,
    /// or the bits of a flattened field's leaves; skipped fields have none
    /// and take no bit.
    #[test]
    fn each_field_has_a_constant_named_after_it() {
        assert_eq!(Agent::POSITION, FieldMask::single(0));
        assert_eq!(Agent::HEALTH, FieldMask::single(1));
        assert_eq!(Agent::LEAF, FieldMask::from_bits(0b1100));
        assert_eq!(Agent::TYPE, FieldMask::single(4));
        assert_eq!(Reordered::HEALTH, FieldMask::single(0));
        assert_eq!(Reordered::POSITION, FieldMask::single(1));
        assert_eq!(
            (Pair::FIELD_0, Pair::FIELD_2),
            (FieldMask::single(0), FieldMask::single(1))
        );
        assert_eq!(Wrap::<u32>::COUNT, FieldMask::single(1));
        let every = Agent::POSITION | Agent::HEALTH | Agent::LEAF | Agent::TYPE;
        assert_eq!(every, FieldMask::all(Agent::FIELD_COUNT));
    }

    /// Usable wherever a mask is: what commit reports, and the events.
    #[test]
    fn the_constants_name_what_changed() {
        let mut agents = FastArray::new();
        let id = agents.push(Agent {
            position: [0.0; 3],
            cache: 0,
            health: 100,
            leaf: Leaf::default(),
            r#type: 1,
        });
        agents.commit();
        agents.get_mut(id).unwrap().health = 90;
        agents.get_mut(id).unwrap().leaf.b = 3;
        let changes = agents.commit();
        let (changed_id, mask) = changes.changed()[0];
        assert_eq!(changed_id, id);
        assert!(mask.intersects(Agent::HEALTH) && mask.intersects(Agent::LEAF));
        assert!(!mask.intersects(Agent::POSITION | Agent::TYPE));
        assert_eq!(
            mask,
            Agent::HEALTH | Agent::LEAF.without(FieldMask::single(2))
        );
    }
}
