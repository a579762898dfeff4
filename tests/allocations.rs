//! What decoding hostile input may allocate: every input of at most 32
//! bytes allocates less than 64 KiB while it is decoded, and what a message
//! leaves behind in a mirror (tombstones) grows linearly with its size, by
//! the constant `WIRE.md` states. Mutating every item through
//! `FastArray::iter_mut` allocates nothing per item.
//!
//! A counting global allocator (this test binary only) adds up the bytes
//! each thread asks for. The search for bad inputs starts from genuine
//! messages and crafted worst cases, and mutates them at random, keeping
//! the worst; `FASTARRAY_ALLOC_ROUNDS` makes it longer.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use fastarray::{
    BitCodec, BitWriter, FastArray, MirrorLimits, Replicate, Replicated, ReplicationId, SendState,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The system allocator, counting per thread the bytes allocated.
struct Counting;

thread_local! {
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
    static FREED: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to `System`; the count is a
// `const`-initialised thread local, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|n| n.set(n.get() + layout.size() as u64));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = FREED.try_with(|n| n.set(n.get() + layout.size() as u64));
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATED.try_with(|n| n.set(n.get() + new_size as u64));
        let _ = FREED.try_with(|n| n.set(n.get() + layout.size() as u64));
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes allocated by this thread while `f` runs (freed or not).
fn allocated_by(f: impl FnOnce()) -> u64 {
    let before = ALLOCATED.with(Cell::get);
    f();
    ALLOCATED.with(Cell::get) - before
}

/// Bytes allocated and not freed by this thread while `f` runs.
fn kept_by(f: impl FnOnce()) -> u64 {
    let before = ALLOCATED.with(Cell::get) - FREED.with(Cell::get);
    f();
    (ALLOCATED.with(Cell::get) - FREED.with(Cell::get)).saturating_sub(before)
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    position: [f32; 3],
    hp: u8,
    name: String,
    tags: Vec<u16>,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Small {
    v: u8,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Many {
    tag: u8,
    #[replicate(array)]
    a: FastArray<Small>,
    #[replicate(array)]
    b: FastArray<Small>,
    #[replicate(array)]
    c: FastArray<Small>,
    #[replicate(array)]
    d: FastArray<Small>,
    #[replicate(array)]
    e: FastArray<Small>,
    #[replicate(array)]
    f: FastArray<Small>,
    #[replicate(array)]
    g: FastArray<Small>,
    #[replicate(array)]
    h: FastArray<Agent>,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Empties {
    nothing: Vec<Vec<()>>,
    units: Vec<((), ())>,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Chain {
    next: Option<Box<Chain>>,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
enum Shape {
    Dot,
    Line { len: u16 },
    Poly { points: Vec<(i16, i16)> },
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct World {
    round: u8,
    #[replicate(array)]
    agents: FastArray<Agent>,
}

fn many() -> Many {
    let mut m = Many {
        tag: 1,
        a: FastArray::new(),
        b: FastArray::new(),
        c: FastArray::new(),
        d: FastArray::new(),
        e: FastArray::new(),
        f: FastArray::new(),
        g: FastArray::new(),
        h: FastArray::new(),
    };
    m.a.push(Small { v: 1 });
    m.h.push(agent(3));
    m
}

/// An array of `len` small items, committed, and their ids.
fn small_array(len: u64) -> (FastArray<Small>, Vec<ReplicationId>) {
    let mut array = FastArray::new();
    let ids = (0..len).map(|v| array.push(Small { v: v as u8 })).collect();
    array.commit();
    (array, ids)
}

fn agent(n: u8) -> Agent {
    Agent {
        position: [f32::from(n); 3],
        hp: n,
        name: "ann".into(),
        tags: vec![1, 2],
    }
}

/// Applies one input to a fresh copy of a mirror.
type Apply = Box<dyn Fn(&[u8])>;

/// A type's mirror state and seeds: genuine messages, then the function
/// that applies an input to a fresh copy of the mirror.
struct Target {
    name: &'static str,
    seeds: Vec<Vec<u8>>,
    apply: Apply,
}

/// A mirror of `T` that applied a few genuine messages (so short frames
/// resolve), the messages, and the target applying inputs to clones of it.
fn array_target<T: Replicate + Clone + 'static>(
    name: &'static str,
    make: impl Fn(u32) -> T,
    edit: impl Fn(&mut FastArray<T>, u32),
) -> Target {
    let mut server = FastArray::new();
    let mut conn = SendState::new();
    let mut client = FastArray::<T>::new();
    let mut seeds = Vec::new();
    for n in 0..6 {
        server.push(make(n));
        if n > 0 {
            edit(&mut server, n);
        }
        server.commit();
        let mut bytes = Vec::new();
        server.write_delta(&mut conn, n, &mut bytes).unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(n);
        seeds.push(bytes);
    }
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    seeds.push(snapshot);
    Target {
        name,
        seeds,
        apply: Box::new(move |input| {
            let mut mirror = client.clone();
            let _ = mirror.apply_delta(input, &mut ());
            let _ = FastArray::<T>::from_snapshot(input);
        }),
    }
}

fn targets() -> Vec<Target> {
    let mut targets = vec![
        array_target(
            "Agent",
            |n| agent(n as u8),
            |a, n| {
                let id = ReplicationId::from_raw(u64::from(n - 1));
                a.get_mut(id).unwrap().hp = n as u8;
            },
        ),
        array_target(
            "Many",
            |_| many(),
            |a, n| {
                let id = ReplicationId::from_raw(u64::from(n - 1));
                a.get_mut(id).unwrap().b.push(Small { v: n as u8 });
            },
        ),
        array_target(
            "Empties",
            |n| Empties {
                nothing: vec![Vec::new(); n as usize],
                units: Vec::new(),
            },
            |_, _| {},
        ),
        array_target(
            "Chain",
            |_| Chain {
                next: Some(Box::new(Chain { next: None })),
            },
            |_, _| {},
        ),
        array_target(
            "Shape",
            |n| Shape::Poly {
                points: vec![(n as i16, 1); 3],
            },
            |a, n| {
                let id = ReplicationId::from_raw(u64::from(n - 1));
                *a.get_mut(id).unwrap() = Shape::Line { len: 7 };
            },
        ),
    ];
    // A replicated object.
    let mut server = Replicated::new(World::default());
    let mut conn = SendState::new();
    let mut client = Replicated::<World>::mirror();
    let mut seeds = Vec::new();
    for n in 0..6u32 {
        server.get_mut().agents.push(agent(n as u8));
        server.get_mut().round = n as u8;
        server.commit();
        let mut bytes = Vec::new();
        server.write_delta(&mut conn, n, &mut bytes).unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(n);
        seeds.push(bytes);
    }
    targets.push(Target {
        name: "Replicated<World>",
        seeds,
        apply: Box::new(move |input| {
            let mut mirror = Replicated::<World>::mirror();
            let _ = mirror.apply_delta(input, &mut ());
            // A mirror with history, rebuilt the way a client holds it.
            let _ = client.get();
        }),
    });
    targets
}

/// Crafted inputs: as many of the cheapest entries a short message can
/// hold, for each kind of entry.
fn crafted() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // Deltas of up to 32 bytes: long frame 7, then removals and items.
    for removals in [0u64, 1, 100, 200] {
        for items in [0u64, 1, 10, 21, 60] {
            for flags in [0b00u64, 0b01, 0b10] {
                let mut bytes = Vec::new();
                let mut w = BitWriter::new(&mut bytes);
                w.write_bits(0b01, 2);
                w.write_bool(true);
                w.write_varint(7);
                write_list(&mut w, removals);
                write_list(&mut w, items);
                for _ in 0..items {
                    w.write_bits(0, 1); // gap 0 (Elias-delta)
                    w.write_bits(flags, 2);
                    w.write_bits(0, 10); // empty inner deltas, zero fields
                }
                w.finish();
                bytes.truncate(32);
                out.push(bytes);
            }
        }
    }
    // Snapshots claiming many small items.
    for count in [10u64, 100, 255] {
        let mut bytes = Vec::new();
        let mut w = BitWriter::new(&mut bytes);
        w.write_bits(0b011, 3); // snapshot
        w.write_bits(0, 64);
        w.write_varint(1);
        w.write_varint(count);
        w.finish();
        bytes.resize(32, 0);
        out.push(bytes);
    }
    out
}

/// An id list of `count` consecutive ids from 0, Elias-delta gaps.
fn write_list(w: &mut BitWriter<'_>, count: u64) {
    match count {
        0 => w.write_bool(false),
        1 => w.write_bits(0b01, 2),
        _ => {
            w.write_bits(0b11, 2);
            w.write_gamma(count - 2);
        }
    }
    if count > 0 {
        w.write_bool(false);
        for _ in 0..count {
            w.write_varint(0);
        }
    }
}

/// One random change to `input`, kept at most 32 bytes long.
fn mutate(rng: &mut ChaCha8Rng, input: &mut Vec<u8>) {
    match rng.random_range(0..5) {
        0 if !input.is_empty() => {
            let i = rng.random_range(0..input.len());
            input[i] ^= 1 << rng.random_range(0..8);
        }
        1 if !input.is_empty() => {
            let i = rng.random_range(0..input.len());
            input[i] = rng.random();
        }
        2 if input.len() < 32 => input.push(rng.random()),
        3 if !input.is_empty() => {
            let keep = rng.random_range(0..input.len());
            input.truncate(keep);
        }
        _ => {
            let i = rng.random_range(0..=input.len());
            let fill = if rng.random() { 0x00 } else { 0xff };
            input.insert(i.min(input.len()), fill);
            input.truncate(32);
        }
    }
}

/// Issue 10, finding 8: no input of at most 32 bytes makes a decoder
/// allocate 64 KiB (a 31-byte delta of 21 entries for an item type with
/// 8 array fields allocated about 140 KB; 32 bytes of nested zero-bit
/// vectors about 130 KB).
#[test]
fn short_inputs_allocate_little() {
    const LIMIT: u64 = 64 * 1024;
    let rounds: u32 = std::env::var("FASTARRAY_ALLOC_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3_000);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let crafted = crafted();
    let mut worst_overall = 0;
    for target in targets() {
        let mut pool: Vec<Vec<u8>> = target
            .seeds
            .iter()
            .filter(|s| s.len() <= 32)
            .cloned()
            .chain(crafted.iter().cloned())
            .collect();
        let mut worst = (0, Vec::new());
        let measure = |input: &Vec<u8>, worst: &mut (u64, Vec<u8>)| {
            let bytes = allocated_by(|| (target.apply)(input));
            if bytes > worst.0 {
                *worst = (bytes, input.clone());
            }
            bytes
        };
        for input in &pool {
            measure(input, &mut worst);
        }
        for _ in 0..rounds {
            let mut input = pool[rng.random_range(0..pool.len())].clone();
            for _ in 0..rng.random_range(1..4) {
                mutate(&mut rng, &mut input);
            }
            let before = worst.0;
            measure(&input, &mut worst);
            if worst.0 > before {
                pool.push(input);
            }
        }
        println!(
            "{}: worst {} bytes allocated, for {:02x?}",
            target.name, worst.0, worst.1
        );
        assert!(
            worst.0 < LIMIT,
            "{}: {} bytes allocated for {:02x?}",
            target.name,
            worst.0,
            worst.1
        );
        worst_overall = worst_overall.max(worst.0);
    }
    println!("worst of all: {worst_overall} bytes");
}

/// Issue 10, finding 8 (b): a vector of elements that encode to no bits
/// cannot be sent, so a decoder refuses one that claims elements.
#[test]
fn vectors_of_zero_bit_elements_are_refused() {
    assert!(
        vec![(); 3]
            .encode(&mut BitWriter::new(&mut Vec::new()))
            .is_err()
    );
    // 200 units, and enough bits after the length that counting each as
    // one bit would let them through.
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_varint(200);
    w.write_bits(0, 64);
    w.write_bits(0, 64);
    w.write_bits(0, 64);
    w.write_bits(0, 64);
    w.finish();
    assert!(matches!(
        Vec::<()>::decode(&mut fastarray::BitReader::new(&bytes)),
        Err(fastarray::DecodeError::LengthTooLarge { .. })
    ));
    // An empty one is fine.
    let mut bytes = Vec::new();
    Vec::<()>::new()
        .encode(&mut BitWriter::new(&mut bytes))
        .unwrap();
    assert_eq!(
        Vec::<()>::decode(&mut fastarray::BitReader::new(&bytes)),
        Ok(vec![])
    );
}

/// Issue 10, finding 8 (c): removals of ids a mirror never held leave
/// tombstones (a removal may overtake its add), but what they cost stays a
/// small multiple of the message: 64 KiB of them used to leave 31 MB.
#[test]
fn tombstones_grow_linearly_with_the_message() {
    let mut server = FastArray::new();
    server.push(Small { v: 1 });
    server.commit();
    let mut conn = SendState::new();
    // Removals past the default limit (one message of 64 KiB removes up to
    // 524 288 ids): what they cost unlimited.
    let mut client = FastArray::<Small>::mirror_with_limits(MirrorLimits {
        removals: usize::MAX,
        ..MirrorLimits::DEFAULT
    });
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 0, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();

    // Consecutive ids cost one bit each. Each 64-id block costs the most
    // when every id opens one: ids 64 apart (exponential-Golomb of order
    // 6, 7 bits each), or pairs straddling a block boundary (63 and 64,
    // 127 and 128, ...: Elias-delta gaps of 62 and 0, 12 bits a pair).
    type Case = (&'static str, fn(u64) -> u64, Option<u8>);
    let cases: [Case; 4] = [
        ("consecutive", |i| i, Some(0)),
        ("2 apart", |i| 2 * i, Some(1)),
        ("64 apart", |i| 64 * i, Some(6)),
        ("straddling blocks", |i| 64 * (i / 2 + 1) - 1 + i % 2, None),
    ];
    for ((name, id_of, order), exits) in cases
        .into_iter()
        .flat_map(|case| [(case, false), (case, true)])
    {
        // An exit costs one more bit (its flag) and is kept per id, with
        // its frame: an id comes back after its exit.
        let bits_each = match order {
            Some(order) => u64::from(order) + 1,
            None => 6,
        } + u64::from(exits);
        let ids = 64 * 1024 * 8 / bits_each;
        let mut bytes = Vec::new();
        let mut w = BitWriter::new(&mut bytes);
        if exits {
            w.write_bits(0b0_0111, 5); // a delta with scope exits
        } else {
            w.write_bits(0b01, 2); // a delta
        }
        w.write_bool(true);
        w.write_varint(2);
        w.write_bits(0b11, 2);
        w.write_gamma(ids - 2);
        match order {
            Some(order) => {
                w.write_bool(true);
                w.write_bits(u64::from(order), 4);
            }
            None => w.write_bool(false),
        }
        let mut next = 0;
        for i in 0..ids {
            let gap = id_of(i) - next;
            next = id_of(i) + 1;
            match order {
                Some(order) => {
                    w.write_gamma(gap >> order);
                    w.write_bits(gap, u32::from(order));
                }
                None => w.write_varint(gap),
            }
        }
        if exits {
            (0..ids).for_each(|_| w.write_bool(true));
        }
        w.write_bool(false); // no items
        w.finish();
        let mut mirror = client.clone();
        let mut allocated = 0;
        let kept = kept_by(|| {
            allocated = allocated_by(|| {
                mirror.apply_delta(&bytes, &mut ()).unwrap();
            });
        });
        let (per_byte, kept_per_byte) = (
            allocated as f64 / bytes.len() as f64,
            kept as f64 / bytes.len() as f64,
        );
        let kind = if exits { "exits" } else { "removals" };
        println!(
            "{ids} {kind}, {name}: {} bytes of message, {allocated} bytes allocated \
             ({per_byte:.1} a byte), {kept} kept ({kept_per_byte:.1} a byte)",
            bytes.len()
        );
        // An exit is kept per id (16 bytes and the map's overhead) and
        // costs as little as 2 bits.
        let (kept_bound, allocated_bound) = if exits { (160.0, 256.0) } else { (64.0, 192.0) };
        assert!(
            kept_per_byte < kept_bound,
            "{name}, {kind}: {kept_per_byte:.1} bytes kept a byte"
        );
        assert!(
            per_byte < allocated_bound,
            "{name}, {kind}: {per_byte:.1} bytes allocated a byte"
        );
    }
}

/// A dense mutation through `iter_mut` allocates nothing once the array
/// has been through one such frame: the guards record into cells of a list
/// the array keeps, and a plain item's pre-image is a copy.
#[test]
fn iter_mut_allocates_nothing_per_item() {
    let mut array = FastArray::new();
    for v in 0..1_000u16 {
        array.push(Small { v: v as u8 });
    }
    array.commit();
    let mutate = |array: &mut FastArray<Small>| {
        for (_, mut item) in array.iter_mut() {
            item.v = item.v.wrapping_add(1);
        }
    };
    // The first frame grows the array's list of pre-images to its size.
    mutate(&mut array);
    assert_eq!(array.commit().changed().len(), 1_000);
    let allocated = allocated_by(|| mutate(&mut array));
    assert_eq!(allocated, 0, "bytes allocated by a dense iter_mut");
    assert_eq!(array.commit().changed().len(), 1_000);
}

/// Issue 15: a pre-image reuses the buffer an earlier frame's pre-image
/// left, so a dense mutation of items that own heap data (a `String`, a
/// `Vec`) allocates nothing per item either, through `iter_mut` or
/// `get_mut`, once the array has been through one such frame.
#[test]
fn pre_images_of_heap_items_reuse_their_buffers() {
    let mut array = FastArray::new();
    let ids: Vec<_> = (0..1_000u16).map(|n| array.push(agent(n as u8))).collect();
    array.commit();
    let through_iter = |array: &mut FastArray<Agent>| {
        for (_, mut item) in array.iter_mut() {
            item.hp = item.hp.wrapping_add(1);
        }
    };
    let through_ids = |array: &mut FastArray<Agent>| {
        for &id in &ids {
            let mut item = array.get_mut(id).unwrap();
            item.position[0] += 1.0;
        }
    };
    through_iter(&mut array);
    assert_eq!(array.commit().changed().len(), 1_000);
    let allocated = allocated_by(|| through_iter(&mut array));
    assert_eq!(allocated, 0, "bytes allocated by a dense iter_mut");
    assert_eq!(array.commit().changed().len(), 1_000);
    let allocated = allocated_by(|| through_ids(&mut array));
    assert_eq!(allocated, 0, "bytes allocated by a dense get_mut");
    assert_eq!(array.commit().changed().len(), 1_000);
    // A pre-image is the item's value before the frame, whatever the
    // buffer held: a renamed item is a change of its name alone.
    array.get_mut(ids[7]).unwrap().name.push('!');
    assert_eq!(
        array.commit().changed(),
        [(ids[7], fastarray::FieldMask::single(2))]
    );
}

/// Issue 13: what a scoped connection keeps per item in its scope (its
/// view, its scope entry, the array's watch, its working lists), in a
/// steady state where a tenth of the items change each frame: the bytes
/// its state and its watches free when it goes. The same whatever the
/// array's size.
#[test]
fn a_scoped_connection_keeps_little_per_item_in_scope() {
    let per_item = |total: u64| {
        let (mut server, ids) = small_array(total);
        let in_scope = 1_000;
        let mut conns: Vec<SendState> = (0..16u64)
            .map(|c| {
                let mut conn = SendState::new();
                let mut scope = server.scope(&mut conn).unwrap();
                for k in 0..in_scope {
                    scope.include(ids[((c * 7_919 + k * 97) % total) as usize]);
                }
                conn
            })
            .collect();
        for tick in 1..40u32 {
            for &id in ids.iter().skip(tick as usize % 10).step_by(10) {
                server.get_mut(id).unwrap().v = tick as u8;
            }
            server.commit();
            for conn in &mut conns {
                let mut bytes = Vec::new();
                server.write_delta(conn, tick, &mut bytes).unwrap();
                conn.on_ack(tick);
            }
        }
        let before = ALLOCATED.with(Cell::get) - FREED.with(Cell::get);
        drop(conns);
        server.commit(); // frees the watches of connections that are gone
        let after = ALLOCATED.with(Cell::get) - FREED.with(Cell::get);
        assert_eq!(server.scoped_connections(), 0);
        (before - after) as f64 / (16 * in_scope) as f64
    };
    let (small, large) = (per_item(100_000), per_item(1_000_000));
    println!("per item in scope: {small:.1} bytes (100 000 items), {large:.1} (1 000 000)");
    // 199 measured: the view's 48-byte entry (about 100 bytes with the
    // map's buckets), the scope's 16-byte entry, the watch, and the
    // working lists' share. Issue 13 asks for 100: not met yet.
    assert!(small <= 220.0 && large <= 220.0, "{small:.1}, {large:.1}");
    assert!((large / small - 1.0).abs() <= 0.1, "{small:.1}, {large:.1}");
}

/// Issue 15: what a server holds per item once its connection is caught
/// up and takes the frame's shared message every tick, against the same
/// array that never wrote a delta: the working memory of the first full
/// sync, written per connection (every item's encoding, the plan's lists),
/// goes once the shared message takes over.
#[test]
fn a_full_sync_leaves_nothing_per_item_once_messages_are_shared() {
    let items = 10_000u64;
    let held_after = |write: bool| {
        let (mut server, ids) = small_array(items);
        let mut conn = SendState::new();
        for tick in 1..12u32 {
            if tick > 1 {
                for &id in ids.iter().step_by(1_000) {
                    server.get_mut(id).unwrap().v = tick as u8;
                }
                server.commit();
            }
            if write {
                let mut bytes = Vec::new();
                let stats = server.write_delta(&mut conn, tick, &mut bytes).unwrap();
                assert_eq!(stats.shared, tick > 1, "tick {tick}");
                conn.on_ack(tick);
            }
        }
        let before = ALLOCATED.with(Cell::get) - FREED.with(Cell::get);
        drop(server);
        let after = ALLOCATED.with(Cell::get) - FREED.with(Cell::get);
        (before - after) as f64 / items as f64
    };
    let (wrote, never) = (held_after(true), held_after(false));
    println!("per item: {wrote:.1} bytes after shared writes, {never:.1} never written");
    assert!(
        wrote - never <= 2.0,
        "{wrote:.1} vs {never:.1} bytes per item"
    );
}

/// Issue 32: a dense frame's shared message is written with nothing
/// allocated per item once its connection has acknowledged the last one:
/// the list of changed fields that every connection's record shares is
/// the last frame's, reused, and no list of the entries is gathered.
#[test]
fn a_dense_shared_write_reuses_its_lists() {
    let items = 1_000u64;
    let (mut server, ids) = small_array(items);
    let mut conn = SendState::new();
    let mut bytes = Vec::new();
    let mut tick = |tick: u32, server: &mut FastArray<Small>| {
        for &id in &ids {
            server.get_mut(id).unwrap().v = tick as u8;
        }
        server.commit();
        bytes.clear();
        let mut stats = None;
        let allocated =
            allocated_by(|| stats = Some(server.write_delta(&mut conn, tick, &mut bytes)));
        let stats = stats.unwrap().unwrap();
        conn.on_ack(tick);
        (stats, allocated)
    };
    // The first write is a full sync of the connection's own; the next
    // ones are shared, and the first of those makes the lists.
    for n in 1..4 {
        tick(n, &mut server);
    }
    let (stats, allocated) = tick(4, &mut server);
    assert!(stats.shared);
    assert_eq!(stats.changed, items as usize);
    // The list of changed fields alone would be 16 bytes per item.
    assert!(
        allocated < items,
        "{allocated} bytes allocated by a shared write of {items} changes"
    );
}

/// An item of one bit: a whole entry of it is three bits on the wire.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Bit {
    #[replicate(bits = 1)]
    on: u8,
}

/// No limits at all: what a mirror did before it had any.
const UNLIMITED: MirrorLimits = MirrorLimits {
    items: usize::MAX,
    message_bytes: usize::MAX,
    inner_items: usize::MAX,
    removals: usize::MAX,
};

/// Issue 17: a genuine message of tiny items is cheap on the wire and dear
/// in memory. What an item costs a mirror (the figures `WIRE.md`, "Limits",
/// states; `cargo test --release --test allocations tiny -- --nocapture`
/// prints them), and that a mirror's item limit bounds what a longer
/// message allocates before it is refused.
#[test]
fn tiny_items_cost_what_wire_md_says_and_the_limit_bounds_them() {
    // More than the default limit, 262 144.
    const ITEMS: usize = 300_000;
    let mut server = FastArray::new();
    for n in 0..ITEMS {
        server.push(Bit { on: n as u8 & 1 });
    }
    server.commit();
    let mut delta = Vec::new();
    server
        .write_delta(&mut SendState::new(), 1, &mut delta)
        .unwrap();
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();

    let measure = |what: &str, bytes: &[u8], apply: &mut dyn FnMut() -> bool| {
        let mut applied = false;
        let mut allocated = 0;
        let kept = kept_by(|| allocated = allocated_by(|| applied = apply()));
        println!(
            "{what}: {} bytes of message, {allocated} allocated ({:.0} a byte, {:.1} an item), \
             {kept} kept ({:.1} an item), {}",
            bytes.len(),
            allocated as f64 / bytes.len() as f64,
            allocated as f64 / ITEMS as f64,
            kept as f64 / ITEMS as f64,
            if applied { "applied" } else { "refused" },
        );
        (allocated, kept, applied)
    };

    // Unlimited: the cost of an item.
    let mut mirrors = Vec::new();
    let (_, delta_kept, applied) = measure("delta, unlimited", &delta, &mut || {
        let mut mirror = FastArray::<Bit>::mirror_with_limits(UNLIMITED);
        let ok = mirror.apply_delta(&delta, &mut ()).is_ok();
        mirrors.push(mirror);
        ok
    });
    assert!(applied);
    let (_, snapshot_kept, applied) = measure("snapshot, unlimited", &snapshot, &mut || {
        let mirror = FastArray::<Bit>::from_snapshot_with_limits(&snapshot, UNLIMITED);
        let ok = mirror.is_ok();
        mirrors.extend(mirror);
        ok
    });
    assert!(applied);
    // `WIRE.md` says a tiny item costs a mirror 65 to 90 bytes kept.
    for kept in [delta_kept, snapshot_kept] {
        assert!(kept / (ITEMS as u64) < 128, "{kept} bytes kept");
    }

    // The default limit: refused at the item past it, having allocated
    // for no more than that many (the decoded entries, about 84 bytes an
    // item, where applying them all allocates about 240 an item).
    let limits = MirrorLimits::DEFAULT;
    let (allocated, kept, applied) = measure("delta, default limits", &delta, &mut || {
        let mut mirror = FastArray::<Bit>::mirror_with_limits(limits);
        mirror.apply_delta(&delta, &mut ()).is_ok()
    });
    assert!(!applied && kept == 0);
    assert!(
        allocated < 128 * limits.items as u64,
        "{allocated} bytes allocated"
    );
    let (allocated, _, applied) = measure("snapshot, default limits", &snapshot, &mut || {
        FastArray::<Bit>::from_snapshot_with_limits(&snapshot, limits).is_ok()
    });
    assert!(!applied);
    assert!(allocated < 1_024, "{allocated} bytes allocated");
    drop(mirrors);
}

/// A frame's shared delta may carry changes of items whose adds are still
/// in flight: they wait on the mirror for the adds. What they keep is a
/// map entry per item and the bytes of the message's changed fields, the
/// most a genuine message can make it: 100 000 one-bit items added and
/// changed at once, a change of 3 bits each (`WIRE.md`, "What a message
/// can cost a receiver").
#[test]
fn changes_waiting_for_their_adds_cost_what_wire_md_says() {
    const ITEMS: u32 = 100_000;
    let mut server = FastArray::new();
    server.push(Bit { on: 0 });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Bit>::mirror());
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 0, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();
    assert!(conn.on_ack(0));
    let added: Vec<ReplicationId> = (0..ITEMS).map(|_| server.push(Bit { on: 0 })).collect();
    server.commit();
    let mut adds = Vec::new();
    server.write_delta(&mut conn, 1, &mut adds).unwrap();
    for &id in &added {
        server.get_mut(id).unwrap().on = 1;
    }
    server.commit();
    let mut early = Vec::new();
    let stats = server.write_delta(&mut conn, 2, &mut early).unwrap();
    assert!(stats.shared && stats.changed == ITEMS as usize);

    let mut report = None;
    let mut allocated = 0;
    let kept = kept_by(|| {
        allocated = allocated_by(|| report = Some(client.apply_delta(&early, &mut ()).unwrap()));
    });
    assert_eq!(report.unwrap().early, ITEMS as usize);
    let (per_byte, kept_per_byte) = (
        allocated as f64 / early.len() as f64,
        kept as f64 / early.len() as f64,
    );
    println!(
        "{ITEMS} changes waiting: {} bytes of message, {allocated} allocated ({per_byte:.0} a \
         byte), {kept} kept ({kept_per_byte:.0} a byte, {:.1} a change)",
        early.len(),
        kept as f64 / f64::from(ITEMS),
    );
    assert!(
        kept_per_byte < 256.0,
        "{kept_per_byte:.1} bytes kept a byte"
    );
    assert!(per_byte < 512.0, "{per_byte:.1} bytes allocated a byte");
    // The adds arrive: the changes apply, and nothing waits any more.
    client.apply_delta(&adds, &mut ()).unwrap();
    assert_eq!(client, server);
}

/// One 64 KiB message of consecutive removals (one bit each): unlimited,
/// it makes the mirror allocate about 64 bytes per byte while decoding
/// (the ids, 8 bytes each); with the default limit on removals a message
/// is refused before any is kept, and one at the limit allocates in
/// proportion to it.
#[test]
fn removals_past_the_limit_allocate_nothing_per_id() {
    let ids = 64 * 1024 * 8u64;
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_bits(0b01, 2); // a delta
    w.write_bool(true);
    w.write_varint(2);
    w.write_bits(0b11, 2);
    w.write_gamma(ids - 2);
    w.write_bool(false); // Elias-delta gaps
    (0..ids).for_each(|_| w.write_varint(0));
    w.write_bool(false); // no items
    w.finish();
    for (what, limits) in [
        ("unlimited", UNLIMITED),
        ("default limits", MirrorLimits::DEFAULT),
    ] {
        let mut mirror = FastArray::<Small>::mirror_with_limits(limits);
        let mut result = Ok(());
        let allocated = allocated_by(|| result = mirror.apply_delta(&bytes, &mut ()).map(|_| ()));
        println!(
            "{ids} removals, {what}: {} bytes of message, {allocated} allocated \
             ({:.1} a byte), {result:?}",
            bytes.len(),
            allocated as f64 / bytes.len() as f64,
        );
        if limits == UNLIMITED {
            assert!(result.is_ok());
        } else {
            assert!(result.is_err());
            assert!(allocated < 1_024, "{allocated} bytes allocated");
        }
    }
}

/// Issue 32: a new connection's scope starts empty at a cost that does not
/// grow with the array: its first `scope()` on a world of 100 000 items,
/// long past the history ring, once queued every item as an add (to drop
/// them all again: 14.9 MB allocated). Now it allocates what a scope is,
/// whatever the world holds; a thousand items brought into it cost about
/// a thousand view entries.
#[test]
fn a_new_connection_joins_in_what_its_scope_holds() {
    let (mut array, ids) = small_array(100_000);
    // The history ring forgets the adds.
    for _ in 0..100 {
        array.commit();
    }
    let mut state = SendState::new();
    let empty = allocated_by(|| {
        array.scope(&mut state).unwrap();
    });
    assert!(empty < 8 * 1024, "{empty} bytes to start an empty scope");
    let thousand = allocated_by(|| {
        let mut scope = array.scope(&mut state).unwrap();
        for &id in ids.iter().step_by(100) {
            scope.include(id);
        }
    });
    assert_eq!(state.pending_items(), 1_000);
    // Their view entries, pending work and watches, with the room their
    // maps and lists grow by: about 270 bytes an item.
    assert!(thousand < 512 * 1024, "{thousand} bytes for 1 000 items");
}
