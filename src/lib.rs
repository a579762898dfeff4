#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use fastarray_core::*;
/// Derives [`Replicate`](trait@Replicate) and [`BitCodec`] for a struct or
/// an enum. Its attributes (`skip`, `bits`, `varint`, `quantize`, `with`,
/// `serde`, `flatten`, `array`, `detail`, `owner_only`, `skip_owner`,
/// `initial_only`, `default_baseline`, `crate`) are described in the
/// [`attributes`] module, with an example each.
pub use fastarray_derive::Replicate;

/// The wire format and the reliability design, with a worked example in
/// bits (this is `WIRE.md`; its example runs as a test).
#[doc = include_str!("../WIRE.md")]
pub mod wire_format {}

/// The attributes of `#[derive(Replicate)]`, with an example of each: the
/// one place they are described.
///
/// The derive implements [`BitCodec`] (the whole value: every replicated
/// field in declaration order) and [`Replicate`](trait@Replicate)
/// (per-field diff, encode, decode and patch) for a struct with named
/// fields, a tuple struct, a unit struct, or an enum with unit, tuple and
/// struct variants, generic or not. Attributes are written
/// `#[replicate(...)]`, several in one or one each.
///
/// | attribute | on | wire | change test |
/// |---|---|---|---|
/// | none | a field of any [`BitCodec`] type | the type's own encoding | [`BitCodec::same`] |
/// | [`bits = N`](#bits--n) | a `u8`..`u64` or `i8`..`i64` field | `N` bits (1..=64, at most the type's width); a value that does not fit is an [`EncodeError::ValueOutOfRange`] | `==` |
/// | [`varint`](#varint) | an integer field | [varint](BitWriter::write_varint), zig-zag for signed | `==` |
/// | [`quantize(min = A, max = B, bits = N)`](#quantizemin--a-max--b-bits--n) | an `f32` or `f64` field, arrays and tuples of them, glam's `Vec2`..`Vec4`, `Vec3A`, `DVec2`..`DVec4` (a [glam feature](#glam-versions)) | `N` bits (1..=32) per float over `[A, B]`, clamped; any of `A`, `B`, `N` may be a list, one per axis (`min = [-512.0, 0.0, -512.0]`) | quantized values |
/// | [`quantize(bits = N)`](#quantizebits--n-quaternions) | a glam `Quat` or `DQuat` (a [glam feature](#glam-versions)) | smallest-three: `2 + 3·N` bits (`N` in 4..=32), a unit quaternion arrives | quantized values (`q` and `−q` alike) |
/// | [`with = path`](#with--path) | a field of any `PartialEq` type | `path::encode` / `path::decode` | `==` |
/// | [`serde`](#serde) | a field of any `Serialize + DeserializeOwned + PartialEq` type (feature `serde`) | serde over the bit stream | `==` |
/// | [`skip`](#skip) | a field of any `Default` type | not sent, no mask bit; `Default` on the receiver | none |
/// | [`flatten`](#flatten) | a struct's field of a `#[derive(Replicate)]` type without array fields | its fields become leaves of this type's mask: a change sends only the changed leaves | per leaf |
/// | [`array`](#array-replicated-objects) | a struct's `FastArray<U>` field (the struct is an item of another `FastArray`, or held by a [`Replicated`]) | per-id deltas of its items, after the owner's own fields | its own |
/// | [`detail = N`](#detail--n) | a replicated field of a struct, with any encoding | unchanged: the field's changes go only to connections that see the item at detail level `N` (0..=7) or more | unchanged |
/// | [`owner_only`](#owner_only-skip_owner-initial_only) | a replicated field of a struct, with any encoding | unchanged, to the connection whose client owns the item; others never see it (a whole value to them says which fields it lacks: 1 + its field set) | unchanged |
/// | [`skip_owner`](#owner_only-skip_owner-initial_only) | a replicated field of a struct, with any encoding | unchanged, to every connection that sees the item but its owner's | unchanged |
/// | [`initial_only`](#owner_only-skip_owner-initial_only) | a replicated field of a struct, with any encoding | only in whole values (an add, an entry into a scope, a snapshot): 0 bits for its changes | none: not a change |
/// | [`default_baseline`](#default_baseline) | a struct that implements `Default`, without `array` fields | a whole value (an add, an entry into a scope, a snapshot's item) carries only the fields in which it differs from `Default::default()`: 2 bits + its field set + those fields; 1 bit more when every field differs | unchanged |
/// | [`crate = "path"`](#crate--path) | the type | names the runtime as `path::__private_0_1` instead of `::fastarray::__private_0_1` | — |
///
/// `flatten` was called `nested`; that spelling still works, with a
/// deprecation warning at it.
///
/// # Mask bits and limits
///
/// Replicated field `i` of a struct (declaration order, `skip` and `array`
/// fields not counted) is bit `i` of its [`FieldMask`], so a struct
/// replicates at most 64 fields; a `flatten` field takes one bit per leaf
/// of its type, depth-first, and a type has at most 64 leaves in all. An
/// enum is written as its variant index in ⌈log2 variants⌉ bits, then the
/// variant's fields: mask bit 0 is the variant and bit `1 + i` the
/// variant's `i`-th replicated field (at most 63), so a change within a
/// variant sends only the changed fields and a change of variant sends the
/// whole value. `flatten` and `array` are not accepted in enum variants.
///
/// `Replicate::Patch` is a hidden generated type with one `Option` per
/// replicated field.
///
/// # Field constants
///
/// For a struct, the derive also names each replicated field's mask bits,
/// so that no mask is numbered by hand: an associated constant per field,
/// its name in upper case (`health` → `HEALTH`, a tuple struct's field
/// `0` → `FIELD_0`), holding its bit (or, for a `flatten` field, the bits
/// of its leaves). Reordering the fields moves the bits and the constants
/// with them. Use them wherever a [`FieldMask`] is taken or given:
///
/// ```
/// use fastarray::{Callbacks, FieldMask, Replicate, ReplicationId};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// struct Unit { position: [f32; 2], #[replicate(skip)] path: Vec<u32>, health: u8 }
///
/// assert_eq!(Unit::HEALTH, FieldMask::single(1)); // `path` takes no bit
///
/// struct Game;
/// impl Callbacks<Unit> for Game {
///     fn post_change(&mut self, _id: ReplicationId, unit: &Unit, changed: FieldMask) {
///         if changed.intersects(Unit::HEALTH) {
///             println!("health now {}", unit.health);
///         }
///     }
/// }
/// ```
///
/// A constant of the same name defined by hand on the type is a compile
/// error (two definitions of one name). Enums have no field constants:
/// their mask bits are the variant and the current variant's fields.
///
/// # Field types
///
/// Without an attribute a field needs a [`BitCodec`] type: the integers,
/// floats, `bool`, `char`, `String`, `Option`, `Box`, arrays, tuples,
/// `Vec`, `VecDeque`, `BTreeMap`, `HashMap`, `BTreeSet`, `HashSet` (a hash
/// collection is written in an order that depends only on its contents),
/// [`ReplicationId`], with a [glam feature](#glam-versions) glam's vectors and quaternions at
/// full precision, and any `#[derive(Replicate)]` type. A type of another
/// crate takes [`with = path`](#with--path), [`serde`](#serde), or a
/// newtype of your own that implements [`BitCodec`].
///
/// A [`ReplicationId`] field refers to an item: the mirror holds every item
/// under the server's id, so `mirror.get(id)` resolves the reference on the
/// client as `get` does on the server (an id is the varint of its raw
/// value: 1 bit for `#0`, 5 for `#3`; ids are per array).
///
/// Every replicated field type must implement what its attribute needs
/// (the "on" column) and every skipped one `Default`. For a field whose
/// type mentions a generic parameter the impls carry that as a bound
/// (`Vec<T>: BitCodec`); for any other field a missing impl is an error
/// pointing at the field's type. A field may name the type itself
/// (`children: Vec<Node>`).
///
/// # glam versions
///
/// glam's types have codecs for each glam version whose feature is on, as
/// nalgebra's glam interop does: `glam-0_32` (the glam of Bevy 0.19),
/// `glam-0_33` (Bevy 0.20) and `glam-0_34` (`glam` is the same). Turn on
/// the one your crate or Bevy uses; `cargo tree -i glam` lists the
/// versions in a build. The versions' types encode alike and have the same
/// schema hashes, so peers on different glam versions understand each
/// other. Each version is re-exported (`fastarray::glam_0_32`,
/// `fastarray::glam_0_33`, `fastarray::glam`). Bevy's own paths
/// (`bevy::math::Vec3`) are glam's types and work as they are.
///
/// ```toml
/// [dependencies]
/// fastarray = { version = "0.1", features = ["glam-0_33"] } # Bevy 0.20
/// ```
///
/// # Compile-time checks
///
/// Every mistake is a compile error pointing at the offending token, all of
/// them reported in one build: unknown, misplaced, duplicate or malformed
/// attributes, two encodings on one field, `bits` outside 1..=64 or wider
/// than the field's type, an empty `quantize` range or `quantize` bits
/// outside 1..=32, per-axis lists of different lengths or that do not
/// divide the field's floats, a range on a quaternion or none on a vector,
/// quaternion bits outside 4..=32, more than 64 replicated fields (63 per
/// enum variant), `flatten` or `array` in an enum variant, empty enums and
/// unions. A field marked `array` whose type is not a `FastArray<T>` is an
/// error at that type: "array fields must be `FastArray<T>`".
///
/// # `bits = N`
///
/// Like Source's `SendPropInt` with a bit count. Signed values are two's
/// complement in `N` bits.
///
/// ```
/// use fastarray::{BitCodec, BitWriter, EncodeError, Replicate};
///
/// #[derive(Replicate)]
/// struct Unit {
///     #[replicate(bits = 7)]
///     level: u8, // 0..=127
///     #[replicate(bits = 5)]
///     heading: i8, // -16..=15
/// }
///
/// let mut bytes = Vec::new();
/// let mut writer = BitWriter::new(&mut bytes);
/// Unit { level: 99, heading: -3 }.encode(&mut writer).unwrap();
/// assert_eq!(writer.bits_written(), 7 + 5);
/// assert_eq!(
///     Unit { level: 200, heading: 0 }.encode(&mut writer),
///     Err(EncodeError::ValueOutOfRange { value: 200, bits: 7 })
/// );
/// ```
///
/// # `varint`
///
/// ```
/// use fastarray::{BitCodec, BitWriter, Replicate};
///
/// #[derive(Replicate)]
/// struct Score {
///     #[replicate(varint)]
///     kills: u32,
///     #[replicate(varint)]
///     balance: i64,
/// }
///
/// let mut bytes = Vec::new();
/// let mut writer = BitWriter::new(&mut bytes);
/// Score { kills: 2, balance: -1 }.encode(&mut writer).unwrap();
/// assert_eq!(writer.bits_written(), 4 + 4); // not 32 + 64
/// ```
///
/// # `quantize(min = A, max = B, bits = N)`
///
/// Like Source's `SendPropFloat` with a low value, a high value and a bit
/// count. The receiver gets the quantized value, at most
/// `(B − A) / (2^N − 1) / 2` away from the sender's (clamped) value, and
/// the change test compares quantized values, so jitter below the
/// resolution sends nothing. A mirror's value is the step's, rarely `==`
/// the server's: compare a mirror with its server with
/// [`FastArray::wire_eq`] (or [`Replicate::wire_eq`](trait@Replicate) for
/// one value), which compares the steps.
///
/// ```
/// use fastarray::{FastArray, Quantizer, Replicate};
///
/// #[derive(Replicate, Clone)]
/// struct Body {
///     #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
///     position: [f32; 3],
/// }
///
/// const Q: Quantizer = Quantizer::new(-1024.0, 1024.0, 16);
/// let x = Q.dequantize(40_000) as f32; // a value the receiver can hold exactly
/// let mut world = FastArray::new();
/// let id = world.push(Body { position: [x, 0.0, 0.0] });
/// world.commit();
///
/// let step = 2.0 * Q.max_error(); // 2048 / 65535
/// world.get_mut(id).unwrap().position[0] += (step / 10.0) as f32;
/// assert!(world.commit().changed().is_empty()); // below the resolution
/// world.get_mut(id).unwrap().position[0] += 1.0;
/// assert_eq!(world.commit().changed().len(), 1);
///
/// // What a client holds of 1.3 is the nearest step: equal on the wire.
/// let sent = Body { position: [1.3, 0.0, 0.0] };
/// let held = Body { position: [Q.dequantize(Q.quantize(1.3)) as f32, 0.0, 0.0] };
/// assert!(sent.position != held.position && sent.wire_eq(&held));
/// ```
///
/// ## A range per axis
///
/// Any of `min`, `max` and `bits` may be a list: axis `i` of the value
/// takes element `i` of each list (a single number serves every axis).
/// The lists must be as long as each other, and the value's floats a
/// multiple of them: the list starts over for each element of an array, so
/// three ranges serve every point of a `[[f32; 3]; 8]` or a `[Vec3; 8]`.
/// Each axis is then within half a step of its own range.
///
/// ```
/// use fastarray::{BitCodec, BitReader, BitWriter, Replicate};
///
/// #[derive(Replicate, Debug)]
/// struct Walker {
///     // x and z over a 1 km square, y up to a 64 m ceiling, in fewer bits.
///     #[replicate(quantize(min = [-512.0, 0.0, -512.0], max = [512.0, 64.0, 512.0], bits = [16, 10, 16]))]
///     position: [f32; 3],
/// }
///
/// let mut bytes = Vec::new();
/// let mut writer = BitWriter::new(&mut bytes);
/// Walker { position: [100.0, 80.0, -3.0] }.encode(&mut writer).unwrap();
/// assert_eq!(writer.finish(), 16 + 10 + 16);
/// let back = Walker::decode(&mut BitReader::new(&bytes)).unwrap();
/// assert_eq!(back.position[1], 64.0); // clamped to its own axis's range
/// assert!((back.position[0] - 100.0).abs() <= 1024.0 / 65535.0 / 2.0);
/// ```
///
/// With a [glam feature](#glam-versions), glam's `Vec2`, `Vec3`, `Vec3A`, `Vec4` and
/// `DVec2`..`DVec4` quantize as the arrays of their axes: `position: Vec3`
/// takes the attribute above unchanged. (glam 0.34; name its types through
/// `fastarray::glam` to use the same version.)
///
/// # `quantize(bits = N)`: quaternions
///
/// A glam `Quat` or `DQuat` (a [glam feature](#glam-versions)) in smallest-three
/// ([`SmallestThree`]): the index of its largest component in 2 bits, the
/// other three in `N` bits each over `[−1/√2, 1/√2]`, the sign chosen so the
/// largest is positive; `N` in 4..=32. The input is normalized first; the
/// identity arrives exactly; the received quaternion is within
/// [`SmallestThree::max_error`] of the sent one as a 4-vector (about
/// `4.9 / (2^N − 2)`: 0.55° of rotation at `N = 10`; the code is settled
/// so that a mirror's quaternion re-encodes to the bits it came from). `min` and `max` are
/// not taken: the range is the quaternion's.
///
/// ```ignore
/// use fastarray::glam::{Quat, Vec3};
///
/// #[derive(Replicate, Clone, PartialEq)]
/// struct Transform {
///     #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 18))]
///     translation: Vec3,            // 54 bits
///     #[replicate(quantize(bits = 10))]
///     rotation: Quat,               // 32 bits
///     scale: Vec3,                  // full precision: 96 bits
/// }
/// ```
///
/// (Run as tests in `fastarray-core/tests/core/glam.rs`, which `cargo test
/// --workspace` builds with the feature.)
///
/// # `with = path`
///
/// `path::encode(&T, &mut BitWriter) -> Result<(), EncodeError>` and
/// `path::decode(&mut BitReader) -> Result<T, DecodeError>`. Decoders take
/// untrusted input: return an error, never panic.
///
/// ```
/// use fastarray::{BitCodec, BitReader, BitWriter, Replicate};
///
/// mod rgb {
///     use fastarray::{BitReader, BitWriter, DecodeError, EncodeError};
///     pub fn encode(value: &u32, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
///         writer.write_bits_checked(u64::from(*value), 24)
///     }
///     pub fn decode(reader: &mut BitReader<'_>) -> Result<u32, DecodeError> {
///         Ok(reader.read_bits(24)? as u32)
///     }
/// }
///
/// #[derive(Replicate, Debug, PartialEq)]
/// struct Paint {
///     #[replicate(with = rgb)]
///     color: u32,
/// }
///
/// let mut bytes = Vec::new();
/// let mut writer = BitWriter::new(&mut bytes);
/// Paint { color: 0xff8800 }.encode(&mut writer).unwrap();
/// assert_eq!(writer.finish(), 24);
/// assert_eq!(Paint::decode(&mut BitReader::new(&bytes)), Ok(Paint { color: 0xff8800 }));
/// ```
///
/// # `serde`
///
/// With the `serde` feature, any `Serialize + DeserializeOwned` field goes
/// through a compact serde format over the bit stream (see
/// `fastarray_core::serde_encode`), bounded like every other decoder:
///
/// ```ignore
/// #[derive(Replicate, Clone, PartialEq)]
/// struct Player {
///     #[replicate(serde)]
///     loadout: Loadout, // #[derive(Serialize, Deserialize, PartialEq, Clone)]
/// }
/// ```
///
/// # `skip`
///
/// ```
/// use fastarray::{BitCodec, BitReader, BitWriter, Replicate};
///
/// #[derive(Replicate, Debug, PartialEq)]
/// struct Npc {
///     hp: u8,
///     #[replicate(skip)]
///     path_cache: Vec<u32>, // server-only
/// }
///
/// let mut bytes = Vec::new();
/// Npc { hp: 3, path_cache: vec![1, 2] }.encode(&mut BitWriter::new(&mut bytes)).unwrap();
/// let received = Npc::decode(&mut BitReader::new(&bytes)).unwrap();
/// assert_eq!(received, Npc { hp: 3, path_cache: vec![] });
/// ```
///
/// `skip` is about the wire. What a save keeps (feature `serde`: a
/// `FastArray` or `Replicated` serializes with its ids, README "Surviving a
/// restart") is the item type's own `Serialize`: a field that is not saved
/// (BigWorld's `Persistent` false) takes serde's `#[serde(skip)]`, and
/// comes back as `Default` after a restart, whether or not it is sent.
///
/// # `flatten`
///
/// A field of another `#[derive(Replicate)]` type normally changes as one
/// value. Marked `flatten`, its own fields become leaves of the parent's
/// field mask, numbered depth-first, so a changed leaf sends only its index
/// (the path: one `⌈log2 leaves⌉`-bit handle, whatever the depth) and its
/// value, like BigWorld's change paths. A type has at most 64 leaves. (Stable
/// Rust cannot tell from a field's type whether it is itself replicated,
/// hence the attribute.)
///
/// ```
/// use fastarray::{FieldMask, Replicate};
///
/// #[derive(Replicate, Clone)]
/// struct Vec3 { x: f32, y: f32, z: f32 }
///
/// #[derive(Replicate, Clone)]
/// struct Body {
///     hp: u8,                 // leaf 0
///     #[replicate(flatten)]
///     position: Vec3,         // leaves 1, 2, 3
///     #[replicate(flatten)]
///     velocity: Vec3,         // leaves 4, 5, 6
/// }
///
/// let before = Body { hp: 1, position: Vec3 { x: 0.0, y: 0.0, z: 0.0 }, velocity: Vec3 { x: 0.0, y: 0.0, z: 0.0 } };
/// let mut after = before.clone();
/// after.velocity.y = 2.5;
/// assert_eq!(Body::FIELD_COUNT, 7);
/// assert_eq!(after.diff(&before), FieldMask::single(5)); // only velocity.y
/// ```
///
/// # `array`: replicated objects
///
/// Any `#[derive(Replicate)]` struct can be a replicated object: wrap it
/// in a [`Replicated`], which has the life cycle and the methods of a
/// `FastArray` (`get_mut`, `commit`, `write_delta` and its budgeted and
/// bit-stream forms, `apply_delta`, snapshots). Its plain fields go out as
/// field-level deltas through the same history ring and retirement list as
/// an array item; each `FastArray` field marked `array`, as per-id deltas
/// of its own, in the same packet, sharing the connection's acks and
/// losses.
///
/// ```
/// use fastarray::{FastArray, Replicate, Replicated, SendState};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// struct Player { score: u32 }
///
/// #[derive(Replicate, Clone, Debug, Default)]
/// struct Lobby {
///     countdown: u8,
///     #[replicate(array)]
///     players: FastArray<Player>,
/// }
///
/// let mut lobby = Replicated::new(Lobby::default());
/// let ann = lobby.get_mut().players.push(Player { score: 0 });
/// lobby.commit();
/// let (mut conn, mut mirror) = (SendState::new(), Replicated::<Lobby>::mirror());
/// let mut packet = Vec::new();
/// lobby.write_delta(&mut conn, 0, &mut packet).unwrap();
/// mirror.apply_delta(&packet, &mut ()).unwrap();
/// conn.on_ack(0);
///
/// lobby.get_mut().players.get_mut(ann).unwrap().score = 10; // only this item's field
/// lobby.commit();
/// let mut packet = Vec::new();
/// lobby.write_delta(&mut conn, 1, &mut packet).unwrap();
/// mirror.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(mirror.get().players.get(ann), Some(&Player { score: 10 }));
/// ```
///
/// # `array` inside array items
///
/// The items of a `FastArray` may hold `array` fields themselves: a change
/// inside sends the outer id, the inner id and the changed fields, never the
/// inner array, and losses are repaired at every level. (Unreal turns a fast
/// array inside a fast array's item into a plain struct property.) The
/// owner's `commit` commits the inner arrays of the items it touched. The
/// mirror's [`Callbacks::inner_event`] reports each item added to, changed
/// in or removed from an inner array, with the owning item's id and the
/// array field's name ([`InnerEvent`]), next to the owner's own events; its
/// `post_change` reports an item whose arrays alone changed with an empty
/// field mask. Such a type cannot be a `flatten` field, whose value is sent
/// field by field: that is a compile-time error.
///
/// ```
/// use fastarray::{FastArray, Replicate, SendState};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// struct Member { hp: u16 }
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// struct Squad {
///     tag: u8,
///     #[replicate(array)]
///     members: FastArray<Member>,
/// }
///
/// let mut squads = FastArray::new();
/// let mut members = FastArray::new();
/// let ann = members.push(Member { hp: 100 });
/// let red = squads.push(Squad { tag: 1, members });
/// squads.commit();
/// let (mut conn, mut mirror) = (SendState::new(), FastArray::mirror());
/// let mut packet = Vec::new();
/// squads.write_delta(&mut conn, 0, &mut packet).unwrap();
/// mirror.apply_delta(&packet, &mut ()).unwrap(); // the squad with its members
/// conn.on_ack(0);
///
/// squads.get_mut(red).unwrap().members.get_mut(ann).unwrap().hp = 90;
/// assert_eq!(squads.commit().arrays_changed(), [red]);
/// let mut packet = Vec::new();
/// let stats = squads.write_delta(&mut conn, 1, &mut packet).unwrap();
/// assert_eq!(stats.changed, 2); // the squad (no plain field) and the member (`hp`)
/// mirror.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(mirror, squads);
/// ```
///
/// # Enums
///
/// A variant index in ⌈log2 variants⌉ bits, then the variant's fields (each
/// with its own attributes). A change of variant sends the whole value; a
/// change within a variant sends the variant index and the changed fields.
///
/// ```
/// use fastarray::{BitCodec, BitWriter, FieldMask, Replicate};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// enum Order {
///     Idle,
///     Move { x: i16, y: i16 },
///     Attack(u32),
/// }
///
/// let moving = Order::Move { x: 1, y: 2 };
/// assert_eq!(Order::Move { x: 1, y: 5 }.diff(&moving), FieldMask::single(2)); // `y`
/// assert_eq!(Order::Attack(7).diff(&moving), FieldMask::all(2)); // variant + its field
///
/// let mut bytes = Vec::new();
/// let mut writer = BitWriter::new(&mut bytes);
/// moving.encode(&mut writer).unwrap();
/// assert_eq!(writer.bits_written(), 2 + 16 + 16);
/// ```
///
/// # `detail = N`
///
/// A field's detail level (0, the default, to [`MAX_DETAIL`]): a
/// connection that sees the item at a lower level
/// ([`ScopeMut::set_detail`]) is not sent the field's changes; when its
/// level rises, the fields withheld that changed meanwhile are sent, and
/// only those (BigWorld's `detailLevel`). A withheld field is in no
/// message to that connection, whatever wrote it: a whole value (an item
/// entering the scope, a repair of a lost packet, a resynchronisation)
/// carries only the fields the level sends, and the client holds the
/// others as their `Default` until the level rises (so a field with
/// `detail` above 0 needs `Default`); a snapshot, which holds every field,
/// is refused to a scoped connection ([`SendError::ScopedSnapshot`]). On a
/// `flatten` field it applies to all its leaves, on top of their own (the
/// flattened type then needs `Default`). The levels are not part of the
/// schema (they decide what is sent, not how); whether a type has any is,
/// since its whole values then say which fields they carry.
///
/// ```
/// use fastarray::{FastArray, Replicate, SendState};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// struct Ship {
///     #[replicate(quantize(min = -1000.0, max = 1000.0, bits = 16))]
///     pos: [f32; 2],
///     #[replicate(detail = 2)]
///     crew: Vec<String>, // only for those close enough to see the deck
/// }
///
/// let mut ships = FastArray::new();
/// let id = ships.push(Ship { pos: [0.0, 0.0], crew: vec![] });
/// ships.commit();
/// let (mut conn, mut client) = (SendState::new(), FastArray::<Ship>::mirror());
/// let mut scope = ships.scope(&mut conn).unwrap();
/// scope.include(id);
/// scope.set_detail(id, 0); // far away
/// let mut packet = Vec::new();
/// ships.write_delta(&mut conn, 1, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// conn.on_ack(1);
///
/// ships.get_mut(id).unwrap().crew.push("ann".into());
/// ships.get_mut(id).unwrap().pos = [5.0, 0.0];
/// ships.commit();
/// packet.clear();
/// ships.write_delta(&mut conn, 2, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// assert!(client.get(id).unwrap().crew.is_empty()); // withheld
///
/// ships.scope(&mut conn).unwrap().set_detail(id, 2); // closer: the crew goes
/// packet.clear();
/// ships.write_delta(&mut conn, 3, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(client.get(id).unwrap().crew, ["ann"]);
/// ```
///
/// # `owner_only`, `skip_owner`, `initial_only`
///
/// Who is sent a field, and when (BigWorld's `OWN_CLIENT` and
/// `OTHER_CLIENTS` flags, Unreal's `COND_OwnerOnly`, `COND_SkipOwner` and
/// `COND_InitialOnly`). An item has at most one owner, a client named by
/// any number the application uses for its clients:
/// [`FastArray::set_owner`] (or [`Replicated::set_owner`]) on the server,
/// and [`SendState::set_client`] (or [`Connection::set_client`]) on each
/// connection, before its first write. Then:
///
/// - `owner_only`: sent only to the connection whose client owns the item
///   (a player's ammo, inventory, quest state); every other connection holds
///   it as its `Default`.
/// - `skip_owner`: sent to every connection that sees the item but the
///   owner's (what the owner predicts itself, such as its own position).
/// - `initial_only`: sent with the whole value when the item enters a
///   connection's view (its add, its return to a scope, a snapshot), never
///   as a change: a change of it alone is no change at all.
///
/// `owner_only` and `skip_owner` exclude each other; either combines with
/// `initial_only`, with `detail` (both rules apply: a connection is sent
/// what its audience and its detail level both allow) and with every
/// encoding. On a `flatten` field they apply to all its leaves. A withheld
/// field is in no message to that connection, whatever wrote it: its own
/// delta, a repair of a lost packet, a resynchronisation, the frame's
/// message shared by caught-up connections, a snapshot. A field that can
/// be withheld needs `Default`.
///
/// Ownership moves at the next commit after `set_owner`, as a change of
/// those fields: the new owner is sent the owner-only fields (their values
/// now), the old owner the fields it was skipped, over the same loss
/// repair as any change; the old owner keeps the owner-only values it was
/// last sent. Which fields are `owner_only` or `skip_owner` is part of the
/// schema (a snapshot's items say whether their reader owns them, one bit
/// each); `initial_only` is not. `WIRE.md` ("Audiences") gives the costs.
///
/// ```
/// use fastarray::{FastArray, Replicate, SendState};
///
/// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
/// struct Player {
///     hp: u8,
///     #[replicate(owner_only)]
///     ammo: u16, // the player's own client alone
///     #[replicate(skip_owner)]
///     pos: [i32; 2], // its client predicts it
///     #[replicate(initial_only)]
///     name: String, // set at spawn
/// }
///
/// let mut players = FastArray::new();
/// let ann = players.push(Player { hp: 9, ammo: 30, pos: [1, 2], name: "ann".into() });
/// players.set_owner(ann, Some(7)).unwrap(); // client 7 plays Ann
/// players.commit();
///
/// let (mut anns, mut bobs) = (SendState::new(), SendState::new());
/// anns.set_client(7).unwrap();
/// bobs.set_client(8).unwrap();
/// let (mut ann_view, mut bob_view) = (FastArray::mirror(), FastArray::mirror());
/// let mut packet = Vec::new();
/// players.write_delta(&mut anns, 1, &mut packet).unwrap();
/// ann_view.apply_delta(&packet, &mut ()).unwrap();
/// packet.clear();
/// players.write_delta(&mut bobs, 1, &mut packet).unwrap();
/// bob_view.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(ann_view.get(ann), Some(&Player { hp: 9, ammo: 30, pos: [0, 0], name: "ann".into() }));
/// assert_eq!(bob_view.get(ann), Some(&Player { hp: 9, ammo: 0, pos: [1, 2], name: "ann".into() }));
///
/// // A rename after spawn is no change; Bob takes over Ann's character.
/// players.get_mut(ann).unwrap().name = "anna".into();
/// players.set_owner(ann, Some(8)).unwrap();
/// players.commit();
/// anns.on_ack(1);
/// bobs.on_ack(1);
/// packet.clear();
/// players.write_delta(&mut bobs, 2, &mut packet).unwrap();
/// bob_view.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(bob_view.get(ann).unwrap().ammo, 30); // now Bob's
/// assert_eq!(bob_view.get(ann).unwrap().name, "ann"); // as spawned
/// ```
///
/// # `default_baseline`
///
/// On a struct that implements `Default`. An item the client does not
/// hold goes whole: when it spawns, when it enters the client's scope, in
/// a snapshot. With this attribute the whole value says which of its
/// fields differ from the type's `Default::default()` and carries only
/// those; the client starts from its own default and fills them in
/// (Unreal's Iris writes initial state against the class defaults the same
/// way). Make the default what a new item mostly is (full health, standing
/// still, its kind's name), and a spawn costs its position and little more.
///
/// The cost, per whole value: `1 0` (2 bits) when it is the default; `1 1`,
/// the set of differing fields (as a change's field set) and those fields
/// otherwise; `0` then every field (1 bit more than without the attribute)
/// when every field differs. Changes are not concerned: they carry the
/// changed fields either way. A `skip` field of a decoded value is the
/// default's, not its field type's `Default`. A whole value that withholds
/// fields from a connection (`detail`, `owner_only`, `skip_owner`) is
/// written as before, its withheld fields `Default`.
///
/// Both sides must build the same default: the schema hash records the
/// attribute, and [`FastArray::schema_handshake`] (with snapshots and
/// feeds) also carries the bits of the default, so peers whose defaults
/// differ refuse each other ([`SchemaMismatch`]) rather than decode each
/// other's values wrongly. The check reads the defaults of the item type
/// and of its `flatten`ed fields' types (the Bevy plugin's items hold their
/// component so); a field that is not flattened, of a type with
/// `default_baseline` of its own, is written against that type's default,
/// whose values only the attribute, not the check, covers. Not on enums (a
/// whole value starts with its variant), nor on a type with `array` fields
/// (their items go by id).
///
/// ```
/// use fastarray::{BitCodec, BitWriter, FastArray, Replicate, SendState};
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(default_baseline)]
/// struct Monster {
///     #[replicate(quantize(min = -1024.0, max = 1024.0, bits = 16))]
///     position: [f32; 3],
///     velocity: [f32; 3],
///     health: u8,
///     name: String,
/// }
///
/// impl Default for Monster {
///     fn default() -> Self {
///         Monster { position: [0.0; 3], velocity: [0.0; 3], health: 100, name: "goblin".into() }
///     }
/// }
///
/// let goblin = Monster { position: [12.0, 0.0, -3.5], ..Monster::default() };
/// let mut bits = Vec::new();
/// let mut writer = BitWriter::new(&mut bits);
/// goblin.encode(&mut writer).unwrap();
/// // The form (2), the set of one field of 4 (1 + 1 + 2), the position (48):
/// // 104 bits fewer than every field.
/// assert_eq!(writer.finish(), 2 + 4 + 3 * 16);
///
/// let mut server = FastArray::new();
/// let id = server.push(goblin.clone());
/// server.commit();
/// let (mut conn, mut client) = (SendState::new(), FastArray::<Monster>::mirror());
/// let mut packet = Vec::new();
/// server.write_delta(&mut conn, 1, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(client.get(id).unwrap().name, "goblin");
/// assert!(client.get(id).unwrap().wire_eq(&goblin));
/// ```
///
/// # `crate = "path"`
///
/// On the type. Generated code names the runtime only through
/// `::fastarray::__private_0_1`; when the `fastarray` crate is renamed, used
/// through its runtime crate `fastarray_core` directly, or re-exported by
/// another crate, say where it is. The path is resolved where the type is
/// defined, like any path written there: `"fastarray_core"`, or a module
/// that contains `pub use fastarray::__private_0_1;` (a re-exporting crate
/// does the same).
///
/// ```
/// mod rt {
///     pub use fastarray::__private_0_1;
/// }
///
/// #[derive(fastarray::Replicate)]
/// #[replicate(crate = "crate::rt")]
/// struct Player {
///     hp: u8,
/// }
///
/// # fn main() {
/// use fastarray::Replicate as _;
/// assert_eq!(Player::FIELD_COUNT, 1);
/// # }
/// ```
pub mod attributes {}
