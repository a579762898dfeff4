//! Integration tests of the serde bridge (`serde_encode` / `serde_decode`).
//!
//! Properties checked:
//! * serde-derived values (nested `Vec`, `HashMap`/`BTreeMap`, `Option`,
//!   enums with unit/tuple/struct variants, strings, chars, tuples, `u128`)
//!   round-trip at every bit alignment, reading back exactly the bits written;
//! * wherever a type has a native `BitCodec`, the serde encoding is bit for bit
//!   the native one, and each side decodes the other's output;
//! * truncated and random inputs give an error, never a panic; random inputs
//!   that do decode re-encode to exactly the bits that were read;
//! * hostile lengths fail before allocating, size hints are capped, deep
//!   nesting fails instead of overflowing the stack;
//! * what the format cannot express (`deserialize_any`, unknown lengths,
//!   skipped fields, zero-bit elements) is a `Serde` error, located.
#![cfg(feature = "serde")]

use core::fmt::Debug;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::num::NonZeroU8;
use std::time::Duration;

use fastarray_core::{
    BitCodec, BitReader, BitWriter, DecodeError, EncodeError, serde_decode, serde_encode,
};
use proptest::collection::{btree_map, hash_map, vec};
use proptest::prelude::*;
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[path = "support/largest_allocation.rs"]
mod largest_allocation;
use largest_allocation::largest_allocation;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const CASES: u32 = 256;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        // Report failures in the test output only; do not write a
        // regressions file next to this one.
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

/// Encodes `value` alone through serde. Returns the bytes and the bits written.
fn encode<T: Serialize + ?Sized>(value: &T) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    serde_encode(value, &mut writer).expect("the value is encodable");
    let bits = writer.finish();
    assert_eq!(bytes.len() as u64, bits.div_ceil(8));
    (bytes, bits)
}

/// Bits `serde_encode` writes for `value`.
fn bit_len<T: Serialize + ?Sized>(value: &T) -> u64 {
    encode(value).1
}

/// The error `serde_encode` gives for `value`.
fn encode_error<T: Serialize + ?Sized>(value: &T) -> EncodeError {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    serde_encode(value, &mut writer).expect_err("the value is not encodable")
}

/// Encodes `value` alone through its native `BitCodec`.
fn encode_native<T: BitCodec>(value: &T) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.encode(&mut writer).expect("the value is encodable");
    let bits = writer.finish();
    (bytes, bits)
}

/// Decodes a `T` from the start of `bytes`; returns it with the bits read.
fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, u64), DecodeError> {
    let mut reader = BitReader::new(bytes);
    let value = serde_decode(&mut reader)?;
    Ok((value, reader.bit_offset()))
}

/// Bytes built by hand with a `BitWriter`.
fn bits_of(write: impl FnOnce(&mut BitWriter<'_>)) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    write(&mut writer);
    writer.finish();
    bytes
}

fn bit(bytes: &[u8], i: u64) -> bool {
    (bytes[(i / 8) as usize] >> (i % 8)) & 1 == 1
}

/// Encodes `value` after `lead` bits of `lead_value` and before a sentinel
/// byte, decodes it back, and checks the value, the bits read, and the
/// sentinel. Returns the bits the value took.
fn round_trip_at<T>(value: &T, lead: u32, lead_value: u64) -> u64
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    const SENTINEL: u64 = 0xa5;
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bits(lead_value, lead);
    serde_encode(value, &mut writer).expect("the value is encodable");
    let written = writer.bits_written() - u64::from(lead);
    writer.write_bits(SENTINEL, 8);
    writer.finish();

    let mut reader = BitReader::new(&bytes);
    reader.read_bits(lead).unwrap();
    let decoded: T = serde_decode(&mut reader).expect("what was encoded decodes");
    assert_eq!(&decoded, value);
    assert_eq!(
        reader.bit_offset() - u64::from(lead),
        written,
        "bits read == bits written"
    );
    assert_eq!(reader.read_bits(8), Ok(SENTINEL));
    assert_eq!(reader.expect_end(), Ok(()));
    written
}

/// [`round_trip_at`] at every bit alignment; returns the bits the value took.
fn round_trip<T>(value: &T) -> u64
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let bits = round_trip_at(value, 0, 0);
    for lead in 1..8 {
        assert_eq!(round_trip_at(value, lead, u64::MAX), bits);
    }
    bits
}

