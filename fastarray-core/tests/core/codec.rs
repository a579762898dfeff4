//! Integration tests of the bit codec: `BitWriter`/`BitReader`, the Elias
//! varint codes, and every `BitCodec` implementation for the standard types.
//!
//! Properties checked:
//! * every value round-trips, reading back exactly the bits that were written,
//!   at every bit alignment, and never below the type's `MIN_BITS`;
//! * the sizes and bit patterns are the documented ones (checked against a
//!   reference Elias encoder written here, independently of the library);
//! * truncated and random inputs give an error (with a consistent position),
//!   never a panic, and anything that does decode is exactly what was read;
//! * `TYPE_HASH` tells apart layouts that read differently, and `same`
//!   compares floats by their bits.

use core::fmt::Debug;
use core::ops::Range;
use std::collections::HashSet;

use fastarray_core::schema;
use fastarray_core::{
    BitCodec, BitReader, BitWriter, DecodeError, EncodeError, zigzag_decode, zigzag_encode,
};
use proptest::collection::vec;
use proptest::prelude::*;

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

/// Encodes `value` alone. Returns the bytes and the bits written (padding excluded).
fn encode<T: BitCodec>(value: &T) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    let result: Result<(), EncodeError> = value.encode(&mut writer);
    result.expect("encoding a standard value cannot fail");
    let written = writer.bits_written();
    assert_eq!(
        writer.finish(),
        written,
        "finish() returns the bits written, padding excluded"
    );
    assert_eq!(
        bytes.len() as u64,
        written.div_ceil(8),
        "only the last byte may be padding"
    );
    if written % 8 != 0 {
        assert_eq!(
            bytes[bytes.len() - 1] >> (written % 8),
            0,
            "padding bits are zero"
        );
    }
    (bytes, written)
}

/// Bits written for `value` alone.
fn bit_len<T: BitCodec>(value: &T) -> u64 {
    encode(value).1
}

/// Bit `i` of `bytes`, least significant bit of each byte first (the wire order).
fn bit(bytes: &[u8], i: u64) -> bool {
    (bytes[(i / 8) as usize] >> (i % 8)) & 1 == 1
}

fn bits(bytes: &[u8], range: Range<u64>) -> Vec<bool> {
    range.map(|i| bit(bytes, i)).collect()
}

/// Round-trips `value` and returns what was decoded.
///
/// Checks that decoding consumes exactly the bits written, that those are at
/// least `T::MIN_BITS`, that only zero padding follows, and that the same bits
/// are written (and read back) at every other alignment, between neighbours.
fn round_trip<T: BitCodec + Debug>(value: &T) -> T {
    let (bytes, written) = encode(value);
    assert!(
        written >= T::MIN_BITS,
        "{value:?} took {written} bits, below MIN_BITS = {}",
        T::MIN_BITS
    );
    let mut reader = BitReader::new(&bytes);
    let decoded =
        T::decode(&mut reader).unwrap_or_else(|e| panic!("decoding {value:?} failed: {e}"));
    assert!(decoded.same(value), "{value:?} decoded as {decoded:?}");
    assert!(
        value.same(&decoded),
        "`same` is not symmetric for {value:?}"
    );
    assert_eq!(
        reader.bit_offset(),
        written,
        "bits read != bits written for {value:?}"
    );
    assert_eq!(reader.expect_end(), Ok(()), "{value:?}");

    for shift in 1..8u32 {
        let mut shifted = Vec::new();
        let mut writer = BitWriter::new(&mut shifted);
        writer.write_bits(0x55, shift);
        value.encode(&mut writer).unwrap();
        assert_eq!(writer.bits_written(), u64::from(shift) + written);
        writer.write_bool(true);
        writer.finish();
        let shift = u64::from(shift);
        assert_eq!(
            bits(&shifted, shift..shift + written),
            bits(&bytes, 0..written),
            "the bits of {value:?} depend on the alignment ({shift})"
        );

        let mut reader = BitReader::new(&shifted);
        assert_eq!(
            reader.read_bits(shift as u32),
            Ok(0x55 & ((1 << shift) - 1))
        );
        let again = T::decode(&mut reader)
            .unwrap_or_else(|e| panic!("decoding {value:?} at bit {shift} failed: {e}"));
        assert!(
            again.same(value),
            "{value:?} decoded as {again:?} at bit {shift}"
        );
        assert_eq!(reader.bit_offset(), shift + written);
        assert_eq!(reader.read_bool(), Ok(true), "{value:?} at bit {shift}");
        assert_eq!(reader.expect_end(), Ok(()));
    }
    decoded
}

/// Checks that an error from decoding an input of `total_bits` bits is one a
/// codec may give, and that what it says about the position is consistent.
fn check_error(error: &DecodeError, total_bits: u64) {
    match *error {
        DecodeError::UnexpectedEnd { bit_offset, wanted } => {
            assert!(bit_offset <= total_bits, "{error:?} in {total_bits} bits");
            assert!(
                bit_offset + u64::from(wanted) > total_bits,
                "{error:?}: the input had {total_bits} bits"
            );
        }
        DecodeError::VarintOverlong { bit_offset }
        | DecodeError::VarintOutOfRange { bit_offset, .. } => {
            assert!(bit_offset < total_bits, "{error:?} in {total_bits} bits");
        }
        DecodeError::LengthTooLarge {
            bit_offset,
            claimed,
            remaining_bits,
        } => {
            assert_eq!(
                bit_offset + remaining_bits,
                total_bits,
                "{error:?} in {total_bits} bits"
            );
            assert!(claimed > 0, "{error:?}: zero elements always fit");
        }
        DecodeError::InvalidChar { bit_offset, value } => {
            assert!(
                bit_offset + 21 <= total_bits,
                "{error:?} in {total_bits} bits"
            );
            assert!(value < 1 << 21, "{error:?}");
            assert_eq!(char::from_u32(value), None, "{error:?} is a valid char");
        }
        DecodeError::InvalidUtf8 { bit_offset } => {
            assert!(bit_offset < total_bits, "{error:?} in {total_bits} bits");
        }
        ref other => panic!("a value codec returned {other:?}"),
    }
}

/// Decodes random bytes as a `T`: never panics; an error is consistent; a
/// success has read only bits of the input, and the value re-encodes to
/// exactly the bits that were read (every encoding is canonical).
fn fuzz<T: BitCodec + Debug>(bytes: &[u8]) {
    let total = 8 * bytes.len() as u64;
    let mut reader = BitReader::new(bytes);
    match T::decode(&mut reader) {
        Ok(value) => {
            let read = reader.bit_offset();
            assert!(read <= total, "{value:?}: read {read} of {total} bits");
            assert_eq!(reader.remaining_bits(), total - read);
            let (again, written) = encode(&value);
            assert_eq!(
                written, read,
                "{value:?} decoded from {read} bits re-encodes to {written}"
            );
            assert_eq!(
                bits(&again, 0..written),
                bits(bytes, 0..read),
                "non-canonical encoding of {value:?} accepted"
            );
        }
        Err(error) => check_error(&error, total),
    }
}

/// The first `len` bits of `bytes` in `ceil(len / 8)` bytes, the rest zeroed.
fn prefix(bytes: &[u8], len: u64) -> Vec<u8> {
    let mut out = bytes[..len.div_ceil(8) as usize].to_vec();
    if len % 8 != 0 {
        let last = out.len() - 1;
        out[last] &= (1u8 << (len % 8)) - 1;
    }
    out
}

