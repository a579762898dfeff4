//! [`ClientHandshake`]: the client's side of the connect handshake.

use std::time::{Duration, Instant};

#[cfg(feature = "encryption")]
use super::aead::{Direction, PacketCipher, SessionKeys};
use super::error::HandshakeError;
use super::message::{Challenge, Hello, PacketKind, Protection, Request, Response};
use super::session::{Session, Side};
use super::token::random_u64;

/// The client's side of the connect handshake: sends its request until a
/// challenge answers it, then echoes the challenge until the server's
/// first packet arrives.
///
/// [`poll_transmit`](Self::poll_transmit) writes the message due (every
/// [`resend interval`](Self::set_resend_interval), 100 ms by default);
/// [`receive`](Self::receive) takes the server's challenge and returns the
/// [`Session`] once, for
/// [`MirrorConnection::secure`](crate::MirrorConnection::secure). Keep
/// calling `poll_transmit` until that connection has applied a packet (a
/// lost response is sent again; the server makes one session however many
/// arrive), then drop the handshake.
pub struct ClientHandshake {
    hello: Hello,
    #[cfg(feature = "encryption")]
    keys: Option<SessionKeys>,
    challenge: Option<Challenge>,
    next_send: Option<Instant>,
    resend: Duration,
}

/// Says where the handshake stands, not its nonce, token or keys.
impl core::fmt::Debug for ClientHandshake {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClientHandshake")
            .field("protection", &self.hello.protection)
            .field("protocol_id", &self.hello.protocol_id)
            .field("client_id", &self.hello.client_id)
            .field("challenged", &self.challenge.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientHandshake {
    /// How often a message is sent again, by default.
    pub const DEFAULT_RESEND: Duration = Duration::from_millis(100);

    /// A token-mode handshake with a server of game protocol `protocol_id`,
    /// for the client the game's login service calls `client_id` (0 if it
    /// has none), with a random nonce from the operating system.
    pub fn new(protocol_id: u64, client_id: u64) -> Result<Self, HandshakeError> {
        Ok(Self::make(
            Protection::Token,
            protocol_id,
            client_id,
            random_u64()?,
        ))
    }

    /// An encrypted handshake: as [`new`](Self::new), with the keys the
    /// game's login service gave this client (and the server).
    #[cfg(feature = "encryption")]
    pub fn encrypted(
        protocol_id: u64,
        client_id: u64,
        keys: SessionKeys,
    ) -> Result<Self, HandshakeError> {
        let mut handshake =
            Self::make(Protection::Encrypted, protocol_id, client_id, random_u64()?);
        handshake.keys = Some(keys);
        Ok(handshake)
    }

    fn make(protection: Protection, protocol_id: u64, client_id: u64, nonce: u64) -> Self {
        Self {
            hello: Hello {
                protection,
                protocol_id,
                client_id,
                nonce,
            },
            #[cfg(feature = "encryption")]
            keys: None,
            challenge: None,
            next_send: None,
            resend: Self::DEFAULT_RESEND,
        }
    }

    /// How often a message is sent again while no answer comes.
    pub fn set_resend_interval(&mut self, interval: Duration) {
        self.resend = interval;
    }

    /// Whether a challenge was received (the session was made).
    pub fn is_challenged(&self) -> bool {
        self.challenge.is_some()
    }

    /// Appends the message due at `now` to `out`, if one is: the request
    /// (32 bytes), or once challenged the response (43 bytes, 59 with
    /// encryption). Returns whether it wrote one.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        if self.next_send.is_some_and(|due| now < due) {
            return false;
        }
        self.next_send = Some(now + self.resend);
        match self.challenge {
            None => Request(self.hello).write(out),
            Some(challenge) => self.write_response(&challenge, out),
        }
        true
    }

    fn write_response(&self, challenge: &Challenge, out: &mut Vec<u8>) {
        let response = Response {
            hello: self.hello,
            issued_at: challenge.issued_at,
            token: challenge.token,
            proof: None,
        };
        let start = out.len();
        response.write_unproven(out);
        #[cfg(feature = "encryption")]
        if let Some(keys) = &self.keys {
            let cipher = PacketCipher::derive(keys, self.hello.nonce, Direction::ClientToServer);
            // A tag over the message: only the holder of the key makes it.
            let proof = cipher
                .seal(PacketCipher::PROOF_COUNTER, &out[start..], &mut [])
                .unwrap_or_default();
            out.extend_from_slice(&proof);
        }
        let _ = start;
    }

    /// Takes a datagram from the server: a challenge to this client's
    /// request. The first returns the session (and makes
    /// [`poll_transmit`](Self::poll_transmit) send the response at once);
    /// later ones (answers to resent requests) return `None`. A challenge
    /// to another request is refused ([`HandshakeError::WrongNonce`]): an
    /// off-path attacker does not know the nonce.
    pub fn receive(&mut self, datagram: &[u8]) -> Result<Option<Session>, HandshakeError> {
        match PacketKind::of(datagram) {
            Some(PacketKind::Challenge) => {}
            Some(kind) => return Err(HandshakeError::UnexpectedKind { kind }),
            None => {
                return Err(HandshakeError::UnknownKind {
                    byte: datagram.first().copied(),
                });
            }
        }
        let challenge = Challenge::read(datagram)?;
        if challenge.nonce != self.hello.nonce {
            return Err(HandshakeError::WrongNonce);
        }
        if self.challenge.is_some() {
            return Ok(None);
        }
        self.challenge = Some(challenge);
        self.next_send = None;
        let hello = &self.hello;
        #[cfg(feature = "encryption")]
        if let Some(keys) = &self.keys {
            return Ok(Some(Session::sealed(
                Side::Client,
                challenge.token,
                hello.client_id,
                hello.protocol_id,
                keys,
                hello.nonce,
            )));
        }
        Ok(Some(Session::token_mode(
            Side::Client,
            challenge.token,
            hello.client_id,
            hello.protocol_id,
        )))
    }
}
