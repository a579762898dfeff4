//! The whole value of a type with `#[replicate(default_baseline)]`: which
//! of its fields differ from the type's `Default`, then only those.
//!
//! ```text
//! payload-whole = 0                       every field follows, as without the attribute
//!               | 1 0                     the value is the type's default: nothing follows
//!               | 1 1 field-set           only these fields follow; the others are the default's
//! ```
//!
//! The set is never every field (that is the first form), so each value
//! has one encoding, and a decoder refuses the others.

use crate::bits::{BitReader, BitWriter};
use crate::error::DecodeError;
use crate::mask::FieldMask;
use crate::wire::field_set::{read_field_set, write_field_set};

/// Writes how a whole value of a type of `field_count` fields relates to
/// its default, `differs` being the fields in which it differs: returns
/// whether only those follow (`false`: every field follows).
pub fn write_baseline_form(
    writer: &mut BitWriter<'_>,
    differs: FieldMask,
    field_count: u32,
) -> bool {
    if differs == FieldMask::all(field_count) {
        writer.write_bool(false);
        return false;
    }
    writer.write_bool(true);
    writer.write_bool(!differs.is_empty());
    if !differs.is_empty() {
        write_field_set(writer, differs, field_count);
    }
    true
}

/// Reads what [`write_baseline_form`] wrote: `None` when every field
/// follows, else the fields that do (empty: the value is the default).
/// A set of every field is refused, as the costlier of two forms of one
/// value ([`DecodeError::InvalidFieldSet`]).
pub fn read_baseline_form(
    reader: &mut BitReader<'_>,
    field_count: u32,
) -> Result<Option<FieldMask>, DecodeError> {
    if !reader.read_bool()? {
        return Ok(None);
    }
    let bit_offset = reader.bit_offset();
    if !reader.read_bool()? {
        return Ok(Some(FieldMask::EMPTY));
    }
    let differs = read_field_set(reader, field_count)?;
    if differs == FieldMask::all(field_count) {
        return Err(DecodeError::InvalidFieldSet {
            bit_offset,
            field_count,
        });
    }
    Ok(Some(differs))
}

/// The fewest bits a whole value of a type with a default baseline takes,
/// `plain` being the fewest without it: `1 0`, the default, unless the
/// plain form is shorter still.
pub const fn baseline_min_bits(plain: u64) -> u64 {
    let plain = plain.saturating_add(1);
    if plain < 2 { plain } else { 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(differs: FieldMask, field_count: u32) -> (bool, Option<FieldMask>, u64) {
        let mut out = Vec::new();
        let partial = write_baseline_form(&mut BitWriter::new(&mut out), differs, field_count);
        let mut reader = BitReader::new(&out);
        let read = read_baseline_form(&mut reader, field_count).expect("a form written");
        (partial, read, reader.bit_offset())
    }

    #[test]
    fn each_form_reads_back_as_written() {
        let all = FieldMask::all(5);
        assert_eq!(round_trip(all, 5), (false, None, 1));
        assert_eq!(
            round_trip(FieldMask::EMPTY, 5),
            (true, Some(FieldMask::EMPTY), 2)
        );
        let some = FieldMask::single(0).with(3);
        let (partial, read, bits) = round_trip(some, 5);
        assert!(partial);
        assert_eq!(read, Some(some));
        assert_eq!(bits, 2 + 1 + 5, "two form bits, then the set as a mask");
        // A type without fields: its one value is every field, and the default.
        assert_eq!(round_trip(FieldMask::EMPTY, 0), (false, None, 1));
    }

    #[test]
    fn a_set_of_every_field_is_refused() {
        let mut out = Vec::new();
        let mut writer = BitWriter::new(&mut out);
        writer.write_bool(true);
        writer.write_bool(true);
        write_field_set(&mut writer, FieldMask::all(5), 5);
        drop(writer);
        let error = read_baseline_form(&mut BitReader::new(&out), 5).unwrap_err();
        assert!(matches!(
            error,
            DecodeError::InvalidFieldSet {
                bit_offset: 1,
                field_count: 5
            }
        ));
    }

    #[test]
    fn the_fewest_bits_are_the_default_or_the_plain_form() {
        assert_eq!(baseline_min_bits(0), 1);
        assert_eq!(baseline_min_bits(1), 2);
        assert_eq!(baseline_min_bits(96), 2);
        assert_eq!(baseline_min_bits(u64::MAX), 2);
    }
}