/// Decodes every strict prefix of the encoding of `value`, zero-padded to a
/// whole byte. Returns how many prefixes decoded back to `value` itself.
///
/// A prefix of `L` bits cannot decode having read only those `L` bits: the
/// decoder is deterministic, so it would stop at the same place in the full
/// encoding, which it reads to the end. So decoding either fails, or reads
/// into the zero padding; then what it returns re-encodes to exactly the bits
/// it read, and can only be `value` when the bits cut off were all zeros.
fn check_truncations<T: BitCodec + Debug>(value: &T) -> usize {
    let (bytes, total) = encode(value);
    let mut completed_by_padding = 0;
    for len in 0..total {
        let input = prefix(&bytes, len);
        let input_bits = 8 * input.len() as u64;
        let mut reader = BitReader::new(&input);
        match T::decode(&mut reader) {
            Err(error) => check_error(&error, input_bits),
            Ok(decoded) => {
                let read = reader.bit_offset();
                assert!(
                    read > len && read <= input_bits,
                    "{len}-bit prefix of {value:?} decoded as {decoded:?} from {read} bits"
                );
                let (again, written) = encode(&decoded);
                assert_eq!(written, read, "{decoded:?} from a prefix of {value:?}");
                assert_eq!(bits(&again, 0..read), bits(&input, 0..read));
                if decoded.same(value) {
                    assert_eq!(read, total);
                    assert!(
                        bits(&bytes, len..total).iter().all(|&b| !b),
                        "{len}-bit prefix of {value:?} decoded to it although nonzero bits were cut"
                    );
                    completed_by_padding += 1;
                }
            }
        }
    }
    completed_by_padding
}

// Test-local codecs over the raw varint codes, so the generic helpers apply.

#[derive(Clone, Copy, Debug, PartialEq)]
struct Varint(u64);

#[derive(Clone, Copy, Debug, PartialEq)]
struct Gamma(u64);

#[derive(Clone, Copy, Debug, PartialEq)]
struct Signed(i64);

impl BitCodec for Varint {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = 1;
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint(self.0);
        Ok(())
    }
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        reader.read_varint().map(Self)
    }
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl BitCodec for Gamma {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = 2;
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_gamma(self.0);
        Ok(())
    }
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        reader.read_gamma().map(Self)
    }
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl BitCodec for Signed {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = 3;
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint_signed(self.0);
        Ok(())
    }
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        reader.read_varint_signed().map(Self)
    }
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

/// Elias-gamma of `v + 1`, written here independently of the library: `n - 1`
/// zeros, a one, then the `n - 1` bits below the leading one of `v + 1`,
/// least significant first (`n` = significant bits of `v + 1`).
fn ref_gamma(v: u64) -> Vec<bool> {
    let x = u128::from(v) + 1;
    let n = 128 - x.leading_zeros();
    let mut out = vec![false; n as usize - 1];
    out.push(true);
    out.extend((0..n - 1).map(|i| (x >> i) & 1 == 1));
    out
}

/// Elias-delta of `v + 1`: the Elias-gamma code of `n`, then the `n - 1` bits
/// below the leading one of `v + 1`, least significant first.
fn ref_varint(v: u64) -> Vec<bool> {
    let x = u128::from(v) + 1;
    let n = 128 - x.leading_zeros();
    let mut out = ref_gamma(u64::from(n) - 1);
    out.extend((0..n - 1).map(|i| (x >> i) & 1 == 1));
    out
}

fn varint_len(v: u64) -> u64 {
    ref_varint(v).len() as u64
}

fn encoded_bits<T: BitCodec>(value: &T) -> Vec<bool> {
    let (bytes, written) = encode(value);
    bits(&bytes, 0..written)
}

/// u64 values with a uniformly distributed bit length, so every size class of
/// the Elias codes is exercised, not only the 64-bit values `any` favours.
fn any_width_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        (0u32..=64, any::<u64>()).prop_map(|(width, r)| r.checked_shr(64 - width).unwrap_or(0)),
        any::<u64>(),
    ]
}

fn any_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z]{0,20}",
        "\\PC{0,40}",
        "[éß日本語🦀\u{10FFFF}\0]{0,10}",
    ]
}

// ---------------------------------------------------------------------------
// 1. Round trips of every implementation
// ---------------------------------------------------------------------------

macro_rules! fixed_int_round_trips {
    ($($name:ident: $ty:ty),* $(,)?) => {
        proptest! {
            #![proptest_config(config(CASES))]
            $(
                #[test]
                fn $name(v in any::<$ty>()) {
                    prop_assert_eq!(round_trip(&v), v);
                    prop_assert_eq!(bit_len(&v), u64::from(<$ty>::BITS));
                }
            )*
        }
    };
}

fixed_int_round_trips!(
    u8_round_trips: u8,
    u16_round_trips: u16,
    u32_round_trips: u32,
    u64_round_trips: u64,
    u128_round_trips: u128,
    i8_round_trips: i8,
    i16_round_trips: i16,
    i32_round_trips: i32,
    i64_round_trips: i64,
    i128_round_trips: i128,
);

#[test]
fn integer_extremes_round_trip() {
    macro_rules! extremes {
        ($($ty:ty),*) => {$(
            for v in [<$ty>::MIN, <$ty>::MAX, 0, 1, <$ty>::MAX / 2, <$ty>::MIN / 2 + 1] {
                assert_eq!(round_trip(&v), v);
                assert_eq!(bit_len(&v), u64::from(<$ty>::BITS));
            }
        )*};
    }
    extremes!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128);
    for v in [usize::MIN, usize::MAX, 1, usize::MAX / 2] {
        assert_eq!(round_trip(&v), v);
    }
    for v in [isize::MIN, isize::MAX, 0, -1, 1] {
        assert_eq!(round_trip(&v), v);
    }
}

