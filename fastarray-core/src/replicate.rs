//! The [`Replicate`] trait: what `#[derive(Replicate)]` implements.

use crate::bits::{BitReader, BitWriter};
use crate::codec::BitCodec;
use crate::error::{DecodeError, EncodeError};
use crate::inner_array::InnerArray;
use crate::mask::FieldMask;
use crate::send_state::audience::{Audience, Owners};

/// Whether `a` and `b` encode to the same bits (`false` if either cannot
/// be encoded).
fn same_encoding<T: BitCodec>(a: &T, b: &T) -> bool {
    let encode = |value: &T| {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        let encoded = value.encode(&mut writer);
        let bits = writer.finish();
        encoded.ok().map(|()| (bits, bytes))
    };
    match (encode(a), encode(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Whether the `#[replicate(array)]` fields of `a` and `b` are equal on
/// the wire, field by field.
fn same_arrays<T: Replicate>(a: &T, b: &T) -> bool {
    if T::ARRAY_FIELDS == 0 {
        return true;
    }
    let mut same = true;
    let mut field = 0;
    a.for_each_array(&mut |mine| {
        let mut other_field = 0;
        let mut found = false;
        b.for_each_array(&mut |theirs| {
            if other_field == field {
                found = true;
                same &= mine.wire_eq_array(theirs);
            }
            other_field += 1;
        });
        same &= found;
        field += 1;
    });
    same
}

/// Calls `each` with the `#[replicate(array)]` fields of `a` and `b`,
/// field by field (the same field of each).
pub(crate) fn zip_arrays<T: Replicate>(
    a: &mut T,
    b: &mut T,
    each: &mut dyn FnMut(&mut dyn InnerArray, &mut dyn InnerArray),
) {
    if T::ARRAY_FIELDS == 0 {
        return;
    }
    let mut field = 0;
    a.for_each_array_mut(&mut |mine| {
        let mut other_field = 0;
        b.for_each_array_mut(&mut |theirs| {
            if other_field == field {
                each(&mut *mine, theirs);
            }
            other_field += 1;
        });
        field += 1;
    });
}

/// A struct whose replicated fields can be diffed and sent one by one.
///
/// Implement it with `#[derive(Replicate)]`; the derive also implements
/// [`BitCodec`] (all replicated fields in declaration order), which is the
/// full encoding of the value used for new items and snapshots.
///
/// Field `i` of the [`FieldMask`]s below is the `i`-th replicated field in
/// declaration order; `#[replicate(skip)]` fields have no bit, are never
/// sent, and are `Default::default()` on the receiving side.
///
/// ```
/// use fastarray_core::{BitReader, BitWriter, FieldMask, Replicate};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // only needed when naming the runtime crate directly
/// struct Agent {
///     hp: u8,
///     name: String,
///     #[replicate(skip)]
///     cache: u32,
/// }
///
/// let before = Agent { hp: 10, name: "ann".into(), cache: 1 };
/// let after = Agent { hp: 7, ..before.clone() };
/// assert_eq!(Agent::FIELD_COUNT, 2);
/// assert_eq!(after.diff(&before), FieldMask::single(0));
///
/// // Send only the changed field, then patch the receiver's copy.
/// let mut bytes = Vec::new();
/// let mut w = BitWriter::new(&mut bytes);
/// after.encode_fields(FieldMask::single(0), &mut w).unwrap();
/// assert_eq!(w.finish(), 8);
/// let patch = Agent::decode_fields(FieldMask::single(0), &mut BitReader::new(&bytes)).unwrap();
/// let mut mirror = Agent { cache: 0, ..before };
/// assert_eq!(mirror.apply_patch(patch), FieldMask::single(0));
/// assert_eq!(mirror.hp, 7);
///
/// // A patch that carries the value the receiver holds changes nothing.
/// let patch = Agent::decode_fields(FieldMask::single(0), &mut BitReader::new(&bytes)).unwrap();
/// assert_eq!(mirror.apply_patch(patch), FieldMask::EMPTY);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not implement `Replicate`",
    label = "not a `#[derive(Replicate)]` type",
    note = "add `#[derive(Replicate)]` to the definition of `{Self}`"
)]
pub trait Replicate: BitCodec {
    /// Number of replicated fields (at most 64).
    const FIELD_COUNT: u32;

    /// Stable hash of the replicated fields' names and wire types, in order.
    /// Two builds whose values would decode differently have different hashes.
    const SCHEMA_HASH: u64;

    /// The type's name, for error messages.
    const TYPE_NAME: &'static str;

    /// Fields whose change changes the value's shape: an enum's variant
    /// (bit 0). A change touching them is sent as the whole value, and the
    /// client's copy counts as provisional until a whole value written after
    /// it is acknowledged, so a partial change never reaches a copy of
    /// another variant. Empty for structs.
    const STRUCTURE: FieldMask = FieldMask::EMPTY;

    /// Some of the replicated fields, decoded from the wire but not yet
    /// applied: decoding a message never touches the receiver until the
    /// whole message is known to be valid.
    type Patch;

    /// The replicated fields a connection that sees this item at detail
    /// level `level` (`0..=`[`MAX_DETAIL`](crate::MAX_DETAIL)) is sent
    /// changes of: those whose `#[replicate(detail = N)]` is at most
    /// `level` (a field without it has detail 0, and always goes). A
    /// `#[replicate(flatten)]` field's leaves go when both it and the leaf
    /// are within the level. Every field unless the derive says otherwise.
    /// See [`ScopeMut::set_detail`](crate::ScopeMut::set_detail).
    fn detail_mask(level: u8) -> FieldMask {
        let _ = level;
        FieldMask::all(Self::FIELD_COUNT)
    }

    /// Whether a detail level can withhold some of the fields
    /// ([`detail_mask`](Self::detail_mask) of level 0 is not every field).
    /// A whole value of such a type carries only the fields its
    /// connection sees, so its whole entries on the wire say which (one
    /// bit, and the field set when some are withheld): part of the wire
    /// format, so the schema hash includes it (the levels themselves are
    /// a sending policy, and it does not).
    const WITHHOLDS: bool = false;

    /// The replicated fields only the connection that owns the item is
    /// sent (`#[replicate(owner_only)]`: a player's ammo, inventory, quest
    /// state); every other connection that sees the item holds them at
    /// `Default`.
    const OWNER_ONLY: FieldMask = FieldMask::EMPTY;

    /// The replicated fields every connection that sees the item is sent
    /// but its owner (`#[replicate(skip_owner)]`: what the owner predicts
    /// itself, such as its own position).
    const SKIP_OWNER: FieldMask = FieldMask::EMPTY;

    /// The replicated fields sent with the whole value when the item
    /// enters a connection's view, and never as a change
    /// (`#[replicate(initial_only)]`: a spawn position, a name fixed at
    /// creation).
    const INITIAL_ONLY: FieldMask = FieldMask::EMPTY;

    /// Reads a whole value of which only the fields in `mask` were written
    /// (with [`encode_fields`](Self::encode_fields)), `mask` being one of
    /// the type's [`detail_mask`](Self::detail_mask)s: each field it
    /// withholds is its `Default`, as a skipped field is. Without detail
    /// levels, `mask` must be every field.
    fn decode_visible(mask: FieldMask, reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        if mask.covers(FieldMask::all(Self::FIELD_COUNT)) {
            Self::decode(reader)
        } else {
            Err(DecodeError::InvalidFieldSet {
                bit_offset: reader.bit_offset(),
                field_count: Self::FIELD_COUNT,
            })
        }
    }

    /// The replicated fields whose values differ between `self` and `other`
    /// (compared with [`BitCodec::same`]).
    fn diff(&self, other: &Self) -> FieldMask;

    /// Writes the fields in `mask`, in field order.
    fn encode_fields(&self, mask: FieldMask, writer: &mut BitWriter<'_>)
    -> Result<(), EncodeError>;

    /// Reads the fields in `mask`, as written by [`encode_fields`](Self::encode_fields).
    fn decode_fields(
        mask: FieldMask,
        reader: &mut BitReader<'_>,
    ) -> Result<Self::Patch, DecodeError>;

    /// Every replicated field of a whole value, as a patch (skipped fields
    /// are dropped). A mirror applies a whole copy field by field with it.
    fn into_patch(self) -> Self::Patch;

    /// Drops from `patch` every field not in `keep`.
    fn retain_fields(patch: &mut Self::Patch, keep: FieldMask);

    /// Whether `self` and `other` are equal *as the wire sees them*: their
    /// replicated fields encode to the same bits, and their
    /// `#[replicate(array)]` fields hold the same ids with items equal in
    /// the same sense ([`FastArray::wire_eq`](crate::FastArray::wire_eq)).
    ///
    /// This, not `==`, is what a mirror has of its server. `==` compares
    /// the values held: a quantized field on the client holds the step the
    /// server's value was sent as, so it is almost never `==` the server's,
    /// and a skipped field holds the client's own value. Here a quantized
    /// field compares as its step (values a step apart differ, values
    /// within one do not; out-of-range values compare as the end they are
    /// clamped to, `NaN` as `min`), a skipped field is not compared, and a
    /// raw float compares its bits (`NaN` equals itself, `-0.0` differs
    /// from `0.0`). A value that cannot be encoded (an integer too wide
    /// for its `bits`) is equal to nothing: it never reaches a mirror.
    /// A quaternion sent as smallest-three (`quantize(bits = N)`) is sent
    /// as a code that decodes to a value re-encoding to it, so a mirror's
    /// compares equal ([`SmallestThree::quantize_as`](crate::SmallestThree::quantize_as));
    /// an `f32` `Quat` past 30 bits (finer than an `f32` holds) may not.
    ///
    /// The default encodes both values; there is no need to override it.
    ///
    /// ```
    /// use fastarray_core::Replicate;
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Dot {
    ///     #[replicate(quantize(min = 0.0, max = 10.0, bits = 8))] // steps of 10/255
    ///     x: f32,
    ///     #[replicate(skip)]
    ///     trail: Vec<f32>,
    /// }
    ///
    /// let server = Dot { x: 1.0, trail: vec![0.9] };
    /// let client = Dot { x: 1.0196079, trail: vec![] }; // step 26 (of 255), as received
    /// assert!(server != client && server.wire_eq(&client));
    /// assert!(!server.wire_eq(&Dot { x: 1.06, trail: vec![] })); // step 27
    /// ```
    fn wire_eq(&self, other: &Self) -> bool {
        same_encoding(self, other) && same_arrays(self, other)
    }

    /// Overwrites the fields carried by `patch` and returns those whose
    /// value changed: a field is named if its old value and the patch's are
    /// not the same as [`diff`](Self::diff) compares them (its encoding's
    /// notion of sameness: [`BitCodec::same`], or the quantized value for a
    /// `quantize` field), so a patch carrying the values `self` already
    /// holds returns an empty mask. A flattened field's leaves are named at
    /// their place in the mask. For an enum, a whole value of another
    /// variant replaces `self` and the result is what `diff` names for a
    /// change of variant (the variant and every field of the new one); a
    /// partial patch for another variant cannot apply, changes nothing and
    /// returns an empty mask.
    fn apply_patch(&mut self, patch: Self::Patch) -> FieldMask;

    /// Names mask bit `index`: pushes onto `path` the name of the field
    /// that has it (a tuple struct's fields are `"0"`, `"1"`…) and, for a
    /// leaf of a `#[replicate(flatten)]` field, the names within that
    /// field's type after it (`body`, `position` for `body.position`),
    /// and returns `true`; returns `false`, leaving `path` as it was, for
    /// a bit the type has no name for (past its fields, or an enum's:
    /// the derive names a struct's fields only).
    ///
    /// ```
    /// use fastarray_core::Replicate;
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Body { position: [f32; 3], speed: f32 }
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")]
    /// struct Unit { hp: u8, #[replicate(flatten)] body: Body }
    ///
    /// let mut path = Vec::new();
    /// assert!(Unit::field_path(2, &mut path));
    /// assert_eq!(path, ["body", "speed"]);
    /// assert!(!Unit::field_path(3, &mut Vec::new()));
    /// ```
    fn field_path(index: u32, path: &mut Vec<&'static str>) -> bool {
        let _ = (index, path);
        false
    }

    /// Number of `#[replicate(array)]` fields: `FastArray`s inside the
    /// value, replicated by id rather than as fields (they have no bit in
    /// the [`FieldMask`]s above, and [`BitCodec::encode`] leaves them out).
    /// Zero unless the type has such fields.
    const ARRAY_FIELDS: u32 = 0;

    /// Folds into `hash` the bits of the defaults this type's whole values
    /// are written against: its own `Default` if it has
    /// `#[replicate(default_baseline)]` ([`fold_baseline`]), then those of
    /// its `flatten`ed fields' types. Peers compare the result with the
    /// schema ([`FastArray::schema_handshake`](crate::FastArray::schema_handshake)):
    /// a compile-time hash cannot see what `Default::default()` returns.
    #[doc(hidden)]
    fn fold_baselines(hash: u64) -> u64 {
        hash
    }

    /// The names of the `#[replicate(array)]` fields, in declaration order
    /// (what [`ArrayOwner::field`](crate::ArrayOwner::field) says).
    #[doc(hidden)]
    const ARRAY_FIELD_NAMES: &'static [&'static str] = &[];

    /// For a type with array fields: a copy of the replicated plain fields
    /// with empty arrays, which is all a change needs to be diffed against
    /// (the arrays track their own changes). `None`, the default, means
    /// "clone the whole value".
    #[doc(hidden)]
    fn pre_image(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }

    /// Makes `into`, an earlier pre-image of any item of this type, the
    /// pre-image of `self`: copies each replicated field into `into`'s
    /// with `Clone::clone_from`, which reuses what `into` owns (a
    /// `String`'s buffer). Returns `false`, having perhaps written some
    /// fields, if the type cannot: a field that is not `Clone`, an enum, a
    /// type with array fields (see [`pre_image`](Self::pre_image)), a
    /// hand-written impl. The caller then clones.
    #[doc(hidden)]
    fn capture_into(&self, into: &mut Self) -> bool
    where
        Self: Sized,
    {
        let _ = into;
        false
    }

    /// Brings `into`, which holds an earlier value of this same item that
    /// differs from `self` (as [`diff`](Self::diff) compares) in `fields`
    /// at most, up to `self`: copies the replicated fields in `fields`
    /// like [`capture_into`](Self::capture_into) and leaves the others.
    /// Commit calls it with the fields it found changed, so the pre-image
    /// buffer of an item written again next frame already holds its value
    /// and the guard copies nothing. Returns `false`, having perhaps
    /// written some fields, where `capture_into` would: `into` is then not
    /// used as the item's value.
    #[doc(hidden)]
    fn capture_fields_into(&self, into: &mut Self, fields: FieldMask) -> bool
    where
        Self: Sized,
    {
        let _ = (into, fields);
        false
    }

    /// Reads past the fields in `mask`, as [`encode_fields`](Self::encode_fields)
    /// wrote them, checking them as [`decode_fields`](Self::decode_fields)
    /// would: the same bits, and the same errors. A mirror checks a delta's
    /// changed fields with it before reading them into the items
    /// ([`apply_fields`](Self::apply_fields)). The default decodes them;
    /// the derive skips the bits of a field every pattern of whose bits
    /// decodes (a number, a raw or quantized float, arrays of those), and
    /// decodes the others.
    #[doc(hidden)]
    #[inline]
    fn check_fields(mask: FieldMask, reader: &mut BitReader<'_>) -> Result<(), DecodeError>
    where
        Self: Sized,
    {
        Self::decode_fields(mask, reader).map(drop)
    }

    /// Reads the fields in `sent`, as [`encode_fields`](Self::encode_fields)
    /// wrote them, straight into `self`, keeping only those in `keep` (the
    /// others are read past) and returning those whose value changed, as
    /// [`apply_patch`](Self::apply_patch) does with the same fields, but
    /// for a quantized field by the value read rather than by its step
    /// ([`Quantize::same_as_read`](crate::Quantize::same_as_read): the
    /// same for a value read before, and one comparison of bits). A
    /// mirror applies an entry's changed fields through it, from a message
    /// already checked whole: no patch is built and moved, and a field's
    /// value is written once, where it lives.
    ///
    /// On an error, fields before the one that failed may have been
    /// written: callers check the same bits with
    /// [`check_fields`](Self::check_fields) first. The default decodes a
    /// patch and applies it; the derive writes each field in place.
    #[doc(hidden)]
    #[inline]
    fn apply_fields(
        &mut self,
        sent: FieldMask,
        keep: FieldMask,
        reader: &mut BitReader<'_>,
    ) -> Result<FieldMask, DecodeError>
    where
        Self: Sized,
    {
        let mut patch = Self::decode_fields(sent, reader)?;
        if keep != sent {
            Self::retain_fields(&mut patch, keep);
        }
        Ok(self.apply_patch(patch))
    }

    /// Calls `visit` with each array field, in declaration order.
    #[doc(hidden)]
    fn for_each_array(&self, visit: &mut dyn FnMut(&dyn InnerArray)) {
        let _ = visit;
    }

    /// Calls `visit` with each array field, mutably, in declaration order.
    #[doc(hidden)]
    fn for_each_array_mut(&mut self, visit: &mut dyn FnMut(&mut dyn InnerArray)) {
        let _ = visit;
    }

    /// Calls `visit` with a new, empty array of each array field's type, in
    /// declaration order (to read past array deltas of an item that is no
    /// longer there).
    #[doc(hidden)]
    fn for_each_empty_array(visit: &mut dyn FnMut(&dyn InnerArray))
    where
        Self: Sized,
    {
        let _ = visit;
    }
}

/// The audience rule of item type `T` on an array whose items `owners`
/// owns (`None`: nobody owns anything, as for a snapshot read by anyone).
pub(crate) fn audience<T: Replicate>(owners: Option<&Owners>) -> Audience<'_> {
    Audience::new(
        FieldMask::all(T::FIELD_COUNT),
        T::OWNER_ONLY,
        T::SKIP_OWNER,
        owners,
    )
}

/// What peers compare to know that they read each other's bits alike (a
/// handshake, a snapshot's or a feed's header): the type's `SCHEMA_HASH`,
/// with the bits of the defaults its whole values are written against
/// (`#[replicate(default_baseline)]`, its own and its flattened fields')
/// folded in. A whole value leaves out the fields equal to the default's,
/// so both sides must build the same default.
pub(crate) fn wire_schema<T: Replicate>() -> u64 {
    T::fold_baselines(T::SCHEMA_HASH)
}

/// Folds into `hash` the bits of `default`, the value whole values of
/// `T` are written against: every field, as
/// [`encode_fields`](Replicate::encode_fields) writes them (or, for a
/// default that cannot be encoded, such as an integer too wide for its
/// `bits`, the error).
#[doc(hidden)]
pub fn fold_baseline<T: Replicate>(hash: u64, default: &T) -> u64 {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    let written = default.encode_fields(FieldMask::all(T::FIELD_COUNT), &mut writer);
    let bits = writer.finish();
    let hash = crate::schema::str(hash, "baseline");
    let hash = match written {
        Ok(()) => crate::schema::u64(hash, bits),
        Err(error) => crate::schema::str(hash, &error.to_string()),
    };
    crate::schema::bytes(hash, &bytes)
}

/// Encodes the fields `fields` of `value` as a whole value carries them:
/// every field as [`BitCodec::encode`] writes it, some as
/// [`Replicate::encode_fields`] does.
pub(crate) fn encode_whole<T: Replicate>(
    value: &T,
    fields: FieldMask,
    writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    if fields == FieldMask::all(T::FIELD_COUNT) {
        value.encode(writer)
    } else {
        value.encode_fields(fields, writer)
    }
}
