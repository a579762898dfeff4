//! `#[derive(Replicate)]` in a hostile caller: no prelude, and the std
//! names generated code might use unqualified are shadowed by the caller's
//! own items. The expansion must name everything by absolute path and
//! trigger no warning.

#![no_implicit_prelude]
#![deny(warnings, unused_qualifications)]
// Lints a strict caller may deny, which generated code must not trip.
#![deny(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    unused_results
)]
#![deny(
    single_use_lifetimes,
    unused_lifetimes,
    trivial_casts,
    trivial_numeric_casts
)]

// Shadows of the std names a careless expansion would pick up.
#[allow(dead_code)]
struct Result;
#[allow(dead_code)]
struct Ok;
#[allow(dead_code)]
struct Option;
#[allow(dead_code, non_snake_case)]
fn Some() {}
#[allow(dead_code)]
struct None;
#[allow(dead_code)]
struct Err;
#[allow(dead_code)]
trait Default {}
#[allow(dead_code)]
trait BitCodec {}
#[allow(dead_code)]
trait Replicate {}
#[allow(dead_code)]
struct FieldMask;
#[allow(dead_code)]
mod core {}
#[allow(dead_code)]
mod fastarray {}

use ::fastarray::Replicate as DeriveReplicate;

/// Named fields, a type parameter, a skipped field.
#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::cmp::PartialEq)]
pub struct Named<T> {
    hp: u8,
    position: T,
    #[replicate(skip)]
    cache: ::std::vec::Vec<u32>,
    label: ::std::string::String,
}

/// A tuple struct with a const parameter and a where-clause.
#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::cmp::PartialEq)]
pub struct Tuple<T, const N: usize>(
    /// Replicated.
    pub [T; N],
    /// Skipped.
    #[replicate(skip)]
    pub ::std::option::Option<T>,
)
where
    T: ::std::clone::Clone;

/// A unit struct.
#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::cmp::PartialEq)]
pub struct Unit;

#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::cmp::PartialEq)]
struct Secret(u16);

/// A public struct with a field of a private type: the generated code must
/// not leak the type (`Patch` is not a tuple of the field types, which
/// would be error E0446) nor warn about it in bounds.
#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::cmp::PartialEq)]
pub struct Holder {
    secret: Secret,
}

/// User encode/decode functions, named by a `with` attribute.
mod hex_digit {
    /// Writes a digit in 4 bits.
    pub(crate) fn encode(
        value: &u8,
        writer: &mut ::fastarray::BitWriter<'_>,
    ) -> ::std::result::Result<(), ::fastarray::EncodeError> {
        writer.write_bits_checked(::std::convert::From::from(*value), 4)
    }

    /// Reads a digit.
    pub(crate) fn decode(
        reader: &mut ::fastarray::BitReader<'_>,
    ) -> ::std::result::Result<u8, ::fastarray::DecodeError> {
        ::std::result::Result::Ok(reader.read_bits(4)? as u8)
    }
}

/// Every field encoding, with a generic quantized field.
#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::cmp::PartialEq)]
pub struct Encoded<F: ::fastarray::Quantize> {
    #[replicate(bits = 5)]
    level: u8,
    #[replicate(varint)]
    score: i64,
    #[replicate(quantize(min = -10, max = 10.0, bits = 12))]
    position: [f32; 2],
    #[replicate(quantize(min = 0, max = 1, bits = 8))]
    generic: F,
    #[replicate(with = hex_digit)]
    digit: u8,
    #[replicate(flatten)]
    inner: Named<i16>,
}

