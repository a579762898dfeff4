//! [`ServerHandshake`]: the server's side of the connect handshake,
//! stateless until a client echoes its challenge.

use core::hash::{Hash, Hasher};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::error::HandshakeError;
use super::message::{Challenge, Hello, PacketKind, Protection, Request, Response, VERSION};
use super::session::{Session, Side};
use super::siphash::SipHasher24;
use super::token::{TOKEN_BYTES, constant_time_eq, random};
#[cfg(feature = "encryption")]
use super::{
    aead::{Direction, PacketCipher, SessionKeys},
    token::constant_time_eq as proof_eq,
};

/// The server's side of the connect handshake, one for all clients.
///
/// A client's request is answered with a challenge carrying a token: a
/// MAC (SipHash-2-4 under a secret key drawn from the operating system)
/// of the request, the client's address and the time. Nothing is stored:
/// a flood of requests from spoofed addresses costs the server one MAC
/// each and a challenge no larger than the request, sent to addresses that
/// did not ask. A client that echoes the challenge from the same address
/// within [`challenge_lifetime`](Self::set_challenge_lifetime) gets a
/// [`Session`] whose token is that MAC: only a peer that received the
/// challenge at that address knows it. The only state is the tokens
/// accepted within the lifetime (so that a replayed response makes no
/// second session), at most [`MAX_RECENT`](Self::MAX_RECENT) of them, and
/// only clients that passed the challenge add to it.
///
/// Route a datagram from an address without a connection here; make the
/// address's [`Connection`](crate::Connection) with
/// [`Connection::secure`](crate::Connection::secure) from the session it
/// returns. A client's repeated responses then reach that connection,
/// which refuses them as not data.
pub struct ServerHandshake {
    protocol_id: u64,
    protection: Protection,
    secret: [u8; 16],
    lifetime: Duration,
    /// The time the challenges' clocks count from: the first `now` seen.
    epoch: Option<Instant>,
    /// Tokens accepted within the lifetime, with the time each expires
    /// (milliseconds since `epoch`).
    recent: VecDeque<(u64, [u8; TOKEN_BYTES])>,
}

/// Says what the handshake accepts, not its secret or tokens.
impl core::fmt::Debug for ServerHandshake {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ServerHandshake")
            .field("protocol_id", &self.protocol_id)
            .field("protection", &self.protection)
            .field("lifetime", &self.lifetime)
            .field("recent_sessions", &self.recent.len())
            .finish_non_exhaustive()
    }
}

impl ServerHandshake {
    /// How many tokens accepted within the challenge lifetime are kept.
    pub const MAX_RECENT: usize = 4096;
    /// How long a challenge may be echoed, by default.
    pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(5);

    /// The handshake of a server speaking game protocol `protocol_id` (an
    /// id of the game and its version: a client with another is refused),
    /// protecting its sessions with `protection`, with a secret key from
    /// the operating system.
    pub fn new(protocol_id: u64, protection: Protection) -> Result<Self, HandshakeError> {
        Ok(Self::with_secret(protocol_id, protection, random()?))
    }

    /// As [`new`](Self::new), with the given secret key: for tests, or for
    /// several processes answering for one address. Anyone who knows it
    /// can make tokens.
    pub fn with_secret(protocol_id: u64, protection: Protection, secret: [u8; 16]) -> Self {
        Self {
            protocol_id,
            protection,
            secret,
            lifetime: Self::DEFAULT_LIFETIME,
            epoch: None,
            recent: VecDeque::new(),
        }
    }

    /// How long a challenge may be echoed (5 s by default): a client's
    /// round trip and a few resends.
    pub fn set_challenge_lifetime(&mut self, lifetime: Duration) {
        self.lifetime = lifetime;
    }

    /// The protection this server's sessions have.
    pub fn protection(&self) -> Protection {
        self.protection
    }

    /// The tokens accepted within the challenge lifetime, held to refuse
    /// their replay (at most [`MAX_RECENT`](Self::MAX_RECENT)).
    pub fn recent_sessions(&self) -> usize {
        self.recent.len()
    }

    /// Takes a handshake datagram from `from` (any address type: its
    /// `Hash` goes into the token) at `now`. A request appends the
    /// challenge to send back to `reply` and returns `None`; a valid
    /// response returns the session. Token mode only: an encrypted
    /// server uses `handle_encrypted` (feature `encryption`). On error
    /// nothing changed and nothing is to be sent.
    pub fn handle<A: Hash + ?Sized>(
        &mut self,
        now: Instant,
        from: &A,
        datagram: &[u8],
        reply: &mut Vec<u8>,
    ) -> Result<Option<Session>, HandshakeError> {
        self.handle_with(now, from, datagram, reply, |_, _| {
            Err(HandshakeError::KeysNeeded)
        })
    }

