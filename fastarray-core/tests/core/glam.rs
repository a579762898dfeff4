//! glam's vectors and quaternions as fields (feature `glam`).
//!
//! Properties checked:
//! * plain fields round-trip bit for bit (`NaN`s and `-0.0` included), in
//!   the documented number of bits;
//! * quantized vectors behave like arrays of their axes: one range for all
//!   or one per axis (repeated over arrays of vectors), each axis within
//!   half a step of its own range, clamped to it, in the declared bits;
//! * smallest-three quaternions arrive as unit quaternions within the
//!   documented `SmallestThree::max_error` of the normalized input (its
//!   largest component made positive), for random rotations and for the
//!   edge cases: the identity, negative `w`, near-equal components, ties,
//!   non-unit and degenerate input; jitter below the resolution and `q`
//!   against `-q` are not changes.
#![cfg(feature = "glam-0_34")]

use fastarray_core::glam::{DQuat, DVec2, DVec3, DVec4, Quat, Vec2, Vec3, Vec3A, Vec4};
use fastarray_core::{
    BitCodec, BitReader, BitWriter, FastArray, FieldMask, QuantizeRotation, Quantizer, Replicate,
    SmallestThree,
};
use fastarray_derive::Replicate;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

/// `value` encoded: the bytes and the bits written.
fn encode<T: BitCodec>(value: &T) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.encode(&mut writer).unwrap();
    let bits = writer.finish();
    (bytes, bits)
}

/// `value` encoded and decoded, checking the decoder reads every bit.
fn round_trip<T: BitCodec>(value: &T) -> T {
    let (bytes, bits) = encode(value);
    let mut reader = BitReader::new(&bytes);
    let back = T::decode(&mut reader).unwrap();
    assert_eq!(reader.bit_offset(), bits);
    back
}

#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Plain {
    a: Vec2,
    b: Vec3,
    c: Vec3A,
    d: Vec4,
    e: Quat,
    f: DVec2,
    g: DVec3,
    h: DVec4,
    i: DQuat,
}

fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![any::<u32>().prop_map(f32::from_bits), -1e3f32..1e3]
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![any::<u64>().prop_map(f64::from_bits), -1e3f64..1e3]
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn plain_fields_round_trip_bit_for_bit(
        f in prop::array::uniform16(any_f32()),
        d in prop::array::uniform13(any_f64()),
    ) {
        let value = Plain {
            a: Vec2::new(f[0], f[1]),
            b: Vec3::new(f[2], f[3], f[4]),
            c: Vec3A::new(f[5], f[6], f[7]),
            d: Vec4::new(f[8], f[9], f[10], f[11]),
            e: Quat::from_xyzw(f[12], f[13], f[14], f[15]),
            f: DVec2::new(d[0], d[1]),
            g: DVec3::new(d[2], d[3], d[4]),
            h: DVec4::new(d[5], d[6], d[7], d[8]),
            i: DQuat::from_xyzw(d[9], d[10], d[11], d[12]),
        };
        let (_, bits) = encode(&value);
        prop_assert_eq!(bits, 32 * 16 + 64 * 13);
        prop_assert_eq!(Plain::MIN_BITS, 32 * 16 + 64 * 13);
        let back = round_trip(&value);
        prop_assert!(back.same(&value));
        prop_assert_eq!(back.d.to_array().map(f32::to_bits), value.d.to_array().map(f32::to_bits));
        prop_assert_eq!(back.i.to_array().map(f64::to_bits), value.i.to_array().map(f64::to_bits));
    }
}

