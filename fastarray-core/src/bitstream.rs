//! The `bitstream-io` adapter (feature `bitstream-io`): deltas and
//! snapshots written into a [`bitstream_io::BitWrite`] among the fields of
//! a packet built with that crate, and applied from a
//! [`bitstream_io::BitRead`].
//!
//! The hot path keeps its own [`BitWriter`]: each method writes the
//! message with it into a scratch buffer, then puts it into the stream as
//! a length prefix and the message's bits. The prefix makes the message
//! self-delimiting, so a reader that does not decode it can skip it, and
//! the decoder never reads past it:
//!
//! - the prefix is `varint(bits)`, the Elias-delta code of `WIRE.md`:
//!   `L−1` zeros, a one, the low `L−1` bits of `N` as one value, the low
//!   `N−1` bits of `bits + 1` as one value (`N` the bit length of
//!   `bits + 1`, `L` that of `N`), each value written by the stream in its
//!   own bit order. 1 000 bits cost 16 bits of prefix; the longest message,
//!   [`MAX_MESSAGE_BITS`], 33.
//! - the message's whole bytes follow as 8-bit values, then its last
//!   `bits mod 8` bits as one value (the low bits of its last byte). No
//!   padding: the next field starts right after the message's last bit.
//!
//! In a little-endian stream the message's bits are in the same order as in
//! a fastarray packet; in a big-endian one, each byte is written most
//! significant bit first. Either way a reader of the same endianness gets
//! the same bytes back.
//!
//! A reader refuses a prefix above [`MAX_MESSAGE_BITS`] before reading
//! further ([`BitstreamError::TooLong`]), and its buffer grows only as
//! bits arrive (at most 4 KiB ahead of them), so a forged prefix costs no
//! memory. The message must end exactly at its length: bits left over
//! inside it are [`DecodeError::TrailingData`]. As with the byte methods, a
//! message that fails changes nothing: the mirror is as it was.
//!
//! ```
//! use bitstream_io::{BigEndian, BitRead, BitReader, BitWrite, BitWriter};
//! use fastarray_core::{FastArray, SendState};
//! use fastarray_derive::Replicate;
//!
//! #[derive(Replicate, Clone, Debug, PartialEq)]
//! #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
//! struct Unit { hp: u16, team: u8 }
//!
//! let mut server = FastArray::new();
//! server.push(Unit { hp: 100, team: 1 });
//! server.commit();
//! let mut state = SendState::new();
//!
//! // A packet of the game's own protocol, with the delta in the middle.
//! let mut w = BitWriter::endian(Vec::new(), BigEndian);
//! w.write::<16, u16>(7)?; // sequence number
//! server.write_delta_to(&mut state, 1, &mut w, None)?;
//! w.write::<3, u8>(5)?; // whatever follows
//! w.byte_align()?;
//! let packet = w.into_writer();
//!
//! let mut client = FastArray::mirror();
//! let mut r = BitReader::endian(packet.as_slice(), BigEndian);
//! assert_eq!(r.read::<16, u16>()?, 7);
//! client.apply_delta_from(&mut r, &mut ())?;
//! assert_eq!(r.read::<3, u8>()?, 5);
//! assert_eq!(client, server);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use std::io;

use bitstream_io::{BitRead, BitWrite};

use crate::array::FastArray;
use crate::bits::{BitReader, BitWriter, varint_bits};
use crate::error::{DecodeError, EncodeError, SendError};
use crate::receive_state::events::{ApplyReport, Callbacks};
use crate::replicate::Replicate;
use crate::replicated::Replicated;
use crate::send_state::SendState;
use crate::send_state::stats::DeltaStats;

/// The longest message a reader takes, in bits (2 MiB): a longer length
/// prefix is refused ([`BitstreamError::TooLong`]) before anything else is
/// read, and writers refuse to write a longer message. Larger snapshots go
/// through the byte methods
/// ([`write_snapshot`](FastArray::write_snapshot)); larger deltas, in
/// pieces, with a bit budget.
pub const MAX_MESSAGE_BITS: u64 = 1 << 24;

/// How far the read buffer may run ahead of the bits that arrived.
const READ_CHUNK: usize = 4096;

