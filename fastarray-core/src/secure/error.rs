//! Why a handshake message or a connection packet was refused.

use core::fmt;

use super::kind::PacketKind;

/// Why a handshake message was refused, or a handshake could not start.
/// A refused message changed nothing: drop it (and send nothing back).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The operating system gave no randomness for a key or a nonce.
    Randomness,
    /// The datagram does not start with a handshake kind.
    UnknownKind {
        /// Its first byte (`None`: the datagram is empty).
        byte: Option<u8>,
    },
    /// A handshake message this side never takes (a client's message at the
    /// client, a challenge at the server, a data packet at either).
    UnexpectedKind {
        /// What the datagram is.
        kind: PacketKind,
    },
    /// The message is not the length its kind has.
    WrongLength {
        /// What it is.
        kind: PacketKind,
        /// The length its kind (and protection) has.
        expected: usize,
        /// The datagram's length.
        len: usize,
    },
    /// The message's bytes are not a message of its kind: another wire
    /// version, an unknown protection, or padding that is not zero.
    Malformed {
        /// What it claims to be.
        kind: PacketKind,
        /// What is wrong.
        reason: &'static str,
    },
    /// The client speaks another game protocol (or version of it).
    WrongProtocol {
        /// This side's protocol id.
        expected: u64,
        /// The message's.
        found: u64,
    },
    /// The client asks for another protection than this server gives.
    WrongProtection,
    /// The challenge answers another connect request than this client's:
    /// not from the server, or for an earlier attempt.
    WrongNonce,
    /// The echoed token is not the one this server issued for this
    /// address, client and time: forged, or echoed from another address.
    BadToken,
    /// The echoed challenge is older than the challenge lifetime.
    Expired {
        /// Its age, in milliseconds.
        age_ms: u64,
    },
    /// The echoed challenge claims to be issued later than now.
    FromFuture,
    /// This challenge was already answered and its session made: a replay,
    /// or a client's repeat of its response after the server accepted it
    /// (which the server's connection for the address takes care of).
    AlreadyAccepted,
    /// The server holds as many recently accepted challenges as it keeps
    /// ([`ServerHandshake::MAX_RECENT`](super::ServerHandshake::MAX_RECENT)):
    /// try again once some expire.
    Busy,
    /// The client asks for an encrypted session and the server was not
    /// given the keys (use `ServerHandshake::handle_encrypted`, feature
    /// `encryption`).
    KeysNeeded,
    /// The game's login service knows no keys for this client.
    UnknownClient {
        /// The client id the request named.
        client_id: u64,
    },
    /// The response's proof does not verify under the client's key: the
    /// client does not hold the keys the login service gave it.
    BadProof,
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Randomness => write!(f, "the operating system gave no randomness"),
            Self::UnknownKind { byte: None } => write!(f, "an empty datagram"),
            Self::UnknownKind { byte: Some(byte) } => {
                write!(f, "first byte {byte:#04x} is no handshake message")
            }
            Self::UnexpectedKind { kind } => {
                write!(f, "a {kind:?} message is not taken on this side")
            }
            Self::WrongLength {
                kind,
                expected,
                len,
            } => write!(f, "a {kind:?} message is {expected} bytes, not {len}"),
            Self::Malformed { kind, reason } => write!(f, "a malformed {kind:?} message: {reason}"),
            Self::WrongProtocol { expected, found } => write!(
                f,
                "protocol id {found:#018x}, but this side speaks {expected:#018x}"
            ),
            Self::WrongProtection => write!(f, "the client asks for another protection"),
            Self::WrongNonce => write!(f, "the challenge answers another connect request"),
            Self::BadToken => write!(f, "the echoed token was not issued to this address"),
            Self::Expired { age_ms } => write!(f, "the echoed challenge is {age_ms} ms old"),
            Self::FromFuture => write!(f, "the echoed challenge is issued later than now"),
            Self::AlreadyAccepted => write!(f, "the challenge was already accepted"),
            Self::Busy => write!(f, "too many challenges were accepted recently"),
            Self::KeysNeeded => write!(f, "an encrypted session needs the client's keys"),
            Self::UnknownClient { client_id } => write!(f, "no keys for client {client_id}"),
            Self::BadProof => write!(f, "the response's proof does not verify"),
        }
    }
}

impl std::error::Error for HandshakeError {}

/// Why a connection packet was refused before anything in it was read. A
/// refused packet changed nothing: no acknowledgement, no mirror, no
/// replay window.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PacketError {
    /// The packet is shorter than the session's own bytes.
    Truncated {
        /// Its length.
        len: usize,
        /// The fewest bytes a packet of the session has.
        min: usize,
    },
    /// The packet's first byte is not the session's data kind.
    WrongKind {
        /// Its first byte.
        byte: u8,
    },
    /// The packet's token is not the session's: not from the peer.
    WrongToken,
    /// The packet's counter was received before (a replay, or the network
    /// duplicated it).
    Replayed {
        /// Its counter.
        counter: u64,
    },
    /// The packet's counter is older than the replay window reaches.
    TooOld {
        /// Its counter.
        counter: u64,
    },
    /// The packet does not authenticate: a byte was changed, or it was
    /// sealed with another key.
    Forged,
    /// This side has sealed 2^64 − 1 packets with the session's key: make
    /// a new session.
    Exhausted,
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { len, min } => write!(
                f,
                "a packet of {len} byte(s) is shorter than the session's {min}"
            ),
            Self::WrongKind { byte } => write!(f, "first byte {byte:#04x} is not a data packet"),
            Self::WrongToken => write!(f, "the packet's token is not the session's"),
            Self::Replayed { counter } => write!(f, "packet counter {counter} was received before"),
            Self::TooOld { counter } => write!(
                f,
                "packet counter {counter} is older than the replay window"
            ),
            Self::Forged => write!(f, "the packet does not authenticate"),
            Self::Exhausted => write!(f, "the session's packet counter is exhausted"),
        }
    }
}

impl std::error::Error for PacketError {}
