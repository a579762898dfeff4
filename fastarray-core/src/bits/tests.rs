//! Tests of the bit writer, reader and codes.

use super::*;
use crate::error::{DecodeError, EncodeError};

fn varint_bits(v: u64) -> u64 {
    let mut out = Vec::new();
    let mut w = BitWriter::new(&mut out);
    w.write_varint(v);
    w.bits_written()
}

#[test]
fn varint_sizes_match_the_table() {
    let expect = [
        (0, 1),
        (1, 4),
        (2, 4),
        (3, 5),
        (6, 5),
        (7, 8),
        (14, 8),
        (63, 11),
        (126, 11),
        (1000, 16),
        (10_000, 20),
        (u64::MAX, 77),
    ];
    for (v, bits) in expect {
        assert_eq!(varint_bits(v), bits, "varint({v})");
    }
}

#[test]
fn gamma_sizes_match_the_table() {
    for (v, bits) in [
        (0u64, 1u64),
        (1, 3),
        (2, 3),
        (3, 5),
        (1000, 19),
        (u64::MAX, 129),
    ] {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write_gamma(v);
        assert_eq!(w.bits_written(), bits, "gamma({v})");
    }
}

#[test]
fn extreme_varints_round_trip() {
    for v in [
        0,
        1,
        2,
        127,
        128,
        u64::from(u32::MAX),
        u64::MAX - 1,
        u64::MAX,
    ] {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write_varint(v);
        w.write_gamma(v);
        w.write_varint_signed(v as i64);
        w.finish();
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_varint(), Ok(v));
        assert_eq!(r.read_gamma(), Ok(v));
        assert_eq!(r.read_varint_signed(), Ok(v as i64));
        assert_eq!(r.expect_end(), Ok(()));
    }
}

#[test]
fn overlong_prefixes_are_rejected() {
    // Seven zero bits cannot start an Elias-delta code of a u64.
    let mut r = BitReader::new(&[0x00, 0xff]);
    assert_eq!(
        r.read_varint(),
        Err(DecodeError::VarintOverlong { bit_offset: 0 })
    );
    // 64 zeros may still start the code of u64::MAX: the input ended.
    let mut r = BitReader::new(&[0u8; 8]);
    assert!(matches!(
        r.read_gamma(),
        Err(DecodeError::UnexpectedEnd { .. })
    ));
    // 65 zeros cannot start an Elias-gamma code of a u64.
    let bytes = [0u8; 9];
    let mut r = BitReader::new(&bytes);
    assert_eq!(
        r.read_gamma(),
        Err(DecodeError::VarintOverlong { bit_offset: 0 })
    );
}

#[test]
fn varint_just_past_u64_is_out_of_range() {
    // Elias-gamma of 2^64 + 1: 64 zeros, a one, then 64 bits equal to 1.
    let mut out = Vec::new();
    let mut w = BitWriter::new(&mut out);
    w.write_bits(0, 64);
    w.write_bool(true);
    w.write_bits(1, 64);
    w.finish();
    assert_eq!(
        BitReader::new(&out).read_gamma(),
        Err(DecodeError::VarintOutOfRange {
            bit_offset: 0,
            target: "u64"
        })
    );
}

#[test]
fn checked_bits_refuse_values_that_do_not_fit() {
    let mut out = Vec::new();
    let mut w = BitWriter::new(&mut out);
    assert_eq!(w.write_bits_checked(7, 3), Ok(()));
    assert_eq!(
        w.write_bits_checked(8, 3),
        Err(EncodeError::ValueOutOfRange { value: 8, bits: 3 })
    );
    assert_eq!(w.bits_written(), 3);
}

#[test]
fn reads_past_the_end_fail_without_consuming() {
    let mut r = BitReader::new(&[0xab]);
    assert_eq!(r.read_bits(4), Ok(0xb));
    assert_eq!(
        r.read_bits(5),
        Err(DecodeError::UnexpectedEnd {
            bit_offset: 4,
            wanted: 5
        })
    );
    assert_eq!(r.read_bits(4), Ok(0xa));
    assert_eq!(r.remaining_bits(), 0);
}

#[test]
fn unaligned_bytes_round_trip() {
    let mut out = Vec::new();
    let mut w = BitWriter::new(&mut out);
    w.write_bool(true);
    w.write_bytes(b"hey");
    assert_eq!(w.finish(), 25);
    let mut r = BitReader::new(&out);
    assert_eq!(r.read_bool(), Ok(true));
    let mut s = Vec::new();
    r.read_bytes_into(3, &mut s).unwrap();
    assert_eq!(s, b"hey");
    assert_eq!(r.expect_end(), Ok(()));
}

