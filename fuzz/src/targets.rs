//! What each fuzz target does with its input, shared by the libFuzzer
//! binaries (`fuzz/fuzz_targets/*.rs`) and the stable replay test
//! (`tests/suite/fuzz_replay.rs`, which includes this file by path). Only the
//! public `fastarray` API and `std`: no libFuzzer in here.
//!
//! Every target takes arbitrary bytes and panics only when the library
//! breaks a promise:
//!
//! | target | input | promise checked |
//! |---|---|---|
//! | `snapshot` | selector byte, snapshot | a snapshot that decodes re-encodes to one that decodes to an equal array |
//! | `delta` | selector, prefix, message | on a mirror that applied the first `prefix` genuine messages, a bad message is an `Err` that leaves the mirror unchanged; nothing panics |
//! | `inner` | the same | the same, for items with `#[replicate(array)]` fields |
//! | `object` | the same | the same for a `Replicated<T>`, and `get()` works after every `Ok` |
//! | `stateful` | a script ([`Op`]) | genuine packets delivered in any order apply; after healing every mirror equals the server |
//! | `ack` | a script (`ack::AckOp`) on one `Acks` | no panic; each packet sent gets exactly one event; a refused header changes nothing |
//! | `connection` | prefix, packet | on a `MirrorConnection` that applied the first `prefix` genuine packets of a two-channel `Connection`, a bad packet is an `Err` that leaves both mirrors unchanged; nothing panics |
//! | `secure` | selector, datagram or mask | handshake messages and tampered token or sealed packets: no panic; a refusal answers nothing, stores nothing, changes no session; a sealed packet opens only unchanged (`targets/secure.rs`) |

use std::fmt::Debug;

use fastarray::{FastArray, MirrorLimits, Replicate, Replicated, SendState};

/// The targets, by name: the directory names under `fuzz/corpus/` and
/// `fuzz/regressions/`.
pub const TARGETS: [&str; 8] = [
    "snapshot",
    "delta",
    "inner",
    "object",
    "stateful",
    "ack",
    "connection",
    "secure",
];

/// Runs target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "snapshot" => snapshot(data),
        "delta" => delta(data),
        "inner" => inner(data),
        "object" => object(data),
        "stateful" => stateful(data),
        "ack" => ack(data),
        "connection" => connection(data),
        "secure" => secure(data),
        _ => panic!("no fuzz target named {name:?}"),
    }
}

#[path = "targets/ack.rs"]
mod ack;
#[path = "targets/connection.rs"]
mod connection;
#[path = "targets/script.rs"]
mod script;
#[path = "targets/secure.rs"]
mod secure;
#[path = "targets/seeds.rs"]
mod seeds;
#[path = "targets/types.rs"]
mod types;

pub use ack::ack;
pub use connection::connection;
pub use script::{describe_script, stateful};
pub use secure::secure;
pub use seeds::seed_corpus;
use types::{
    Chain, Fixture, Lobby, Member, Named, Node, ObjectFixture, Platoon, Shape, Spawned, Squad,
    Thing, Unit, World, pick,
};

// ---------------------------------------------------------------------------
// Genuine messages
// ---------------------------------------------------------------------------

/// A short, deterministic replication session of one item type: the
/// messages a mirror applied, in the order it applied them (one of them
/// reported lost and delivered late; the packets after it acknowledged a
/// frame late, so that an add is in flight when the next is written, which
/// makes it a shared delta for a struct), and the mirror after each prefix.
pub struct History<T> {
    /// The messages, in the order the mirror applied them.
    pub messages: Vec<Vec<u8>>,
    /// `mirrors[i]`: the mirror after `messages[..i]`.
    mirrors: Vec<FastArray<T>>,
    /// Snapshots of the server after the first and the last frame.
    pub snapshots: Vec<Vec<u8>>,
}

/// Frames of the genuine sessions, and the one whose packet is reported
/// lost (and delivered at the end).
const HISTORY_FRAMES: u8 = 8;
const LOST_FRAME: u8 = 4;

