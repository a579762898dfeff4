//! Sealed packets' cryptography (feature `encryption`): the keys the
//! game's login service hands both sides, each session's own keys derived
//! from them, and ChaCha20-Poly1305 (RFC 8439) over a packet.

use core::fmt;

use chacha20::ChaCha20;
use chacha20::cipher::{KeyIvInit, StreamCipher};
use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};

/// The tag's size on the wire, in bytes.
pub(crate) const TAG_BYTES: usize = 16;

/// The keys of one client's sessions, as the game's login service gives
/// them to the client and to the server (netcode's connect token carries
/// the same two): one per direction. Each session seals with keys derived
/// from these and the client's random nonce, so a new session never
/// reuses an old one's nonces under the same key.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKeys {
    /// What the client seals its packets with.
    pub client_to_server: [u8; 32],
    /// What the server seals its packets with.
    pub server_to_client: [u8; 32],
}

impl fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKeys { .. }")
    }
}

/// A direction of [`SessionKeys`]: its number in the derivation's nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    ClientToServer = 1,
    ServerToClient = 2,
}

/// The nonce of the packet numbered `counter` (RFC 8439's 96 bits: the
/// counter, then 4 bytes of `domain`).
fn nonce(counter: u64, domain: u32) -> Nonce {
    let mut bytes = [0; 12];
    bytes[..8].copy_from_slice(&counter.to_le_bytes());
    bytes[8..].copy_from_slice(&domain.to_le_bytes());
    Nonce::from(bytes)
}

/// One direction's cipher of one session.
#[derive(Clone)]
pub(crate) struct PacketCipher(ChaCha20Poly1305);

impl fmt::Debug for PacketCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PacketCipher { .. }")
    }
}

impl PacketCipher {
    /// The counter no packet is sealed under: the handshake's proof uses it.
    pub(crate) const PROOF_COUNTER: u64 = u64::MAX;

    /// The session's cipher for `direction`: its key is the first 32 bytes
    /// of ChaCha20's keystream under the login service's key, with the
    /// client's nonce and the direction as the nonce (a PRF of both).
    pub(crate) fn derive(keys: &SessionKeys, client_nonce: u64, direction: Direction) -> Self {
        let login_key = match direction {
            Direction::ClientToServer => &keys.client_to_server,
            Direction::ServerToClient => &keys.server_to_client,
        };
        let mut key = [0; 32];
        let iv = nonce(client_nonce, direction as u32);
        ChaCha20::new(&(*login_key).into(), &iv).apply_keystream(&mut key);
        Self(ChaCha20Poly1305::new(&Key::from(key)))
    }

    /// Encrypts `buffer` in place as packet `counter`, authenticating
    /// `associated` with it; returns the tag. `None` only for a buffer
    /// longer than ChaCha20-Poly1305 takes (256 GiB).
    pub(crate) fn seal(
        &self,
        counter: u64,
        associated: &[u8],
        buffer: &mut [u8],
    ) -> Option<[u8; TAG_BYTES]> {
        let tag = self
            .0
            .encrypt_inout_detached(&nonce(counter, 0), associated, buffer.into())
            .ok()?;
        Some(tag.into())
    }

    /// Decrypts `buffer` in place if it and `associated` authenticate
    /// under `tag` as packet `counter`; returns whether they did (if not,
    /// `buffer` holds garbage).
    pub(crate) fn open(
        &self,
        counter: u64,
        associated: &[u8],
        buffer: &mut [u8],
        tag: &[u8; TAG_BYTES],
    ) -> bool {
        self.0
            .decrypt_inout_detached(
                &nonce(counter, 0),
                associated,
                buffer.into(),
                &Tag::from(*tag),
            )
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> SessionKeys {
        SessionKeys {
            client_to_server: [1; 32],
            server_to_client: [2; 32],
        }
    }

    #[test]
    fn sessions_and_directions_get_their_own_keys() {
        let a = PacketCipher::derive(&keys(), 1, Direction::ClientToServer);
        let b = PacketCipher::derive(&keys(), 2, Direction::ClientToServer);
        let c = PacketCipher::derive(&keys(), 1, Direction::ServerToClient);
        let tag = |cipher: &PacketCipher| cipher.seal(0, b"ad", &mut [0; 4]).unwrap();
        assert_ne!(tag(&a), tag(&b));
        assert_ne!(tag(&a), tag(&c));
        assert_eq!(
            tag(&a),
            tag(&PacketCipher::derive(&keys(), 1, Direction::ClientToServer))
        );
    }

    #[test]
    fn a_sealed_buffer_opens_once_unchanged() {
        let cipher = PacketCipher::derive(&keys(), 9, Direction::ServerToClient);
        let mut buffer = *b"attack at dawn";
        let tag = cipher.seal(3, b"header", &mut buffer).unwrap();
        assert_ne!(&buffer, b"attack at dawn");
        let sealed = buffer;
        assert!(cipher.open(3, b"header", &mut buffer, &tag));
        assert_eq!(&buffer, b"attack at dawn");
        for (counter, associated) in [(4, &b"header"[..]), (3, &b"headex"[..])] {
            let mut copy = sealed;
            assert!(!cipher.open(counter, associated, &mut copy, &tag));
        }
    }
}
