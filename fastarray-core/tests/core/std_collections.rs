//! `BitCodec` for `VecDeque`, `BTreeMap`, `HashMap`, `BTreeSet`, `HashSet`.
//!
//! Properties checked:
//! * values round-trip at every bit alignment, reading exactly the bits written;
//! * equal hash collections encode to equal bits whatever their insertion
//!   order and hasher, and a `HashMap<u8, _>` encodes like the `BTreeMap`;
//! * a truncated encoding fails (or reads into the padding), never panics;
//! * a length the input cannot hold is refused before anything is allocated,
//!   and a key written twice is a `DuplicateKey` at the second one;
//! * `same` compares contents, not iteration order.

use core::fmt::Debug;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;

use fastarray_core::{BitCodec, BitReader, BitWriter, DecodeError, FastArray, FieldMask};
use fastarray_derive::Replicate;
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(128)
    }
}

/// `value` encoded after `offset` one-bits: the bytes and the bits written.
fn encode_at<T: BitCodec>(value: &T, offset: u32) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bits(u64::MAX, offset);
    value.encode(&mut writer).unwrap();
    let bits = writer.finish();
    (bytes, bits)
}

fn encode<T: BitCodec>(value: &T) -> Vec<u8> {
    encode_at(value, 0).0
}

/// Checks that `value` decodes back at every alignment, reading exactly
/// the bits written, and that no truncation of it stops short.
fn check_round_trip<T: BitCodec + Debug + PartialEq>(value: &T) {
    for offset in 0..8 {
        let (bytes, bits) = encode_at(value, offset);
        let mut reader = BitReader::new(&bytes);
        reader.read_bits(offset).unwrap();
        assert_eq!(T::decode(&mut reader).as_ref(), Ok(value));
        assert_eq!(reader.bit_offset(), bits);
        assert!(bits - u64::from(offset) >= T::MIN_BITS);
    }
    let (bytes, bits) = encode_at(value, 0);
    for cut in 0..bits {
        // The first `cut` bits, the rest of their last byte zeroed.
        let mut prefix = bytes[..cut.div_ceil(8) as usize].to_vec();
        if cut % 8 != 0 {
            *prefix.last_mut().unwrap() &= (1u8 << (cut % 8)) - 1;
        }
        let mut reader = BitReader::new(&prefix);
        // The zero padding after the cut may complete the value (as zeros
        // where the value had ones), but the decoder cannot have stopped
        // within the first `cut` bits: on them it decides as on the whole.
        if T::decode(&mut reader).is_ok() {
            assert!(reader.bit_offset() > cut, "decoding stopped at bit {cut}");
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn deques_round_trip(items in prop::collection::vec_deque(any::<u16>(), 0..40)) {
        check_round_trip(&items);
        // The same bits as the `Vec` of the same elements.
        prop_assert_eq!(encode(&items), encode(&Vec::from(items.clone())));
    }

    #[test]
    fn btree_maps_round_trip(map in prop::collection::btree_map(any::<u8>(), ".{0,6}", 0..20)) {
        check_round_trip(&map);
    }

    #[test]
    fn hash_maps_round_trip(map in prop::collection::hash_map(any::<u32>(), any::<Option<i8>>(), 0..30)) {
        check_round_trip(&map);
    }

    #[test]
    fn sets_round_trip(
        ordered in prop::collection::btree_set(any::<i16>(), 0..30),
        hashed in prop::collection::hash_set(".{0,5}", 0..20),
    ) {
        check_round_trip(&ordered);
        check_round_trip(&hashed);
    }

    /// Two maps with the same entries, filled in opposite orders with
    /// hashers of different random keys, iterate differently but encode
    /// alike; with one-byte keys the order is the keys' own.
    #[test]
    fn equal_hash_collections_encode_alike(entries in prop::collection::btree_map(any::<u8>(), any::<u16>(), 0..60)) {
        let forward: HashMap<u8, u16> = entries.iter().map(|(k, v)| (*k, *v)).collect();
        let mut backward = HashMap::with_hasher(RandomState::new());
        for (k, v) in entries.iter().rev() {
            backward.insert(*k, *v);
        }
        prop_assert_eq!(encode(&forward), encode(&backward));
        prop_assert_eq!(encode(&forward), encode(&entries));
        prop_assert!(forward.same(&backward));

        let keys: HashSet<u8> = entries.keys().copied().collect();
        let other_keys: HashSet<u8, BuildHasherDefault<std::hash::DefaultHasher>> =
            entries.keys().rev().copied().collect();
        prop_assert_eq!(encode(&keys), encode(&other_keys));
        prop_assert_eq!(encode(&keys), encode(&entries.keys().copied().collect::<BTreeSet<u8>>()));
    }
}

/// Keys whose encodings do not sort like the keys: strings (a varint
/// length first) still give one order for every map holding them.
#[test]
fn string_keys_encode_alike_whatever_the_insertion_order() {
    let words = ["kiwi", "a", "banana", "", "zz", "apple", "b", "longer key"];
    let forward: HashMap<String, u8> = words
        .iter()
        .map(|w| (w.to_string(), w.len() as u8))
        .collect();
    let backward: HashMap<String, u8> = words
        .iter()
        .rev()
        .map(|w| (w.to_string(), w.len() as u8))
        .collect();
    assert_eq!(encode(&forward), encode(&backward));
    check_round_trip(&forward);
}

#[test]
fn lengths_the_input_cannot_hold_are_refused_before_allocating() {
    // A length of 2^40 entries followed by 4 bytes.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(1 << 40);
    writer.write_bits(0, 32);
    let length_bits = writer.finish() - 32;
    let too_large = |result: DecodeError| {
        assert!(
            matches!(result, DecodeError::LengthTooLarge { bit_offset, claimed, .. }
                if bit_offset == length_bits && claimed == 1 << 40),
            "{result:?}"
        );
    };
    too_large(HashMap::<u64, u64>::decode(&mut BitReader::new(&bytes)).unwrap_err());
    too_large(BTreeMap::<u8, u8>::decode(&mut BitReader::new(&bytes)).unwrap_err());
    too_large(HashSet::<u32>::decode(&mut BitReader::new(&bytes)).unwrap_err());
    too_large(BTreeSet::<u16>::decode(&mut BitReader::new(&bytes)).unwrap_err());
    too_large(VecDeque::<u8>::decode(&mut BitReader::new(&bytes)).unwrap_err());

    // 4 entries of at least 8 + 8 bits cannot fit in the 33 bits left.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(4); // 5 bits
    writer.write_bits(0, 27);
    writer.finish();
    assert!(matches!(
        HashMap::<u8, u8>::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::LengthTooLarge {
            claimed: 4,
            remaining_bits: 27,
            ..
        })
    ));

    // Zero-bit elements: any length but 0 is refused, and never written.
    let mut bytes = Vec::new();
    BitWriter::new(&mut bytes).write_varint(3);
    assert!(matches!(
        HashSet::<()>::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::LengthTooLarge { claimed: 3, .. })
    ));
    let mut out = Vec::new();
    assert!(
        HashSet::from([()])
            .encode(&mut BitWriter::new(&mut out))
            .is_err()
    );
    assert!(
        BTreeMap::from([((), ())])
            .encode(&mut BitWriter::new(&mut out))
            .is_err()
    );
}

