//! The handshake and the sessions, sans-IO: addresses are plain values,
//! time is `Instant`s the tests choose.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

const PROTOCOL: u64 = 0xfa57_a77a_0000_0001;
const CLIENT_AT: &str = "10.0.0.7:5000";

/// A token-mode server and client after a full handshake at `t0`.
fn token_pair(t0: Instant) -> (ServerHandshake, Session, Session) {
    let mut server = ServerHandshake::new(PROTOCOL, Protection::Token).unwrap();
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let (client_session, response) = challenge(&mut server, &mut client, t0);
    let server_session = server
        .handle(t0, CLIENT_AT, &response, &mut Vec::new())
        .unwrap()
        .unwrap();
    (server, server_session, client_session)
}

/// Runs the request and the challenge; returns the client's session and
/// its response.
fn challenge(
    server: &mut ServerHandshake,
    client: &mut ClientHandshake,
    now: Instant,
) -> (Session, Vec<u8>) {
    let mut request = Vec::new();
    assert!(client.poll_transmit(now, &mut request));
    let mut reply = Vec::new();
    assert!(
        server
            .handle(now, CLIENT_AT, &request, &mut reply)
            .unwrap()
            .is_none()
    );
    assert!(reply.len() <= request.len(), "no amplification");
    let session = client.receive(&reply).unwrap().unwrap();
    let mut response = Vec::new();
    assert!(
        client.poll_transmit(now, &mut response),
        "the response goes at once"
    );
    (session, response)
}

/// `inner` sealed by `from` and opened by `to`.
fn through(from: &mut Session, to: &mut Session, inner: &[u8]) -> Result<Vec<u8>, PacketError> {
    let mut packet = Vec::new();
    from.seal(inner, &mut packet).unwrap();
    let mut scratch = Vec::new();
    to.open(&packet, &mut scratch).map(<[u8]>::to_vec)
}

#[test]
fn a_token_handshake_makes_one_session_on_each_side() {
    let t0 = Instant::now();
    let (server, mut at_server, mut at_client) = token_pair(t0);
    assert_eq!(server.recent_sessions(), 1);
    assert_eq!((at_server.client_id(), at_client.client_id()), (42, 42));
    assert_eq!(at_server.protection(), Protection::Token);
    assert_eq!(at_server.overhead(), 9);
    assert_eq!(
        through(&mut at_server, &mut at_client, b"delta").unwrap(),
        b"delta"
    );
    assert_eq!(
        through(&mut at_client, &mut at_server, b"input").unwrap(),
        b"input"
    );
    let mut packet = Vec::new();
    at_server.seal(b"delta", &mut packet).unwrap();
    assert_eq!(packet.len(), 5 + Session::TOKEN_OVERHEAD);
    assert_eq!(PacketKind::of(&packet), Some(PacketKind::Data));
}

#[test]
fn debug_output_shows_no_secret() {
    let t0 = Instant::now();
    let mut server = ServerHandshake::with_secret(PROTOCOL, Protection::Token, [0xAB; 16]);
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let (session, _) = challenge(&mut server, &mut client, t0);
    let mut packet = Vec::new();
    let mut session = session;
    session.seal(b"", &mut packet).unwrap();
    let token = format!("{:?}", &packet[1..9]);
    for shown in [
        format!("{server:?}"),
        format!("{client:?}"),
        format!("{session:?}"),
    ] {
        assert!(!shown.contains("171"), "the secret in {shown}"); // 0xAB
        assert!(
            !shown.contains(&token[1..token.len() - 1]),
            "the token in {shown}"
        );
    }
    assert_eq!(
        format!("{session:?}"),
        format!("Session {{ protection: Token, client_id: 42, protocol_id: {PROTOCOL}, .. }}")
    );
}

