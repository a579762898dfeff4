//! [`Session`]: what a handshake establishes, and how it wraps each
//! connection packet: the token in front (token mode), or the whole packet
//! sealed (encryption).

use core::ops::Range;

use super::error::PacketError;
#[cfg(feature = "encryption")]
use super::message::VERSION;
use super::message::{PacketKind, Protection};
use super::token::{TOKEN_BYTES, constant_time_eq};
#[cfg(feature = "encryption")]
use super::{
    aead::{Direction, PacketCipher, SessionKeys, TAG_BYTES},
    replay::{Replay, ReplayWindow},
};

/// The side of a connection a session serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Server,
    Client,
}

/// One end of an established connection, made by the handshake
/// ([`ServerHandshake`](super::ServerHandshake) on the server,
/// [`ClientHandshake`](super::ClientHandshake) on the client) and given to
/// [`Connection::secure`](crate::Connection::secure) or
/// [`MirrorConnection::secure`](crate::MirrorConnection::secure), which
/// wrap every packet with it and refuse every packet it does not open.
///
/// In token mode a packet is its kind byte, the 8-byte token, then the
/// connection's packet (ack header and body): 9 bytes more. Sealed, it is
/// the kind byte, an 8-byte counter (the nonce), the connection's packet
/// encrypted, and a 16-byte tag: 25 bytes more.
///
/// [`seal`](Self::seal) and [`open`](Self::open) wrap any bytes the same
/// way, for a game that sends packets of its own over the session.
pub struct Session {
    token: [u8; TOKEN_BYTES],
    client_id: u64,
    protocol_id: u64,
    #[cfg(feature = "encryption")]
    sealed: Option<Box<Sealed>>,
}

/// Says what the session is, not its token or keys.
impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("protection", &self.protection())
            .field("client_id", &self.client_id)
            .field("protocol_id", &self.protocol_id)
            .finish_non_exhaustive()
    }
}

/// The state of a sealed session.
#[cfg(feature = "encryption")]
#[derive(Debug)]
struct Sealed {
    send: PacketCipher,
    receive: PacketCipher,
    /// The counter of the next packet sealed.
    next: u64,
    window: ReplayWindow,
}

/// Where an opened packet's inner bytes are, and its counter (sealed
/// packets) to record once the packet is taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Opened {
    pub(crate) counter: Option<u64>,
    /// In the packet (token mode) or in the scratch buffer (decrypted).
    pub(crate) inner: Range<usize>,
    pub(crate) decrypted: bool,
}

/// Opens `packet` with `session`, if the connection has one (`None`
/// without): nothing is recorded until [`Session::take`].
pub(crate) fn open_with(
    session: Option<&Session>,
    packet: &[u8],
    scratch: &mut Vec<u8>,
) -> Result<Option<Opened>, PacketError> {
    session
        .map(|session| session.unwrap(packet, scratch))
        .transpose()
}

/// The inner packet of `packet` opened as `opened`: in the packet (token
/// mode, or no session) or in `scratch` (decrypted).
pub(crate) fn inner_of<'a>(
    opened: Option<&Opened>,
    packet: &'a [u8],
    scratch: &'a [u8],
) -> &'a [u8] {
    match opened {
        Some(opened) if opened.decrypted => &scratch[opened.inner.clone()],
        Some(opened) => &packet[opened.inner.clone()],
        None => packet,
    }
}

/// Bytes before the inner packet: the kind, then the token or counter.
const HEAD: usize = 1 + 8;
/// The associated data of a sealed packet: its head, then what is not on
/// the wire: the version, the token, the protocol and the client.
#[cfg(feature = "encryption")]
const ASSOCIATED: usize = HEAD + 1 + TOKEN_BYTES + 8 + 8;

impl Session {
    /// The bytes a token-mode packet carries beyond the connection's own.
    pub const TOKEN_OVERHEAD: usize = HEAD;
    /// The bytes a sealed packet carries beyond the connection's own.
    #[cfg(feature = "encryption")]
    pub const SEALED_OVERHEAD: usize = HEAD + TAG_BYTES;