#[test]
fn integers_are_little_endian_twos_complement() {
    assert_eq!(encode(&0x1234u16).0, [0x34, 0x12]);
    assert_eq!(encode(&-2i8).0, [0xfe]);
    assert_eq!(encode(&-1i32).0, [0xff; 4]);
    assert_eq!(
        encode(&0x0102_0304_0506_0708u64).0,
        [8, 7, 6, 5, 4, 3, 2, 1]
    );
    let mut expected = [0u8; 16];
    expected[0] = 1;
    expected[15] = 0x80;
    assert_eq!(encode(&((1u128 << 127) | 1)).0, expected);
    assert_eq!(encode(&i128::MIN).0[15], 0x80);
    // A bool is one bit; eight of them fill one byte, first one lowest.
    assert_eq!(
        encode(&[true, false, true, true, false, false, false, true]).0,
        [0x8d]
    );
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn bool_round_trips(v in any::<bool>()) {
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(encode(&v).0, [u8::from(v)]);
    }

    #[test]
    fn usize_round_trips_as_a_varint(v in prop_oneof![any::<usize>(), any_width_u64().prop_map(|v| v as usize)]) {
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(encoded_bits(&v), ref_varint(v as u64));
    }

    #[test]
    fn isize_round_trips_as_a_zigzag_varint(v in prop_oneof![any::<isize>(), any_width_u64().prop_map(|v| zigzag_decode(v) as isize)]) {
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(encoded_bits(&v), ref_varint(zigzag_encode(v as i64)));
    }

    #[test]
    fn f32_round_trips_bit_for_bit(v in any::<f32>(), raw in any::<u32>()) {
        for v in [v, f32::from_bits(raw)] {
            prop_assert_eq!(round_trip(&v).to_bits(), v.to_bits());
            prop_assert_eq!(encode(&v).0, v.to_bits().to_le_bytes());
        }
    }

    #[test]
    fn f64_round_trips_bit_for_bit(v in any::<f64>(), raw in any::<u64>()) {
        for v in [v, f64::from_bits(raw)] {
            prop_assert_eq!(round_trip(&v).to_bits(), v.to_bits());
            prop_assert_eq!(encode(&v).0, v.to_bits().to_le_bytes());
        }
    }

    #[test]
    fn char_round_trips_in_21_bits(v in any::<char>()) {
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(bit_len(&v), 21);
        let (bytes, _) = encode(&v);
        let mut reader = BitReader::new(&bytes);
        prop_assert_eq!(reader.read_bits(21), Ok(u64::from(u32::from(v))));
    }

    #[test]
    fn string_round_trips(v in any_string()) {
        prop_assert_eq!(&round_trip(&v), &v);
        let (bytes, written) = encode(&v);
        let prefix = varint_len(v.len() as u64);
        prop_assert_eq!(written, prefix + 8 * v.len() as u64);
        prop_assert_eq!(bits(&bytes, 0..prefix), ref_varint(v.len() as u64));
        // Then the UTF-8 bytes, 8 bits each, least significant bit first.
        let mut reader = BitReader::new(&bytes);
        prop_assert_eq!(reader.read_varint(), Ok(v.len() as u64));
        for &b in v.as_bytes() {
            prop_assert_eq!(reader.read_bits(8), Ok(u64::from(b)));
        }
    }

    #[test]
    fn vec_u16_round_trips(v in vec(any::<u16>(), 0..64)) {
        prop_assert_eq!(&round_trip(&v), &v);
        prop_assert_eq!(bit_len(&v), varint_len(v.len() as u64) + 16 * v.len() as u64);
    }

    #[test]
    fn vec_string_round_trips(v in vec(any_string(), 0..8)) {
        prop_assert_eq!(&round_trip(&v), &v);
        let items: u64 = v.iter().map(bit_len).sum();
        prop_assert_eq!(bit_len(&v), varint_len(v.len() as u64) + items);
    }

    #[test]
    fn option_u32_round_trips(v in any::<Option<u32>>()) {
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(bit_len(&v), if v.is_some() { 33 } else { 1 });
        prop_assert_eq!(encoded_bits(&v)[0], v.is_some());
    }

    #[test]
    fn option_option_bool_round_trips(v in any::<Option<Option<bool>>>()) {
        prop_assert_eq!(round_trip(&v), v);
        let expected = match v {
            None => vec![false],
            Some(None) => vec![true, false],
            Some(Some(b)) => vec![true, true, b],
        };
        prop_assert_eq!(encoded_bits(&v), expected);
    }

    #[test]
    fn zero_bit_values_round_trip_between_neighbours(a in any::<u8>(), b in any::<bool>()) {
        round_trip(&());
        prop_assert_eq!(bit_len(&()), 0);
        prop_assert_eq!(round_trip(&[0u8; 0]), [0u8; 0]);
        prop_assert_eq!(bit_len(&[0u8; 0]), 0);
        let v = (a, (), [0u8; 0], b);
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(encoded_bits(&v), encoded_bits(&(a, b)));
        let v = (Some(()), [(); 3], Some([0u8; 0]));
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(bit_len(&v), 2);
    }

    #[test]
    fn array_i16_round_trips(v in any::<[i16; 3]>()) {
        prop_assert_eq!(round_trip(&v), v);
        prop_assert_eq!(encoded_bits(&v), encoded_bits(&(v[0], v[1], v[2])));
        prop_assert_eq!(bit_len(&v), 48);
    }

    #[test]
    fn array_string_round_trips(v in [any_string(), any_string()]) {
        prop_assert_eq!(&round_trip(&v), &v);
        prop_assert_eq!(encoded_bits(&v), encoded_bits(&(v[0].clone(), v[1].clone())));
    }

    #[test]
    fn tuples_round_trip(
        a in any::<u8>(),
        b in any::<bool>(),
        c in any_string(),
        d in vec(any::<u8>(), 0..16),
    ) {
        let one = (a,);
        prop_assert_eq!(round_trip(&one), one);
        prop_assert_eq!(encoded_bits(&one), encoded_bits(&a));
        let two = (a, b);
        prop_assert_eq!(round_trip(&two), two);
        prop_assert_eq!(bit_len(&two), 9);
        let three = (a, b, c.clone());
        prop_assert_eq!(&round_trip(&three), &three);
        prop_assert_eq!(bit_len(&three), 9 + bit_len(&c));
        let four = (a, b, c.clone(), d.clone());
        prop_assert_eq!(&round_trip(&four), &four);
        // Tuples are their elements in order, with nothing in between.
        let mut expected = encoded_bits(&a);
        expected.push(b);
        expected.extend(encoded_bits(&c));
        expected.extend(encoded_bits(&d));
        prop_assert_eq!(encoded_bits(&four), expected);
    }

    #[test]
    fn box_round_trips_as_its_content(v in any::<u64>()) {
        let boxed = Box::new(v);
        prop_assert_eq!(*round_trip(&boxed), v);
        prop_assert_eq!(encode(&boxed), encode(&v));
        let boxed = Box::new(Some(v as u8));
        prop_assert_eq!(&round_trip(&boxed), &boxed);
    }

    #[test]
    fn nested_vec_option_tuple_round_trips(v in vec(any::<Option<(u8, char)>>(), 0..32)) {
        prop_assert_eq!(&round_trip(&v), &v);
        let items: u64 = v.iter().map(|item| if item.is_some() { 30 } else { 1 }).sum();
        prop_assert_eq!(bit_len(&v), varint_len(v.len() as u64) + items);
    }

    #[test]
    fn deeply_nested_values_round_trip(
        v in vec((any::<Option<Vec<i8>>>(), any::<[Option<f32>; 2]>(), any::<Box<String>>()), 0..6),
    ) {
        let back = round_trip(&v);
        prop_assert!(back.same(&v));
    }
}

#[test]
fn special_floats_round_trip_bit_for_bit() {
    let f32s = [
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001), // signalling NaN
        f32::from_bits(0xffc0_1234), // negative NaN with a payload
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        f32::from_bits(1), // smallest subnormal
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
    ];
    for v in f32s {
        assert_eq!(round_trip(&v).to_bits(), v.to_bits(), "{v:?}");
    }
    let f64s = [
        0.0,
        -0.0,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        f64::from_bits(0xfff8_dead_beef_0001),
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::MAX,
        f64::MIN,
    ];
    for v in f64s {
        assert_eq!(round_trip(&v).to_bits(), v.to_bits(), "{v:?}");
    }
    assert_eq!(encode(&-0.0f32).0, [0, 0, 0, 0x80]);
    assert_eq!(round_trip(&-0.0f64).to_bits(), (-0.0f64).to_bits());
}

#[test]
fn special_chars_and_strings_round_trip() {
    for c in [
        '\0',
        'a',
        'é',
        '\u{7ff}',
        '\u{d7ff}',
        '\u{e000}',
        '\u{fffd}',
        '🦀',
        '\u{10ffff}',
    ] {
        assert_eq!(round_trip(&c), c);
    }
    for s in [
        "",
        "a",
        "héllo",
        "日本語",
        "🦀🦀",
        "\0\u{10ffff}",
        "exactly 7",
        "fourteen bytes",
    ] {
        let s = s.to_string();
        assert_eq!(round_trip(&s), s);
        assert_eq!(bit_len(&s), varint_len(s.len() as u64) + 8 * s.len() as u64);
    }
    // A long string: the length prefix has a larger size class.
    let long = "ß".repeat(3000);
    assert_eq!(round_trip(&long), long);
    assert_eq!(bit_len(&long), 2 * 4 + 13 - 2 + 6000 * 8);
}

