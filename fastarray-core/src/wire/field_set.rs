//! The set of changed fields of an entry: a mask, or a count and one
//! index per field, whichever is shorter.

use crate::bits::{BitReader, BitWriter, gamma_bits, gamma_word};
use crate::error::DecodeError;
use crate::mask::FieldMask;

/// Bits of one field handle for a type with `field_count` fields: ⌈log2⌉.
fn handle_bits(field_count: u32) -> u32 {
    if field_count <= 1 {
        0
    } else {
        32 - (field_count - 1).leading_zeros()
    }
}

/// The two ways of writing a set of changed fields, as (mask, handles) sizes.
fn field_set_costs(mask: FieldMask, field_count: u32) -> (u64, u64) {
    let as_mask = u64::from(field_count);
    let count = u64::from(mask.len());
    let as_handles =
        gamma_bits(count.saturating_sub(1)) + count * u64::from(handle_bits(field_count));
    (as_mask, as_handles)
}

/// Bits [`write_field_set`] uses.
pub(crate) fn field_set_bits(mask: FieldMask, field_count: u32) -> u64 {
    let (as_mask, as_handles) = field_set_costs(mask, field_count);
    1 + as_mask.min(as_handles)
}

/// Writes a non-empty set of changed fields in the cheaper of two forms,
/// chosen by one selector bit: `0` + the mask (`field_count` bits), or
/// `1` + count − 1 (Elias-gamma) + one ⌈log2 field_count⌉-bit index per
/// field, ascending. Ties go to the mask.
pub(crate) fn write_field_set(writer: &mut BitWriter<'_>, mask: FieldMask, field_count: u32) {
    match field_set_word(mask, field_count) {
        Some((word, bits)) => writer.write_bits(word, bits),
        None => write_field_set_parts(writer, mask, field_count),
    }
}

/// [`write_field_set`]'s code as one word, first bit lowest, and its
/// length: `None` past 64 bits (a mask of 64 fields, many handles).
fn field_set_word(mask: FieldMask, field_count: u32) -> Option<(u64, u32)> {
    let (as_mask, as_handles) = field_set_costs(mask, field_count);
    if as_mask <= as_handles {
        return (field_count < 64).then(|| (mask.bits() << 1, field_count + 1));
    }
    let bits = 1 + as_handles;
    if bits > 64 {
        return None;
    }
    let (gamma, gamma_len) = gamma_word(u64::from(mask.len()) - 1)?;
    let handle = handle_bits(field_count);
    let mut word = 1 | gamma << 1;
    let mut at = 1 + gamma_len;
    for index in mask.iter() {
        word |= u64::from(index) << at;
        at += handle;
    }
    Some((word, bits as u32))
}

/// [`write_field_set`] piece by piece, for a code longer than a word.
#[cold]
fn write_field_set_parts(writer: &mut BitWriter<'_>, mask: FieldMask, field_count: u32) {
    let (as_mask, as_handles) = field_set_costs(mask, field_count);
    if as_mask <= as_handles {
        writer.write_bool(false);
        writer.write_bits(mask.bits(), field_count);
    } else {
        writer.write_bool(true);
        writer.write_gamma(u64::from(mask.len()) - 1);
        let bits = handle_bits(field_count);
        for index in mask.iter() {
            writer.write_bits(u64::from(index), bits);
        }
    }
}

/// A field set's code, worked out once and written as often as the set
/// repeats: the entries of a message mostly carry the same few sets (a
/// move, a hit), and working out the cheaper form costs more than
/// writing it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldSetCode {
    /// The set coded (empty: none yet, as no written set is).
    mask: FieldMask,
    word: u64,
    /// The code's length; 0 when it is longer than a word.
    bits: u32,
}

impl FieldSetCode {
    /// No set coded yet.
    pub(crate) const NONE: Self = Self {
        mask: FieldMask::EMPTY,
        word: 0,
        bits: 0,
    };

    /// Writes `mask` as [`write_field_set`] does, coding it first unless
    /// it is the set coded last.
    #[inline]
    pub(crate) fn write(&mut self, writer: &mut BitWriter<'_>, mask: FieldMask, field_count: u32) {
        if mask != self.mask {
            let (word, bits) = field_set_word(mask, field_count).unwrap_or((0, 0));
            *self = Self { mask, word, bits };
        }
        if self.bits > 0 {
            writer.write_bits(self.word, self.bits);
        } else {
            write_field_set_parts(writer, mask, field_count);
        }
    }
}

