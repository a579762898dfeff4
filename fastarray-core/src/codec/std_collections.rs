//! `BitCodec` for the other standard collections: `VecDeque`, `BTreeMap`,
//! `HashMap`, `BTreeSet` and `HashSet`.
//!
//! Each is written like a `Vec`: a [varint](BitWriter::write_varint)
//! count, then the elements (a map's entries as key, then value). Decoding
//! checks the count against the remaining input before allocating (each
//! element takes at least its type's `MIN_BITS`), reserves at most 64 KiB
//! up front, and refuses a key that appears twice
//! ([`DecodeError::DuplicateKey`]).
//!
//! # Order
//!
//! A `BTreeMap` or `BTreeSet` is written in key order. A `HashMap` or
//! `HashSet` iterates in an order that depends on its hasher's random keys,
//! so it differs between processes, and between two equal maps in one
//! process. So that equal values encode to equal bits (reproducible
//! packets, snapshots that compare equal byte for byte), hash collections
//! are written sorted by the bytes of each key's own encoding: no `Ord`
//! bound is needed, at the cost of encoding the keys on the side (one
//! buffer) and sorting them, `O(n log n)`, once per encode. The decoder
//! accepts any order. Change detection ([`BitCodec::same`]) compares the
//! values (keys by `Eq`, values by their `same`), never the bits.
//!
//! Wire-identical collections share a [`TYPE_HASH`](BitCodec::TYPE_HASH):
//! `VecDeque<T>` with `Vec<T>`, `HashMap` with `BTreeMap`, `HashSet` with
//! `BTreeSet`, so a peer may hold either.

use core::hash::{BuildHasher, Hash};
use std::collections::hash_map::{self, HashMap};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque, btree_map};

use super::BitCodec;
use super::collections::{read_len, write_len};
use crate::bits::{BitReader, BitWriter, prealloc};
use crate::error::{DecodeError, EncodeError};
use crate::schema;

impl<T: BitCodec> BitCodec for VecDeque<T> {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = <Vec<T> as BitCodec>::TYPE_HASH;
    const NESTS: bool = T::NESTS;

    /// # Errors
    /// As for `Vec`: a non-empty deque of zero-bit elements is refused.
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        write_len(writer, self.len(), T::MIN_BITS)?;
        self.iter().try_for_each(|item| item.encode(writer))
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let len = read_len(reader, T::MIN_BITS)?;
        let mut items = VecDeque::with_capacity(prealloc::<T>(len));
        for _ in 0..len {
            items.push_back(T::decode(reader)?);
        }
        Ok(items)
    }

    fn same(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.same(b))
    }
}

/// The fewest bits one map entry takes.
const fn entry_bits<K: BitCodec, V: BitCodec>() -> u64 {
    K::MIN_BITS.saturating_add(V::MIN_BITS)
}

impl<K: BitCodec + Ord, V: BitCodec> BitCodec for BTreeMap<K, V> {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("map", &[K::TYPE_HASH, V::TYPE_HASH]);
    const NESTS: bool = K::NESTS || V::NESTS;

    /// # Errors
    /// Besides the keys' and values' errors: a non-empty map whose entries
    /// can encode to zero bits is refused.
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        write_len(writer, self.len(), entry_bits::<K, V>())?;
        self.iter().try_for_each(|(key, value)| {
            key.encode(writer)?;
            value.encode(writer)
        })
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let len = read_len(reader, entry_bits::<K, V>())?;
        let mut map = BTreeMap::new();
        for _ in 0..len {
            let bit_offset = reader.bit_offset();
            match map.entry(K::decode(reader)?) {
                btree_map::Entry::Occupied(_) => {
                    return Err(DecodeError::DuplicateKey { bit_offset });
                }
                btree_map::Entry::Vacant(slot) => slot.insert(V::decode(reader)?),
            };
        }
        Ok(map)
    }

    fn same(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other)
                .all(|((ka, va), (kb, vb))| ka == kb && va.same(vb))
    }
}