/// Bytes written whole are the bits of each byte in turn, at every lead
/// and every length (whole words, then what is left as one).
#[test]
fn writing_bytes_is_writing_each_byte() {
    let bytes: Vec<u8> = (0..19u32).map(|i| (i * 91 + 7) as u8 ^ 0x5C).collect();
    for lead in [0u32, 1, 5, 8, 31, 63] {
        for len in 0..=bytes.len() {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            let mut writer = BitWriter::new(&mut fast);
            writer.write_bits(0x3C3C_3C3C_3C3C_3C3C, lead);
            writer.write_bytes(&bytes[..len]);
            writer.write_bits(0b11, 2);
            let written = writer.finish();
            let mut writer = BitWriter::new(&mut slow);
            writer.write_bits(0x3C3C_3C3C_3C3C_3C3C, lead);
            for &byte in &bytes[..len] {
                writer.write_bits(u64::from(byte), 8);
            }
            writer.write_bits(0b11, 2);
            assert_eq!(written, writer.finish(), "{lead} {len}");
            assert_eq!(fast, slow, "{lead} {len}");
        }
    }
}

#[test]
fn nesting_stops_at_the_limit_and_unwinds_on_every_path() {
    fn enter(reader: &mut BitReader<'_>, levels: u32) -> Result<(), DecodeError> {
        let mut nested = reader.nest(true)?;
        if levels > 1 {
            enter(&mut nested, levels - 1)?;
        }
        Ok(())
    }
    let mut r = BitReader::new(&[0xff]);
    assert_eq!(r.read_bits(3), Ok(7));
    assert_eq!(enter(&mut r, MAX_DEPTH), Ok(()));
    assert_eq!(r.depth, 0);
    assert_eq!(
        enter(&mut r, MAX_DEPTH + 1),
        Err(DecodeError::TooDeep {
            bit_offset: 3,
            limit: MAX_DEPTH
        })
    );
    assert_eq!(r.depth, 0, "left on the error path too");

    fn write(writer: &mut BitWriter<'_>, levels: u32) -> Result<(), EncodeError> {
        let mut nested = writer.nest(true)?;
        nested.write_bool(true);
        if levels > 1 {
            write(&mut nested, levels - 1)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    let mut w = BitWriter::new(&mut out);
    assert_eq!(write(&mut w, MAX_DEPTH), Ok(()));
    assert_eq!(
        write(&mut w, MAX_DEPTH + 1),
        Err(EncodeError::TooDeep { limit: MAX_DEPTH })
    );
    assert_eq!(w.depth, 0);
    assert_eq!(w.bits_written(), 2 * u64::from(MAX_DEPTH));
}

#[test]
fn a_level_that_does_not_count_is_neither_counted_nor_refused() {
    let mut out = Vec::new();
    let mut w = BitWriter::new(&mut out);
    w.depth = MAX_DEPTH;
    {
        let mut leaf = w.nest(false).expect("an uncounted level is not refused");
        assert_eq!(leaf.depth, MAX_DEPTH);
        leaf.write_bool(true);
        assert_eq!(
            leaf.nest(true).err(),
            Some(EncodeError::TooDeep { limit: MAX_DEPTH })
        );
    }
    assert_eq!(w.depth, MAX_DEPTH, "dropping it leaves the count as it was");
    w.depth = 0;
    w.finish();
    let mut r = BitReader::new(&out);
    r.depth = MAX_DEPTH;
    {
        let mut leaf = r.nest(false).expect("an uncounted level is not refused");
        assert_eq!(leaf.read_bool(), Ok(true));
        assert!(leaf.nest(true).is_err());
    }
    assert_eq!(r.depth, MAX_DEPTH);
}

#[test]
fn zigzag_orders_by_magnitude() {
    let mapped: Vec<u64> = [0i64, -1, 1, -2, 2, i64::MIN, i64::MAX]
        .iter()
        .map(|&v| zigzag_encode(v))
        .collect();
    assert_eq!(mapped, [0, 1, 2, 3, 4, u64::MAX, u64::MAX - 1]);
    for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
        assert_eq!(zigzag_decode(zigzag_encode(v)), v);
    }
}

#[test]
fn size_functions_agree_with_the_writer() {
    for v in [0u64, 1, 2, 3, 7, 100, 5000, 10_000, 1 << 40, u64::MAX] {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write_varint(v);
        assert_eq!(w.bits_written(), varint_bits(v), "varint {v}");
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        w.write_gamma(v);
        assert_eq!(w.bits_written(), gamma_bits(v), "gamma {v}");
    }
}

/// Copying bits gives the same bits whether or not reader and writer sit
/// on a byte boundary (the aligned case copies whole bytes at once).
#[test]
fn copy_bits_is_the_same_aligned_or_not() {
    let mut source = Vec::new();
    let mut w = BitWriter::new(&mut source);
    for i in 0..700u64 {
        w.write_bool((i * 5 + i / 7) % 3 == 0);
    }
    let total = w.finish();
    for (skip, lead, bits) in [
        (0, 0, 700),
        (0, 8, 600),
        (8, 16, 333),
        (3, 0, 200),
        (0, 5, 650),
        (16, 0, 70),
    ] {
        let mut reader = BitReader::new(&source);
        let _ = reader.read_bits(skip);
        let mut out = Vec::new();
        let mut writer = BitWriter::new(&mut out);
        writer.write_bits(0b1011, lead.min(4));
        writer.write_bits(0, lead.saturating_sub(4));
        super::copy_bits(&mut reader, &mut writer, bits);
        writer.write_bits(0b11, 2);
        assert_eq!(writer.finish(), u64::from(lead) + bits + 2);
        let mut check = BitReader::new(&out);
        let _ = check.read_bits(lead);
        let mut expected = BitReader::new(&source);
        let _ = expected.read_bits(skip);
        for i in 0..bits {
            assert_eq!(
                check.read_bool(),
                expected.read_bool(),
                "{skip} {lead} {bits}: bit {i}"
            );
        }
        assert_eq!(check.read_bits(2), Ok(0b11));
        assert!(u64::from(skip) + bits <= total);
    }
}

/// Appending a kept encoding gives its bits at every lead (aligned: one
/// byte copy; not: a word at a time), and zeros for bits past its end.
#[test]
fn writing_bits_from_bytes_is_writing_them_one_by_one() {
    let bytes: Vec<u8> = (0..29u32).map(|i| (i * 73 + 5) as u8 ^ 0x3C).collect();
    let bit = |i: u64| {
        bytes
            .get((i / 8) as usize)
            .map_or(0, |b| u64::from(b >> (i % 8) & 1))
    };
    for lead in [0u32, 1, 7, 8, 13, 16, 63] {
        for bits in [0u64, 1, 7, 8, 9, 63, 64, 65, 200, 232, 240] {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            let mut writer = BitWriter::new(&mut fast);
            writer.write_bits(0x5A5A_5A5A_5A5A_5A5A, lead);
            writer.write_bits_from(&bytes, bits);
            writer.write_bits(0b101, 3);
            let written = writer.finish();
            let mut writer = BitWriter::new(&mut slow);
            writer.write_bits(0x5A5A_5A5A_5A5A_5A5A, lead);
            for i in 0..bits {
                writer.write_bits(bit(i), 1);
            }
            writer.write_bits(0b101, 3);
            assert_eq!(written, writer.finish(), "{lead} {bits}");
            assert_eq!(fast, slow, "{lead} {bits}");
        }
    }
}

#[test]
fn reads_agree_with_single_bits_at_every_offset_and_width() {
    // 19 bytes: reads in the middle take the word path, reads within 8
    // bytes of the end the tail path; both must match bit-by-bit reads.
    let bytes: Vec<u8> = (0..19u32).map(|i| (i * 37 + 11) as u8 ^ 0xA5).collect();
    let total = 8 * bytes.len() as u64;
    let bit = |i: u64| u64::from(bytes[(i / 8) as usize] >> (i % 8) & 1);
    for start in 0..total {
        for count in 1..=64u32 {
            let mut reader = BitReader::new(&bytes);
            let _ = reader.read_bits((start % 64) as u32);
            let _ = reader.read_bits((start - start % 64) as u32 / 2);
            let _ = reader.read_bits((start - start % 64) as u32 / 2);
            assert_eq!(reader.bit_offset(), start);
            let got = reader.read_bits(count);
            if start + u64::from(count) > total {
                assert!(got.is_err(), "{start} + {count}");
                assert_eq!(reader.bit_offset(), start);
                continue;
            }
            let expected = (0..u64::from(count)).fold(0, |v, i| v | bit(start + i) << i);
            assert_eq!(got, Ok(expected), "{start} + {count}");
        }
    }
}

#[test]
fn one_word_varints_are_the_general_code() {
    let mut values: Vec<u64> = (0..5_000).collect();
    for shift in 12..40 {
        let p = 1u64 << shift;
        values.extend([p - 2, p - 1, p, p + 1, p + p / 3]);
    }
    for v in values {
        let (mut fast, mut wide) = (Vec::new(), Vec::new());
        let mut w = BitWriter::new(&mut fast);
        w.write_bits(0b101, 3);
        w.write_varint(v);
        let fast_bits = w.finish();
        let mut w = BitWriter::new(&mut wide);
        w.write_bits(0b101, 3);
        w.write_varint_wide(v);
        assert_eq!((fast_bits, fast), (w.finish(), wide), "{v}");
    }
}

/// Bytes from a xorshift generator, each the AND of `sparsity` draws, so
/// that runs of zeros of every length (the Elias codes' prefixes) occur.
fn sparse_bytes(state: &mut u64, len: usize, sparsity: u32) -> Vec<u8> {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state as u8
    };
    (0..len)
        .map(|_| (1..sparsity).fold(next(), |byte, _| byte & next()))
        .collect()
}