    pub(crate) fn token_mode(
        side: Side,
        token: [u8; TOKEN_BYTES],
        client_id: u64,
        protocol_id: u64,
    ) -> Self {
        let _ = side; // a token-mode session is the same on both sides
        Self {
            token,
            client_id,
            protocol_id,
            #[cfg(feature = "encryption")]
            sealed: None,
        }
    }

    #[cfg(feature = "encryption")]
    pub(crate) fn sealed(
        side: Side,
        token: [u8; TOKEN_BYTES],
        client_id: u64,
        protocol_id: u64,
        keys: &SessionKeys,
        client_nonce: u64,
    ) -> Self {
        let c2s = PacketCipher::derive(keys, client_nonce, Direction::ClientToServer);
        let s2c = PacketCipher::derive(keys, client_nonce, Direction::ServerToClient);
        let (send, receive) = match side {
            Side::Server => (s2c, c2s),
            Side::Client => (c2s, s2c),
        };
        let mut session = Self::token_mode(side, token, client_id, protocol_id);
        session.sealed = Some(Box::new(Sealed {
            send,
            receive,
            next: 0,
            window: ReplayWindow::default(),
        }));
        session
    }

    /// The client, as the game's login service named it in the request (0
    /// if unnamed). In token mode this is the client's claim, bound to the
    /// session but not proven: any client may name any id. A sealed
    /// session proves it: the handshake's proof verified under the keys
    /// the login service gave that id.
    pub fn client_id(&self) -> u64 {
        self.client_id
    }

    /// The game protocol the session speaks (its id, as both sides gave
    /// it to the handshake).
    pub fn protocol_id(&self) -> u64 {
        self.protocol_id
    }

    /// How the session protects its packets.
    pub fn protection(&self) -> Protection {
        #[cfg(feature = "encryption")]
        if self.sealed.is_some() {
            return Protection::Encrypted;
        }
        Protection::Token
    }

    /// The bytes each packet carries beyond the connection's own:
    /// [`TOKEN_OVERHEAD`](Self::TOKEN_OVERHEAD) (9) or, sealed, 25.
    pub fn overhead(&self) -> usize {
        match self.protection() {
            Protection::Token => HEAD,
            Protection::Encrypted => HEAD + 16,
        }
    }

    /// Appends `inner` to `out` as a packet of the session.
    pub fn seal(&mut self, inner: &[u8], out: &mut Vec<u8>) -> Result<(), PacketError> {
        let start = self.begin(out)?;
        out.extend_from_slice(inner);
        self.finish(out, start)
    }