/// Why a message could not be written into a [`BitWrite`] or read from a
/// [`BitRead`].
#[derive(Debug)]
#[non_exhaustive]
pub enum BitstreamError {
    /// The delta or snapshot could not be written: nothing went into the
    /// stream and the connection is unchanged.
    Send(SendError),
    /// The snapshot could not be encoded: nothing went into the stream.
    Encode(EncodeError),
    /// The message was read whole but does not decode, or does not end at
    /// its length. Its bit offsets count from the message's first bit
    /// (after the length prefix). The stream is past the message, so the
    /// fields after it can still be read; the mirror is unchanged.
    Decode(DecodeError),
    /// The stream failed. While writing, part of the message may be in it;
    /// a delta's packet is then reported lost on its connection (its work
    /// is due again), and a joining snapshot's connection is unchanged.
    /// While reading, the stream failed, or ended inside the length prefix
    /// (inside the message it is [`Truncated`](Self::Truncated)); nothing
    /// changed on the mirror.
    Io(io::Error),
    /// A message longer than [`MAX_MESSAGE_BITS`]: refused when its length
    /// prefix is read, before anything else, and refused by a writer
    /// before anything goes into the stream (a delta's packet is then
    /// reported lost: write it with a budget to send it in pieces).
    TooLong {
        /// The message's length in bits (`u64::MAX` for a prefix that
        /// does not fit in a `u64`).
        bits: u64,
        /// The limit, [`MAX_MESSAGE_BITS`].
        limit: u64,
    },
    /// The length prefix starts with more zeros than any `u64` needs.
    LengthOverlong,
    /// The stream ended inside the message (after its length prefix).
    /// Nothing changed on the mirror.
    Truncated {
        /// The message's length in bits, as its prefix said.
        bits: u64,
    },
}

impl fmt::Display for BitstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Send(error) => write!(f, "cannot write the message: {error}"),
            Self::Encode(error) => write!(f, "cannot encode the message: {error}"),
            Self::Decode(error) => write!(f, "in the message after its length prefix: {error}"),
            Self::Io(error) => write!(f, "bit stream error: {error}"),
            Self::TooLong { bits, limit } => write!(
                f,
                "a message of {bits} bits is longer than the {limit} bits a reader takes"
            ),
            Self::LengthOverlong => f.write_str(
                "the message's length prefix starts with more zeros than any 64-bit length needs",
            ),
            Self::Truncated { bits } => {
                write!(f, "the stream ended inside a message of {bits} bits")
            }
        }
    }
}

impl std::error::Error for BitstreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Send(error) => Some(error),
            Self::Encode(error) => Some(error),
            Self::Decode(error) => Some(error),
            Self::Io(error) => Some(error),
            _ => None,
        }
    }
}

impl From<SendError> for BitstreamError {
    fn from(error: SendError) -> Self {
        Self::Send(error)
    }
}

impl From<EncodeError> for BitstreamError {
    fn from(error: EncodeError) -> Self {
        Self::Encode(error)
    }
}

impl From<DecodeError> for BitstreamError {
    fn from(error: DecodeError) -> Self {
        Self::Decode(error)
    }
}

impl From<io::Error> for BitstreamError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

/// What the adapter applies through: an array itself, or an object's
/// one-item array.
trait OneArray<T> {
    fn array_mut(&mut self) -> &mut FastArray<T>;
}

impl<T> OneArray<T> for FastArray<T> {
    fn array_mut(&mut self) -> &mut FastArray<T> {
        self
    }
}

impl<T> OneArray<T> for Replicated<T> {
    fn array_mut(&mut self) -> &mut FastArray<T> {
        self.as_array_mut()
    }
}

