//! Target `secure`: the handshake and the sessions on hostile bytes.
//! `data[0] % 4` picks what `data[1..]` is:
//!
//! - 0: a datagram to a token-mode `ServerHandshake` (fixed secret, one
//!   client address): no panic; a refused one sends nothing back and
//!   stores nothing; a session is made only for a response whose token is
//!   the server's own MAC (then the same response again is refused);
//! - 1: a datagram to a `ClientHandshake` waiting for its challenge: no
//!   panic; refused, it leaves the client unchallenged;
//! - 2 and 3: an XOR mask over a genuine packet of a token-mode (2) or
//!   sealed (3) session (bytes past the packet are appended; `data[0] >> 2`
//!   bytes are cut from its end): a sealed packet opens only unchanged; a
//!   token packet opens exactly when its kind and token are unchanged; a
//!   refused packet changes nothing (the genuine one still opens).

use std::time::Instant;

use fastarray::{
    ClientHandshake, HandshakeError, PacketKind, Protection, ServerHandshake, Session, SessionKeys,
};

/// The protocol id the target's server speaks (seeds use it).
pub const PROTOCOL: u64 = 0xf022_0001;
/// The client address every datagram comes from.
const FROM: &str = "198.51.100.1:7777";

/// A server's and a client's session after a genuine handshake.
fn sessions(keys: Option<SessionKeys>) -> (Session, Session) {
    let now = Instant::now();
    let protection = match keys {
        Some(_) => Protection::Encrypted,
        None => Protection::Token,
    };
    let mut server = ServerHandshake::with_secret(PROTOCOL, protection, [9; 16]);
    let mut client = match keys.clone() {
        Some(keys) => ClientHandshake::encrypted(PROTOCOL, 3, keys).expect("randomness"),
        None => ClientHandshake::new(PROTOCOL, 3).expect("randomness"),
    };
    let (mut request, mut challenge, mut response) = (Vec::new(), Vec::new(), Vec::new());
    client.poll_transmit(now, &mut request);
    server
        .handle(now, FROM, &request, &mut challenge)
        .expect("a genuine request");
    let at_client = client
        .receive(&challenge)
        .expect("a genuine challenge")
        .expect("the first");
    client.poll_transmit(now, &mut response);
    let at_server = match keys {
        Some(keys) => {
            server.handle_encrypted(now, FROM, &response, &mut Vec::new(), |_| Some(keys))
        }
        None => server.handle(now, FROM, &response, &mut Vec::new()),
    };
    (
        at_server.expect("a genuine response").expect("a session"),
        at_client,
    )
}

pub fn secure(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 4 {
        0 => {
            let now = Instant::now();
            let mut server = ServerHandshake::with_secret(PROTOCOL, Protection::Token, [9; 16]);
            let mut reply = Vec::new();
            match server.handle(now, FROM, rest, &mut reply) {
                Ok(None) => assert!(
                    reply.len() <= rest.len(),
                    "a challenge larger than its request"
                ),
                Ok(Some(_)) => {
                    assert_eq!(server.recent_sessions(), 1);
                    assert_eq!(
                        server.handle(now, FROM, rest, &mut reply).err(),
                        Some(HandshakeError::AlreadyAccepted)
                    );
                }
                Err(_) => {
                    assert!(reply.is_empty(), "a refused datagram was answered");
                    assert_eq!(server.recent_sessions(), 0);
                }
            }
        }
        1 => {
            let mut client = ClientHandshake::new(PROTOCOL, 3).expect("randomness");
            if client.receive(rest).is_err() {
                assert!(!client.is_challenged());
            }
        }
        mode => {
            let keys = (mode == 3).then_some(SessionKeys {
                client_to_server: [1; 32],
                server_to_client: [2; 32],
            });
            let (mut at_server, mut at_client) = sessions(keys);
            let mut genuine = Vec::new();
            at_server
                .seal(b"a genuine packet's bytes", &mut genuine)
                .expect("a fresh session");
            let mut forged = genuine.clone();
            for (at, mask) in rest.iter().enumerate() {
                match forged.get_mut(at) {
                    Some(byte) => *byte ^= mask,
                    None => forged.push(*mask),
                }
            }
            forged.truncate(forged.len().saturating_sub(usize::from(selector >> 2)));
            let mut scratch = Vec::new();
            let opened = at_client.open(&forged, &mut scratch).is_ok();
            let expected = match mode {
                2 => forged.len() >= 9 && forged[..9] == genuine[..9],
                _ => forged == genuine,
            };
            assert_eq!(opened, expected, "forged {forged:?}");
            assert!(PacketKind::of(&genuine).is_some());
            if !opened || mode == 2 {
                assert!(
                    at_client.open(&genuine, &mut scratch).is_ok(),
                    "a refusal changed the session"
                );
            }
        }
    }
}