#[test]
fn min_bits_are_the_documented_minimums_and_are_reached() {
    assert_eq!(bool::MIN_BITS, 1);
    assert_eq!(u8::MIN_BITS, 8);
    assert_eq!(i16::MIN_BITS, 16);
    assert_eq!(u32::MIN_BITS, 32);
    assert_eq!(i64::MIN_BITS, 64);
    assert_eq!(u128::MIN_BITS, 128);
    assert_eq!(i128::MIN_BITS, 128);
    assert_eq!(f32::MIN_BITS, 32);
    assert_eq!(f64::MIN_BITS, 64);
    assert_eq!(char::MIN_BITS, 21);
    assert_eq!(<[i16; 3]>::MIN_BITS, 48);
    assert_eq!(<[String; 2]>::MIN_BITS, 2);
    assert_eq!(<(u8, bool)>::MIN_BITS, 9);
    assert_eq!(<(u8, bool, String, Vec<u8>)>::MIN_BITS, 11);
    assert_eq!(<Box<u64>>::MIN_BITS, 64);
    assert_eq!(<[u8; 0]>::MIN_BITS, 0);
    assert_eq!(<()>::MIN_BITS, 0);

    // The smallest value of each variable-size type takes exactly MIN_BITS,
    // so the bound decoders use for lengths is tight.
    assert_eq!(bit_len(&0usize), usize::MIN_BITS);
    assert_eq!(bit_len(&0isize), isize::MIN_BITS);
    assert_eq!(bit_len(&String::new()), String::MIN_BITS);
    assert_eq!(bit_len(&Vec::<u64>::new()), Vec::<u64>::MIN_BITS);
    assert_eq!(bit_len(&None::<u128>), Option::<u128>::MIN_BITS);
    assert_eq!(
        bit_len(&[String::new(), String::new()]),
        <[String; 2]>::MIN_BITS
    );
    assert_eq!(
        bit_len(&(0u8, false, String::new(), Vec::<u8>::new())),
        <(u8, bool, String, Vec<u8>)>::MIN_BITS
    );
}

// ---------------------------------------------------------------------------
// 2. Several values back to back in one writer
// ---------------------------------------------------------------------------

#[test]
fn values_back_to_back_decode_in_order() {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    true.encode(&mut writer).unwrap();
    "hi".to_string().encode(&mut writer).unwrap();
    0xdead_beef_u64.encode(&mut writer).unwrap();
    writer.write_varint(1000);
    // 1 + (4 + 16) + 64 + 16
    assert_eq!(writer.finish(), 101);
    assert_eq!(bytes.len(), 13);

    let mut reader = BitReader::new(&bytes);
    assert_eq!(bool::decode(&mut reader), Ok(true));
    assert_eq!(String::decode(&mut reader).as_deref(), Ok("hi"));
    assert_eq!(u64::decode(&mut reader), Ok(0xdead_beef));
    assert_eq!(reader.read_varint(), Ok(1000));
    assert_eq!(reader.bit_offset(), 101);
    assert_eq!(reader.expect_end(), Ok(()));
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn random_sequences_decode_in_order(
        flag in any::<bool>(),
        text in any_string(),
        (number, varint, gamma) in (any::<u64>(), any_width_u64(), any_width_u64()),
        signed in any::<i64>(),
        c in any::<char>(),
        (raw_width, raw) in (0u32..=64, any::<u64>()),
        opt in any::<Option<u16>>(),
        float in any::<f64>(),
        (array, size) in (any::<[i16; 3]>(), any::<usize>()),
    ) {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        flag.encode(&mut writer).unwrap();
        text.encode(&mut writer).unwrap();
        number.encode(&mut writer).unwrap();
        writer.write_varint(varint);
        writer.write_gamma(gamma);
        writer.write_varint_signed(signed);
        c.encode(&mut writer).unwrap();
        writer.write_bits(raw, raw_width);
        opt.encode(&mut writer).unwrap();
        float.encode(&mut writer).unwrap();
        array.encode(&mut writer).unwrap();
        size.encode(&mut writer).unwrap();
        let expected_bits = 1
            + bit_len(&text)
            + 64
            + ref_varint(varint).len() as u64
            + ref_gamma(gamma).len() as u64
            + ref_varint(zigzag_encode(signed)).len() as u64
            + 21
            + u64::from(raw_width)
            + bit_len(&opt)
            + 64
            + 48
            + bit_len(&size);
        prop_assert_eq!(writer.finish(), expected_bits);

        let masked = if raw_width == 64 { raw } else { raw & ((1 << raw_width) - 1) };
        let mut reader = BitReader::new(&bytes);
        prop_assert_eq!(bool::decode(&mut reader), Ok(flag));
        prop_assert_eq!(String::decode(&mut reader), Ok(text));
        prop_assert_eq!(u64::decode(&mut reader), Ok(number));
        prop_assert_eq!(reader.read_varint(), Ok(varint));
        prop_assert_eq!(reader.read_gamma(), Ok(gamma));
        prop_assert_eq!(reader.read_varint_signed(), Ok(signed));
        prop_assert_eq!(char::decode(&mut reader), Ok(c));
        prop_assert_eq!(reader.read_bits(raw_width), Ok(masked));
        prop_assert_eq!(Option::<u16>::decode(&mut reader), Ok(opt));
        prop_assert_eq!(f64::decode(&mut reader).map(f64::to_bits), Ok(float.to_bits()));
        prop_assert_eq!(<[i16; 3]>::decode(&mut reader), Ok(array));
        prop_assert_eq!(usize::decode(&mut reader), Ok(size));
        prop_assert_eq!(reader.bit_offset(), expected_bits);
        prop_assert_eq!(reader.remaining_bits(), 8 * bytes.len() as u64 - expected_bits);
        prop_assert_eq!(reader.expect_end(), Ok(()));
    }
}

#[test]
fn writer_appends_and_pads_on_drop() {
    let mut bytes = vec![0xaa, 0xbb];
    {
        let mut writer = BitWriter::new(&mut bytes);
        writer.write_bits(0b101, 3);
        assert_eq!(writer.bits_written(), 3);
        // Dropped without `finish`: the partial byte is still flushed, zero-padded.
    }
    assert_eq!(bytes, [0xaa, 0xbb, 0b101]);

    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    assert_eq!(writer.write_bits_checked(7, 3), Ok(()));
    assert_eq!(
        writer.write_bits_checked(8, 3),
        Err(EncodeError::ValueOutOfRange { value: 8, bits: 3 })
    );
    assert_eq!(writer.write_bits_checked(u64::MAX, 64), Ok(()));
    assert_eq!(writer.finish(), 67);
}

#[test]
fn expect_end_rejects_anything_but_zero_padding() {
    let mut reader = BitReader::new(&[0b01]);
    assert_eq!(bool::decode(&mut reader), Ok(true));
    assert_eq!(reader.expect_end(), Ok(()));

    let mut reader = BitReader::new(&[0b11]);
    assert_eq!(bool::decode(&mut reader), Ok(true));
    assert_eq!(
        reader.expect_end(),
        Err(DecodeError::TrailingData {
            bit_offset: 1,
            remaining_bits: 7
        })
    );

    let mut reader = BitReader::new(&[5, 0]);
    assert_eq!(u8::decode(&mut reader), Ok(5));
    assert_eq!(
        reader.expect_end(),
        Err(DecodeError::TrailingData {
            bit_offset: 8,
            remaining_bits: 8
        })
    );

    let mut reader = BitReader::new(&[]);
    assert_eq!(reader.expect_end(), Ok(()));
}

