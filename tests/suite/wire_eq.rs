//! `wire_eq`: a mirror compared with its server as the wire sees them.
//! Quantized fields make `==` fail on every mirror; `wire_eq` compares
//! encodings (quantized steps, not values; skipped fields not at all;
//! arrays inside items by id), and a decoded quantized value re-encodes to
//! the step it was sent as, so a mirror is always `wire_eq` its server.

use fastarray::{
    BitReader, BitWriter, FastArray, Quantize, Quantizer, Quantizers, Replicate, Replicated,
    SendState,
};
use fastarray_testkit::{exchange, exchange_object};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Ship {
    #[replicate(quantize(min = -1000.0, max = 1000.0, bits = 16))]
    pos: [f32; 3],
    #[replicate(quantize(min = 0.0, max = 1.0, bits = 8))]
    throttle: f64,
    hp: u16,
    #[replicate(skip)]
    trail: Vec<f32>,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Fleet {
    name: String,
    #[replicate(array)]
    ships: FastArray<Ship>,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct World {
    #[replicate(quantize(min = 0.0, max = 24.0, bits = 10))]
    clock: f32,
    #[replicate(array)]
    fleets: FastArray<Fleet>,
}

/// One step of `Ship::pos`.
const POS_STEP: f32 = 2000.0 / 65535.0;

fn ship(n: u16) -> Ship {
    let f = f32::from(n);
    Ship {
        pos: [f * 1.2345, -f * 7.77, 0.001 * f],
        throttle: f64::from(n) / 7.0,
        hp: n,
        trail: vec![f; 3],
    }
}

fn fleet(name: &str, ships: u16) -> Fleet {
    let mut fleet = Fleet {
        name: name.into(),
        ships: FastArray::new(),
    };
    for n in 1..=ships {
        fleet.ships.push(ship(n));
    }
    fleet
}

fn synced_ships() -> (FastArray<Ship>, SendState, FastArray<Ship>) {
    let mut server = FastArray::new();
    for n in 1..=10 {
        server.push(ship(n));
    }
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    exchange(&mut server, &mut conn, &mut client, 0);
    (server, conn, client)
}

#[test]
fn a_quantized_mirror_is_not_eq_but_wire_eq() {
    let (server, _, client) = synced_ships();
    assert_ne!(client, server, "quantized and skipped fields differ");
    assert!(client.wire_eq(&server) && server.wire_eq(&client));
    for (id, item) in server.iter() {
        let mirrored = client.get(id).unwrap();
        assert!(mirrored.wire_eq(item), "{id}");
        assert!(mirrored.trail.is_empty(), "skipped: not sent, not compared");
    }
}

#[test]
fn one_quantization_step_is_a_difference_and_less_is_not() {
    let (mut server, mut conn, mut client) = synced_ships();
    let id = server.ids().nth(3).unwrap();

    // Less than half a step: the same step, nothing sent, still equal.
    server.get_mut(id).unwrap().pos[1] += POS_STEP / 4.0;
    assert!(server.commit().is_empty());
    assert!(client.wire_eq(&server));

    // One step: a difference, until the mirror applies it.
    server.get_mut(id).unwrap().pos[1] += POS_STEP;
    server.commit();
    assert!(!client.wire_eq(&server) && !server.wire_eq(&client));
    exchange(&mut server, &mut conn, &mut client, 1);
    assert!(client.wire_eq(&server));

    // Any replicated field; a skipped one is not compared.
    server.get_mut(id).unwrap().hp += 1;
    assert!(!client.wire_eq(&server));
    server.get_mut(id).unwrap().hp -= 1;
    server.get_mut(id).unwrap().trail.push(1.0);
    assert!(client.wire_eq(&server));

    // Ids, not positions or contents.
    let mut fewer = server.clone();
    fewer.remove(id);
    assert!(!fewer.wire_eq(&server) && !server.wire_eq(&fewer));
    let mut renamed = fewer.clone();
    renamed.push(server.get(id).unwrap().clone()); // same item, a new id
    assert_eq!(renamed.len(), server.len());
    assert!(!renamed.wire_eq(&server));
    let mut sorted = server.clone();
    sorted.sort_by(|a, b| b.hp.cmp(&a.hp));
    assert!(sorted.wire_eq(&server));
}

#[test]
fn arrays_inside_items_are_compared_by_id() {
    let mut server = FastArray::new();
    let red = server.push(fleet("red", 5));
    server.push(fleet("blue", 3));
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    exchange(&mut server, &mut conn, &mut client, 0);
    assert_ne!(client, server);
    assert!(client.wire_eq(&server));

    // One step of one ship inside a fleet.
    let ship_id = client.get(red).unwrap().ships.ids().nth(2).unwrap();
    server
        .get_mut(red)
        .unwrap()
        .ships
        .get_mut(ship_id)
        .unwrap()
        .pos[0] += POS_STEP;
    server.commit();
    assert!(!client.wire_eq(&server));
    exchange(&mut server, &mut conn, &mut client, 1);
    assert!(client.wire_eq(&server));

    // The same ships under other ids are other ships.
    let mut a = fleet("x", 2);
    let b = fleet("x", 2);
    assert!(a.wire_eq(&b));
    let first = a.ships.ids().next().unwrap();
    let moved = a.ships.remove(first).unwrap();
    a.ships.push(moved);
    assert_eq!(a.ships.len(), b.ships.len());
    assert!(!a.wire_eq(&b) && !b.wire_eq(&a));
}

#[test]
fn replicated_objects_compare_on_the_wire() {
    let mut server = Replicated::new(World {
        clock: 7.123,
        fleets: FastArray::new(),
    });
    server.get_mut().fleets.push(fleet("red", 2));
    let (mut conn, mut client) = (SendState::new(), Replicated::<World>::mirror());
    exchange_object(&mut server, &mut conn, &mut client, 0);
    assert_ne!(client.get(), server.get());
    assert!(client.wire_eq(&server));
    server.get_mut().clock += 24.0 / 1023.0;
    assert!(!client.wire_eq(&server));
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Edges {
    #[replicate(quantize(min = 0.1, max = 0.7, bits = 32))]
    q32: f32,
    #[replicate(quantize(min = -5.0, max = 5.0, bits = 6))]
    q64: f64,
    raw: f32,
    #[replicate(bits = 4)]
    small: u8,
}

const EDGES: Edges = Edges {
    q32: 0.3,
    q64: 1.0,
    raw: 1.5,
    small: 3,
};

/// What a mirror would hold of `value`: its encoding, decoded.
fn through_the_wire<T: Replicate>(value: &T) -> T {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.encode(&mut writer).unwrap();
    writer.finish();
    T::decode(&mut BitReader::new(&bytes)).unwrap()
}

#[test]
fn quantized_edge_cases_compare_as_the_steps_they_are_sent_as() {
    let with = |edit: fn(&mut Edges)| {
        let mut edges = EDGES.clone();
        edit(&mut edges);
        edges
    };
    // Range ends, which are not f32 values here (0.1, 0.7): the mirror's
    // value re-encodes to the same step.
    for edges in [
        with(|e| e.q32 = 0.1),
        with(|e| e.q32 = 0.7),
        with(|e| e.q32 = 0.05),
        with(|e| e.q32 = 0.75),
        with(|e| e.q64 = -5.0),
        with(|e| e.q64 = 5.0),
    ] {
        let mirrored = through_the_wire(&edges);
        assert!(mirrored.wire_eq(&edges), "{edges:?} → {mirrored:?}");
    }
    // Out of range: equal to the end it is clamped to (0.7 and 0.1 are
    // not `f32`s: 0.7 as an `f32` is a step below the end).
    assert!(with(|e| e.q32 = 1e9).wire_eq(&with(|e| e.q32 = 0.71)));
    assert!(!with(|e| e.q32 = 1e9).wire_eq(&with(|e| e.q32 = 0.7)));
    assert!(with(|e| e.q32 = f32::NEG_INFINITY).wire_eq(&with(|e| e.q32 = 0.09)));
    assert!(with(|e| e.q64 = 6.0).wire_eq(&with(|e| e.q64 = 5.0)));
    assert!(!with(|e| e.q64 = 6.0).wire_eq(&with(|e| e.q64 = -5.0)));
    // Negative zero is zero's step when quantized, but other bits raw.
    assert!(with(|e| e.q64 = -0.0).wire_eq(&with(|e| e.q64 = 0.0)));
    assert!(!with(|e| e.raw = -0.0).wire_eq(&with(|e| e.raw = 0.0)));
    assert!(
        with(|e| e.raw = -0.0) == with(|e| e.raw = 0.0),
        "as `==` has it"
    );
    // NaN: sent as `min` when quantized; raw, it is equal to itself (the
    // same bits), which `==` never says.
    let nan = with(|e| e.q32 = f32::NAN);
    assert!(nan.wire_eq(&with(|e| e.q32 = 0.09)));
    assert!(through_the_wire(&nan).wire_eq(&nan));
    let raw_nan = with(|e| e.raw = f32::NAN);
    assert!(raw_nan.wire_eq(&raw_nan.clone()) && raw_nan != raw_nan.clone());
    assert!(!raw_nan.wire_eq(&with(|e| e.raw = -f32::NAN)));
    // A value its encoding cannot carry is equal to nothing, itself included.
    let too_wide = with(|e| e.small = 200);
    assert!(!too_wide.wire_eq(&too_wide.clone()));
}

/// The mirror's value of a quantized float must quantize to the step it
/// was sent as, or a mirror would not be `wire_eq` its server. Rounding
/// the step's place to the float type can cross a step boundary: at range
/// ends that are not exact floats, and wherever steps are finer than the
/// floats around them. Random sender values, including the ends, out of
/// range values, zeros and NaN, over quantizations that provoke it.
#[test]
fn a_decoded_quantized_value_re_encodes_to_the_same_step() {
    let quantizers = [
        Quantizer::new(-1000.0, 1000.0, 16),
        Quantizer::new(0.1, 0.7, 32),
        Quantizer::new(0.1, 1000.1, 32),
        Quantizer::new(-3.3, 1e6 + 0.3, 32),
        Quantizer::new(1e6, 1e6 + 1.0, 24),
        Quantizer::new(-1e7, -1e7 + 10.0, 30),
        Quantizer::new(1e12, 1e12 + 1.0, 32),
        Quantizer::new(-1.0, 1.0, 1),
        Quantizer::new(0.0, 1e-30, 32),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for q in quantizers {
        let width = 1.1 * (q.dequantize((1 << q.bits()) - 1) - q.dequantize(0));
        let low = q.dequantize(0) - width / 20.0;
        let mut values: Vec<f64> = (0..20_000)
            .map(|_| low + rng.random::<f64>() * width)
            .collect();
        values.extend([
            q.dequantize(0),
            q.dequantize((1 << q.bits()) - 1),
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
        ]);
        for v in values {
            let sent = q.quantize(v);
            let as_f64: f64 = decode_quantized(&q, &v);
            assert_eq!(q.quantize(as_f64), sent, "{q:?}: f64 {v} (step {sent})");
            let v32 = v as f32;
            let sent = q.quantize(f64::from(v32));
            let as_f32: f32 = decode_quantized(&q, &v32);
            assert_eq!(
                q.quantize(f64::from(as_f32)),
                sent,
                "{q:?}: f32 {v32} (step {sent}) came back as {as_f32}"
            );
        }
    }
}

/// `value` quantized with `q`, written and read back.
fn decode_quantized<F: Quantize>(q: &Quantizer, value: &F) -> F {
    let axes = Quantizers::new(core::slice::from_ref(q));
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    value.write_quantized(axes, &mut writer);
    writer.finish();
    F::read_quantized(axes, &mut BitReader::new(&bytes)).unwrap()
}

/// The same over random quantizations, from ranges near zero to ranges far
/// narrower than the floats around them (where most steps are reached by
/// no float at all): every step a sender's value reaches comes back as a
/// value of that step, as an `f64` and as an `f32`.
#[test]
fn random_quantizations_round_trip_every_reachable_step() {
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    for _ in 0..3_000 {
        let scale = 10f64.powi(rng.random_range(-5..15));
        let min = (rng.random::<f64>() - 0.5) * scale * 2.0;
        let width = 10f64.powi(rng.random_range(-8..6)) * (0.01 + rng.random::<f64>());
        let max = min + width;
        if max <= min {
            // The width vanished in rounding.
            continue;
        }
        let q = Quantizer::new(min, max, rng.random_range(1..=32));
        for _ in 0..20 {
            let v = min - width * 0.05 + rng.random::<f64>() * width * 1.1;
            let sent = q.quantize(v);
            assert_eq!(q.quantize(decode_quantized(&q, &v)), sent, "{q:?}: f64 {v}");
            let v32 = v as f32;
            let sent = q.quantize(f64::from(v32));
            let back: f32 = decode_quantized(&q, &v32);
            assert_eq!(q.quantize(f64::from(back)), sent, "{q:?}: f32 {v32}");
        }
    }
}

/// A decoded rotation (`quantize(bits = N)` on a quaternion) re-encodes to
/// the bits it came from, for `f64` and for `f32` receivers, so a mirror's
/// quaternion field is `wire_eq` its server's. The nearest code does not
/// always have that property (near ties the rebuilt largest component can
/// come out below a small one, the rescaling moves the small ones, and an
/// `f32` cannot hold steps finer than its own spacing: about 1 in 650
/// random rotations at 10 bits, 1 in 7 at 4, nearly all `f32` ones at 28
/// or more), so the encoder settles on a code that decodes to itself
/// (for `f32` up to 30 bits, past which an `f32` holds no such code).
#[test]
fn a_decoded_rotation_re_encodes_to_the_same_bits() {
    use fastarray::SmallestThree;
    let as_f32 = |q: [f64; 4]| q.map(|c| f64::from(c as f32));
    let mut rng = ChaCha8Rng::seed_from_u64(56);
    for bits in [4, 5, 10, 16, 24, 28, 30, 31, 32] {
        let q = SmallestThree::new(bits);
        for n in 0..20_000 {
            let mut v: [f64; 4] = core::array::from_fn(|_| rng.random::<f64>() * 2.0 - 1.0);
            if n % 4 == 0 {
                // Near a tie between the two largest components.
                v[1] = v[0] * (1.0 + (rng.random::<f64>() - 0.5) * 1e-3);
            }
            let sent = q.quantize(v);
            let back = q.dequantize(sent.0, sent.1);
            assert_eq!(q.quantize(back), sent, "{bits} bits, f64: {v:?}");
            if bits > 30 {
                // Past what an `f32` quaternion holds: not guaranteed
                // (documented on `QuantizeRotation`); use `DQuat`.
                continue;
            }
            let sent32 = q.quantize_as(v, as_f32);
            let back32 = as_f32(q.dequantize(sent32.0, sent32.1));
            assert_eq!(
                q.quantize_as(back32, as_f32),
                sent32,
                "{bits} bits, f32: {v:?}"
            );
        }
    }
}