/// Every byte prefix too short to hold `value` fails to decode, with an
/// error positioned inside the prefix, and without panicking.
fn assert_truncations_fail<T>(value: &T)
where
    T: Serialize + DeserializeOwned + Debug,
{
    let (bytes, bits) = encode(value);
    for cut in 0..bits.div_ceil(8) as usize {
        match decode::<T>(&bytes[..cut]) {
            Err(DecodeError::UnexpectedEnd { bit_offset, .. }) => {
                assert!(bit_offset <= 8 * cut as u64, "cut at byte {cut}");
            }
            Err(DecodeError::LengthTooLarge { bit_offset, .. }) => {
                assert!(bit_offset <= 8 * cut as u64, "cut at byte {cut}");
            }
            other => panic!("{value:?} cut to {cut} byte(s) gave {other:?}"),
        }
    }
}

fn varint_bits(value: u64) -> u64 {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(value);
    writer.bits_written()
}

fn serde_message(error: &DecodeError) -> &str {
    match error {
        DecodeError::Serde { message, .. } => message,
        other => panic!("expected DecodeError::Serde, got {other:?}"),
    }
}

fn encode_message(error: &EncodeError) -> &str {
    match error {
        EncodeError::Serde(message) => message,
        other => panic!("expected EncodeError::Serde, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Test types
// ---------------------------------------------------------------------------

/// An `f32` compared by its bits, so every bit pattern (`NaN`s included)
/// can be checked for a round trip.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(transparent)]
struct F32(f32);

impl PartialEq for F32 {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

/// As [`F32`], for `f64`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(transparent)]
struct F64(f64);

impl PartialEq for F64 {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Command {
    Idle,
    Move(i32, i32),
    Say { text: String, loud: bool },
    Target(Option<u64>),
    Queue(Vec<Command>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum ItemKind {
    Weapon { damage: u32 },
    Potion(u8),
    Junk,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Item {
    kind: ItemKind,
    count: u16,
    label: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Marker;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Meters(u32);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Player {
    id: u128,
    delta: i128,
    name: String,
    initial: char,
    health: u8,
    armor: i16,
    speed: F32,
    pos: (F64, F64, bool),
    grid: [i8; 3],
    target: Option<u32>,
    inventory: Vec<Item>,
    tags: BTreeMap<String, u16>,
    scores: HashMap<u8, i64>,
    commands: Vec<Command>,
    nested: Vec<Vec<Option<i8>>>,
    blob: Vec<u8>,
    marker: Marker,
    nothing: (),
    height: Meters,
}

fn command() -> impl Strategy<Value = Command> {
    let leaf = prop_oneof![
        Just(Command::Idle),
        (any::<i32>(), any::<i32>()).prop_map(|(x, y)| Command::Move(x, y)),
        (any::<String>(), any::<bool>()).prop_map(|(text, loud)| Command::Say { text, loud }),
        any::<Option<u64>>().prop_map(Command::Target),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| vec(inner, 0..4).prop_map(Command::Queue))
}

fn item() -> impl Strategy<Value = Item> {
    let kind = prop_oneof![
        any::<u32>().prop_map(|damage| ItemKind::Weapon { damage }),
        any::<u8>().prop_map(ItemKind::Potion),
        Just(ItemKind::Junk),
    ];
    (kind, any::<u16>(), any::<Option<String>>()).prop_map(|(kind, count, label)| Item {
        kind,
        count,
        label,
    })
}

fn player() -> impl Strategy<Value = Player> {
    let scalars = (
        any::<u128>(),
        any::<i128>(),
        any::<String>(),
        any::<char>(),
        any::<u8>(),
        any::<i16>(),
        any::<u32>().prop_map(|bits| F32(f32::from_bits(bits))),
        (any::<u64>(), any::<u64>(), any::<bool>())
            .prop_map(|(x, y, up)| (F64(f64::from_bits(x)), F64(f64::from_bits(y)), up)),
        any::<[i8; 3]>(),
        any::<Option<u32>>(),
        any::<u32>().prop_map(Meters),
    );
    let collections = (
        vec(item(), 0..4),
        btree_map(any::<String>(), any::<u16>(), 0..4),
        hash_map(any::<u8>(), any::<i64>(), 0..4),
        vec(command(), 0..4),
        vec(vec(any::<Option<i8>>(), 0..4), 0..4),
        vec(any::<u8>(), 0..16),
    );
    (scalars, collections).prop_map(
        |(
            (id, delta, name, initial, health, armor, speed, pos, grid, target, height),
            (inventory, tags, scores, commands, nested, blob),
        )| Player {
            id,
            delta,
            name,
            initial,
            health,
            armor,
            speed,
            pos,
            grid,
            target,
            inventory,
            tags,
            scores,
            commands,
            nested,
            blob,
            marker: Marker,
            nothing: (),
            height,
        },
    )
}

fn sample_player() -> Player {
    Player {
        id: u128::MAX - 5,
        delta: i128::MIN + 3,
        name: "Zoë 🦀".to_string(),
        initial: 'Z',
        health: 100,
        armor: -12,
        speed: F32(1.5),
        pos: (F64(-0.0), F64(f64::NAN), true),
        grid: [1, -2, 3],
        target: Some(42),
        inventory: vec![
            Item {
                kind: ItemKind::Weapon { damage: 9 },
                count: 1,
                label: Some("sword".to_string()),
            },
            Item {
                kind: ItemKind::Junk,
                count: 300,
                label: None,
            },
        ],
        tags: BTreeMap::from([("team".to_string(), 2), ("rank".to_string(), 17)]),
        scores: HashMap::from([(1, -5), (2, 1 << 40)]),
        commands: vec![
            Command::Move(3, -4),
            Command::Queue(vec![Command::Idle, Command::Target(None)]),
            Command::Say {
                text: "gg".to_string(),
                loud: false,
            },
        ],
        nested: vec![vec![], vec![Some(-1), None]],
        blob: vec![0, 255, 7],
        marker: Marker,
        nothing: (),
        height: Meters(180),
    }
}

// ---------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn players_round_trip(player in player()) {
        let bits = round_trip(&player);
        // Re-encoding the decoded value takes as many bits (the maps may
        // iterate in another order, so compare sizes, not bytes).
        let (bytes, _) = encode(&player);
        let (decoded, read) = decode::<Player>(&bytes).unwrap();
        prop_assert_eq!(read, bits);
        prop_assert_eq!(bit_len(&decoded), bits);
    }

    #[test]
    fn command_lists_round_trip(commands in vec(command(), 0..8)) {
        round_trip(&commands);
    }

    #[test]
    fn tuples_and_wide_integers_round_trip(
        value in (any::<u128>(), any::<i128>(), any::<(char, bool, i64)>(), any::<Option<(u8, String)>>())
    ) {
        round_trip(&value);
    }
}

#[test]
fn a_sample_player_round_trips() {
    round_trip(&sample_player());
}

#[test]
fn std_types_round_trip() {
    round_trip(&IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
    round_trip(&IpAddr::V6(Ipv6Addr::LOCALHOST));
    round_trip(&Duration::new(5, 999_999_999));
    round_trip(&Some(Box::new(-7i64)));
    round_trip(&String::new());
    round_trip(&Vec::<Vec<u8>>::new());
    round_trip(&(Marker, (), Meters(0)));
    round_trip(&[char::MAX, '\0', 'é']);
}

// ---------------------------------------------------------------------------
// Sizes and bit patterns: the same as the native codecs
// ---------------------------------------------------------------------------

#[test]
fn sizes_follow_the_documented_table() {
    assert_eq!(bit_len(&true), 1);
    assert_eq!(bit_len(&7u8), 8);
    assert_eq!(bit_len(&300u16), 16);
    assert_eq!(bit_len(&-1i32), 32);
    assert_eq!(bit_len(&u64::MAX), 64);
    assert_eq!(bit_len(&1u128), 128);
    assert_eq!(bit_len(&-1i128), 128);
    assert_eq!(bit_len(&1.0f32), 32);
    assert_eq!(bit_len(&1.0f64), 64);
    assert_eq!(bit_len(&'x'), 21);
    assert_eq!(bit_len("hey"), varint_bits(3) + 24);
    assert_eq!(bit_len(&"hey".to_string()), 5 + 24);
    assert_eq!(bit_len(&None::<u64>), 1);
    assert_eq!(bit_len(&Some(7u8)), 9);
    assert_eq!(bit_len(&()), 0);
    assert_eq!(bit_len(&Marker), 0);
    assert_eq!(bit_len(&Meters(5)), 32);
    assert_eq!(bit_len(&(1u8, 2u16, true)), 25);
    assert_eq!(bit_len(&[0u8; 4]), 32);
    assert_eq!(bit_len(&Vec::<u64>::new()), 1);
    assert_eq!(bit_len(&vec![1u8, 2, 3]), 5 + 24);
    assert_eq!(bit_len(&BTreeMap::<u8, u8>::new()), 1);
    assert_eq!(bit_len(&BTreeMap::from([(1u8, 2u16)])), 4 + 8 + 16);
    // Enums: the variant index as a varint, then the content.
    assert_eq!(bit_len(&Command::Idle), 1);
    assert_eq!(bit_len(&Command::Move(1, 2)), 4 + 64);
    assert_eq!(bit_len(&Command::Target(None)), 5 + 1);
    assert_eq!(bit_len(&ItemKind::Junk), 4);
    // serde hands `usize` over as a `u64` (the native codec uses a varint).
    assert_eq!(bit_len(&3usize), 64);
    // Not human-readable: an IPv4 address is a variant index and 4 bytes,
    // a Duration its two integers.
    assert_eq!(bit_len(&IpAddr::V4(Ipv4Addr::LOCALHOST)), 1 + 32);
    assert_eq!(bit_len(&Duration::from_millis(1)), 64 + 32);
}

#[test]
fn a_struct_is_its_fields_in_order() {
    let item = Item {
        kind: ItemKind::Weapon { damage: 9 },
        count: 3,
        label: Some("a".to_string()),
    };
    let expected = bits_of(|w| {
        w.write_varint(0); // ItemKind::Weapon
        w.write_bits(9, 32);
        w.write_bits(3, 16);
        w.write_bool(true);
        w.write_varint(1);
        w.write_bytes(b"a");
    });
    assert_eq!(encode(&item).0, expected);
}

type NativeMix = (
    (bool, u8, i16, u32),
    (i64, u128, i128, f32),
    (char, String, Option<Vec<u16>>, [i8; 3]),
    (Vec<String>, Box<u64>, f64, Option<(u8, bool)>),
);

fn native_mix() -> impl Strategy<Value = NativeMix> {
    (
        any::<(bool, u8, i16, u32)>(),
        (
            any::<i64>(),
            any::<u128>(),
            any::<i128>(),
            any::<u32>().prop_map(f32::from_bits),
        ),
        (
            any::<char>(),
            any::<String>(),
            any::<Option<Vec<u16>>>(),
            any::<[i8; 3]>(),
        ),
        (
            vec(any::<String>(), 0..4),
            any::<u64>().prop_map(Box::new),
            any::<u64>().prop_map(f64::from_bits),
            any::<Option<(u8, bool)>>(),
        ),
    )
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn serde_and_native_codecs_write_the_same_bits(value in native_mix()) {
        let (serde_bytes, serde_bits) = encode(&value);
        let (native_bytes, native_bits) = encode_native(&value);
        prop_assert_eq!(serde_bits, native_bits);
        prop_assert_eq!(&serde_bytes, &native_bytes);

        // Each side reads the other's output, all of it.
        let mut reader = BitReader::new(&serde_bytes);
        let via_native = NativeMix::decode(&mut reader).unwrap();
        prop_assert_eq!(reader.bit_offset(), serde_bits);
        prop_assert_eq!(encode_native(&via_native).0, native_bytes);
        let (via_serde, read) = decode::<NativeMix>(&encode_native(&value).0).unwrap();
        prop_assert_eq!(read, native_bits);
        prop_assert_eq!(encode(&via_serde).0, serde_bytes);
    }

    #[test]
    fn strings_cost_what_the_native_codec_costs(text in any::<String>()) {
        prop_assert_eq!(encode(&text), encode_native(&text));
        prop_assert_eq!(bit_len(&text), varint_bits(text.len() as u64) + 8 * text.len() as u64);
    }
}

// ---------------------------------------------------------------------------
// Truncated and random input
// ---------------------------------------------------------------------------

#[test]
fn every_truncation_of_a_few_values_fails() {
    assert_truncations_fail(&sample_player());
    assert_truncations_fail(&vec![
        Command::Say {
            text: "hello there".to_string(),
            loud: true,
        },
        Command::Queue(vec![Command::Move(1, 2), Command::Queue(vec![])]),
    ]);
    assert_truncations_fail(&"a longer string, é".to_string());
    assert_truncations_fail(&IpAddr::V6(Ipv6Addr::LOCALHOST));
    assert_truncations_fail(&BTreeMap::from([(1u64, vec![1u8, 2]), (2, vec![])]));
    assert_truncations_fail(&(u128::MAX, 'q', Some(Meters(3))));
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn truncated_players_fail(player in player()) {
        assert_truncations_fail(&player);
    }

    #[test]
    fn random_input_never_panics(bytes in vec(any::<u8>(), 0..256)) {
        if let Ok((_, read)) = decode::<Player>(&bytes) {
            prop_assert!(read <= 8 * bytes.len() as u64);
        }
        let _ = decode::<NativeMix>(&bytes);
        let _ = decode::<HashMap<String, Vec<Option<char>>>>(&bytes);
        let _ = decode::<Vec<IpAddr>>(&bytes);
    }

    /// The format has one encoding per value: whatever random input decodes
    /// to re-encodes to exactly the bits that were read.
    #[test]
    fn random_input_that_decodes_is_canonical(bytes in vec(any::<u8>(), 0..64)) {
        assert_canonical::<Vec<Command>>(&bytes)?;
    }

    /// Valid encodings with a few bits flipped: mostly decodable up to the
    /// flip, so they reach deeper than random bytes.
    #[test]
    fn corrupted_encodings_never_panic(
        commands in vec(command(), 1..6),
        player in player(),
        flips in vec(any::<prop::sample::Index>(), 1..4),
    ) {
        let (mut bytes, bits) = encode(&commands);
        for flip in &flips {
            let i = flip.index(bits as usize);
            bytes[i / 8] ^= 1 << (i % 8);
        }
        assert_canonical::<Vec<Command>>(&bytes)?;

        let (mut bytes, bits) = encode(&player);
        for flip in &flips {
            let i = flip.index(bits as usize);
            bytes[i / 8] ^= 1 << (i % 8);
        }
        if let Ok((_, read)) = decode::<Player>(&bytes) {
            prop_assert!(read <= 8 * bytes.len() as u64);
        }
    }
}

/// If `bytes` decode as a `T`, re-encoding it gives back exactly the bits read.
fn assert_canonical<T>(bytes: &[u8]) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned,
{
    if let Ok((value, read)) = decode::<T>(bytes) {
        let (again, bits) = encode(&value);
        prop_assert_eq!(bits, read);
        for i in 0..bits {
            prop_assert_eq!(bit(&again, i), bit(bytes, i), "bit {}", i);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Hostile lengths and nesting
// ---------------------------------------------------------------------------

#[test]
fn huge_claimed_lengths_fail_before_allocating() {
    for claimed in [1 << 20, 1 << 40, u64::MAX] {
        let bytes = bits_of(|w| {
            w.write_varint(claimed);
            w.write_bytes(&[0xff; 16]);
        });
        let expect_too_large = |result: Result<(), DecodeError>| match result {
            Err(DecodeError::LengthTooLarge {
                bit_offset,
                claimed: found,
                ..
            }) => {
                assert_eq!(found, claimed);
                assert_eq!(bit_offset, varint_bits(claimed));
            }
            other => panic!("claimed {claimed}: {other:?}"),
        };
        let ((), largest) = largest_allocation(|| {
            expect_too_large(decode::<String>(&bytes).map(drop));
            expect_too_large(decode::<Vec<u8>>(&bytes).map(drop));
            expect_too_large(decode::<Vec<Vec<u64>>>(&bytes).map(drop));
            expect_too_large(decode::<HashMap<u64, String>>(&bytes).map(drop));
            expect_too_large(decode::<BTreeMap<u8, u8>>(&bytes).map(drop));
            expect_too_large(decode::<Box<[u128]>>(&bytes).map(drop));
        });
        assert!(largest < 1024, "allocated {largest} bytes");
    }
}

#[test]
fn plausible_lengths_of_large_elements_reserve_a_capped_amount() {
    // 100 000 elements claimed and 100 000 bits present, but each element
    // needs 1 024 bits: the decoder must not reserve for all of them.
    type Big = [u64; 16];
    let bytes = bits_of(|w| {
        w.write_varint(100_000);
        w.write_bytes(&[0; 100_000 / 8]);
    });
    let (result, largest) = largest_allocation(|| decode::<Vec<Big>>(&bytes));
    assert!(
        matches!(result, Err(DecodeError::UnexpectedEnd { .. })),
        "{result:?}"
    );
    assert!(
        largest <= 4096 * size_of::<Big>(),
        "reserved {largest} bytes"
    );
}

/// Records the size hint a sequence or map visitor is given.
#[derive(Debug, PartialEq)]
struct Probe {
    hint: Option<usize>,
    len: usize,
}

struct SeqProbe;

impl<'de> Visitor<'de> for SeqProbe {
    type Value = Probe;

    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("a sequence of bools")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Probe, A::Error> {
        let hint = seq.size_hint();
        let mut len = 0;
        while seq.next_element::<bool>()?.is_some() {
            len += 1;
        }
        Ok(Probe { hint, len })
    }
}

impl<'de> Deserialize<'de> for Probe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(SeqProbe)
    }
}

struct MapProbe(Probe);

impl<'de> Deserialize<'de> for MapProbe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MapProbe;

            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("a map of bools")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MapProbe, A::Error> {
                let hint = map.size_hint();
                let mut len = 0;
                while map.next_entry::<bool, bool>()?.is_some() {
                    len += 1;
                }
                Ok(MapProbe(Probe { hint, len }))
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[test]
fn size_hints_are_capped() {
    let few = encode(&vec![true; 10]).0;
    assert_eq!(
        decode::<Probe>(&few).unwrap().0,
        Probe {
            hint: Some(10),
            len: 10
        }
    );
    let many = encode(&vec![false; 100_000]).0;
    assert_eq!(
        decode::<Probe>(&many).unwrap().0,
        Probe {
            hint: Some(4096),
            len: 100_000
        }
    );
    // A map of 10 000 entries, each 2 bits, written by hand (a real map
    // of bools holds at most 2).
    let map = bits_of(|w| {
        w.write_varint(10_000);
        w.write_bits(0, 20_000 % 64);
        for _ in 0..20_000 / 64 {
            w.write_bits(0, 64);
        }
    });
    let (MapProbe(probe), _) = decode::<MapProbe>(&map).unwrap();
    assert_eq!(
        probe,
        Probe {
            hint: Some(4096),
            len: 10_000
        }
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum List {
    Nil,
    Cons(Box<List>),
}

impl List {
    fn of_len(len: usize) -> Self {
        (0..len).fold(List::Nil, |tail, _| List::Cons(Box::new(tail)))
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Tree {
    children: Vec<Tree>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Chain(Option<Box<Chain>>);

fn assert_too_deep<T: DeserializeOwned + Debug>(bytes: &[u8]) {
    match decode::<T>(bytes) {
        Err(error) => assert!(
            serde_message(&error).contains("nesting too deep"),
            "{error}"
        ),
        Ok(value) => panic!("decoded {value:?}"),
    }
}

#[test]
fn nesting_up_to_the_limit_decodes() {
    // Each `List` value is one level: 127 `Cons` and a `Nil` are 128.
    round_trip(&List::of_len(127));
    let (bytes, _) = encode(&List::of_len(128));
    assert_too_deep::<List>(&bytes);
}

#[test]
fn hostile_nesting_fails_instead_of_overflowing_the_stack() {
    const LEVELS: usize = 1_000_000;
    // `Cons` a million times: variant index 1 (4 bits) each.
    let cons = bits_of(|w| (0..LEVELS).for_each(|_| w.write_varint(1)));
    assert_too_deep::<List>(&cons);
    match decode::<List>(&cons) {
        Err(DecodeError::Serde { bit_offset, .. }) => assert_eq!(bit_offset, 128 * 4),
        other => panic!("{other:?}"),
    }
    // A tree whose every node has one child: length 1 (4 bits) each.
    assert_too_deep::<Tree>(&cons);
    // `Some` a million times: one bit each.
    assert_too_deep::<Chain>(&vec![0xff; LEVELS / 8]);
    assert_too_deep::<Vec<List>>(&cons);
}

// ---------------------------------------------------------------------------
// What the format cannot express
// ---------------------------------------------------------------------------

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Untagged {
    Number(u8),
    Text(String),
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
enum InternallyTagged {
    A { x: u8 },
    B,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct HasUntagged {
    id: u16,
    value: Untagged,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Flattened {
    a: u8,
    #[serde(flatten)]
    rest: Meters2,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Meters2 {
    meters: u32,
}

#[test]
fn types_that_need_deserialize_any_fail_to_decode() {
    // An untagged enum encodes as its content, but cannot be decoded.
    let value = HasUntagged {
        id: 1,
        value: Untagged::Number(5),
    };
    assert_eq!(bit_len(&value), 16 + 8);
    let (bytes, _) = encode(&value);
    let error = decode::<HasUntagged>(&bytes).unwrap_err();
    assert!(matches!(error, DecodeError::Serde { bit_offset: 16, .. }));
    assert!(
        serde_message(&error).contains("not self-describing"),
        "{error}"
    );
    assert!(error.to_string().starts_with("at bit 16: "), "{error}");

    let (bytes, _) = encode(&InternallyTagged::A { x: 1 });
    let error = decode::<InternallyTagged>(&bytes).unwrap_err();
    assert!(serde_message(&error).contains("not self-describing"));

    let error = decode::<IgnoredAny>(&[0xff]).unwrap_err();
    assert!(serde_message(&error).contains("not self-describing"));

    // A flattened struct is a map with string keys on the way in.
    let error = decode::<Flattened>(&[0xff; 8]).unwrap_err();
    assert!(matches!(error, DecodeError::Serde { .. }), "{error:?}");
}

/// A sequence whose length its iterator cannot tell up front.
struct UnknownLength;

impl Serialize for UnknownLength {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((0..3u8).filter(|_| true))
    }
}

/// A sequence that announces 3 elements and writes 2.
struct WrongLength;

impl Serialize for WrongLength {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(3))?;
        seq.serialize_element(&1u8)?;
        seq.serialize_element(&2u8)?;
        seq.end()
    }
}

struct Failing;

impl Serialize for Failing {
    fn serialize<S: Serializer>(&self, _serializer: S) -> Result<S::Ok, S::Error> {
        Err(ser::Error::custom("cannot serialize this"))
    }
}

#[derive(Serialize)]
struct Sparse {
    a: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    b: Option<u8>,
}

#[derive(Serialize)]
enum SparseVariant {
    V {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        list: Vec<u8>,
    },
}

#[test]
fn what_the_format_cannot_express_fails_to_encode() {
    fn message<T: Serialize + ?Sized>(value: &T) -> String {
        encode_message(&encode_error(value)).to_owned()
    }

    assert!(message(&UnknownLength).contains("unknown length"));
    assert!(
        message(&Flattened {
            a: 1,
            rest: Meters2 { meters: 2 }
        })
        .contains("unknown length")
    );
    assert!(message(&WrongLength).contains("announced 3 element(s) but serialized 2"));
    assert_eq!(message(&Failing), "cannot serialize this");
    assert_eq!(
        EncodeError::Serde("cannot serialize this".into()).to_string(),
        "cannot serialize this"
    );

    // A skipped field would shift every later field.
    assert_eq!(bit_len(&Sparse { a: 1, b: Some(2) }), 8 + 1 + 8);
    assert!(message(&Sparse { a: 1, b: None }).contains("field `b`"));
    assert_eq!(bit_len(&SparseVariant::V { list: vec![1] }), 1 + 4 + 8);
    assert!(message(&SparseVariant::V { list: vec![] }).contains("field `list`"));

    // Zero-bit elements: their count could not be checked on decode.
    assert_eq!(bit_len(&Vec::<()>::new()), 1);
    assert!(message(&vec![(); 3]).contains("zero bits"));
    assert!(message(&vec![Marker]).contains("zero bits"));
    assert!(message(&HashMap::from([((), ())])).contains("zero bits"));
    // One bit per element is enough.
    round_trip(&vec![Some(()); 3]);
    round_trip(&BTreeMap::from([((), 1u8)]));
}

// ---------------------------------------------------------------------------
// Decode errors: the native ones where they apply, located serde ones otherwise
// ---------------------------------------------------------------------------

#[test]
fn invalid_scalars_give_the_native_errors() {
    let surrogate = bits_of(|w| {
        w.write_bits(1, 3);
        w.write_bits(0xd800, 21);
    });
    let mut reader = BitReader::new(&surrogate);
    reader.read_bits(3).unwrap();
    assert_eq!(
        serde_decode::<char>(&mut reader),
        Err(DecodeError::InvalidChar {
            bit_offset: 3,
            value: 0xd800
        })
    );

    let bad_utf8 = bits_of(|w| {
        w.write_varint(2);
        w.write_bytes(&[0xc3, 0x28]);
    });
    assert_eq!(
        decode::<String>(&bad_utf8),
        Err(DecodeError::InvalidUtf8 { bit_offset: 4 })
    );
    // Bytes need not be UTF-8.
    assert_eq!(
        decode::<Vec<u8>>(&bad_utf8).map(|(v, _)| v),
        Ok(vec![0xc3, 0x28])
    );

    let huge_variant = bits_of(|w| w.write_varint(u64::from(u32::MAX) + 1));
    assert_eq!(
        decode::<ItemKind>(&huge_variant),
        Err(DecodeError::VarintOutOfRange {
            bit_offset: 0,
            target: "u32"
        })
    );

    assert_eq!(
        decode::<u64>(&[0; 7]),
        Err(DecodeError::UnexpectedEnd {
            bit_offset: 0,
            wanted: 64
        })
    );
}

#[test]
fn deserialize_errors_are_located_at_the_rejected_value() {
    // Unknown variant index 7, after a u8.
    let bytes = bits_of(|w| {
        w.write_bits(1, 8);
        w.write_varint(7);
    });
    let error = decode::<(u8, ItemKind)>(&bytes).unwrap_err();
    assert!(
        matches!(error, DecodeError::Serde { bit_offset: 8, .. }),
        "{error:?}"
    );
    assert!(serde_message(&error).contains("variant index"), "{error}");

    // A zero where a NonZeroU8 is expected: the second element of a Vec
    // that follows a u8.
    let bytes = bits_of(|w| {
        w.write_bits(5, 8);
        w.write_varint(2);
        w.write_bits(1, 8);
        w.write_bits(0, 8);
    });
    let error = decode::<(u8, Vec<NonZeroU8>)>(&bytes).unwrap_err();
    assert_eq!(
        error,
        DecodeError::Serde {
            bit_offset: 8 + 4 + 8,
            message: serde_message(&error).to_owned(),
        }
    );
    assert!(serde_message(&error).contains("nonzero"), "{error}");
    assert_eq!(
        decode::<(u8, Vec<NonZeroU8>)>(&encode(&(5u8, vec![NonZeroU8::MIN; 2])).0).map(|(v, _)| v),
        Ok((5, vec![NonZeroU8::MIN; 2]))
    );
}

/// Reads only the first element of a sequence.
#[derive(Debug)]
struct FirstOnly;

impl<'de> Deserialize<'de> for FirstOnly {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstOnly;

            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("a non-empty sequence")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstOnly, A::Error> {
                seq.next_element::<u8>()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                Ok(FirstOnly)
            }
        }
        deserializer.deserialize_seq(V)
    }
}

#[test]
fn a_visitor_that_leaves_elements_unread_fails() {
    let bytes = bits_of(|w| {
        w.write_bits(0, 2);
        serde_encode(&vec![1u8, 2, 3], w).unwrap();
    });
    let mut reader = BitReader::new(&bytes);
    reader.read_bits(2).unwrap();
    let error = serde_decode::<FirstOnly>(&mut reader).unwrap_err();
    assert!(
        matches!(error, DecodeError::Serde { bit_offset: 2, .. }),
        "{error:?}"
    );
    assert!(serde_message(&error).contains("read 1 of 3"), "{error}");
    // An empty one fails in the visitor, located the same way.
    let error = decode::<FirstOnly>(&encode(&Vec::<u8>::new()).0).unwrap_err();
    assert!(
        matches!(error, DecodeError::Serde { bit_offset: 0, .. }),
        "{error:?}"
    );
}