// ---------------------------------------------------------------------------
// 3. Varint, gamma and signed varint codes
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn varint_round_trips_and_matches_the_reference(v in any_width_u64()) {
        prop_assert_eq!(round_trip(&Varint(v)), Varint(v));
        prop_assert_eq!(encoded_bits(&Varint(v)), ref_varint(v));
    }

    #[test]
    fn gamma_round_trips_and_matches_the_reference(v in any_width_u64()) {
        prop_assert_eq!(round_trip(&Gamma(v)), Gamma(v));
        prop_assert_eq!(encoded_bits(&Gamma(v)), ref_gamma(v));
    }

    #[test]
    fn signed_varint_round_trips_via_zigzag(
        v in prop_oneof![any::<i64>(), any_width_u64().prop_map(zigzag_decode)],
    ) {
        prop_assert_eq!(round_trip(&Signed(v)), Signed(v));
        prop_assert_eq!(encoded_bits(&Signed(v)), ref_varint(zigzag_encode(v)));
        prop_assert_eq!(zigzag_decode(zigzag_encode(v)), v);
        // Zig-zag orders by magnitude: v ≥ 0 maps to 2v, v < 0 to 2|v| - 1.
        prop_assert_eq!(zigzag_encode(v) / 2 + u64::from(v < 0), v.unsigned_abs());
    }

    #[test]
    fn zigzag_is_a_bijection(u in any::<u64>()) {
        prop_assert_eq!(zigzag_encode(zigzag_decode(u)), u);
    }
}

#[test]
fn varint_and_gamma_sizes() {
    let varint_bits = |v| bit_len(&Varint(v));
    let gamma_bits = |v| bit_len(&Gamma(v));
    assert_eq!(varint_bits(0), 1);
    assert_eq!(varint_bits(1), 4);
    assert_eq!(varint_bits(2), 4);
    assert_eq!(varint_bits(3), 5);
    assert_eq!(varint_bits(6), 5);
    assert_eq!(varint_bits(7), 8);
    assert_eq!(varint_bits(14), 8);
    assert_eq!(varint_bits(63), 11);
    assert_eq!(varint_bits(126), 11);
    assert_eq!(varint_bits(1000), 16);
    assert_eq!(varint_bits(10_000), 20);
    assert_eq!(varint_bits(u64::MAX), 77);
    assert_eq!(gamma_bits(0), 1);
    assert_eq!(gamma_bits(1), 3);
    assert_eq!(gamma_bits(2), 3);
    assert_eq!(gamma_bits(3), 5);
    assert_eq!(gamma_bits(1000), 19);
    assert_eq!(gamma_bits(10_000), 27);
    assert_eq!(gamma_bits(u64::MAX), 129);
    // Exact patterns, first bit first.
    assert_eq!(encoded_bits(&Varint(0)), [true]);
    assert_eq!(encoded_bits(&Varint(1)), [false, true, false, false]);
    assert_eq!(encoded_bits(&Gamma(1)), [false, true, false]);
    assert_eq!(encoded_bits(&Gamma(2)), [false, true, true]);
    assert_eq!(encoded_bits(&Signed(-1)), encoded_bits(&Varint(1)));
    assert_eq!(encoded_bits(&Signed(1)), encoded_bits(&Varint(2)));
    assert_eq!(
        encoded_bits(&Signed(i64::MIN)),
        encoded_bits(&Varint(u64::MAX))
    );
    assert_eq!(
        encoded_bits(&Signed(i64::MAX)),
        encoded_bits(&Varint(u64::MAX - 1))
    );
}

#[test]
fn varints_round_trip_at_every_size_boundary() {
    for k in 0..=64u32 {
        let power = if k == 64 { u64::MAX } else { 1u64 << k };
        for v in [
            power.wrapping_sub(2),
            power.wrapping_sub(1),
            power,
            power.wrapping_add(1),
        ] {
            assert_eq!(round_trip(&Varint(v)), Varint(v));
            assert_eq!(encoded_bits(&Varint(v)), ref_varint(v), "varint({v})");
            assert_eq!(round_trip(&Gamma(v)), Gamma(v));
            assert_eq!(encoded_bits(&Gamma(v)), ref_gamma(v), "gamma({v})");
            let s = v as i64;
            assert_eq!(round_trip(&Signed(s)), Signed(s));
            assert_eq!(
                round_trip(&Signed(s.wrapping_neg())),
                Signed(s.wrapping_neg())
            );
        }
    }
}

#[test]
fn varint_prefixes_beyond_u64_are_rejected() {
    // Seven zeros: a length field longer than any u64 needs.
    let mut reader = BitReader::new(&[0x00, 0xff]);
    assert_eq!(
        reader.read_varint(),
        Err(DecodeError::VarintOverlong { bit_offset: 0 })
    );
    // Rejected as soon as the seventh zero is read, whatever follows.
    for bytes in [[0x80u8], [0x00]] {
        assert_eq!(
            BitReader::new(&bytes).read_varint(),
            Err(DecodeError::VarintOverlong { bit_offset: 0 })
        );
    }
    // Six zeros are a valid start (values of 33 to 64 significant bits).
    assert!(matches!(
        BitReader::new(&[0x40]).read_varint(),
        Err(DecodeError::UnexpectedEnd { .. })
    ));

    // A well-formed prefix at bit 3 announcing 66 significant bits.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bits(0, 3);
    writer.write_bits(0, 6);
    writer.write_bool(true);
    writer.write_bits(66 - 64, 6);
    writer.write_bits(0, 64);
    writer.write_bits(0, 2);
    writer.finish();
    let mut reader = BitReader::new(&bytes);
    reader.read_bits(3).unwrap();
    assert_eq!(
        reader.read_varint(),
        Err(DecodeError::VarintOverlong { bit_offset: 3 })
    );

    // 65 significant bits, but above 2^64: no u64 encodes to it.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bits(0, 6);
    writer.write_bool(true);
    writer.write_bits(1, 6);
    writer.write_bits(1, 64);
    writer.finish();
    assert_eq!(
        BitReader::new(&bytes).read_varint(),
        Err(DecodeError::VarintOutOfRange {
            bit_offset: 0,
            target: "u64"
        })
    );
    // …while 65 significant bits with nothing below the leading one is u64::MAX.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_bits(0, 6);
    writer.write_bool(true);
    writer.write_bits(1, 6);
    writer.write_bits(0, 64);
    writer.finish();
    assert_eq!(BitReader::new(&bytes).read_varint(), Ok(u64::MAX));
}

