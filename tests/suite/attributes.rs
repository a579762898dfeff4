//! Field attributes: `bits`, `varint`, `quantize`, `with`, `skip`.

use fastarray::{
    BitCodec, BitReader, BitWriter, DecodeError, EncodeError, FastArray, FieldMask, Quantizer,
    Replicate, SendError, SendState,
};
use fastarray_testkit::exchange;
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;

/// A colour kept as `0xRRGGBB` in a `u32` and sent in 24 bits.
mod rgb {
    use fastarray::{BitReader, BitWriter, DecodeError, EncodeError};

    pub fn encode(value: &u32, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_bits_checked(u64::from(*value), 24)
    }

    pub fn decode(reader: &mut BitReader<'_>) -> Result<u32, DecodeError> {
        Ok(reader.read_bits(24)? as u32)
    }
}

const POSITION: Quantizer = Quantizer::new(-1000.0, 1000.0, 16);
const DIRECTION: Quantizer = Quantizer::new(-1.0, 1.0, 10);

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Tuned {
    #[replicate(bits = 7)]
    level: u8,
    #[replicate(bits = 12)]
    offset: i16,
    #[replicate(varint)]
    score: u64,
    #[replicate(varint)]
    delta: i32,
    #[replicate(quantize(min = -1000.0, max = 1000.0, bits = 16))]
    position: [f32; 3],
    #[replicate(quantize(min = 0, max = 1, bits = 8))]
    alpha: f64,
    #[replicate(quantize(min = -1.0, max = 1.0, bits = 10))]
    direction: (f32, f32),
    #[replicate(with = rgb)]
    color: u32,
    #[replicate(skip)]
    cache: Vec<u8>,
    name: String,
}

fn tuned() -> impl Strategy<Value = Tuned> {
    (
        (0u8..128, -2048i16..2048, any::<u64>(), any::<i32>()),
        (
            prop::array::uniform3(-1000.0f32..=1000.0),
            0.0f64..=1.0,
            (-1.0f32..=1.0, -1.0f32..=1.0),
        ),
        (0u32..=0xff_ffff, "[a-z]{0,8}"),
    )
        .prop_map(
            |((level, offset, score, delta), (position, alpha, direction), (color, name))| Tuned {
                level,
                offset,
                score,
                delta,
                position,
                alpha,
                direction,
                color,
                cache: vec![1, 2, 3],
                name,
            },
        )
}

fn encode<T: BitCodec>(value: &T) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.encode(&mut writer).unwrap();
    let bits = writer.finish();
    (bytes, bits)
}

fn bits_of_varint(v: u64) -> u64 {
    let mut out = Vec::new();
    let mut w = BitWriter::new(&mut out);
    w.write_varint(v);
    w.bits_written()
}