#[test]
fn plain_fields_compare_by_bits() {
    let zero = Vec3::ZERO;
    assert!(!zero.same(&Vec3::new(0.0, -0.0, 0.0)));
    let nan = Vec2::new(f32::NAN, 1.0);
    assert!(nan.same(&nan));
    // Vec3A is sent as Vec3 is.
    assert_eq!(
        encode(&Vec3A::new(1.0, 2.0, 3.0)).0,
        encode(&Vec3::new(1.0, 2.0, 3.0)).0
    );
    assert_eq!(
        <Vec3A as BitCodec>::TYPE_HASH,
        <Vec3 as BitCodec>::TYPE_HASH
    );
    assert_ne!(
        <Vec3 as BitCodec>::TYPE_HASH,
        <[f32; 3] as BitCodec>::TYPE_HASH
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Body {
    /// One range for every axis.
    #[replicate(quantize(min = -100.0, max = 100.0, bits = 12))]
    velocity: Vec2,
    /// A range per axis: a flat world with a low ceiling.
    #[replicate(quantize(min = [-512.0, 0.0, -512.0], max = [512.0, 64.0, 512.0], bits = [16, 10, 16]))]
    position: Vec3,
    /// The same three ranges for each point, and one bit count for all.
    #[replicate(quantize(min = [-512.0, 0.0, -512.0], max = [512.0, 64.0, 512.0], bits = 8))]
    path: [Vec3; 2],
    #[replicate(quantize(min = -1.0, max = 1.0, bits = 9))]
    precise: DVec4,
}

const VELOCITY: Quantizer = Quantizer::new(-100.0, 100.0, 12);
const POSITION: [Quantizer; 3] = [
    Quantizer::new(-512.0, 512.0, 16),
    Quantizer::new(0.0, 64.0, 10),
    Quantizer::new(-512.0, 512.0, 16),
];
const PATH: [Quantizer; 3] = [
    Quantizer::new(-512.0, 512.0, 8),
    Quantizer::new(0.0, 64.0, 8),
    Quantizer::new(-512.0, 512.0, 8),
];
const PRECISE: Quantizer = Quantizer::new(-1.0, 1.0, 9);

/// Whether `received` is within half a step of `sent` clamped to `q`'s
/// range (and the f32 rounding of the result).
fn within(sent: f64, received: f64, q: &Quantizer) -> bool {
    let clamped = sent.clamp(q.dequantize(0), q.dequantize(u64::MAX));
    (clamped - received).abs() <= q.max_error() + clamped.abs().max(1.0) * 1e-6
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn quantized_vectors_stay_within_each_axis_range(
        v in prop::array::uniform2(-150.0f32..150.0),
        p in prop::array::uniform3(-600.0f32..600.0),
        path in prop::array::uniform6(-600.0f32..600.0),
        precise in prop::array::uniform4(-1.5f64..1.5),
    ) {
        let body = Body {
            velocity: Vec2::from_array(v),
            position: Vec3::from_array(p),
            path: [Vec3::new(path[0], path[1], path[2]), Vec3::new(path[3], path[4], path[5])],
            precise: DVec4::from_array(precise),
        };
        let (_, bits) = encode(&body);
        prop_assert_eq!(bits, 2 * 12 + (16 + 10 + 16) + 2 * 3 * 8 + 4 * 9);
        prop_assert_eq!(Body::MIN_BITS, bits);
        let back = round_trip(&body);
        for (sent, got) in v.iter().zip(back.velocity.to_array()) {
            prop_assert!(within(f64::from(*sent), f64::from(got), &VELOCITY));
        }
        for axis in 0..3 {
            prop_assert!(within(f64::from(p[axis]), f64::from(back.position[axis]), &POSITION[axis]));
            for point in 0..2 {
                let sent = f64::from(path[3 * point + axis]);
                prop_assert!(within(sent, f64::from(back.path[point][axis]), &PATH[axis]));
            }
        }
        for (sent, got) in precise.iter().zip(back.precise.to_array()) {
            prop_assert!(within(*sent, got, &PRECISE));
        }
        // What arrives is a fixed point: sent again, it arrives unchanged.
        prop_assert_eq!(round_trip(&back), back.clone());
        prop_assert!(back.diff(&body).is_empty());
    }
}

#[test]
fn each_axis_clamps_to_its_own_range() {
    let body = Body {
        velocity: Vec2::new(1e6, -1e6),
        position: Vec3::new(0.0, 100.0, -1e4),
        path: [Vec3::new(0.0, -5.0, 0.0), Vec3::new(600.0, 70.0, 0.0)],
        precise: DVec4::new(0.0, 0.0, 0.0, 2.0),
    };
    let back = round_trip(&body);
    assert_eq!(back.velocity, Vec2::new(100.0, -100.0));
    assert_eq!((back.position.y, back.position.z), (64.0, -512.0));
    assert_eq!(
        (back.path[0].y, back.path[1].x, back.path[1].y),
        (0.0, 512.0, 64.0)
    );
    assert_eq!(back.precise.w, 1.0);
}

#[test]
fn change_detection_follows_each_axis_resolution() {
    let mut world = FastArray::new();
    let start = Body {
        velocity: Vec2::ZERO,
        position: Vec3::new(0.0, 32.0, 0.0),
        path: [Vec3::ZERO; 2],
        precise: DVec4::ZERO,
    };
    let id = world.push(start);
    world.commit();
    // y's step is 64 / 1023 ≈ 0.0626; x's is 1024 / 65535 ≈ 0.0156.
    world.get_mut(id).unwrap().position.y += 0.01;
    assert!(world.commit().changed().is_empty());
    world.get_mut(id).unwrap().position.x += 0.02;
    assert_eq!(world.commit().changed(), [(id, FieldMask::single(1))]);
}

// ---------------------------------------------------------------------------
// Smallest-three quaternions
// ---------------------------------------------------------------------------

const ROTATION_BITS: [u32; 10] = [4, 5, 6, 8, 10, 12, 16, 20, 24, 32];

/// The distance between `received` and the normalized `sent` or its
/// negation (the same rotation), whichever is nearer, as 4-vectors.
fn distance(sent: [f64; 4], received: [f64; 4]) -> f64 {
    let scale = sent.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    let sent = sent.map(|c| c / scale);
    let norm = sent.iter().map(|c| c * c).sum::<f64>().sqrt();
    let sent = sent.map(|c| c / norm);
    let apart = |sign: f64| {
        sent.iter()
            .zip(received)
            .map(|(s, r)| (sign * s - r).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    apart(1.0).min(apart(-1.0))
}

fn is_unit(q: [f64; 4], tolerance: f64) -> bool {
    (q.iter().map(|c| c * c).sum::<f64>().sqrt() - 1.0).abs() <= tolerance
}

/// Sends `q` as a `DQuat` and as a `Quat` in every bit count, checking
/// each arrives a unit quaternion within the documented bound, in 2 + 3·N
/// bits. Returns the largest error seen relative to its bound.
fn check_rotation(q: [f64; 4]) -> f64 {
    let mut worst: f64 = 0.0;
    for bits in ROTATION_BITS {
        let encoding = SmallestThree::new(bits);
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        DQuat::from_array(q).write_rotation(&encoding, &mut writer);
        assert_eq!(writer.finish(), u64::from(2 + 3 * bits));
        let back = DQuat::read_rotation(&encoding, &mut BitReader::new(&bytes)).unwrap();
        let back = back.to_array();
        assert!(is_unit(back, 1e-12), "{back:?}");
        let error = distance(q, back);
        assert!(
            error <= encoding.max_error(),
            "{q:?} in {bits} bits: {error} > {}",
            encoding.max_error()
        );
        worst = worst.max(error / encoding.max_error());

        // An f32 quaternion adds the rounding of its components.
        let single = Quat::from_array(q.map(|c| c as f32));
        let mut bytes = Vec::new();
        single.write_rotation(&encoding, &mut BitWriter::new(&mut bytes));
        let back = Quat::read_rotation(&encoding, &mut BitReader::new(&bytes)).unwrap();
        let back = back.to_array().map(f64::from);
        let sent = single.to_array().map(f64::from);
        // (Unless the f32 components are all zero or not finite: then the
        // identity arrives, see `degenerate_quaternions_arrive_as_the_identity`.)
        if sent.iter().any(|c| *c != 0.0) && sent.iter().all(|c| c.is_finite()) {
            let error = distance(sent, back);
            assert!(
                error <= encoding.max_error() + 2f64.powi(-22),
                "{sent:?} as f32 in {bits} bits: {error}"
            );
        }
    }
    worst
}

#[test]
fn quaternion_edge_cases_stay_within_the_bound() {
    let h = 0.5f64;
    let r = core::f64::consts::FRAC_1_SQRT_2;
    let tiny = 1e-9;
    let cases: &[[f64; 4]] = &[
        [0.0, 0.0, 0.0, 1.0],   // identity
        [0.0, 0.0, 0.0, -1.0],  // identity, negative w
        [-0.0, 0.0, -0.0, 1.0], // negative zeros
        [0.1, -0.2, 0.3, -0.9], // negative w, largest
        [0.9, 0.2, -0.3, -0.1], // x largest
        [h, h, h, h],           // all equal
        [-h, h, -h, h],
        [h, -h, h, -h],
        [h + tiny, h, h - tiny, h], // near-equal
        [h, h + tiny, h, h - tiny],
        [r, r, 0.0, 0.0], // two largest tied
        [0.0, -r, 0.0, r],
        [0.0, r, -r, 0.0],
        [1.0, 0.0, 0.0, 0.0], // half turns
        [0.0, 0.0, -1.0, 0.0],
        [3.0, 4.0, 0.0, 0.0],           // not unit: normalized first
        [1e-200, 0.0, 0.0, 1e-200],     // tiny but not zero
        [1e200, -1e200, 0.0, 3e200],    // huge but finite
        [300.0, -200.0, 100.0, -700.0], // not unit, negative w
    ];
    for &q in cases {
        check_rotation(q);
    }
}

#[test]
fn degenerate_quaternions_arrive_as_the_identity() {
    let encoding = SmallestThree::new(10);
    for q in [
        [0.0; 4],
        [f64::NAN, 0.0, 0.0, 1.0],
        [f64::INFINITY, 1.0, 0.0, 0.0],
    ] {
        let (largest, rest) = encoding.quantize(q);
        assert_eq!(encoding.dequantize(largest, rest), [0.0, 0.0, 0.0, 1.0]);
    }
}

fn unit_quaternion() -> impl Strategy<Value = [f64; 4]> {
    prop::array::uniform4(-1.0f64..1.0).prop_filter("not near zero", |q| {
        q.iter().map(|c| c * c).sum::<f64>() > 1e-6
    })
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn random_quaternions_stay_within_the_bound(q in unit_quaternion()) {
        check_rotation(q);
    }
}

/// The bound is not vacuous: over many rotations some come close to it.
#[test]
fn the_bound_is_reached_to_within_a_factor_of_four() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut worst: f64 = 0.0;
    for _ in 0..3000 {
        let q = unit_quaternion().new_tree(&mut runner).unwrap().current();
        worst = worst.max(check_rotation(q));
    }
    assert!(worst > 0.25, "largest error only {worst} of the bound");
}

#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Turret {
    #[replicate(quantize(bits = 10))]
    aim: Quat,
    #[replicate(quantize(bits = 20))]
    precise: DQuat,
}

#[test]
fn quaternion_fields_replicate_in_smallest_three() {
    let turret = Turret {
        aim: Quat::from_rotation_y(1.0),
        precise: DQuat::from_rotation_x(-2.5),
    };
    let (_, bits) = encode(&turret);
    assert_eq!(bits, (2 + 3 * 10) + (2 + 3 * 20));
    assert_eq!(Turret::MIN_BITS, bits);
    let back = round_trip(&turret);
    assert!(
        back.aim.angle_between(turret.aim)
            <= 4.0 * (SmallestThree::new(10).max_error() as f32 / 2.0).asin() + 1e-3
    );
    assert!(
        back.precise.angle_between(turret.precise)
            <= 4.0 * (SmallestThree::new(20).max_error() / 2.0).asin()
    );

    let mut world = FastArray::new();
    let id = world.push(turret);
    world.commit();
    // -q is the same rotation: no change; a tiny jitter neither.
    let aim = world.get(id).unwrap().aim;
    world.get_mut(id).unwrap().aim = -aim;
    assert!(world.commit().changed().is_empty());
    world.get_mut(id).unwrap().aim = (aim * Quat::from_rotation_x(1e-5)).normalize();
    assert!(world.commit().changed().is_empty());
    world.get_mut(id).unwrap().aim = aim * Quat::from_rotation_x(0.1);
    assert_eq!(world.commit().changed(), [(id, FieldMask::single(0))]);
}