    /// Opens a packet of the peer's: checks it (the token in constant time,
    /// or the tag and the replay window), decrypts it into `scratch` if
    /// sealed, and returns the inner bytes. On error nothing changed.
    pub fn open<'a>(
        &mut self,
        packet: &'a [u8],
        scratch: &'a mut Vec<u8>,
    ) -> Result<&'a [u8], PacketError> {
        let opened = self.unwrap(packet, scratch)?;
        self.take(&opened);
        Ok(match opened.decrypted {
            true => &scratch[opened.inner],
            false => &packet[opened.inner],
        })
    }

    /// Appends a packet's head to `out` (its kind, then the token or the
    /// next counter, which it spends); returns where the inner packet
    /// starts, for [`finish`](Self::finish).
    pub(crate) fn begin(&mut self, out: &mut Vec<u8>) -> Result<usize, PacketError> {
        #[cfg(feature = "encryption")]
        if let Some(sealed) = &mut self.sealed {
            let counter = sealed.next;
            if counter == PacketCipher::PROOF_COUNTER {
                return Err(PacketError::Exhausted);
            }
            sealed.next += 1;
            out.push(PacketKind::Sealed.byte());
            out.extend_from_slice(&counter.to_le_bytes());
            return Ok(out.len());
        }
        out.push(PacketKind::Data.byte());
        out.extend_from_slice(&self.token);
        Ok(out.len())
    }

    /// Seals the inner packet at `out[inner..]` (nothing to do in token
    /// mode): encrypts it in place and appends the tag.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>, inner: usize) -> Result<(), PacketError> {
        #[cfg(feature = "encryption")]
        if let Some(sealed) = &self.sealed {
            let head: [u8; HEAD] = out[inner - HEAD..inner]
                .try_into()
                .map_err(|_| PacketError::Exhausted)?;
            let counter = counter_of(&head);
            let associated = self.associated(&head);
            let tag = sealed
                .send
                .seal(counter, &associated, &mut out[inner..])
                .ok_or(PacketError::Exhausted)?;
            out.extend_from_slice(&tag);
        }
        let _ = (out, inner);
        Ok(())
    }

    /// Checks `packet` and finds its inner bytes (decrypting them into
    /// `scratch` if sealed), changing nothing: [`take`](Self::take) records
    /// it once the connection took it.
    pub(crate) fn unwrap(
        &self,
        packet: &[u8],
        scratch: &mut Vec<u8>,
    ) -> Result<Opened, PacketError> {
        let min = self.overhead();
        if packet.len() < min {
            return Err(PacketError::Truncated {
                len: packet.len(),
                min,
            });
        }
        let kind = match self.protection() {
            Protection::Token => PacketKind::Data,
            Protection::Encrypted => PacketKind::Sealed,
        };
        if packet[0] != kind.byte() {
            return Err(PacketError::WrongKind { byte: packet[0] });
        }
        #[cfg(feature = "encryption")]
        if let Some(sealed) = &self.sealed {
            return self.unseal(sealed, packet, scratch);
        }
        let _ = scratch;
        if !constant_time_eq(&packet[1..HEAD], &self.token) {
            return Err(PacketError::WrongToken);
        }
        Ok(Opened {
            counter: None,
            inner: HEAD..packet.len(),
            decrypted: false,
        })
    }

    #[cfg(feature = "encryption")]
    fn unseal(
        &self,
        sealed: &Sealed,
        packet: &[u8],
        scratch: &mut Vec<u8>,
    ) -> Result<Opened, PacketError> {
        let head: [u8; HEAD] = packet[..HEAD].try_into().map_err(|_| PacketError::Forged)?;
        let counter = counter_of(&head);
        match sealed.window.check(counter) {
            Ok(()) => {}
            Err(Replay::Duplicate) => return Err(PacketError::Replayed { counter }),
            Err(Replay::TooOld) => return Err(PacketError::TooOld { counter }),
        }
        let (body, tag) = packet[HEAD..].split_at(packet.len() - HEAD - TAG_BYTES);
        let tag: [u8; TAG_BYTES] = tag.try_into().map_err(|_| PacketError::Forged)?;
        scratch.clear();
        scratch.extend_from_slice(body);
        if counter == PacketCipher::PROOF_COUNTER
            || !sealed
                .receive
                .open(counter, &self.associated(&head), scratch, &tag)
        {
            scratch.clear();
            return Err(PacketError::Forged);
        }
        Ok(Opened {
            counter: Some(counter),
            inner: 0..scratch.len(),
            decrypted: true,
        })
    }

    /// Records an opened packet as received (its counter, in the replay
    /// window).
    pub(crate) fn take(&mut self, opened: &Opened) {
        #[cfg(feature = "encryption")]
        if let (Some(sealed), Some(counter)) = (&mut self.sealed, opened.counter) {
            sealed.window.mark(counter);
        }
        let _ = opened;
    }

    /// A sealed packet's associated data: its head, the wire version, the
    /// token, the protocol and the client (the last four are not sent: a
    /// packet authenticates only within this session).
    #[cfg(feature = "encryption")]
    fn associated(&self, head: &[u8; HEAD]) -> [u8; ASSOCIATED] {
        let mut associated = [0; ASSOCIATED];
        associated[..HEAD].copy_from_slice(head);
        associated[HEAD] = VERSION;
        associated[HEAD + 1..HEAD + 9].copy_from_slice(&self.token);
        associated[HEAD + 9..HEAD + 17].copy_from_slice(&self.protocol_id.to_le_bytes());
        associated[HEAD + 17..].copy_from_slice(&self.client_id.to_le_bytes());
        associated
    }
}

/// The counter in a sealed packet's head.
#[cfg(feature = "encryption")]
fn counter_of(head: &[u8; HEAD]) -> u64 {
    let mut counter = [0; 8];
    counter.copy_from_slice(&head[1..]);
    u64::from_le_bytes(counter)
}