impl<T: Fixture> History<T> {
    fn build() -> Self {
        let mut server = FastArray::new();
        for seed in 1..5 {
            server.push(T::make(seed));
        }
        let mut conn = SendState::new();
        let mut mirror = FastArray::mirror();
        let mut history = History {
            messages: Vec::new(),
            mirrors: vec![mirror.clone()],
            snapshots: Vec::new(),
        };
        let mut late = None;
        let mut unacked = None;
        for frame in 0..HISTORY_FRAMES {
            if frame > 0 {
                change(&mut server, frame);
            }
            server.commit();
            if frame == 0 {
                history.snapshots.push(snapshot_of(&server));
            }
            let mut bytes = Vec::new();
            let packet = u32::from(frame);
            server.write_delta(&mut conn, packet, &mut bytes).unwrap();
            if frame == LOST_FRAME {
                conn.on_loss(packet);
                late = Some(bytes);
                continue;
            }
            history.apply(&mut mirror, bytes);
            if frame < LOST_FRAME {
                conn.on_ack(packet);
            } else if let Some(previous) = unacked.replace(packet) {
                conn.on_ack(previous);
            }
        }
        if let Some(bytes) = late {
            history.apply(&mut mirror, bytes);
        }
        history.snapshots.push(snapshot_of(&server));
        history
    }

    fn apply(&mut self, mirror: &mut FastArray<T>, bytes: Vec<u8>) {
        mirror.apply_delta(&bytes, &mut ()).unwrap();
        self.messages.push(bytes);
        self.mirrors.push(mirror.clone());
    }
}

/// The changes of one frame of the genuine sessions: edits, adds and
/// removals, an item added and removed in the same frame.
fn change<T: Fixture>(server: &mut FastArray<T>, frame: u8) {
    for k in 0..3 {
        let op = frame.wrapping_mul(3).wrapping_add(k);
        if let Some(id) = pick(server, frame.wrapping_add(k * 2)) {
            if let Some(mut item) = server.get_mut(id) {
                item.edit(op, frame.wrapping_mul(41).wrapping_add(k));
            }
        }
    }
    match frame % 4 {
        1 => {
            server.push(T::make(frame + 10));
        }
        2 => {
            if let Some(id) = pick(server, frame) {
                server.remove(id);
            }
        }
        3 => {
            let id = server.push(T::make(frame));
            server.remove(id);
        }
        _ => {}
    }
}

fn snapshot_of<T: Replicate>(array: &FastArray<T>) -> Vec<u8> {
    let mut bytes = Vec::new();
    array.write_snapshot(&mut bytes).unwrap();
    bytes
}

// ---------------------------------------------------------------------------
// Target `snapshot`
// ---------------------------------------------------------------------------

/// The item types of the `snapshot` target, by selector byte.
pub const SNAPSHOT_TYPES: [&str; 9] = [
    "Unit", "Thing", "Shape", "Named", "Squad", "Platoon", "Node", "Chain", "Member",
];

/// `data[0]` picks the item type, the rest is a snapshot: if it decodes,
/// it must re-encode, and the re-encoding must decode to an equal array.
pub fn snapshot(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    match usize::from(selector) % SNAPSHOT_TYPES.len() {
        0 => snapshot_case::<Unit>(bytes),
        1 => snapshot_case::<Thing>(bytes),
        2 => snapshot_case::<Shape>(bytes),
        3 => snapshot_case::<Named>(bytes),
        4 => snapshot_case::<Squad>(bytes),
        5 => snapshot_case::<Platoon>(bytes),
        6 => snapshot_case::<Node>(bytes),
        7 => snapshot_case::<Chain>(bytes),
        _ => snapshot_case::<Member>(bytes),
    }
}

fn snapshot_case<T: Replicate + PartialEq + Debug>(bytes: &[u8]) {
    if let Ok(array) = FastArray::<T>::from_snapshot(bytes) {
        assert_round_trip(&array);
    }
}

