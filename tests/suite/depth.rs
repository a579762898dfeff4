//! Recursive item types: decoding bounds how deeply derived values nest
//! (`MAX_DEPTH`), so a message of one bit per level cannot overflow the
//! stack, and encoding refuses what a receiver would refuse. Every decode
//! runs on a thread with a small stack: without the bound these abort the
//! process instead of failing.

use fastarray::{
    BitCodec, BitReader, BitWriter, DecodeError, EncodeError, FastArray, MAX_DEPTH, Replicate,
    ReplicationId, SendError, SendState,
};
use fastarray_testkit::exchange;

/// One bit per level: `Some` link, then the next level.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Chain {
    next: Option<Box<Chain>>,
}

/// Four bits per level with one kid each (`varint(1)`).
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Node {
    kids: Vec<Node>,
}

/// A value of numbers and a string: it cannot recurse, so its level does
/// not count against `MAX_DEPTH`.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Leaf {
    hp: u16,
    tag: String,
    #[replicate(quantize(min = 0.0, max = 1.0, bits = 8))]
    share: f32,
}

/// A chain that holds a [`Leaf`] at every level.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct LeafChain {
    leaf: Leaf,
    next: Option<Box<LeafChain>>,
}

/// A chain of `depth` values (`depth` ≥ 1), built without recursion.
fn chain(depth: u32) -> Chain {
    (1..depth).fold(Chain { next: None }, |inner, _| Chain {
        next: Some(Box::new(inner)),
    })
}

/// A line of `depth` nodes, each the only kid of the one above.
fn node(depth: u32) -> Node {
    (1..depth).fold(Node { kids: Vec::new() }, |inner, _| Node {
        kids: vec![inner],
    })
}

/// The payload of a chain of `depth` levels: `depth - 1` ones, a zero.
fn chain_bits(depth: u64) -> impl FnOnce(&mut BitWriter<'_>) {
    move |w| {
        for _ in 1..depth {
            w.write_bool(true);
        }
        w.write_bool(false);
    }
}

/// The payload of a line of `depth` nodes.
fn node_bits(depth: u64) -> impl FnOnce(&mut BitWriter<'_>) {
    move |w| {
        for _ in 1..depth {
            w.write_varint(1);
        }
        w.write_varint(0);
    }
}

/// Bits each level of [`chain_bits`] and [`node_bits`] takes.
const CHAIN_LEVEL: u64 = 1;
const NODE_LEVEL: u64 = 4;

/// Levels in the crafted messages: far past any stack.
const HOSTILE: u64 = 1_000_000;

/// Runs `f` on a thread with a 256 KiB stack (the default is 2 MiB). The
/// deepest `Node` accepted needs about 190 KiB in a debug build, under
/// 64 KiB in a release build.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// A mirror brought up to `server` by one delta to a new connection,
/// checked equal to it.
fn synced<T: Replicate + PartialEq + std::fmt::Debug>(server: &mut FastArray<T>) -> FastArray<T> {
    let mut mirror = FastArray::new();
    let mut bytes = Vec::new();
    server
        .write_delta(&mut SendState::new(), 0, &mut bytes)
        .unwrap();
    mirror.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(&mirror, server);
    mirror
}