/// Reads a field set written by [`write_field_set`], refusing empty sets,
/// fields the type does not have, and the costlier of the two forms.
pub(crate) fn read_field_set(
    reader: &mut BitReader<'_>,
    field_count: u32,
) -> Result<FieldMask, DecodeError> {
    let bit_offset = reader.bit_offset();
    let invalid = DecodeError::InvalidFieldSet {
        bit_offset,
        field_count,
    };
    let handles = reader.read_bool()?;
    let mask = if handles {
        let count = reader.read_gamma()?.saturating_add(1);
        if count > u64::from(field_count) {
            return Err(invalid);
        }
        let bits = handle_bits(field_count);
        let mut mask = FieldMask::EMPTY;
        let mut previous: Option<u64> = None;
        for _ in 0..count {
            let index = reader.read_bits(bits)?;
            if index >= u64::from(field_count) || previous.is_some_and(|p| index <= p) {
                return Err(invalid);
            }
            previous = Some(index);
            mask = mask.with(index as u32);
        }
        mask
    } else {
        let mask = FieldMask::from_bits(reader.read_bits(field_count)?);
        if !FieldMask::all(field_count).covers(mask) {
            return Err(invalid);
        }
        mask
    };
    let (as_mask, as_handles) = field_set_costs(mask, field_count);
    if mask.is_empty() || handles != (as_handles < as_mask) {
        return Err(invalid);
    }
    Ok(mask)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_round_trip_in_the_cheaper_form() {
        for field_count in [1u32, 2, 5, 8, 13, 64] {
            let all = FieldMask::all(field_count).bits();
            let masks = [
                1u64,
                all,
                all & 0x5555_5555_5555_5555,
                1 << (field_count - 1),
                all & 0b1001,
            ];
            for bits in masks.into_iter().filter(|&m| m != 0) {
                let mask = FieldMask::from_bits(bits);
                let mut out = Vec::new();
                let mut w = BitWriter::new(&mut out);
                write_field_set(&mut w, mask, field_count);
                let written = w.bits_written();
                assert_eq!(written, field_set_bits(mask, field_count));
                w.finish();
                let mut r = BitReader::new(&out);
                assert_eq!(read_field_set(&mut r, field_count), Ok(mask));
                assert_eq!(r.bit_offset(), written);
            }
        }
        // One field of five: selector + gamma(0) + 3-bit handle = 5 bits, not 1 + 5.
        assert_eq!(field_set_bits(FieldMask::single(3), 5), 5);
        // Every field of five: the mask is cheaper.
        assert_eq!(field_set_bits(FieldMask::all(5), 5), 6);
    }

    /// The one-word code and the code it caches are checked against the
    /// piece-by-piece writer, which builds neither.
    #[test]
    fn a_coded_set_writes_what_write_field_set_does_as_sets_repeat_and_change() {
        for field_count in [1u32, 5, 13, 40, 63, 64] {
            let all = FieldMask::all(field_count).bits();
            let masks = [1u64, 1, all, all & 0xaaaa_aaaa_aaaa_aaaa, 1, all, all];
            let masks = masks.map(|m| m & all).into_iter().filter(|&m| m != 0);
            let (mut coded, mut plain) = (Vec::new(), Vec::new());
            let mut code = FieldSetCode::NONE;
            let (mut a, mut b) = (BitWriter::new(&mut coded), BitWriter::new(&mut plain));
            let mut one = Vec::new();
            let mut c = BitWriter::new(&mut one);
            for mask in masks.map(FieldMask::from_bits) {
                code.write(&mut a, mask, field_count);
                write_field_set_parts(&mut b, mask, field_count);
                write_field_set(&mut c, mask, field_count);
                assert_eq!(a.bits_written(), b.bits_written());
            }
            c.finish();
            a.finish();
            b.finish();
            assert_eq!(coded, plain, "{field_count} fields");
            assert_eq!(one, plain, "{field_count} fields");
        }
    }

    #[test]
    fn non_canonical_field_sets_are_refused() {
        let cases: [&dyn Fn(&mut BitWriter<'_>); 4] = [
            // Empty mask.
            &|w| {
                w.write_bool(false);
                w.write_bits(0, 5);
            },
            // Field 6 of 5.
            &|w| {
                w.write_bool(false);
                w.write_bits(1 << 5, 6);
            },
            // One field as a mask, when handles are cheaper.
            &|w| {
                w.write_bool(false);
                w.write_bits(0b100, 5);
            },
            // Handles out of order.
            &|w| {
                w.write_bool(true);
                w.write_gamma(1);
                w.write_bits(3, 3);
                w.write_bits(1, 3);
            },
        ];
        for (n, case) in cases.iter().enumerate() {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            case(&mut w);
            w.finish();
            assert!(
                matches!(
                    read_field_set(&mut BitReader::new(&out), 5),
                    Err(DecodeError::InvalidFieldSet { .. })
                ),
                "case {n}"
            );
        }
    }
}