impl<K, V, S> BitCodec for HashMap<K, V, S>
where
    K: BitCodec + Eq + Hash,
    V: BitCodec,
    S: BuildHasher + Default,
{
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("map", &[K::TYPE_HASH, V::TYPE_HASH]);
    const NESTS: bool = K::NESTS || V::NESTS;

    /// Entries sorted by their keys' encodings (see the module docs).
    ///
    /// # Errors
    /// Besides the keys' and values' errors: a non-empty map whose entries
    /// can encode to zero bits is refused.
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        write_len(writer, self.len(), entry_bits::<K, V>())?;
        write_sorted_by_key(writer, self.iter(), |value, writer| value.encode(writer))
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let len = read_len(reader, entry_bits::<K, V>())?;
        let mut map = HashMap::with_capacity_and_hasher(prealloc::<(K, V)>(len), S::default());
        for _ in 0..len {
            let bit_offset = reader.bit_offset();
            match map.entry(K::decode(reader)?) {
                hash_map::Entry::Occupied(_) => {
                    return Err(DecodeError::DuplicateKey { bit_offset });
                }
                hash_map::Entry::Vacant(slot) => slot.insert(V::decode(reader)?),
            };
        }
        Ok(map)
    }

    fn same(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(key, value)| other.get(key).is_some_and(|theirs| value.same(theirs)))
    }
}

impl<T: BitCodec + Ord> BitCodec for BTreeSet<T> {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("set", &[T::TYPE_HASH]);
    const NESTS: bool = T::NESTS;

    /// # Errors
    /// Besides the elements' errors: a non-empty set of zero-bit elements
    /// is refused.
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        write_len(writer, self.len(), T::MIN_BITS)?;
        self.iter().try_for_each(|item| item.encode(writer))
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let len = read_len(reader, T::MIN_BITS)?;
        let mut set = BTreeSet::new();
        for _ in 0..len {
            let bit_offset = reader.bit_offset();
            if !set.insert(T::decode(reader)?) {
                return Err(DecodeError::DuplicateKey { bit_offset });
            }
        }
        Ok(set)
    }

    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl<T, S> BitCodec for HashSet<T, S>
where
    T: BitCodec + Eq + Hash,
    S: BuildHasher + Default,
{
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("set", &[T::TYPE_HASH]);
    const NESTS: bool = T::NESTS;

    /// Elements sorted by their encodings (see the module docs).
    ///
    /// # Errors
    /// Besides the elements' errors: a non-empty set of zero-bit elements
    /// is refused.
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        write_len(writer, self.len(), T::MIN_BITS)?;
        write_sorted_by_key(writer, self.iter().map(|item| (item, &())), |(), _| Ok(()))
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let len = read_len(reader, T::MIN_BITS)?;
        let mut set = HashSet::with_capacity_and_hasher(prealloc::<T>(len), S::default());
        for _ in 0..len {
            let bit_offset = reader.bit_offset();
            if !set.insert(T::decode(reader)?) {
                return Err(DecodeError::DuplicateKey { bit_offset });
            }
        }
        Ok(set)
    }

    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

/// Writes `entries` ordered by the bytes of their keys' encodings (then by
/// bit length), each key followed by what `write_value` writes for its
/// value: the same bits for equal collections whatever their iteration
/// order. The keys are encoded once, into one side buffer, each starting
/// on a byte boundary.
fn write_sorted_by_key<'v, K: BitCodec + 'v, V: 'v>(
    writer: &mut BitWriter<'_>,
    entries: impl ExactSizeIterator<Item = (&'v K, &'v V)>,
    write_value: impl Fn(&V, &mut BitWriter<'_>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    if entries.len() <= 1 {
        return entries.into_iter().try_for_each(|(key, value)| {
            key.encode(writer)?;
            write_value(value, writer)
        });
    }
    let mut keys = Vec::new();
    // (first byte, end byte, bits) of each key's encoding, and its value.
    let mut sorted = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let start = keys.len();
        let mut side = writer.beside(&mut keys);
        key.encode(&mut side)?;
        let bits = side.finish();
        sorted.push((start, keys.len(), bits, value));
    }
    sorted.sort_unstable_by(|a, b| keys[a.0..a.1].cmp(&keys[b.0..b.1]).then(a.2.cmp(&b.2)));
    for (start, end, bits, value) in sorted {
        writer.write_bits_from(&keys[start..end], bits);
        write_value(value, writer)?;
    }
    Ok(())
}