/// A snapshot at frame 1 of one item, id 0, whose payload `payload`
/// writes; and the bit offset where the payload starts.
fn snapshot<T: Replicate>(payload: impl FnOnce(&mut BitWriter<'_>)) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_bits(0b011, 3); // snapshot
    w.write_bits(T::SCHEMA_HASH, 64);
    w.write_varint(1); // frame
    w.write_varint(1); // one item
    w.write_varint(0); // id 0
    let start = w.bits_written();
    payload(&mut w);
    w.finish();
    (bytes, start)
}

/// A delta at `frame` (long form) with one entry for id 0: the whole item
/// if `whole`, else field 0 as a changed field; and the bit offset where the
/// payload starts.
fn delta(frame: u64, whole: bool, payload: impl FnOnce(&mut BitWriter<'_>)) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    w.write_bits(0b01, 2); // delta
    w.write_bool(true); // long frame form
    w.write_varint(frame);
    w.write_bool(false); // no removals
    w.write_bits(0b01, 2); // one item
    w.write_bool(false); // ids as varints
    w.write_bool(false); // no field set shared by the entries
    w.write_varint(0); // id 0
    if whole {
        w.write_bool(true);
    } else {
        w.write_bool(false); // changed fields
        w.write_bool(false); // as a mask
        w.write_bits(1, 1); // field 0
    }
    let start = w.bits_written();
    payload(&mut w);
    w.finish();
    (bytes, start)
}

/// The error for a value nested too deeply, found where the first level
/// past the limit starts: `level` bits per level after `start`.
fn too_deep(start: u64, level: u64) -> DecodeError {
    DecodeError::TooDeep {
        bit_offset: start + u64::from(MAX_DEPTH) * level,
        limit: MAX_DEPTH,
    }
}

#[test]
fn the_limit_is_documented_as_128() {
    assert_eq!(MAX_DEPTH, 128);
}

/// A `T` nested [`HOSTILE`] levels deep (`bits(depth)` writes one, `level`
/// bits a level) is refused at the first level past the limit, in a
/// snapshot and in a delta, and the mirror stays empty.
fn refused_in_a_snapshot_and_a_delta<T, W>(bits: fn(u64) -> W, level: u64)
where
    T: Replicate + PartialEq + std::fmt::Debug,
    W: FnOnce(&mut BitWriter<'_>),
{
    let (bytes, start) = snapshot::<T>(bits(HOSTILE));
    assert_eq!(
        FastArray::<T>::from_snapshot(&bytes),
        Err(too_deep(start, level))
    );

    let (bytes, start) = delta(1, true, bits(HOSTILE));
    let mut mirror = FastArray::<T>::new();
    assert_eq!(
        mirror.apply_delta(&bytes, &mut ()),
        Err(too_deep(start, level))
    );
    assert!(mirror.is_empty());
}

#[test]
fn a_deep_chain_is_refused_in_a_snapshot_and_a_delta() {
    on_small_stack(|| refused_in_a_snapshot_and_a_delta::<Chain, _>(chain_bits, CHAIN_LEVEL));
}

#[test]
fn a_deep_node_is_refused_in_a_snapshot_and_a_delta() {
    on_small_stack(|| refused_in_a_snapshot_and_a_delta::<Node, _>(node_bits, NODE_LEVEL));
}

#[test]
fn a_deep_changed_field_is_refused() {
    on_small_stack(|| {
        let (bytes, _) = snapshot::<Chain>(chain_bits(3));
        let mut mirror = FastArray::<Chain>::from_snapshot(&bytes).unwrap();
        let before = mirror.clone();
        // The held item is the first level (`decode_fields` reads its
        // `next`), the payload's first bit the second level's `Some`.
        let (bytes, start) = delta(2, false, chain_bits(HOSTILE));
        assert_eq!(
            mirror.apply_delta(&bytes, &mut ()),
            Err(too_deep(start, CHAIN_LEVEL))
        );
        assert_eq!(mirror, before, "an error leaves the mirror as it was");
    });
}

#[test]
fn a_deep_value_is_refused_by_its_decoder_too() {
    on_small_stack(|| {
        let mut bytes = Vec::new();
        let mut w = BitWriter::new(&mut bytes);
        chain_bits(HOSTILE)(&mut w);
        w.finish();
        assert_eq!(
            Chain::decode(&mut BitReader::new(&bytes)),
            Err(too_deep(0, CHAIN_LEVEL))
        );
    });
}

#[test]
fn values_at_the_limit_round_trip_and_drop_on_a_small_stack() {
    on_small_stack(|| {
        let mut server = FastArray::new();
        // Two, so the depth count is back to zero after the first.
        server.push(chain(MAX_DEPTH));
        server.push(chain(MAX_DEPTH));
        server.commit();
        let mut bytes = Vec::new();
        server.write_snapshot(&mut bytes).unwrap();
        let snapshot = FastArray::<Chain>::from_snapshot(&bytes).unwrap();
        assert_eq!(snapshot, server);

        let mirror = synced(&mut server);
        drop((server, snapshot, mirror));

        let mut server = FastArray::new();
        server.push(node(MAX_DEPTH));
        server.commit();
        let mut bytes = Vec::new();
        server.write_snapshot(&mut bytes).unwrap();
        let client = FastArray::<Node>::from_snapshot(&bytes).unwrap();
        assert_eq!(client, server);
        drop((server, client));
    });
}

#[test]
fn a_level_that_cannot_recurse_does_not_count() {
    let leaf = |n: u16| Leaf {
        hp: n,
        tag: format!("#{n}"),
        share: 1.0,
    };
    let chain = move |depth: u16| {
        (1..depth).fold(
            LeafChain {
                leaf: leaf(0),
                next: None,
            },
            |inner, n| LeafChain {
                leaf: leaf(n),
                next: Some(Box::new(inner)),
            },
        )
    };
    let limit = MAX_DEPTH as u16;
    on_small_stack(move || {
        // Each `LeafChain` counts; the `Leaf` inside the deepest one would
        // be level 129 if it counted.
        let mut server = FastArray::new();
        server.push(chain(limit));
        server.commit();
        synced(&mut server);
        // A chain one deeper is still refused, by both sides.
        let mut bytes = Vec::new();
        assert_eq!(
            chain(limit + 1).encode(&mut BitWriter::new(&mut bytes)),
            Err(EncodeError::TooDeep { limit: MAX_DEPTH })
        );
    });
}

#[test]
fn the_deepest_accepted_message_decodes_on_a_small_stack() {
    on_small_stack(|| {
        let (bytes, _) = snapshot::<Chain>(chain_bits(u64::from(MAX_DEPTH)));
        let array = FastArray::<Chain>::from_snapshot(&bytes).unwrap();
        assert_eq!(
            array.get(ReplicationId::from_raw(0)),
            Some(&chain(MAX_DEPTH))
        );
        let (bytes, _) = delta(1, true, node_bits(u64::from(MAX_DEPTH)));
        let mut mirror = FastArray::<Node>::new();
        mirror.apply_delta(&bytes, &mut ()).unwrap();
        assert_eq!(
            mirror.get(ReplicationId::from_raw(0)),
            Some(&node(MAX_DEPTH))
        );
    });
}

#[test]
fn a_sender_refuses_what_a_receiver_would() {
    let limit = EncodeError::TooDeep { limit: MAX_DEPTH };
    let mut bytes = Vec::new();
    let mut w = BitWriter::new(&mut bytes);
    assert_eq!(chain(MAX_DEPTH + 1).encode(&mut w), Err(limit.clone()));
    drop(w);

    let mut server = FastArray::new();
    let id = server.push(chain(MAX_DEPTH + 1));
    server.commit();
    let mut bytes = Vec::new();
    assert_eq!(server.write_snapshot(&mut bytes), Err(limit.clone()));
    assert!(bytes.is_empty());
    let mut conn = SendState::new();
    assert_eq!(
        server.write_delta(&mut conn, 0, &mut bytes),
        Err(SendError::Encode {
            id,
            error: limit.clone()
        })
    );

    // A changed field that would take the value past the limit.
    let mut server = FastArray::new();
    let id = server.push(chain(MAX_DEPTH));
    let (mut conn, mut mirror) = (SendState::new(), FastArray::<Chain>::new());
    exchange(&mut server, &mut conn, &mut mirror, 0);
    *server.get_mut(id).unwrap() = Chain {
        next: Some(Box::new(chain(MAX_DEPTH))),
    };
    server.commit();
    let mut bytes = Vec::new();
    assert_eq!(
        server.write_delta(&mut conn, 1, &mut bytes),
        Err(SendError::Encode { id, error: limit })
    );
}