    /// As [`handle`](Self::handle), for a server of encrypted sessions:
    /// `keys` gives the keys the game's login service issued for a client
    /// id (`None`: unknown client), asked only once the response passed
    /// the challenge. The response's proof must verify under them.
    #[cfg(feature = "encryption")]
    pub fn handle_encrypted<A: Hash + ?Sized>(
        &mut self,
        now: Instant,
        from: &A,
        datagram: &[u8],
        reply: &mut Vec<u8>,
        keys: impl FnOnce(u64) -> Option<SessionKeys>,
    ) -> Result<Option<Session>, HandshakeError> {
        self.handle_with(now, from, datagram, reply, |response, protocol_id| {
            let hello = response.hello;
            let keys = keys(hello.client_id).ok_or(HandshakeError::UnknownClient {
                client_id: hello.client_id,
            })?;
            let cipher = PacketCipher::derive(&keys, hello.nonce, Direction::ClientToServer);
            let mut covered = Vec::with_capacity(Response::BYTES);
            response.write_unproven(&mut covered);
            let proof = cipher
                .seal(PacketCipher::PROOF_COUNTER, &covered, &mut [])
                .ok_or(HandshakeError::BadProof)?;
            if !response.proof.is_some_and(|given| proof_eq(&given, &proof)) {
                return Err(HandshakeError::BadProof);
            }
            Ok(Session::sealed(
                Side::Server,
                response.token,
                hello.client_id,
                protocol_id,
                &keys,
                hello.nonce,
            ))
        })
    }

    /// Handles a datagram; an encrypted response's session is `sealed`'s.
    fn handle_with<A: Hash + ?Sized>(
        &mut self,
        now: Instant,
        from: &A,
        datagram: &[u8],
        reply: &mut Vec<u8>,
        sealed: impl FnOnce(&Response, u64) -> Result<Session, HandshakeError>,
    ) -> Result<Option<Session>, HandshakeError> {
        let now_ms = self.clock(now);
        match PacketKind::of(datagram) {
            Some(PacketKind::Request) => {
                let Request(hello) = Request::read(datagram)?;
                self.check(&hello)?;
                Challenge {
                    nonce: hello.nonce,
                    issued_at: now_ms,
                    token: self.token(from, &hello, now_ms),
                }
                .write(reply);
                Ok(None)
            }
            Some(PacketKind::Response) => {
                let response = Response::read(datagram)?;
                let hello = response.hello;
                self.check(&hello)?;
                let expected = self.token(from, &hello, response.issued_at);
                if !constant_time_eq(&expected, &response.token) {
                    return Err(HandshakeError::BadToken);
                }
                if response.issued_at > now_ms {
                    return Err(HandshakeError::FromFuture);
                }
                let age_ms = now_ms - response.issued_at;
                if age_ms > self.lifetime_ms() {
                    return Err(HandshakeError::Expired { age_ms });
                }
                self.forget_expired(now_ms);
                if self
                    .recent
                    .iter()
                    .any(|(_, token)| *token == response.token)
                {
                    return Err(HandshakeError::AlreadyAccepted);
                }
                if self.recent.len() >= Self::MAX_RECENT {
                    return Err(HandshakeError::Busy);
                }
                let session = match hello.protection {
                    Protection::Token => Session::token_mode(
                        Side::Server,
                        response.token,
                        hello.client_id,
                        self.protocol_id,
                    ),
                    Protection::Encrypted => sealed(&response, self.protocol_id)?,
                };
                let expires = response.issued_at.saturating_add(self.lifetime_ms());
                self.recent.push_back((expires, response.token));
                Ok(Some(session))
            }
            Some(kind) => Err(HandshakeError::UnexpectedKind { kind }),
            None => Err(HandshakeError::UnknownKind {
                byte: datagram.first().copied(),
            }),
        }
    }

    /// Refuses a request or response for another protocol or protection.
    fn check(&self, hello: &Hello) -> Result<(), HandshakeError> {
        if hello.protocol_id != self.protocol_id {
            return Err(HandshakeError::WrongProtocol {
                expected: self.protocol_id,
                found: hello.protocol_id,
            });
        }
        if hello.protection != self.protection {
            return Err(HandshakeError::WrongProtection);
        }
        Ok(())
    }

    /// The token of `hello` from `from`, challenged at `issued_at`.
    fn token<A: Hash + ?Sized>(&self, from: &A, hello: &Hello, issued_at: u64) -> [u8; 8] {
        let mut mac = SipHasher24::new(&self.secret);
        mac.write(&[VERSION, hello.protection.byte()]);
        mac.write(&hello.protocol_id.to_le_bytes());
        mac.write(&hello.client_id.to_le_bytes());
        mac.write(&hello.nonce.to_le_bytes());
        mac.write(&issued_at.to_le_bytes());
        from.hash(&mut mac);
        mac.finish().to_le_bytes()
    }

    /// `now` in milliseconds since the first `now` this handshake saw.
    fn clock(&mut self, now: Instant) -> u64 {
        let epoch = *self.epoch.get_or_insert(now);
        u64::try_from(now.saturating_duration_since(epoch).as_millis()).unwrap_or(u64::MAX)
    }

    fn lifetime_ms(&self) -> u64 {
        u64::try_from(self.lifetime.as_millis()).unwrap_or(u64::MAX)
    }

    fn forget_expired(&mut self, now_ms: u64) {
        self.recent.retain(|&(expires, _)| expires >= now_ms);
    }
}