#[test]
fn a_packet_without_the_token_is_refused() {
    let (_, mut at_server, mut at_client) = token_pair(Instant::now());
    let mut packet = Vec::new();
    at_server.seal(b"delta", &mut packet).unwrap();
    let mut scratch = Vec::new();
    for at in 1..9 {
        let mut forged = packet.clone();
        forged[at] ^= 1;
        assert_eq!(
            at_client.open(&forged, &mut scratch),
            Err(PacketError::WrongToken)
        );
    }
    let mut forged = packet.clone();
    forged[0] = PacketKind::Sealed.byte();
    assert_eq!(
        at_client.open(&forged, &mut scratch),
        Err(PacketError::WrongKind { byte: 0xF5 })
    );
    for len in 0..9 {
        assert_eq!(
            at_client.open(&packet[..len], &mut scratch),
            Err(PacketError::Truncated { len, min: 9 })
        );
    }
    // Another session's token (another handshake, same client and server
    // address) is not this one's.
    let (_, mut other, _) = token_pair(Instant::now());
    assert_eq!(
        through(&mut other, &mut at_client, b"x"),
        Err(PacketError::WrongToken)
    );
    assert_eq!(at_client.open(&packet, &mut scratch).unwrap(), b"delta");
}

#[test]
fn a_wrong_echo_is_refused() {
    let t0 = Instant::now();
    let mut server = ServerHandshake::new(PROTOCOL, Protection::Token).unwrap();
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let (_, response) = challenge(&mut server, &mut client, t0);
    let mut reply = Vec::new();
    // Any byte of the echo changed: the token no longer matches (or the
    // message is refused for its version, protection or protocol).
    for at in 1..response.len() {
        let mut forged = response.clone();
        forged[at] ^= 0x10;
        assert!(
            server.handle(t0, CLIENT_AT, &forged, &mut reply).is_err(),
            "byte {at}"
        );
    }
    // The right echo from another address.
    assert_eq!(
        server
            .handle(t0, "10.0.0.8:5000", &response, &mut reply)
            .err(),
        Some(HandshakeError::BadToken)
    );
    assert_eq!(server.recent_sessions(), 0);
    assert!(reply.is_empty(), "nothing answers a refused response");
    assert!(
        server
            .handle(t0, CLIENT_AT, &response, &mut reply)
            .unwrap()
            .is_some()
    );
}

#[test]
fn an_old_or_replayed_challenge_is_refused() {
    let t0 = Instant::now();
    let secret = [7; 16];
    let mut server = ServerHandshake::with_secret(PROTOCOL, Protection::Token, secret);
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let (_, response) = challenge(&mut server, &mut client, t0);
    let mut reply = Vec::new();
    let late = t0 + ServerHandshake::DEFAULT_LIFETIME + Duration::from_millis(1);
    assert_eq!(
        server.handle(late, CLIENT_AT, &response, &mut reply).err(),
        Some(HandshakeError::Expired { age_ms: 5_001 })
    );
    let in_time = t0 + Duration::from_secs(1);
    assert!(
        server
            .handle(in_time, CLIENT_AT, &response, &mut reply)
            .unwrap()
            .is_some()
    );
    // The same response again, in time: no second session.
    assert_eq!(
        server
            .handle(in_time, CLIENT_AT, &response, &mut reply)
            .err(),
        Some(HandshakeError::AlreadyAccepted)
    );
    // A server with the same secret whose clock started later sees the
    // challenge as issued in its future.
    let mut other = ServerHandshake::with_secret(PROTOCOL, Protection::Token, secret);
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let (_, response) = challenge(&mut server, &mut client, t0 + Duration::from_secs(2));
    assert_eq!(
        other
            .handle(
                t0 + Duration::from_secs(2),
                CLIENT_AT,
                &response,
                &mut reply
            )
            .err(),
        Some(HandshakeError::FromFuture)
    );
    // Once expired, accepted tokens are forgotten.
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let (_, response) = challenge(&mut server, &mut client, t0 + Duration::from_secs(20));
    assert!(
        server
            .handle(
                t0 + Duration::from_secs(20),
                CLIENT_AT,
                &response,
                &mut reply
            )
            .unwrap()
            .is_some()
    );
    assert_eq!(server.recent_sessions(), 1);
}