#[test]
fn a_key_written_twice_is_refused() {
    // Two entries, both with key 7: length 2 (4 bits), then 8 + 8 bits each.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(2);
    for value in [1, 2] {
        writer.write_bits(7, 8);
        writer.write_bits(value, 8);
    }
    writer.finish();
    let second = DecodeError::DuplicateKey { bit_offset: 4 + 16 };
    assert_eq!(
        HashMap::<u8, u8>::decode(&mut BitReader::new(&bytes)),
        Err(second.clone())
    );
    assert_eq!(
        BTreeMap::<u8, u8>::decode(&mut BitReader::new(&bytes)),
        Err(second)
    );

    // The same for sets: 7, 1, 7.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(3);
    for item in [7, 1, 7] {
        writer.write_bits(item, 8);
    }
    writer.finish();
    let third = DecodeError::DuplicateKey { bit_offset: 5 + 16 };
    assert_eq!(
        HashSet::<u8>::decode(&mut BitReader::new(&bytes)),
        Err(third.clone())
    );
    assert_eq!(
        BTreeSet::<u8>::decode(&mut BitReader::new(&bytes)),
        Err(third)
    );
}

#[test]
fn same_compares_contents() {
    let a: HashMap<u8, f32> = [(1, 0.0), (2, 1.5)].into();
    let b: HashMap<u8, f32> = [(2, 1.5), (1, 0.0)].into();
    assert!(a.same(&b));
    // Values compare by `same`: -0.0 encodes differently from 0.0.
    let c: HashMap<u8, f32> = [(2, 1.5), (1, -0.0)].into();
    assert!(!a.same(&c));
    let d: HashMap<u8, f32> = [(1, 0.0), (3, 1.5)].into();
    assert!(!a.same(&d));
    assert!(!BTreeSet::from([1u8, 2]).same(&BTreeSet::from([1, 3])));
    assert!(VecDeque::from([1u8, 2]).same(&VecDeque::from([1, 2])));
    assert!(!VecDeque::from([1u8, 2]).same(&VecDeque::from([2, 1])));
}

#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Inventory {
    gold: u32,
    items: HashMap<String, u16>,
    seen: BTreeSet<u32>,
    log: VecDeque<u8>,
}

#[test]
fn collection_fields_replicate() {
    let mut server = FastArray::new();
    let id = server.push(Inventory {
        gold: 5,
        items: [("sword".to_string(), 1), ("arrow".to_string(), 40)].into(),
        seen: [3, 9].into(),
        log: [1, 2].into(),
    });
    server.commit();
    let mut packet = Vec::new();
    server.write_snapshot(&mut packet).unwrap();
    let mut client = FastArray::<Inventory>::from_snapshot(&packet).unwrap();
    assert_eq!(client, server);

    *server.get_mut(id).unwrap().items.get_mut("arrow").unwrap() -= 1;
    assert_eq!(server.commit().changed(), [(id, FieldMask::single(1))]);
    // Rebuilding the map in another order is not a change.
    let mut entries: Vec<_> = server.get(id).unwrap().items.clone().into_iter().collect();
    entries.reverse();
    let rebuilt: HashMap<String, u16> = entries.into_iter().collect();
    server.get_mut(id).unwrap().items = rebuilt;
    assert!(server.commit().changed().is_empty());

    let mut packet = Vec::new();
    server.write_snapshot(&mut packet).unwrap();
    client = FastArray::from_snapshot(&packet).unwrap();
    assert_eq!(client.get(id).unwrap().items["arrow"], 39);
}