fn close(a: f64, b: f64, bound: f64) -> bool {
    // The bound plus the rounding of an f32 result.
    (a - b).abs() <= bound + (a.abs() + 1.0) * f64::from(f32::EPSILON)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_attribute_round_trips(value in tuned()) {
        let (bytes, bits) = encode(&value);
        let mut reader = BitReader::new(&bytes);
        let back = Tuned::decode(&mut reader).unwrap();
        prop_assert_eq!(reader.bit_offset(), bits);

        // Exact sizes: 7 + 12 + varints + 3×16 + 8 + 2×10 + 24 + the name.
        let varints = bits_of_varint(value.score) + bits_of_varint(fastarray::zigzag_encode(i64::from(value.delta)));
        let name = bits_of_varint(value.name.len() as u64) + 8 * value.name.len() as u64;
        prop_assert_eq!(bits, 7 + 12 + varints + 48 + 8 + 20 + 24 + name);

        prop_assert_eq!(back.level, value.level);
        prop_assert_eq!(back.offset, value.offset);
        prop_assert_eq!(back.score, value.score);
        prop_assert_eq!(back.delta, value.delta);
        prop_assert_eq!(back.color, value.color);
        prop_assert_eq!(&back.name, &value.name);
        prop_assert!(back.cache.is_empty(), "skipped fields come back as Default");
        for (b, v) in back.position.iter().zip(value.position) {
            prop_assert!(close(f64::from(*b), f64::from(v), POSITION.max_error()));
        }
        prop_assert!(close(back.alpha, value.alpha, Quantizer::new(0.0, 1.0, 8).max_error()));
        prop_assert!(close(f64::from(back.direction.0), f64::from(value.direction.0), DIRECTION.max_error()));
        prop_assert!(close(f64::from(back.direction.1), f64::from(value.direction.1), DIRECTION.max_error()));

        // The decoded value is the quantized one: it is "the same" as the
        // original, and re-encodes to the same bits.
        prop_assert!(back.diff(&value).is_empty());
        prop_assert_eq!(encode(&back).0, bytes);
    }

    #[test]
    fn each_field_round_trips_alone(value in tuned(), field in 0u32..9) {
        let mask = FieldMask::single(field);
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        value.encode_fields(mask, &mut writer).unwrap();
        let bits = writer.finish();
        let mut reader = BitReader::new(&bytes);
        let patch = Tuned::decode_fields(mask, &mut reader).unwrap();
        prop_assert_eq!(reader.bit_offset(), bits);
        let mut target = Tuned { cache: vec![], ..value.clone() };
        target.level ^= 1; target.offset = !target.offset; target.score = target.score.wrapping_add(1);
        target.delta = target.delta.wrapping_add(1); target.position[0] = -target.position[0] + 500.0;
        target.alpha = 1.0 - target.alpha + 0.5; target.direction.0 = -target.direction.0 + 0.5;
        target.color ^= 0x10; target.name.push('!');
        let before = target.clone();
        target.apply_patch(patch);
        // Only the sent field changed, and it now matches the value.
        prop_assert_eq!(target.diff(&before).without(mask), FieldMask::EMPTY);
        prop_assert!(!target.diff(&value).contains(field));
    }

    #[test]
    fn quantization_error_stays_within_the_documented_bound(v in -2000.0f64..2000.0, bits in 1u32..=32) {
        let q = Quantizer::new(-1000.0, 1000.0, bits);
        let clamped = v.clamp(-1000.0, 1000.0);
        let back = q.dequantize(q.quantize(v));
        prop_assert!((back - clamped).abs() <= q.max_error() * (1.0 + 1e-9), "{} -> {}", v, back);
        prop_assert!((-1000.0..=1000.0).contains(&back));
    }

    #[test]
    fn jitter_below_the_resolution_is_not_a_change(value in tuned(), jitter in -0.49f64..0.49) {
        // Start from a value the quantizer can represent exactly, then move it
        // by less than half a step.
        let (bytes, _) = encode(&value);
        let exact = Tuned::decode(&mut BitReader::new(&bytes)).unwrap();
        let mut moved = exact.clone();
        let step = 2.0 * POSITION.max_error();
        moved.position[1] = (f64::from(exact.position[1]) + jitter * step) as f32;
        prop_assert!(moved.diff(&exact).is_empty());
    }
}

#[test]
fn values_that_do_not_fit_are_encode_errors_surfaced_by_write_delta() {
    let mut server = FastArray::new();
    let good = Tuned {
        level: 1,
        offset: 0,
        score: 0,
        delta: 0,
        position: [0.0; 3],
        alpha: 0.0,
        direction: (0.0, 0.0),
        color: 0,
        cache: vec![],
        name: String::new(),
    };
    let id = server.push(good.clone());
    server.commit();
    let mut conn = SendState::new();
    let mut out = Vec::new();
    server.write_delta(&mut conn, 0, &mut out).unwrap();
    conn.on_ack(0);

    server.get_mut(id).unwrap().level = 128; // 8 bits of value in a 7-bit field
    server.commit();
    let mut out = Vec::new();
    assert_eq!(
        server.write_delta(&mut conn, 1, &mut out),
        Err(SendError::Encode {
            id,
            error: EncodeError::ValueOutOfRange {
                value: 128,
                bits: 7
            }
        })
    );
    assert!(out.is_empty(), "nothing written on error");

    for (offset, fits) in [
        (2047i16, true),
        (-2048, true),
        (2048, false),
        (-2049, false),
    ] {
        let value = Tuned {
            offset,
            ..good.clone()
        };
        let mut bytes = Vec::new();
        let result = value.encode(&mut BitWriter::new(&mut bytes));
        assert_eq!(result.is_ok(), fits, "offset {offset} in 12 bits");
    }
    let value = Tuned {
        color: 0x100_0000,
        ..good
    };
    assert_eq!(
        value.encode(&mut BitWriter::new(&mut Vec::new())),
        Err(EncodeError::ValueOutOfRange {
            value: 0x100_0000,
            bits: 24
        })
    );
}