#[test]
fn gamma_prefixes_beyond_u64_are_rejected() {
    // 64 zeros, then a one: the longest valid gamma prefix (u64::MAX and up).
    // With 64 zero bits after the one it is u64::MAX; anything more is too big.
    let mut bytes = vec![0u8; 8];
    bytes.push(0x01);
    bytes.extend([0u8; 8]);
    assert_eq!(BitReader::new(&bytes).read_gamma(), Ok(u64::MAX));
    let mut bytes = vec![0u8; 8];
    bytes.extend([0xff; 9]);
    assert_eq!(
        BitReader::new(&bytes).read_gamma(),
        Err(DecodeError::VarintOutOfRange {
            bit_offset: 0,
            target: "u64"
        })
    );
    // 65 zeros cannot start the gamma code of any u64.
    let mut bytes = vec![0u8; 8];
    bytes.extend([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(
        BitReader::new(&bytes).read_gamma(),
        Err(DecodeError::VarintOverlong { bit_offset: 0 })
    );
}

#[test]
fn raw_byte_reads_check_the_length_first() {
    let mut out = vec![9, 9, 9, 9];
    let mut reader = BitReader::new(&[1, 2]);
    assert_eq!(
        reader.read_bytes_into(3, &mut out),
        Err(DecodeError::LengthTooLarge {
            bit_offset: 0,
            claimed: 3,
            remaining_bits: 16
        })
    );
    assert_eq!(reader.bit_offset(), 0, "a failed read consumes nothing");
    assert_eq!(reader.read_bytes_into(2, &mut out), Ok(()));
    assert_eq!(out, [1, 2], "the output is replaced, not appended to");
    assert_eq!(reader.remaining_bits(), 0);
    // Unaligned.
    let mut reader = BitReader::new(&[0xff, 0x01]);
    assert_eq!(reader.read_bool(), Ok(true));
    assert_eq!(reader.read_bytes_into(1, &mut out), Ok(()));
    assert_eq!(out, [0xff]);
    assert!(matches!(
        reader.read_bytes_into(1, &mut out),
        Err(DecodeError::LengthTooLarge {
            bit_offset: 9,
            claimed: 1,
            remaining_bits: 7
        })
    ));
}

// ---------------------------------------------------------------------------
// 4. Truncated input
// ---------------------------------------------------------------------------

#[test]
fn every_truncation_fails_or_reads_only_zero_padding() {
    let hello = "héllo".to_string();
    // 'o' is 0x6f: its last bit is zero, so the 1-bit-shorter prefix, padded
    // with a zero, decodes back to the whole string. That is fine (the bits
    // read are the encoding); `check_truncations` verifies exactly that.
    assert_eq!(check_truncations(&hello), 1);
    // 0xac and 0xbf have their high bit, the last one written, set.
    assert_eq!(check_truncations(&"日本".to_string()), 0);
    assert_eq!(check_truncations(&"\u{ff}".to_string()), 0);
    check_truncations(&vec![0u32, 1, 0xdead_beef, u32::MAX, 7]);
    assert_eq!(check_truncations(&Some(u64::MAX)), 0);
    check_truncations(&Some(0x0123_4567_89ab_cdef_u64));
    check_truncations(&(0xbeef_u16, 'ß', "añb".to_string()));
    check_truncations(&[1.5f64, -0.0]);
    check_truncations(&[f64::NAN, f64::NEG_INFINITY]);
    // varint(u64::MAX) ends with 64 zero bits: the 73..=76-bit prefixes, in
    // 10 bytes, are completed by the padding; shorter ones lack whole bytes.
    assert_eq!(check_truncations(&Varint(u64::MAX)), 4);
    check_truncations(&Varint(0x8000_0000_0000_0001));
    check_truncations(&Varint(10_000));
    check_truncations(&Gamma(u64::MAX - 1));
    check_truncations(&Signed(i64::MIN + 1));
    check_truncations(&vec!["ab".to_string(), String::new(), "ünï".to_string()]);
    check_truncations(&Some(Some(true)));
    check_truncations(&[String::from("x"), String::from("yz")]);
    check_truncations(&Box::new(u64::MAX));
    check_truncations(&vec![Some((0xffu8, '🦀')), None, Some((1, 'a'))]);
    check_truncations(&(u128::MAX, -1i128));
    check_truncations(&(usize::MAX, isize::MIN));
    check_truncations(&'\u{10ffff}');
    // A value that ends in zeros can be completed by padding: u8 0 from any
    // 1..8-bit prefix (the 0-bit prefix is an empty input).
    assert_eq!(check_truncations(&0u8), 7);
}

#[test]
fn truncated_strings_report_where_input_ran_out() {
    let (bytes, total) = encode(&"héllo".to_string());
    assert_eq!(total, 5 + 6 * 8);
    // The whole length prefix but only two whole bytes: the claimed six
    // bytes do not fit in what is left.
    let input = prefix(&bytes, 5 + 16);
    assert_eq!(
        String::decode(&mut BitReader::new(&input)),
        Err(DecodeError::LengthTooLarge {
            bit_offset: 5,
            claimed: 6,
            remaining_bits: 8 * input.len() as u64 - 5
        })
    );
    // Only part of the length prefix.
    let input = prefix(&bytes, 3);
    assert!(matches!(
        String::decode(&mut BitReader::new(&input)),
        Err(DecodeError::LengthTooLarge { .. } | DecodeError::UnexpectedEnd { .. })
    ));
    assert_eq!(
        u32::decode(&mut BitReader::new(&[1, 2, 3])),
        Err(DecodeError::UnexpectedEnd {
            bit_offset: 0,
            wanted: 32
        })
    );
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn truncations_of_random_values_fail_or_read_only_padding(
        a in vec(any::<Option<(u8, char)>>(), 0..6),
        b in (any::<u16>(), any::<char>(), any_string().prop_map(|s| s.chars().take(6).collect::<String>())),
        c in any_width_u64(),
    ) {
        check_truncations(&a);
        check_truncations(&b);
        check_truncations(&Varint(c));
        check_truncations(&Gamma(c));
    }
}

// ---------------------------------------------------------------------------
// 5. Garbage input
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn random_bytes_never_panic_and_decode_canonically(bytes in vec(any::<u8>(), 0..64)) {
        fuzz::<bool>(&bytes);
        fuzz::<u8>(&bytes);
        fuzz::<u16>(&bytes);
        fuzz::<u32>(&bytes);
        fuzz::<u64>(&bytes);
        fuzz::<u128>(&bytes);
        fuzz::<i8>(&bytes);
        fuzz::<i16>(&bytes);
        fuzz::<i32>(&bytes);
        fuzz::<i64>(&bytes);
        fuzz::<i128>(&bytes);
        fuzz::<usize>(&bytes);
        fuzz::<isize>(&bytes);
        fuzz::<f32>(&bytes);
        fuzz::<f64>(&bytes);
        fuzz::<char>(&bytes);
        fuzz::<String>(&bytes);
        fuzz::<Vec<u16>>(&bytes);
        fuzz::<Vec<String>>(&bytes);
        fuzz::<Vec<u64>>(&bytes);
        fuzz::<Vec<Vec<bool>>>(&bytes);
        fuzz::<Option<u32>>(&bytes);
        fuzz::<Option<Option<bool>>>(&bytes);
        fuzz::<[u8; 0]>(&bytes);
        fuzz::<[i16; 3]>(&bytes);
        fuzz::<[String; 2]>(&bytes);
        fuzz::<[char; 4]>(&bytes);
        fuzz::<()>(&bytes);
        fuzz::<(u8,)>(&bytes);
        fuzz::<(u8, bool)>(&bytes);
        fuzz::<(u8, bool, String)>(&bytes);
        fuzz::<(u8, bool, String, Vec<u8>)>(&bytes);
        fuzz::<Box<u64>>(&bytes);
        fuzz::<Vec<Option<(u8, char)>>>(&bytes);
        fuzz::<Varint>(&bytes);
        fuzz::<Gamma>(&bytes);
        fuzz::<Signed>(&bytes);
    }

    #[test]
    fn random_bits_after_a_valid_length_prefix_never_panic(
        len in any_width_u64(),
        tail in vec(any::<u8>(), 0..48),
    ) {
        // Random bytes rarely start with a plausible length; these always do.
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        writer.write_varint(len % 64);
        writer.write_bytes(&tail);
        writer.finish();
        fuzz::<String>(&bytes);
        fuzz::<Vec<char>>(&bytes);
        fuzz::<Vec<Option<u8>>>(&bytes);
        fuzz::<Vec<String>>(&bytes);
        fuzz::<Vec<u64>>(&bytes);
    }
}

/// `varint(claimed)`, then `payload_bytes` bytes of 0xff.
fn length_claim(claimed: u64, payload_bytes: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(claimed);
    writer.write_bytes(&vec![0xff; payload_bytes]);
    writer.finish();
    bytes
}

#[test]
fn huge_length_claims_are_rejected_before_allocating() {
    for claimed in [1u64 << 40, u64::MAX, u64::MAX / 64 + 1, 1 << 61] {
        let bytes = length_claim(claimed, 4);
        let total = 8 * bytes.len() as u64;
        let prefix = varint_len(claimed);
        let expected = Some(DecodeError::LengthTooLarge {
            bit_offset: prefix,
            claimed,
            remaining_bits: total - prefix,
        });
        // Allocating for the claim would abort the test process.
        let err = |bytes: &[u8]| -> [Option<DecodeError>; 6] {
            [
                Vec::<u64>::decode(&mut BitReader::new(bytes)).err(),
                String::decode(&mut BitReader::new(bytes)).err(),
                Vec::<String>::decode(&mut BitReader::new(bytes)).err(),
                Vec::<Vec<u8>>::decode(&mut BitReader::new(bytes)).err(),
                Vec::<()>::decode(&mut BitReader::new(bytes)).err(),
                Vec::<u128>::decode(&mut BitReader::new(bytes)).err(),
            ]
        };
        for (i, got) in err(&bytes).into_iter().enumerate() {
            assert_eq!(got, expected, "type #{i}, claim {claimed}");
        }
    }
}

#[test]
fn length_claims_are_bounded_exactly_by_the_input() {
    // Three u64s fit exactly; a claim of four does not.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(3);
    for v in [1u64, 2, 3] {
        v.encode(&mut writer).unwrap();
    }
    writer.finish();
    assert_eq!(
        Vec::<u64>::decode(&mut BitReader::new(&bytes)),
        Ok(vec![1, 2, 3])
    );

    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(4);
    for v in [1u64, 2, 3] {
        v.encode(&mut writer).unwrap();
    }
    writer.finish();
    // varint(4) is 5 bits; 3 bits of padding follow the 192 payload bits.
    assert_eq!(
        Vec::<u64>::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::LengthTooLarge {
            bit_offset: 5,
            claimed: 4,
            remaining_bits: 195
        })
    );

    // A string whose bytes are all there, and one claiming a byte more.
    let bytes = length_claim(4, 4);
    assert_eq!(
        String::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::InvalidUtf8 { bit_offset: 5 })
    );
    let bytes = length_claim(5, 4);
    assert_eq!(
        String::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::LengthTooLarge {
            bit_offset: 5,
            claimed: 5,
            remaining_bits: 32 + 3
        })
    );

    // The bound is the element minimum: 200 bools fit in 200 bits.
    let bools = vec![true; 200];
    assert_eq!(round_trip(&bools), bools);

    // Off by one bit: a claim of 4 one-bit elements with 3 bits left.
    assert_eq!(
        Vec::<bool>::decode(&mut BitReader::new(&encode(&Varint(4)).0)),
        Err(DecodeError::LengthTooLarge {
            bit_offset: 5,
            claimed: 4,
            remaining_bits: 3
        })
    );
    assert_eq!(
        Vec::<bool>::decode(&mut BitReader::new(&encode(&Varint(3)).0)),
        Ok(vec![false; 3])
    );

    let reader = BitReader::new(&[0; 4]);
    assert_eq!(reader.check_len(32, 1), Ok(32));
    assert!(matches!(
        reader.check_len(33, 1),
        Err(DecodeError::LengthTooLarge { claimed: 33, .. })
    ));
    assert!(matches!(
        reader.check_len(11, 3),
        Err(DecodeError::LengthTooLarge { claimed: 11, .. })
    ));
    assert_eq!(reader.check_len(32, 0), Ok(32));
    assert!(matches!(
        reader.check_len(33, 0),
        Err(DecodeError::LengthTooLarge { .. })
    ));
    assert_eq!(reader.check_len(4, 8), Ok(4));
    assert!(matches!(
        reader.check_len(5, 8),
        Err(DecodeError::LengthTooLarge { claimed: 5, .. })
    ));
    assert!(matches!(
        reader.check_len(u64::MAX, 2),
        Err(DecodeError::LengthTooLarge { .. })
    ));
    assert_eq!(reader.check_len(0, u64::MAX), Ok(0));
}

