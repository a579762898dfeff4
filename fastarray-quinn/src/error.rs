//! What can go wrong on either side of the adapter.

use core::fmt;

use fastarray_core::ConnectionError;

/// Why a [`QuicServer`](crate::QuicServer) call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerError {
    /// No connected client has this id (it never connected, or it left).
    UnknownClient(u64),
    /// The client's QUIC connection does not carry datagrams (the peer
    /// did not offer them, or this side disabled them): its
    /// `max_datagram_size()` is `None`.
    DatagramsUnsupported {
        /// The client.
        client: u64,
    },
    /// The client's fastarray [`Connection`](fastarray_core::Connection)
    /// could not write a packet (the arrays given are not its channels,
    /// one has uncommitted work, ...). Nothing was recorded as sent.
    Write {
        /// The client.
        client: u64,
        /// Why.
        error: ConnectionError,
    },
    /// quinn refused a datagram: the connection was lost, or the packet
    /// is larger than the connection carries (an item too large for any
    /// datagram: QUIC cannot fragment one, so keep every item within
    /// about 1 100 bytes). The packet counts as sent and lost: its work is
    /// due again once its acknowledgement is overdue.
    Datagram {
        /// The client.
        client: u64,
        /// Why.
        error: quinn::SendDatagramError,
    },
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownClient(client) => write!(f, "no connected client has id {client}"),
            Self::DatagramsUnsupported { client } => write!(
                f,
                "client {client}'s QUIC connection does not carry datagrams"
            ),
            Self::Write { client, error } => write!(f, "client {client}: {error}"),
            Self::Datagram { client, error } => {
                write!(f, "client {client}: sending a datagram: {error}")
            }
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Write { error, .. } => Some(error),
            Self::Datagram { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Why a [`QuicClient`](crate::QuicClient) call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection could not be started (bad server name, no client
    /// configuration, endpoint closed).
    Connect(quinn::ConnectError),
    /// The QUIC connection failed or closed: the handshake did not
    /// complete (certificate not trusted, timed out), the server closed
    /// it, or it timed out idle.
    Closed(quinn::ConnectionError),
    /// The QUIC connection does not carry datagrams (the server did not
    /// offer them).
    DatagramsUnsupported,
    /// A packet from the server could not be applied, for a reason that is
    /// not the network's doing (a duplicate or a packet too old is not
    /// one: [`ConnectionError::is_harmless`](fastarray_core::ConnectionError::is_harmless)): the server runs another
    /// schema or another number of channels, or misbehaves. No mirror
    /// changed; the datagrams after it are still queued.
    Apply(ConnectionError),
    /// The reply could not be written (the client's connection refused
    /// it).
    Reply(ConnectionError),
    /// quinn refused the reply's datagram (too large for the connection,
    /// or the connection was lost).
    Datagram(quinn::SendDatagramError),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(error) => write!(f, "connecting: {error}"),
            Self::Closed(error) => write!(f, "the QUIC connection closed: {error}"),
            Self::DatagramsUnsupported => {
                write!(f, "the QUIC connection does not carry datagrams")
            }
            Self::Apply(error) => write!(f, "applying the server's packet: {error}"),
            Self::Reply(error) => write!(f, "writing the reply: {error}"),
            Self::Datagram(error) => write!(f, "sending the reply: {error}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect(error) => Some(error),
            Self::Closed(error) => Some(error),
            Self::DatagramsUnsupported => None,
            Self::Apply(error) | Self::Reply(error) => Some(error),
            Self::Datagram(error) => Some(error),
        }
    }
}