#[test]
fn a_varint_that_does_not_fit_is_refused() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Small {
        #[replicate(varint)]
        n: u8,
    }
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_varint(256);
    w.finish();
    assert_eq!(
        Small::decode(&mut BitReader::new(&bytes)),
        Err(DecodeError::VarintOutOfRange {
            bit_offset: 0,
            target: "u8"
        })
    );
}

#[test]
fn small_varints_are_small() {
    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Counters {
        #[replicate(varint)]
        kills: u32,
        #[replicate(varint)]
        balance: i64,
    }
    assert_eq!(
        encode(&Counters {
            kills: 0,
            balance: 0
        })
        .1,
        2
    );
    assert_eq!(
        encode(&Counters {
            kills: 2,
            balance: -1
        })
        .1,
        4 + 4
    );
    assert_eq!(
        encode(&Counters {
            kills: u32::MAX,
            balance: i64::MIN
        })
        .1,
        bits_of_varint(u64::from(u32::MAX)) + 77
    );
}

#[test]
fn attributes_are_part_of_the_schema() {
    mod a {
        use fastarray::Replicate;
        #[derive(Replicate)]
        pub struct S {
            #[replicate(bits = 7)]
            pub x: u8,
        }
    }
    mod b {
        use fastarray::Replicate;
        #[derive(Replicate)]
        pub struct S {
            #[replicate(bits = 8)]
            pub x: u8,
        }
    }
    mod c {
        use fastarray::Replicate;
        #[derive(Replicate)]
        pub struct S {
            #[replicate(varint)]
            pub x: u8,
        }
    }
    mod d {
        use fastarray::Replicate;
        #[derive(Replicate)]
        pub struct S {
            pub x: u8,
        }
    }
    mod e {
        use fastarray::Replicate;
        #[derive(Replicate)]
        pub struct S {
            #[replicate(quantize(min = 0, max = 1, bits = 8))]
            pub x: f32,
        }
    }
    mod f {
        use fastarray::Replicate;
        #[derive(Replicate)]
        pub struct S {
            #[replicate(quantize(min = 0, max = 2, bits = 8))]
            pub x: f32,
        }
    }
    let hashes = [
        a::S::SCHEMA_HASH,
        b::S::SCHEMA_HASH,
        c::S::SCHEMA_HASH,
        d::S::SCHEMA_HASH,
        e::S::SCHEMA_HASH,
        f::S::SCHEMA_HASH,
    ];
    for (i, x) in hashes.iter().enumerate() {
        for y in &hashes[i + 1..] {
            assert_ne!(x, y);
        }
    }
}

#[test]
fn quantized_fields_converge_over_the_protocol_up_to_resolution() {
    let mut server = FastArray::new();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let ids: Vec<_> = (0..50)
        .map(|_| server.push(tuned().new_tree(&mut runner).unwrap().current()))
        .collect();
    server.commit();
    let mut conn = SendState::new();
    let mut client: FastArray<Tuned> = FastArray::new();
    for packet in 0..20u32 {
        for &id in ids.iter().skip(packet as usize % 3).step_by(3) {
            let mut item = server.get_mut(id).unwrap();
            item.position[0] = (item.position[0] + 0.37).min(1000.0);
            item.alpha = (item.alpha + 0.01) % 1.0;
            item.cache.push(1);
        }
        exchange(&mut server, &mut conn, &mut client, packet);
    }
    assert_eq!(client.len(), server.len());
    for (id, item) in server.iter() {
        let mirrored = client.get(id).unwrap();
        assert!(
            mirrored.diff(item).is_empty(),
            "{id}: {mirrored:?} vs {item:?}"
        );
        assert!(mirrored.cache.is_empty());
    }
}