/// An enum with every kind of variant and a generic field.
#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::cmp::PartialEq)]
pub enum Command<T: ::std::clone::Clone> {
    /// A unit variant.
    Stop,
    /// A tuple variant with a skipped field.
    Go(T, #[replicate(skip)] u8),
    /// A struct variant with attributes.
    Aim {
        /// Quantized.
        #[replicate(quantize(min = -1, max = 1, bits = 9))]
        direction: f32,
        /// In 3 bits.
        #[replicate(bits = 3)]
        gear: u8,
    },
}

/// A replicated object: plain fields and an array field.
#[derive(DeriveReplicate, ::std::clone::Clone, ::std::fmt::Debug, ::std::default::Default)]
pub struct Room {
    /// A plain field.
    lights: bool,
    /// An array field.
    #[replicate(array)]
    people: ::fastarray::FastArray<Unit>,
}

fn round_trip<T: ::fastarray::Replicate + ::std::clone::Clone>(new: &T, old: &T) -> T {
    let mut bytes = ::std::vec::Vec::new();
    let mut writer = ::fastarray::BitWriter::new(&mut bytes);
    let mask = ::fastarray::Replicate::diff(new, old);
    ::fastarray::Replicate::encode_fields(new, mask, &mut writer).unwrap();
    let written = writer.finish();
    let mut reader = ::fastarray::BitReader::new(&bytes);
    let patch = <T as ::fastarray::Replicate>::decode_fields(mask, &mut reader).unwrap();
    ::std::assert_eq!(reader.bit_offset(), written);
    let mut mirror = ::std::clone::Clone::clone(old);
    ::std::assert_eq!(
        ::fastarray::Replicate::apply_patch(&mut mirror, patch),
        mask
    );
    mirror
}

#[test]
fn hostile_caller_compiles_and_runs() {
    let old = Named {
        hp: 1,
        position: 2i64,
        cache: ::std::vec![3],
        label: ::std::string::ToString::to_string("a"),
    };
    let new = Named {
        hp: 4,
        label: ::std::string::ToString::to_string("b"),
        ..::std::clone::Clone::clone(&old)
    };
    ::std::assert_eq!(round_trip(&new, &old), new);
    ::std::assert_eq!(<Named<i64> as ::fastarray::Replicate>::FIELD_COUNT, 3);

    let tuple = Tuple([1u8, 2, 3], ::std::option::Option::Some(4));
    let other = Tuple([1u8, 5, 3], ::std::option::Option::None);
    ::std::assert_eq!(round_trip(&other, &tuple).0, other.0);

    ::std::assert_eq!(round_trip(&Unit, &Unit), Unit);
    let holder = Holder { secret: Secret(7) };
    ::std::assert_eq!(round_trip(&holder, &Holder { secret: Secret(0) }), holder);

    let encoded = Encoded {
        level: 31,
        score: -5,
        position: [1.5, -2.25],
        generic: 0.5f64,
        digit: 15,
        inner: Named {
            hp: 2,
            position: -3,
            cache: ::std::vec::Vec::new(),
            label: ::std::string::ToString::to_string("n"),
        },
    };
    let zero = Encoded {
        level: 0,
        score: 0,
        position: [0.0, 0.0],
        generic: 0.0f64,
        digit: 0,
        inner: Named {
            hp: 0,
            position: 0,
            cache: ::std::vec::Vec::new(),
            label: ::std::string::String::new(),
        },
    };
    let mirrored = round_trip(&encoded, &zero);
    ::std::assert!(::fastarray::Replicate::diff(&mirrored, &encoded).is_empty());

    let aim: Command<u16> = Command::Aim {
        direction: 0.5,
        gear: 7,
    };
    ::std::assert!(
        ::fastarray::Replicate::diff(&round_trip(&aim, &Command::Stop), &aim).is_empty()
    );
    let go: Command<u16> = Command::Go(9, 0);
    ::std::assert_eq!(round_trip(&go, &Command::Go(1, 0)), go);

    let mut room = ::fastarray::Replicated::new(<Room as ::std::default::Default>::default());
    room.get_mut().lights = true;
    let _ = room.get_mut().people.push(Unit);
    let _ = room.commit();
    let mut conn = ::fastarray::SendState::new();
    let mut bytes = ::std::vec::Vec::new();
    let _ = room.write_delta(&mut conn, 0, &mut bytes).unwrap();
    let mut mirror = ::fastarray::Replicated::<Room>::mirror();
    let _ = mirror.apply_delta(&bytes, &mut ()).unwrap();
    ::std::assert!(mirror.get().lights);
    ::std::assert_eq!(mirror.get().people.len(), 1);

    // The shadows are items like any other.
    let _: (Result, Ok, Option, None, Err, FieldMask) = (Result, Ok, Option, None, Err, FieldMask);
    Some();
}