#[test]
fn invalid_chars_are_rejected() {
    for value in [0xd800u32, 0xdbff, 0xdc00, 0xdfff, 0x11_0000, 0x1f_ffff] {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        writer.write_bits(0b11, 2);
        writer.write_bits(u64::from(value), 21);
        writer.finish();
        let mut reader = BitReader::new(&bytes);
        reader.read_bits(2).unwrap();
        assert_eq!(
            char::decode(&mut reader),
            Err(DecodeError::InvalidChar {
                bit_offset: 2,
                value
            }),
            "{value:#x}"
        );
    }
    let mut bytes = Vec::new();
    BitWriter::new(&mut bytes).write_bits(0xd800, 21);
    assert_eq!(
        char::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::InvalidChar {
            bit_offset: 0,
            value: 0xd800
        })
    );
    // Inside a collection, the error position is that of the bad element.
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_varint(2);
    writer.write_bits(u64::from('a'), 21);
    writer.write_bits(0xdfff, 21);
    writer.finish();
    assert_eq!(
        Vec::<char>::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::InvalidChar {
            bit_offset: 4 + 21,
            value: 0xdfff
        })
    );
}

#[test]
fn invalid_utf8_is_rejected() {
    let cases: [&[u8]; 6] = [
        &[0xc3, 0x28],             // bad continuation
        &[0x80],                   // lone continuation byte
        &[0xc0, 0x80],             // overlong NUL
        &[0xed, 0xa0, 0x80],       // encoded surrogate
        &[0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
        &[b'o', b'k', 0xe2, 0x82], // truncated sequence at the end
    ];
    for invalid in cases {
        for shift in [0u32, 3] {
            let mut bytes = Vec::new();
            let mut writer = BitWriter::new(&mut bytes);
            writer.write_bits(0, shift);
            writer.write_varint(invalid.len() as u64);
            writer.write_bytes(invalid);
            writer.finish();
            let mut reader = BitReader::new(&bytes);
            reader.read_bits(shift).unwrap();
            assert_eq!(
                String::decode(&mut reader),
                Err(DecodeError::InvalidUtf8 {
                    bit_offset: u64::from(shift) + varint_len(invalid.len() as u64)
                }),
                "{invalid:x?}"
            );
        }
    }
}

#[cfg(target_pointer_width = "64")]
#[test]
fn pointer_sized_ints_take_every_varint_on_64_bit_targets() {
    let bytes = encode(&Varint(u64::MAX)).0;
    assert_eq!(usize::decode(&mut BitReader::new(&bytes)), Ok(usize::MAX));
    assert_eq!(isize::decode(&mut BitReader::new(&bytes)), Ok(isize::MIN));
    let bytes = encode(&Varint(u64::from(u32::MAX) + 1)).0;
    assert_eq!(usize::decode(&mut BitReader::new(&bytes)), Ok(1 << 32));
}

#[cfg(target_pointer_width = "32")]
#[test]
fn usize_beyond_u32_is_out_of_range_on_32_bit_targets() {
    let bytes = encode(&Varint(u64::from(u32::MAX) + 1)).0;
    assert_eq!(
        usize::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::VarintOutOfRange {
            bit_offset: 0,
            target: "usize"
        })
    );
    let bytes = encode(&Varint(u64::from(u32::MAX))).0;
    assert_eq!(usize::decode(&mut BitReader::new(&bytes)), Ok(usize::MAX));
    let bytes = encode(&Signed(i64::from(i32::MIN) - 1)).0;
    assert_eq!(
        isize::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::VarintOutOfRange {
            bit_offset: 0,
            target: "isize"
        })
    );
}

// ---------------------------------------------------------------------------
// 6. TYPE_HASH and `same`
// ---------------------------------------------------------------------------