#[test]
fn a_connect_flood_from_spoofed_addresses_stores_nothing() {
    let t0 = Instant::now();
    let mut server = ServerHandshake::new(PROTOCOL, Protection::Token).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut request = Vec::new();
    ClientHandshake::new(PROTOCOL, 0)
        .unwrap()
        .poll_transmit(t0, &mut request);
    let mut sent = 0;
    for n in 0..20_000u32 {
        let mut reply = Vec::new();
        let from = (n, rng.random::<u16>());
        assert!(matches!(
            server.handle(t0, &from, &request, &mut reply),
            Ok(None)
        ));
        sent += reply.len();
        // Spoofed responses, guessing the token: refused.
        let mut response = vec![0xF3, 1, 0];
        response.extend_from_slice(&PROTOCOL.to_le_bytes());
        response.extend((0..32).map(|_| rng.random::<u8>()));
        assert!(server.handle(t0, &from, &response, &mut reply).is_err());
    }
    assert_eq!(server.recent_sessions(), 0);
    assert!(
        sent <= 20_000 * request.len(),
        "the challenges are no larger than the requests"
    );
}

#[test]
fn truncated_and_garbage_messages_are_typed_errors() {
    let t0 = Instant::now();
    let mut server = ServerHandshake::new(PROTOCOL, Protection::Token).unwrap();
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let mut request = Vec::new();
    client.poll_transmit(t0, &mut request);
    let mut challenge = Vec::new();
    server
        .handle(t0, CLIENT_AT, &request, &mut challenge)
        .unwrap();
    let mut reply = Vec::new();
    for len in 0..request.len() {
        assert!(
            server
                .handle(t0, CLIENT_AT, &request[..len], &mut reply)
                .is_err()
        );
    }
    for len in 0..challenge.len() {
        assert!(client.receive(&challenge[..len]).is_err());
    }
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for _ in 0..20_000 {
        let len = rng.random_range(0..80);
        let mut garbage: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        if len > 0 && rng.random_bool(0.7) {
            garbage[0] = rng.random_range(0xF1..=0xF5);
        }
        let _ = server.handle(t0, CLIENT_AT, &garbage, &mut reply);
        assert!(client.receive(&garbage).is_err());
    }
    assert!(reply.len() % 25 == 0, "only challenges were sent");
    assert_eq!(server.recent_sessions(), 0);
    assert!(!client.is_challenged());
    // The genuine challenge still works.
    assert!(client.receive(&challenge).unwrap().is_some());
}

#[test]
fn protocol_protection_and_nonce_must_match() {
    let t0 = Instant::now();
    let mut server = ServerHandshake::new(PROTOCOL, Protection::Token).unwrap();
    let mut request = Vec::new();
    ClientHandshake::new(PROTOCOL + 1, 42)
        .unwrap()
        .poll_transmit(t0, &mut request);
    assert_eq!(
        server
            .handle(t0, CLIENT_AT, &request, &mut Vec::new())
            .err(),
        Some(HandshakeError::WrongProtocol {
            expected: PROTOCOL,
            found: PROTOCOL + 1
        })
    );
    // A challenge answering another client's request.
    let mut client = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let mut other = ClientHandshake::new(PROTOCOL, 42).unwrap();
    let mut request = Vec::new();
    other.poll_transmit(t0, &mut request);
    let mut reply = Vec::new();
    server.handle(t0, CLIENT_AT, &request, &mut reply).unwrap();
    assert_eq!(
        client.receive(&reply).err(),
        Some(HandshakeError::WrongNonce)
    );
    // Its own, twice: one session.
    assert!(other.receive(&reply).unwrap().is_some());
    assert!(other.receive(&reply).unwrap().is_none());
    // Messages a side never takes.
    assert_eq!(
        server.handle(t0, CLIENT_AT, &reply, &mut Vec::new()).err(),
        Some(HandshakeError::UnexpectedKind {
            kind: PacketKind::Challenge
        })
    );
    assert_eq!(
        client.receive(&request).err(),
        Some(HandshakeError::UnexpectedKind {
            kind: PacketKind::Request
        })
    );
}