/// The adapter's methods, written once for [`FastArray`] and
/// [`Replicated`] (an object's messages are its one-item array's): each
/// frames or unframes the message of the method of the same name without
/// `_to` / `_from` (or with `_bits`), which both types have.
macro_rules! bitstream_methods {
    ($ty:ident) => {
        /// Writing and applying messages through `bitstream-io`: see the
        /// methods of the same names without `_to` / `_from`, and the
        /// [module documentation](crate::bitstream) for the framing.
        impl<T: Replicate> $ty<T> {
            /// [`write_delta_bits`](Self::write_delta_bits) into `w`, framed
            /// with its length. With a budget, `max_bits` bounds everything
            /// written into `w`, the length prefix included.
            ///
            /// Without a budget, a delta longer than [`MAX_MESSAGE_BITS`] is
            /// not written: the packet is reported lost on `state` (its work
            /// stays due) and [`BitstreamError::TooLong`] returned; send it
            /// with a budget. On [`BitstreamError::Send`] nothing is written
            /// and `state` is unchanged. The stats count the message's bits,
            /// not its prefix's.
            pub fn write_delta_to(
                &mut self,
                state: &mut SendState,
                packet: u32,
                w: &mut impl BitWrite,
                max_bits: Option<u64>,
            ) -> Result<DeltaStats, BitstreamError> {
                let budget = max_bits.map(message_budget).transpose()?;
                let mut bytes = Vec::new();
                let mut writer = BitWriter::new(&mut bytes);
                let stats = self.write_delta_bits(state, packet, &mut writer, budget)?;
                let bits = writer.finish();
                let written = check_len(bits).and_then(|()| write_message(w, &bytes, bits));
                if written.is_err() {
                    // Nothing (or a broken message) reached the client.
                    state.on_loss(packet);
                }
                written.map(|()| stats)
            }

            /// Applies one delta read from `r` (framed by
            /// [`write_delta_to`](Self::write_delta_to)), as
            /// [`apply_delta_bits`](Self::apply_delta_bits). The whole
            /// message is read, decoded and checked first: on error the
            /// mirror is unchanged.
            pub fn apply_delta_from(
                &mut self,
                r: &mut impl BitRead,
                callbacks: &mut impl Callbacks<T>,
            ) -> Result<ApplyReport, BitstreamError> {
                let (bytes, bits) = read_message(r)?;
                let array = self.array_mut();
                let decoded = decode_exact(&bytes, bits, |reader| array.decode_delta(reader))?;
                Ok(array.apply_decoded(decoded, callbacks, None))
            }

            /// [`write_snapshot_bits`](Self::write_snapshot_bits) into `w`,
            /// framed with its length. Returns the message's size in bits
            /// (without the prefix). On [`BitstreamError::Encode`] or
            /// [`BitstreamError::TooLong`] nothing is written.
            pub fn write_snapshot_to(&self, w: &mut impl BitWrite) -> Result<u64, BitstreamError> {
                write_framed(w, |writer| self.write_snapshot_bits(writer))
            }

            /// [`write_snapshot_for_bits`](Self::write_snapshot_for_bits)
            /// into `w`, framed with its length: the snapshot of a client
            /// that joins, and `state` made its connection. Returns the
            /// message's size in bits (without the prefix). On error `state`
            /// is unchanged.
            pub fn write_snapshot_for_to(
                &self,
                state: &mut SendState,
                w: &mut impl BitWrite,
            ) -> Result<u64, BitstreamError> {
                state.may_join_by_snapshot()?;
                let mut joined = SendState::new();
                let bits = write_framed(w, |writer| {
                    self.write_snapshot_for_bits(&mut joined, writer)
                })?;
                *state = joined;
                Ok(bits)
            }

            /// A mirror from one snapshot read from `r` (framed by
            /// [`write_snapshot_to`](Self::write_snapshot_to)), as
            /// [`from_snapshot_bits`](Self::from_snapshot_bits).
            pub fn read_snapshot_from(r: &mut impl BitRead) -> Result<Self, BitstreamError> {
                let (bytes, bits) = read_message(r)?;
                decode_exact(&bytes, bits, |reader| Self::from_snapshot_bits(reader))
            }

            /// Replaces this mirror's contents with one snapshot read from
            /// `r`, as [`apply_snapshot`](Self::apply_snapshot). The message
            /// is read whole even when it is refused. On error the mirror is
            /// unchanged; a server's array or object returns
            /// [`DecodeError::NotAMirror`].
            pub fn apply_snapshot_from(
                &mut self,
                r: &mut impl BitRead,
            ) -> Result<(), BitstreamError> {
                let snapshot = Self::read_snapshot_from(r)?;
                self.array_mut().expect_receiver()?;
                *self = snapshot;
                Ok(())
            }
        }
    };
}

bitstream_methods!(FastArray);
bitstream_methods!(Replicated);

/// The budget of a message whose prefix and bits together take at most
/// `max_bits`, capped at [`MAX_MESSAGE_BITS`]. The prefix of any message
/// that fits takes at most the prefix of `max_bits` itself.
fn message_budget(max_bits: u64) -> Result<u64, BitstreamError> {
    let budget = max_bits
        .saturating_sub(varint_bits(max_bits))
        .min(MAX_MESSAGE_BITS);
    if budget == 0 {
        return Err(SendError::BudgetTooSmall { budget: max_bits }.into());
    }
    Ok(budget)
}

