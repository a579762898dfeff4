//! The 8-byte header every packet starts with.

use super::error::AckError;

/// The header every packet starts with: 8 bytes, little-endian, in field
/// order (`sequence`, `ack`, `ack_bits`).
///
/// `sequence` is the sending side's own packet number, truncated to 16
/// bits. `ack` is the newest packet of the receiving side's that the
/// sender has *applied*, and bit `i` of `ack_bits` says the packet
/// `ack - 1 - i` was applied too: one header acknowledges up to 33
/// packets, so an acknowledgement survives the loss of many headers.
///
/// A side that has applied nothing yet writes `ack` 65 535 with no bits
/// set, which [`Acks::receive`](super::Acks::receive) reads as
/// "acknowledges nothing" until the peer has been seen acknowledging
/// something (then it is a genuine acknowledgement of sequence 65 535).
///
/// ```
/// use fastarray_core::AckHeader;
///
/// let header = AckHeader { sequence: 7, ack: 65_535, ack_bits: 0b101 };
/// let mut packet = Vec::new();
/// header.write(&mut packet);
/// packet.extend_from_slice(b"payload");
/// let (read, payload) = AckHeader::read(&packet).unwrap();
/// assert_eq!((read, payload), (header, &b"payload"[..]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AckHeader {
    /// The sender's packet number, low 16 bits.
    pub sequence: u16,
    /// The newest of the receiver's packets the sender applied (low 16 bits).
    pub ack: u16,
    /// Bit `i` set: the receiver's packet `ack - 1 - i` was applied too.
    pub ack_bits: u32,
}

impl AckHeader {
    /// The header's size on the wire, in bytes.
    pub const BYTES: usize = 8;

    /// The `ack` of a side that has applied nothing yet (with `ack_bits` 0).
    pub(super) const NOTHING: u16 = u16::MAX;

    /// Appends the header's 8 bytes to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The header's 8 bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        bytes[..2].copy_from_slice(&self.sequence.to_le_bytes());
        bytes[2..4].copy_from_slice(&self.ack.to_le_bytes());
        bytes[4..].copy_from_slice(&self.ack_bits.to_le_bytes());
        bytes
    }

    /// The header written as `bytes`.
    pub fn from_bytes(bytes: [u8; Self::BYTES]) -> Self {
        Self {
            sequence: u16::from_le_bytes([bytes[0], bytes[1]]),
            ack: u16::from_le_bytes([bytes[2], bytes[3]]),
            ack_bits: u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        }
    }

    /// Reads the header at the start of `bytes`: the header and the rest
    /// of the packet (its payload). Every 8 bytes are some header, so the
    /// only error is [`AckError::Truncated`]; whether the header makes
    /// sense is for [`Acks::receive`](super::Acks::receive) to say.
    pub fn read(bytes: &[u8]) -> Result<(AckHeader, &[u8]), AckError> {
        match bytes.split_first_chunk::<{ Self::BYTES }>() {
            Some((head, rest)) => Ok((Self::from_bytes(*head), rest)),
            None => Err(AckError::Truncated { len: bytes.len() }),
        }
    }
}