#[test]
fn elias_codes_read_in_one_window_as_bit_by_bit() {
    // The one-window reads must agree with the bit-by-bit ones on every
    // input: the value or the error, and where the reader stops. Codes are
    // read in a row until one fails, from every start in the first byte.
    let mut state = 0x9e37_79b9_7f4a_7c15;
    let mut windows = 0;
    for case in 0..3_000 {
        let bytes = sparse_bytes(&mut state, case % 40, 1 + (case % 4) as u32);
        for start in 0..8 {
            let (mut fast, mut slow) = (BitReader::at(&bytes, start), BitReader::at(&bytes, start));
            let gamma = case % 2 == 0;
            loop {
                windows += u64::from(fast.peek_word().is_some());
                let (got, want) = if gamma {
                    (fast.read_gamma(), slow.read_gamma_bitwise())
                } else {
                    (fast.read_varint(), slow.read_varint_bitwise())
                };
                assert_eq!(got, want, "case {case} from bit {start}: {bytes:?}");
                assert_eq!(fast.bit_offset(), slow.bit_offset(), "case {case}");
                if got.is_err() {
                    break;
                }
            }
        }
    }
    // Most reads took the window (the rest were near the end).
    assert!(windows > 50_000, "{windows} reads in one window");
}

#[test]
fn elias_codes_round_trip_at_every_alignment() {
    let mut values: Vec<u64> = (0..300).collect();
    for shift in 8..64 {
        let p = 1u64 << shift;
        values.extend([p - 1, p, p + 1]);
    }
    values.push(u64::MAX);
    for lead in 0..64 {
        for tail in [0, 70] {
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            w.write_bits(0, lead);
            for &v in &values {
                w.write_varint(v);
                w.write_gamma(v);
            }
            (0..tail).for_each(|_| w.write_bool(false));
            w.finish();
            let mut r = BitReader::new(&out);
            assert_eq!(r.read_bits(lead), Ok(0));
            for &v in &values {
                assert_eq!(r.read_varint(), Ok(v), "varint {v} after {lead}");
                assert_eq!(r.read_gamma(), Ok(v), "gamma {v} after {lead}");
            }
        }
    }
}

