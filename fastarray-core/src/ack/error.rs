//! Why a received header was refused.

use core::fmt;

/// Why a packet's header was refused. A refused header changed nothing in
/// the [`Acks`](super::Acks) that read it: drop the packet.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AckError {
    /// The packet is shorter than a header ([`AckHeader::BYTES`](super::AckHeader::BYTES)).
    Truncated {
        /// The packet's length in bytes.
        len: usize,
    },
    /// The header acknowledges a packet this side never sent: one ahead of
    /// the newest it sent (or before its first), or any packet at all when
    /// it has sent none. No genuine peer writes one.
    AckFromFuture {
        /// The header's `ack`.
        ack: u16,
        /// The sequence of the newest packet this side sent, if any.
        newest_sent: Option<u16>,
    },
    /// The peer's packet was received before (the network duplicated it).
    Duplicate {
        /// Its packet number.
        packet: u32,
    },
    /// The peer's packet is more than 32 packets older than the newest
    /// received: it could not be acknowledged (its sender has declared it
    /// lost and repairs its content) nor told apart from a duplicate.
    TooOld {
        /// Its sequence.
        sequence: u16,
    },
}

impl fmt::Display for AckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The header's size is the header's (`AckHeader::BYTES`),
            // which reads into this error: not named here, so the two
            // modules do not depend on each other.
            Self::Truncated { len } => {
                write!(f, "a packet of {len} byte(s) is shorter than an ack header")
            }
            Self::AckFromFuture {
                ack,
                newest_sent: Some(newest),
            } => write!(
                f,
                "the header acknowledges sequence {ack}, which this side never sent (its newest is {newest})"
            ),
            Self::AckFromFuture {
                ack,
                newest_sent: None,
            } => write!(
                f,
                "the header acknowledges sequence {ack}, but this side has sent no packet yet"
            ),
            Self::Duplicate { packet } => {
                write!(f, "packet {packet} was already received (a duplicate)")
            }
            Self::TooOld { sequence } => write!(
                f,
                "the packet of sequence {sequence} is more than 32 packets older than the newest received"
            ),
        }
    }
}

impl std::error::Error for AckError {}