/// Writes a message with `write` into a buffer of its own, then framed
/// into `w`; returns its length in bits. On error nothing went into `w`,
/// unless `w` itself failed.
fn write_framed<E>(
    w: &mut impl BitWrite,
    write: impl FnOnce(&mut BitWriter<'_>) -> Result<(), E>,
) -> Result<u64, BitstreamError>
where
    BitstreamError: From<E>,
{
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    write(&mut writer)?;
    let bits = writer.finish();
    check_len(bits)?;
    write_message(w, &bytes, bits)?;
    Ok(bits)
}

/// Refuses a message longer than a reader takes.
fn check_len(bits: u64) -> Result<(), BitstreamError> {
    if bits > MAX_MESSAGE_BITS {
        return Err(BitstreamError::TooLong {
            bits,
            limit: MAX_MESSAGE_BITS,
        });
    }
    Ok(())
}

/// Writes the length prefix and the first `bits` bits of `bytes`.
fn write_message(w: &mut impl BitWrite, bytes: &[u8], bits: u64) -> Result<(), BitstreamError> {
    write_length(w, bits)?;
    // `bits` ≤ MAX_MESSAGE_BITS, and `bytes` holds them all.
    let whole = (bits / 8) as usize;
    w.write_bytes(&bytes[..whole])?;
    let rest = (bits % 8) as u32;
    if rest > 0 {
        w.write_var::<u8>(rest, bytes[whole] & ((1 << rest) - 1))?;
    }
    Ok(())
}

/// Writes `varint(bits)` (Elias-delta of `bits + 1`) with the stream's
/// own calls: each part as one value, in the stream's bit order.
fn write_length(w: &mut impl BitWrite, bits: u64) -> io::Result<()> {
    let x = u128::from(bits) + 1;
    let n = 128 - x.leading_zeros(); // 1..=65
    let len_bits = 32 - n.leading_zeros(); // 1..=7
    w.write_unary::<1>(len_bits - 1)?;
    if len_bits > 1 {
        w.write_var::<u32>(len_bits - 1, n & ((1 << (len_bits - 1)) - 1))?;
    }
    if n > 1 {
        // At most 64 bits below the leading one.
        w.write_var::<u64>(n - 1, x as u64 & (u64::MAX >> (65 - n)))?;
    }
    Ok(())
}

/// Reads a length prefix, refusing one above [`MAX_MESSAGE_BITS`] before
/// reading anything more.
fn read_length(r: &mut impl BitRead) -> Result<u64, BitstreamError> {
    let mut zeros = 0u32;
    while !r.read_bit()? {
        zeros += 1;
        if zeros > 6 {
            return Err(BitstreamError::LengthOverlong);
        }
    }
    let n = (1u32 << zeros)
        | if zeros > 0 {
            r.read_var::<u32>(zeros)?
        } else {
            0
        };
    if n > 65 {
        return Err(BitstreamError::LengthOverlong);
    }
    let low = if n > 1 { r.read_var::<u64>(n - 1)? } else { 0 };
    let x = (1u128 << (n - 1)) | u128::from(low);
    let bits = u64::try_from(x - 1).unwrap_or(u64::MAX);
    check_len(bits)?;
    Ok(bits)
}

/// Reads one framed message: its bytes (the last one holding its last
/// `bits mod 8` bits, zero above them) and its length in bits. The buffer
/// grows as bits arrive, never from the length alone.
fn read_message(r: &mut impl BitRead) -> Result<(Vec<u8>, u64), BitstreamError> {
    let bits = read_length(r)?;
    let truncated = |error: io::Error| match error.kind() {
        io::ErrorKind::UnexpectedEof => BitstreamError::Truncated { bits },
        _ => BitstreamError::Io(error),
    };
    // `bits` ≤ MAX_MESSAGE_BITS.
    let whole = (bits / 8) as usize;
    let mut bytes = Vec::new();
    while bytes.len() < whole {
        let start = bytes.len();
        bytes.resize(start + (whole - start).min(READ_CHUNK), 0);
        r.read_bytes(&mut bytes[start..]).map_err(truncated)?;
    }
    let rest = (bits % 8) as u32;
    if rest > 0 {
        bytes.push(r.read_var::<u8>(rest).map_err(truncated)?);
    }
    Ok((bytes, bits))
}

/// Decodes a message of exactly `bits` bits with `decode`: reading past
/// them is [`DecodeError::UnexpectedEnd`], stopping short of them
/// [`DecodeError::TrailingData`].
fn decode_exact<R>(
    bytes: &[u8],
    bits: u64,
    decode: impl FnOnce(&mut BitReader<'_>) -> Result<R, DecodeError>,
) -> Result<R, BitstreamError> {
    let mut reader = BitReader::with_len(bytes, bits);
    let value = decode(&mut reader)?;
    let remaining_bits = reader.remaining_bits();
    if remaining_bits > 0 {
        return Err(DecodeError::TrailingData {
            bit_offset: reader.bit_offset(),
            remaining_bits,
        }
        .into());
    }
    Ok(value)
}
