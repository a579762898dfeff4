//! What can go wrong writing or applying a connection's packets.

use core::fmt;

use super::delivery::Delivery;
use crate::ack::AckError;
use crate::error::{DecodeError, SendError};
use crate::secure::PacketError;

/// Why a [`Connection`](crate::Connection) could not write a packet, or a
/// [`MirrorConnection`](crate::MirrorConnection) could not apply one. On
/// error nothing changed: no packet was recorded as sent, no mirror was
/// touched, and a packet that was not applied is not acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionError {
    /// The packet is not the peer's: its token is wrong, or its seal does
    /// not open (tampered, another key, replayed, too old). Checked before
    /// anything in it is read. On the writing side, the session's packet
    /// counter is exhausted ([`PacketError::Exhausted`]).
    Refused(PacketError),
    /// The packet's header could not be read or was refused.
    Ack(AckError),
    /// The call belongs to the other [`Delivery`] mode than the
    /// connection's: [`write_packet`](crate::Connection::write_packet),
    /// [`receive`](crate::Connection::receive),
    /// [`apply`](crate::MirrorConnection::apply) and the client's headers
    /// to [`Delivery::Header`];
    /// [`write_payload`](crate::Connection::write_payload),
    /// [`delivered`](crate::Connection::delivered),
    /// [`lost`](crate::Connection::lost) and
    /// [`apply_payload`](crate::MirrorConnection::apply_payload) to
    /// [`Delivery::Reports`].
    WrongDelivery {
        /// The connection's mode.
        delivery: Delivery,
    },
    /// [`write_payload`](crate::Connection::write_payload) was given the
    /// number of a packet still awaiting its report: each packet in flight
    /// needs its own number, or its report could not be told apart.
    PacketInFlight {
        /// The number.
        packet: u32,
    },
    /// The arrays and objects given are not as many as the connection's
    /// channels.
    ChannelCount {
        /// The connection's channels.
        expected: usize,
        /// What was given.
        given: usize,
    },
    /// Channel `channel` was given another array or object than the one it
    /// wrote before: each channel serves one array or object for the
    /// connection's whole life (the order of the slice is the channels').
    WrongSource {
        /// The channel.
        channel: usize,
    },
    /// Writing channel `channel`'s delta failed.
    Send {
        /// The channel.
        channel: usize,
        /// Why.
        error: SendError,
    },
    /// A section names a channel the connection does not have.
    UnknownChannel {
        /// The channel named.
        channel: u64,
        /// The connection's channels.
        channels: usize,
    },
    /// A packet holds two sections for the same channel: no sender writes
    /// one.
    RepeatedChannel {
        /// The channel.
        channel: usize,
    },
    /// Channel `channel`'s section could not be decoded.
    Decode {
        /// The channel (`usize::MAX` when the sections' framing itself was
        /// bad).
        channel: usize,
        /// Why.
        error: DecodeError,
    },
}

impl fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(error) => write!(f, "packet refused: {error}"),
            Self::Ack(error) => write!(f, "packet header: {error}"),
            Self::WrongDelivery { delivery } => write!(
                f,
                "the connection runs on {}: this call is for the other mode",
                delivery.name()
            ),
            Self::PacketInFlight { packet } => write!(
                f,
                "packet {packet} is still awaiting its delivery report: give each packet a new number"
            ),
            Self::ChannelCount { expected, given } => write!(
                f,
                "the connection has {expected} channels, but {given} arrays or objects were given"
            ),
            Self::WrongSource { channel } => write!(
                f,
                "channel {channel} was given another array or object than the one it serves"
            ),
            Self::Send { channel, error } => write!(f, "channel {channel}: {error}"),
            Self::UnknownChannel { channel, channels } => write!(
                f,
                "a section names channel {channel}, but the connection has {channels}"
            ),
            Self::RepeatedChannel { channel } => {
                write!(f, "the packet holds channel {channel} twice")
            }
            Self::Decode { channel, error } if *channel == usize::MAX => {
                write!(f, "the packet's sections: {error}")
            }
            Self::Decode { channel, error } => write!(f, "channel {channel}: {error}"),
        }
    }
}

impl std::error::Error for ConnectionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Refused(error) => Some(error),
            Self::Ack(error) => Some(error),
            Self::Send { error, .. } => Some(error),
            Self::Decode { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl ConnectionError {
    /// Whether the packet refused is the network's doing, and harmless to
    /// read past: a duplicate ([`AckError::Duplicate`]), or a packet older
    /// than the header's window ([`AckError::TooOld`]: what it carried was
    /// declared lost and goes again if still current). Nothing changed and
    /// nothing is owed. Every other error is real: a header that cannot be
    /// read or acknowledges a packet never sent, a section that does not
    /// decode (another schema, another number of channels), a packet a
    /// session refused, a call of the wrong mode. Over a transport that
    /// authenticates its peer, those come only from a peer running other
    /// code: disconnect it.
    ///
    /// ```
    /// use fastarray_core::{AckError, ConnectionError};
    ///
    /// assert!(ConnectionError::Ack(AckError::Duplicate { packet: 7 }).is_harmless());
    /// assert!(!ConnectionError::Ack(AckError::Truncated { len: 3 }).is_harmless());
    /// ```
    pub fn is_harmless(&self) -> bool {
        matches!(
            self,
            Self::Ack(AckError::Duplicate { .. } | AckError::TooOld { .. })
        )
    }
}

impl From<AckError> for ConnectionError {
    fn from(error: AckError) -> Self {
        Self::Ack(error)
    }
}