#[test]
fn garbage_packets_are_refused_and_change_nothing() {
    let (_, mut at_server, mut at_client) = token_pair(Instant::now());
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut scratch = Vec::new();
    for _ in 0..20_000 {
        let len = rng.random_range(0..64);
        let mut garbage: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        if len > 0 && rng.random_bool(0.5) {
            garbage[0] = PacketKind::Data.byte();
        }
        assert!(at_client.open(&garbage, &mut scratch).is_err());
    }
    assert_eq!(
        through(&mut at_server, &mut at_client, b"still").unwrap(),
        b"still"
    );
}

#[test]
fn the_client_resends_at_its_interval() {
    let t0 = Instant::now();
    let mut client = ClientHandshake::new(PROTOCOL, 0).unwrap();
    let mut out = Vec::new();
    assert!(client.poll_transmit(t0, &mut out));
    assert!(!client.poll_transmit(t0 + Duration::from_millis(99), &mut out));
    assert!(client.poll_transmit(t0 + Duration::from_millis(100), &mut out));
    assert_eq!(out.len(), 64);
}

#[cfg(feature = "encryption")]
mod encryption {
    use super::*;

    fn keys(seed: u8) -> SessionKeys {
        SessionKeys {
            client_to_server: [seed; 32],
            server_to_client: [seed.wrapping_add(1); 32],
        }
    }

    /// An encrypted handshake: the client holds `client_keys`, the login
    /// service tells the server `server_keys`.
    fn sealed_pair(
        client_keys: SessionKeys,
        server_keys: Option<SessionKeys>,
    ) -> Result<(Session, Session), HandshakeError> {
        let t0 = Instant::now();
        let mut server = ServerHandshake::new(PROTOCOL, Protection::Encrypted).unwrap();
        let mut client = ClientHandshake::encrypted(PROTOCOL, 42, client_keys).unwrap();
        let (at_client, response) = challenge(&mut server, &mut client, t0);
        assert_eq!(response.len(), 59);
        let at_server = server
            .handle_encrypted(t0, CLIENT_AT, &response, &mut Vec::new(), |id| {
                assert_eq!(id, 42);
                server_keys
            })?
            .unwrap();
        Ok((at_server, at_client))
    }

    #[test]
    fn sealed_packets_round_trip_both_ways() {
        let (mut at_server, mut at_client) = sealed_pair(keys(1), Some(keys(1))).unwrap();
        assert_eq!(at_server.protection(), Protection::Encrypted);
        assert_eq!(at_server.overhead(), 25);
        for n in 0..10u8 {
            let inner = vec![n; usize::from(n) * 100];
            assert_eq!(
                through(&mut at_server, &mut at_client, &inner).unwrap(),
                inner
            );
            assert_eq!(
                through(&mut at_client, &mut at_server, &inner).unwrap(),
                inner
            );
        }
        let mut packet = Vec::new();
        at_server.seal(b"secret delta", &mut packet).unwrap();
        assert_eq!(packet.len(), 12 + Session::SEALED_OVERHEAD);
        assert!(
            !packet.windows(6).any(|w| w == b"secret"),
            "the content is encrypted"
        );
    }

    #[test]
    fn a_tampered_byte_anywhere_is_refused_and_changes_nothing() {
        let (mut at_server, mut at_client) = sealed_pair(keys(1), Some(keys(1))).unwrap();
        let mut packet = Vec::new();
        at_server
            .seal(b"a delta of some length", &mut packet)
            .unwrap();
        let mut scratch = Vec::new();
        for at in 0..packet.len() {
            for bit in 0..8 {
                let mut forged = packet.clone();
                forged[at] ^= 1 << bit;
                assert!(
                    at_client.open(&forged, &mut scratch).is_err(),
                    "byte {at} bit {bit}"
                );
            }
        }
        assert!(
            at_client
                .open(&packet[..packet.len() - 1], &mut scratch)
                .is_err()
        );
        // The refusals left the replay window as it was.
        assert_eq!(
            at_client.open(&packet, &mut scratch).unwrap(),
            b"a delta of some length"
        );
    }