#[test]
fn type_hashes_tell_layouts_apart() {
    assert_ne!(u8::TYPE_HASH, i8::TYPE_HASH);
    assert_ne!(u8::TYPE_HASH, u16::TYPE_HASH);
    assert_ne!(i8::TYPE_HASH, u16::TYPE_HASH);
    assert_ne!(Vec::<u8>::TYPE_HASH, Vec::<u16>::TYPE_HASH);
    assert_ne!(<[u8; 2]>::TYPE_HASH, <[u8; 3]>::TYPE_HASH);
    assert_ne!(<(u8, u16)>::TYPE_HASH, <(u16, u8)>::TYPE_HASH);
    assert_ne!(Option::<u8>::TYPE_HASH, u8::TYPE_HASH);

    let hashes = [
        ("bool", bool::TYPE_HASH),
        ("u8", u8::TYPE_HASH),
        ("u16", u16::TYPE_HASH),
        ("u32", u32::TYPE_HASH),
        ("u64", u64::TYPE_HASH),
        ("u128", u128::TYPE_HASH),
        ("i8", i8::TYPE_HASH),
        ("i16", i16::TYPE_HASH),
        ("i32", i32::TYPE_HASH),
        ("i64", i64::TYPE_HASH),
        ("i128", i128::TYPE_HASH),
        ("usize", usize::TYPE_HASH),
        ("isize", isize::TYPE_HASH),
        ("f32", f32::TYPE_HASH),
        ("f64", f64::TYPE_HASH),
        ("char", char::TYPE_HASH),
        ("String", String::TYPE_HASH),
        ("()", <()>::TYPE_HASH),
        ("Vec<u8>", Vec::<u8>::TYPE_HASH),
        ("Vec<u16>", Vec::<u16>::TYPE_HASH),
        ("Vec<i8>", Vec::<i8>::TYPE_HASH),
        ("Vec<Vec<u8>>", Vec::<Vec<u8>>::TYPE_HASH),
        ("Vec<Option<u8>>", Vec::<Option<u8>>::TYPE_HASH),
        ("Option<u8>", Option::<u8>::TYPE_HASH),
        ("Option<Vec<u8>>", Option::<Vec<u8>>::TYPE_HASH),
        ("Option<Option<u8>>", Option::<Option<u8>>::TYPE_HASH),
        ("[u8; 0]", <[u8; 0]>::TYPE_HASH),
        ("[u8; 2]", <[u8; 2]>::TYPE_HASH),
        ("[u8; 3]", <[u8; 3]>::TYPE_HASH),
        ("[u16; 2]", <[u16; 2]>::TYPE_HASH),
        ("(u8,)", <(u8,)>::TYPE_HASH),
        ("(u8, u16)", <(u8, u16)>::TYPE_HASH),
        ("(u16, u8)", <(u16, u8)>::TYPE_HASH),
        ("(u8, u8)", <(u8, u8)>::TYPE_HASH),
        ("(u8, u8, u8)", <(u8, u8, u8)>::TYPE_HASH),
        ("(u8, u8, u8, u8)", <(u8, u8, u8, u8)>::TYPE_HASH),
        ("((u8, u8), u8)", <((u8, u8), u8)>::TYPE_HASH),
    ];
    let mut seen = HashSet::new();
    for (name, hash) in hashes {
        assert!(
            seen.insert(hash),
            "{name} shares its TYPE_HASH with another type"
        );
    }

    // A box is encoded as its content, so it has the content's layout hash.
    assert_eq!(Box::<u64>::TYPE_HASH, u64::TYPE_HASH);
    assert_eq!(Box::<Vec<u8>>::TYPE_HASH, Vec::<u8>::TYPE_HASH);
}

/// FNV-1a, 64-bit, over `bytes`, from `hash`.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[test]
fn type_hashes_are_the_documented_fnv1a_of_the_layout() {
    // The hash goes on the wire, so it must not change between builds:
    // FNV-1a of the name plus a 0xff terminator, then each parameter's hash
    // as 8 little-endian bytes.
    let start = 0xcbf2_9ce4_8422_2325;
    let named = |name: &str, params: &[u64]| {
        let mut hash = fnv1a(start, name.as_bytes());
        hash = fnv1a(hash, &[0xff]);
        for p in params {
            hash = fnv1a(hash, &p.to_le_bytes());
        }
        hash
    };
    assert_eq!(u8::TYPE_HASH, named("u8", &[]));
    assert_eq!(String::TYPE_HASH, named("String", &[]));
    assert_eq!(Vec::<u16>::TYPE_HASH, named("Vec", &[named("u16", &[])]));
    assert_eq!(<[u8; 3]>::TYPE_HASH, named("array", &[named("u8", &[]), 3]));
    assert_eq!(
        <(u16, bool)>::TYPE_HASH,
        named("tuple", &[named("u16", &[]), named("bool", &[])])
    );
    assert_eq!(schema::named("u8", &[]), u8::TYPE_HASH);
    assert_eq!(schema::START, start);
}

#[test]
fn same_compares_floats_by_bits() {
    assert!(!0.0f32.same(&-0.0));
    assert!(!(-0.0f32).same(&0.0));
    assert!(f32::NAN.same(&f32::NAN));
    assert!(!f32::NAN.same(&-f32::NAN));
    assert!(!f32::NAN.same(&f32::from_bits(f32::NAN.to_bits() | 1)));
    assert!(1.5f32.same(&1.5));
    assert!(!0.0f64.same(&-0.0));
    assert!(f64::NAN.same(&f64::NAN));
    assert!(f64::INFINITY.same(&f64::INFINITY));

    // Containers compare their elements with `same`, not `==`.
    assert!(vec![f32::NAN].same(&vec![f32::NAN]));
    assert!(!vec![0.0f32].same(&vec![-0.0]));
    assert!(!vec![1.0f32].same(&vec![1.0, 1.0]));
    assert!(!Vec::<f32>::new().same(&vec![0.0]));
    assert!(Some(f64::NAN).same(&Some(f64::NAN)));
    assert!(!Some(0.0f64).same(&Some(-0.0)));
    assert!(!Some(0.0f64).same(&None));
    assert!(None::<f64>.same(&None));
    assert!([f32::NAN, 1.0].same(&[f32::NAN, 1.0]));
    assert!(![0.0f32, 1.0].same(&[-0.0, 1.0]));
    assert!((1u8, f64::NAN).same(&(1, f64::NAN)));
    assert!(!(1u8, 0.0f64).same(&(1, -0.0)));
    assert!(!(1u8, 2u8, 3u8, 4u8).same(&(1, 2, 3, 5)));
    assert!(Box::new(f32::NAN).same(&Box::new(f32::NAN)));
    assert!(!Box::new(0.0f32).same(&Box::new(-0.0)));
    assert!(().same(&()));
    assert!("é".to_string().same(&"é".to_string()));
    assert!(!"é".to_string().same(&"e\u{301}".to_string()));
}

// ---------------------------------------------------------------------------
// A `Vec` of zero-bit elements could not have its length checked against the
// input when decoding, so encoding a non-empty one is refused up front.
// ---------------------------------------------------------------------------

#[test]
fn vec_of_zero_bit_elements_is_refused_unless_empty() {
    assert!(round_trip(&Vec::<()>::new()).is_empty());
    for len in [1usize, 3, 100] {
        let mut bytes = Vec::new();
        let mut w = BitWriter::new(&mut bytes);
        assert!(matches!(
            vec![(); len].encode(&mut w),
            Err(EncodeError::Custom { .. })
        ));
        assert!(matches!(
            vec![[0u8; 0]; len].encode(&mut w),
            Err(EncodeError::Custom { .. })
        ));
        assert_eq!(w.bits_written(), 0, "nothing written before the refusal");
    }
}