/// A reader moved to `offset` by reads of at most 64 bits: its window
/// holds other bits than a reader that got there another way.
fn reader_at(bytes: &[u8], offset: u64) -> BitReader<'_> {
    let mut reader = BitReader::new(bytes);
    let mut left = offset;
    while left > 0 {
        let n = left.min(64) as u32;
        reader.read_bits(n).expect("inside the input");
        left -= u64::from(n);
    }
    reader
}

#[test]
fn a_reader_reads_the_same_whatever_its_window_holds() {
    // A reader keeps the next bits in a window from read to read; one that
    // reached the same offset by other reads holds other bits in it. Both
    // must read the same, stop at the same offset and fail alike, over
    // reads of every kind and width, cut short by `within`, past aligned
    // bytes, and up to and past the end of the input.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut cuts = 0;
    for case in 0..1_500 {
        let seed = next();
        let bytes = sparse_bytes(&mut (seed | 1), (case % 48) as usize, 1 + (case % 3) as u32);
        let mut long = BitReader::new(&bytes);
        for _ in 0..40 {
            let mut fresh = reader_at(&bytes, long.bit_offset());
            let op = next();
            let width = (op >> 8) as u32 % 65;
            let read = |reader: &mut BitReader<'_>| -> Result<Vec<u64>, DecodeError> {
                Ok(match op % 5 {
                    0 => vec![reader.read_bits(width)?],
                    1 => vec![reader.read_gamma()?],
                    2 => vec![reader.read_varint()?],
                    3 => {
                        let mut out = Vec::new();
                        reader.read_bytes_into(width as usize % 5, &mut out)?;
                        out.into_iter().map(u64::from).collect()
                    }
                    _ => {
                        let (inner, cut) = reader.within(u64::from(width), |r| {
                            Ok::<_, DecodeError>([r.read_bits(width / 3)?, r.read_gamma()?])
                        });
                        let [a, b] = inner?;
                        vec![a, b, u64::from(cut)]
                    }
                })
            };
            let (got, want) = (read(&mut long), read(&mut fresh));
            assert_eq!(got, want, "case {case}, op {op}: {bytes:?}");
            assert_eq!(long.bit_offset(), fresh.bit_offset(), "case {case}");
            assert_eq!(long.remaining_bits(), fresh.remaining_bits());
            cuts += u64::from(op % 5 == 4 && got.is_ok());
        }
    }
    assert!(cuts > 1_000, "{cuts} reads within a cut");
}