    #[test]
    fn replays_and_the_too_old_are_refused_reordering_is_not() {
        let (mut at_server, mut at_client) = sealed_pair(keys(1), Some(keys(1))).unwrap();
        let packets: Vec<Vec<u8>> = (0..300u32)
            .map(|n| {
                let mut packet = Vec::new();
                at_server.seal(&n.to_le_bytes(), &mut packet).unwrap();
                packet
            })
            .collect();
        let mut scratch = Vec::new();
        let mut open = |packet: &[u8]| at_client.open(packet, &mut scratch).map(<[u8]>::to_vec);
        assert_eq!(open(&packets[10]).unwrap(), 10u32.to_le_bytes());
        assert_eq!(
            open(&packets[10]),
            Err(PacketError::Replayed { counter: 10 })
        );
        // Reordered within the window: taken, once.
        assert_eq!(open(&packets[3]).unwrap(), 3u32.to_le_bytes());
        assert_eq!(open(&packets[3]), Err(PacketError::Replayed { counter: 3 }));
        assert_eq!(open(&packets[299]).unwrap(), 299u32.to_le_bytes());
        assert_eq!(open(&packets[44]).unwrap(), 44u32.to_le_bytes()); // 255 behind
        assert_eq!(open(&packets[43]), Err(PacketError::TooOld { counter: 43 }));
        assert_eq!(open(&packets[298]).unwrap(), 298u32.to_le_bytes());
    }

    #[test]
    fn garbage_sealed_packets_are_refused_and_change_nothing() {
        let (mut at_server, mut at_client) = sealed_pair(keys(1), Some(keys(1))).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut scratch = Vec::new();
        for _ in 0..20_000 {
            let len = rng.random_range(0..80);
            let mut garbage: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            if len > 0 && rng.random_bool(0.5) {
                garbage[0] = PacketKind::Sealed.byte();
                if len > 9 && rng.random_bool(0.5) {
                    // A counter the window would take: only the tag stops it.
                    garbage[1..9].copy_from_slice(&rng.random_range(0..4u64).to_le_bytes());
                }
            }
            assert!(at_client.open(&garbage, &mut scratch).is_err());
        }
        // Counter 0 is still free: the refusals recorded nothing.
        assert_eq!(
            through(&mut at_server, &mut at_client, b"still").unwrap(),
            b"still"
        );
    }

    #[test]
    fn another_key_is_refused() {
        // The client holds other keys than the login service gave the
        // server: its proof fails.
        assert_eq!(
            sealed_pair(keys(1), Some(keys(2))).err(),
            Some(HandshakeError::BadProof)
        );
        assert_eq!(
            sealed_pair(keys(1), None).err(),
            Some(HandshakeError::UnknownClient { client_id: 42 })
        );
        // Two sessions under the same login keys have their own keys: a
        // packet of one does not open in the other.
        let (mut a_server, _) = sealed_pair(keys(1), Some(keys(1))).unwrap();
        let (_, mut b_client) = sealed_pair(keys(1), Some(keys(1))).unwrap();
        assert_eq!(
            through(&mut a_server, &mut b_client, b"x"),
            Err(PacketError::Forged)
        );
    }

    #[test]
    fn protections_must_match() {
        let t0 = Instant::now();
        let mut token_server = ServerHandshake::new(PROTOCOL, Protection::Token).unwrap();
        let mut client = ClientHandshake::encrypted(PROTOCOL, 42, keys(1)).unwrap();
        let mut request = Vec::new();
        client.poll_transmit(t0, &mut request);
        assert_eq!(
            token_server
                .handle(t0, CLIENT_AT, &request, &mut Vec::new())
                .err(),
            Some(HandshakeError::WrongProtection)
        );
        // An encrypted server given a response through `handle`: no keys.
        let mut server = ServerHandshake::new(PROTOCOL, Protection::Encrypted).unwrap();
        let mut client = ClientHandshake::encrypted(PROTOCOL, 42, keys(1)).unwrap();
        let (_, response) = challenge(&mut server, &mut client, t0);
        assert_eq!(
            server
                .handle(t0, CLIENT_AT, &response, &mut Vec::new())
                .err(),
            Some(HandshakeError::KeysNeeded)
        );
        assert_eq!(server.recent_sessions(), 0);
    }
}