/// A decoded array re-encodes, and that snapshot decodes to an equal array
/// (compared by encoding when the array holds a NaN, which `==` cannot).
fn assert_round_trip<T: Replicate + PartialEq + Debug>(array: &FastArray<T>) {
    let mut first = Vec::new();
    if let Err(error) = array.write_snapshot(&mut first) {
        panic!("a decoded array does not re-encode: {error}\n{array:?}");
    }
    let copy = match FastArray::<T>::from_snapshot(&first) {
        Ok(copy) => copy,
        Err(error) => panic!("a re-encoded snapshot does not decode: {error}\n{array:?}"),
    };
    assert_eq!(copy.frame(), array.frame(), "the frame changed");
    let mut second = Vec::new();
    copy.write_snapshot(&mut second).unwrap();
    assert_eq!(first, second, "re-encoding the copy gives other bits");
    if equal_to_itself(array) {
        assert_eq!(
            &copy, array,
            "the re-encoded snapshot decodes to another array"
        );
    }
}

/// False when `value` holds a NaN.
fn equal_to_itself<T: PartialEq>(value: &T) -> bool {
    let same = value;
    value == same
}

// ---------------------------------------------------------------------------
// Targets `delta` and `inner`
// ---------------------------------------------------------------------------

/// Limits below what a genuine session's messages reach (its mirrors hold
/// 4 to 5 items, with a few inside each), for the cases that fuzz
/// refusals for a limit: some genuine messages are refused, some apply.
pub const LOW_LIMITS: MirrorLimits = MirrorLimits {
    items: 4,
    message_bytes: 48,
    inner_items: 2,
    removals: 1,
};

/// The item types of the `delta` target, by selector byte.
pub const DELTA_TYPES: [&str; 4] = ["Unit", "Thing", "Named", "Spawned"];

/// The item types of the `inner` target, by selector byte.
pub const INNER_TYPES: [&str; 2] = ["Squad", "Platoon"];

/// `data[0]` picks the item type, `data[1]` how many genuine messages the
/// mirror applied first, the rest is a message. See [`delta_case`].
pub fn delta(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match usize::from(selector) % DELTA_TYPES.len() {
        0 => delta_case::<Unit>(rest),
        1 => delta_case::<Thing>(rest),
        2 => delta_case::<Named>(rest),
        _ => delta_case::<Spawned>(rest),
    }
}

/// [`delta`] for item types with `#[replicate(array)]` fields.
pub fn inner(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match usize::from(selector) % INNER_TYPES.len() {
        0 => delta_case::<Squad>(rest),
        _ => delta_case::<Platoon>(rest),
    }
}

/// `data[0]` (its low 7 bits, modulo the history's length + 1) genuine
/// messages applied to a mirror, then `data[1..]` as a message; with
/// `data[0]`'s high bit set the mirror is held to [`LOW_LIMITS`] first, so
/// that refusals for a limit are fuzzed too:
/// - it must not panic;
/// - an `Err` must leave the mirror as it was: equal items, an equal
///   `mirror_state` (tombstones, field frames, frames), and the next
///   genuine message does the same to it as to a copy taken before;
/// - after an `Ok` the rest of the genuine messages must not panic either
///   (they may fail: the mirror took garbage), and the mirror's items must
///   survive a snapshot round trip.
fn delta_case<T: Fixture>(data: &[u8]) {
    let Some((&prefix, message)) = data.split_first() else {
        return;
    };
    let history = T::history();
    let limited = prefix & 0x80 != 0;
    let prefix = usize::from(prefix & 0x7f) % history.mirrors.len();
    let mut mirror = history.mirrors[prefix].clone();
    if limited {
        mirror.set_limits(LOW_LIMITS);
    }
    let before = mirror.clone();
    let state = mirror.mirror_state();
    let next = history.messages.get(prefix);
    match mirror.apply_delta(message, &mut ()) {
        Err(error) => {
            assert_eq!(
                mirror, before,
                "a refused message ({error}) changed the mirror"
            );
            assert_eq!(
                mirror.mirror_state(),
                state,
                "a refused message ({error}) changed the mirror's state"
            );
            if let Some(next) = next {
                let mut expected = before;
                let want = expected.apply_delta(next, &mut ());
                let got = mirror.apply_delta(next, &mut ());
                assert_eq!(
                    got, want,
                    "after a refused message ({error}) the next genuine one applies differently"
                );
                assert_eq!(
                    mirror, expected,
                    "after a refused message ({error}) the next genuine one leaves another mirror"
                );
            }
        }
        Ok(_) => {
            for bytes in &history.messages[prefix..] {
                let _ = mirror.apply_delta(bytes, &mut ());
            }
            // A duplicate of the message itself.
            let _ = mirror.apply_delta(message, &mut ());
            assert_round_trip(&mirror);
        }
    }
}

