//! [`BitCodec`]: how one value is written to and read from the bit stream,
//! with implementations for the standard types.
//!
//! | type | encoding |
//! |---|---|
//! | `bool` | 1 bit |
//! | `u8`…`u128`, `i8`…`i128` | natural width, two's complement |
//! | `usize`, `isize` | [varint](crate::BitWriter::write_varint) (zig-zag for `isize`), so 32- and 64-bit peers agree |
//! | `f32`, `f64` | raw IEEE-754 bits; `same` compares bits, so `NaN` is stable and `-0.0 ≠ 0.0` |
//! | `char` | 21 bits (every Unicode scalar value fits), validated on decode |
//! | `String` | varint byte length, then the bytes; UTF-8 validated on decode |
//! | `Vec<T>`, `VecDeque<T>` | varint length, then the elements |
//! | `BTreeSet<T>`, `HashSet<T, S>` | varint length, then the elements; a hash set sorted by the elements' encodings, so equal sets encode alike (see `std_collections`) |
//! | `BTreeMap<K, V>`, `HashMap<K, V, S>` | varint length, then each key and its value; a hash map sorted by the keys' encodings |
//! | `Option<T>` | 1 bit, then the value if present |
//! | `[T; N]` | the N elements, no length |
//! | tuples up to 4, `()` | the elements in order |
//! | `Box<T>` | as `T` |
//! | glam's `Vec2`..`Vec4`, `Vec3A`, `DVec2`..`DVec4`, `Quat`, `DQuat` (features `glam-0_32`, `glam-0_33`, `glam-0_34`) | the components' raw floats |
//! | [`ReplicationId`](crate::ReplicationId) | [varint](crate::BitWriter::write_varint) of the raw id: 1 bit for `#0`, 5 for `#3` |

mod collections;
pub(crate) mod encodings;
#[cfg(any(feature = "glam-0_32", feature = "glam-0_33", feature = "glam-0_34"))]
mod glam;
mod id;
pub(crate) mod quantize;
pub(crate) mod rotation;
mod scalar;
#[cfg(feature = "serde")]
mod serde;
mod std_collections;

#[cfg(feature = "serde")]
pub use self::serde::{serde_decode, serde_encode};

use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError};

/// A value that can be written to and read from the bit stream.
///
/// Field types of a `#[derive(Replicate)]` struct implement it; the derive
/// also implements it for the struct itself, so replicated structs nest.
///
/// Decoders take untrusted input: they return an error rather than panic,
/// and check every length against the bits that remain before allocating.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be replicated",
    label = "no bit encoding for `{Self}`",
    note = "a type of your own: add `#[derive(Replicate)]` to `{Self}`",
    note = "a type of another crate: mark the field `#[replicate(with = path::to::module)]` (your `encode` and `decode` functions), or `#[replicate(serde)]` if it implements serde's traits (feature `serde`), or wrap it in a newtype that implements `BitCodec`",
    note = "not replicated at all: mark the field `#[replicate(skip)]`"
)]
#[cfg_attr(
    not(any(feature = "glam-0_32", feature = "glam-0_33", feature = "glam-0_34")),
    diagnostic::on_unimplemented(
        note = "glam's vectors and quaternions need fastarray's feature for the glam version they come from: `glam-0_32` (Bevy 0.19), `glam-0_33` (Bevy 0.20) or `glam-0_34`"
    )
)]
#[cfg_attr(
    any(feature = "glam-0_32", feature = "glam-0_33", feature = "glam-0_34"),
    diagnostic::on_unimplemented(
        note = "if `{Self}` is a glam type, it comes from a glam version whose fastarray feature is off (this build has those below): `cargo tree -i glam` lists the versions in your build, and `glam-0_32` (Bevy 0.19), `glam-0_33` (Bevy 0.20) and `glam-0_34` turn them on"
    )
)]
#[cfg_attr(
    feature = "glam-0_32",
    diagnostic::on_unimplemented(note = "glam 0.32's types are encoded (feature `glam-0_32`)")
)]
#[cfg_attr(
    feature = "glam-0_33",
    diagnostic::on_unimplemented(note = "glam 0.33's types are encoded (feature `glam-0_33`)")
)]
#[cfg_attr(
    feature = "glam-0_34",
    diagnostic::on_unimplemented(note = "glam 0.34's types are encoded (feature `glam-0_34`)")
)]
pub trait BitCodec: Sized {
    /// The fewest bits any value of this type encodes to. Decoders of
    /// collections use it to bound a claimed length by the input size.
    const MIN_BITS: u64;

    /// A stable hash of this type's wire layout (see [`crate::schema`]).
    const TYPE_HASH: u64;

    /// Whether encoding or decoding a value can run the code of a
    /// `#[derive(Replicate)]` type, and so recurse through one
    /// ([`MAX_DEPTH`](crate::MAX_DEPTH) bounds that recursion). `true`, the
    /// default, is always correct. A type whose codec never reaches derived
    /// code (a number, a `String`, a `Vec` of those) says `false`: a derived
    /// type whose fields all say so cannot be on a cycle of recursion, and
    /// skips its depth guard, one check and count per value written or read.
    #[doc(hidden)]
    const NESTS: bool = true;

    /// The bits every value encodes to, if every value encodes to the
    /// same number and every pattern of that many bits decodes (numbers,
    /// floats sent raw, `bool`, and arrays and tuples of them): checking
    /// such a value on the wire is skipping its bits. `None`, the
    /// default, is always correct: the check decodes the value.
    #[doc(hidden)]
    const FIXED_BITS: Option<u64> = None;

    /// Writes the value.
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError>;

    /// Reads a value.
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError>;

    /// Whether `self` and `other` encode the same, which is what change
    /// detection asks. (For floats this compares bits, not `==`.)
    fn same(&self, other: &Self) -> bool;
}
