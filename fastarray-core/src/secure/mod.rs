//! Packets from the peer only: the connect handshake and the session that
//! protects every packet after it, sans-IO (nothing here touches a socket
//! or, but for the operating system's randomness, anything else).
//!
//! Over bare UDP anyone who can spoof the server's address can send the
//! client a packet that reuses a genuine sequence and happens to decode;
//! without this, it is applied and acknowledged, and the genuine packet is
//! refused as its duplicate. Game transports refuse such packets before
//! the game sees them, and so does this module, as netcode does:
//!
//! 1. **Handshake.** The client sends a request (protocol id, protection,
//!    its login-service client id, a random nonce), padded to 32 bytes.
//!    The server answers with a challenge (25 bytes) carrying a token: a
//!    MAC of the request, the client's address and the time under the
//!    server's secret key. The client echoes it; the server recomputes the
//!    MAC, and if it matches and is recent, both sides hold a [`Session`].
//!    The server keeps nothing per client until the echo
//!    ([`ServerHandshake`]).
//! 2. **Token mode** ([`Protection::Token`]): every packet, both ways,
//!    starts with a kind byte and the 8-byte token, compared in constant
//!    time before anything else is read. An attacker off the path between
//!    the two never sees the token and must guess 64 bits. 9 bytes per
//!    packet.
//! 3. **Encryption** ([`Protection::Encrypted`], feature `encryption`):
//!    the game's login service gives both sides a key per direction
//!    (`SessionKeys`, as netcode's connect token does); each session
//!    derives its own from them and the client's nonce. Every packet is
//!    sealed with ChaCha20-Poly1305: the kind byte and a 64-bit counter
//!    (the nonce) in clear and authenticated, with the token, protocol id
//!    and client id as associated data; everything else encrypted; a
//!    16-byte tag. A 256-packet replay window refuses duplicates and older
//!    counters. The response carries a proof that the client holds its key.
//!    25 bytes per packet. This also stops an attacker on the path.
//!
//! `WIRE.md` has the layouts byte by byte.

#[cfg(feature = "encryption")]
mod aead;
mod client;
mod error;
mod kind;
mod message;
mod protection;
#[cfg(feature = "encryption")]
mod replay;
mod server;
mod session;
mod siphash;
#[cfg(test)]
mod tests;
mod token;

#[cfg(feature = "encryption")]
pub use aead::SessionKeys;
pub use client::ClientHandshake;
pub use error::{HandshakeError, PacketError};
pub use kind::PacketKind;
pub use protection::Protection;
pub use server::ServerHandshake;
pub use session::Session;
pub(crate) use session::{inner_of, open_with};