// ---------------------------------------------------------------------------
// Target `object`
// ---------------------------------------------------------------------------

/// The genuine session of an object type: the messages its mirror applied,
/// in order (one reported lost and delivered last).
fn object_messages<W: ObjectFixture>() -> Vec<Vec<u8>> {
    let mut server = Replicated::new(W::default());
    let mut conn = SendState::new();
    let mut mirror = Replicated::<W>::mirror();
    let mut messages = Vec::new();
    let mut late = None;
    for frame in 0..HISTORY_FRAMES {
        for k in 0..2 {
            server.get_mut().step(frame.wrapping_mul(2).wrapping_add(k));
        }
        server.commit();
        let mut bytes = Vec::new();
        let packet = u32::from(frame);
        server.write_delta(&mut conn, packet, &mut bytes).unwrap();
        if frame == LOST_FRAME {
            conn.on_loss(packet);
            late = Some(bytes);
            continue;
        }
        mirror.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        messages.push(bytes);
    }
    if let Some(bytes) = late {
        mirror.apply_delta(&bytes, &mut ()).unwrap();
        messages.push(bytes);
    }
    assert_eq!(mirror.get(), server.get());
    messages
}

/// The object types of the `object` target, by selector byte.
pub const OBJECT_TYPES: [&str; 2] = ["World", "Lobby"];

/// `data[0]` picks the object type, `data[1]` how many genuine messages the
/// mirror applied first, the rest is a message: as [`delta_case`], for a
/// `Replicated<T>` (compared with a twin built the same way, as it has no
/// `Clone`), and `get()` must work after every `Ok`.
pub fn object(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match usize::from(selector) % OBJECT_TYPES.len() {
        0 => object_case::<World>(rest),
        _ => object_case::<Lobby>(rest),
    }
}

fn object_case<W: ObjectFixture>(data: &[u8]) {
    let Some((&prefix, message)) = data.split_first() else {
        return;
    };
    let messages = W::messages();
    let prefix = usize::from(prefix) % (messages.len() + 1);
    let mut mirror = Replicated::<W>::mirror();
    let mut twin = Replicated::<W>::mirror();
    for bytes in &messages[..prefix] {
        mirror.apply_delta(bytes, &mut ()).unwrap();
        twin.apply_delta(bytes, &mut ()).unwrap();
    }
    match mirror.apply_delta(message, &mut ()) {
        Err(error) => {
            assert_eq!(
                mirror.get(),
                twin.get(),
                "a refused message ({error}) changed the object"
            );
            if let Some(next) = messages.get(prefix) {
                let want = twin.apply_delta(next, &mut ());
                let got = mirror.apply_delta(next, &mut ());
                assert_eq!(
                    got, want,
                    "after a refused message ({error}) the next genuine one applies differently"
                );
                assert_eq!(mirror.get(), twin.get());
            }
        }
        Ok(_) => {
            let _ = mirror.get();
            let rest = messages[prefix..].iter().map(Vec::as_slice);
            for bytes in rest.chain([message]) {
                if mirror.apply_delta(bytes, &mut ()).is_ok() {
                    let _ = mirror.get();
                }
            }
        }
    }
}
