//! Packets from anyone but the peer: an off-path attacker who knows both
//! addresses and can guess sequence numbers, but never sees a packet,
//! forges packets that reuse genuine sequences. The plain path takes them;
//! a connection made from a handshake's session refuses them before
//! reading anything, in token mode and sealed.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use fastarray::{
    AckError, AckHeader, ClientHandshake, Connection, ConnectionError, FastArray, MirrorConnection,
    PacketError, PacketKind, Protection, Replicate, ServerHandshake, Session, SessionKeys,
};
use fastarray_testkit::link::{Link, LinkProfile};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    x: i32,
    hp: u8,
}

const TICK: Duration = Duration::from_millis(16);
const MTU: usize = 1_200;
const PROTOCOL: u64 = 0x7e57_0001;

/// What a spoofing run saw.
#[derive(Debug, Default)]
struct Spoofed {
    /// Forged packets the client applied.
    forged_applied: usize,
    /// Why the client refused the others.
    forged_refused: Vec<ConnectionError>,
    /// Genuine packets the client refused.
    genuine_refused: usize,
    /// Whether the mirror equals the server's array at the end.
    converged: bool,
}

/// The game: 20 units, three changed a tick, one replaced every 7 ticks.
fn mutate(units: &mut FastArray<Unit>, rng: &mut ChaCha8Rng, tick: u32) {
    let ids: Vec<_> = units.ids().collect();
    for _ in 0..3 {
        let id = ids[rng.random_range(0..ids.len())];
        units.get_mut(id).unwrap().hp = rng.random();
    }
    if tick % 7 == 0 {
        units.remove(ids[rng.random_range(0..ids.len())]);
        units.push(Unit {
            x: tick as i32,
            hp: 1,
        });
    }
}

fn units() -> FastArray<Unit> {
    let mut units = FastArray::new();
    for n in 0..20 {
        units.push(Unit { x: n, hp: 100 });
    }
    units.commit();
    units
}

/// A server and a client exchanging packets every tick without loss;
/// from tick 10 on, every fifth tick, the attacker's forged packet
/// ([`forge`]) reaches the client just before the genuine packet whose
/// sequence it reuses.
fn spoof(seed: u64, mut conn: Connection, mut client: MirrorConnection) -> Spoofed {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let t0 = Instant::now();
    let mut units = units();
    let mut mirror = FastArray::<Unit>::mirror();
    let mut seen = Spoofed::default();
    let overhead = conn.session().map_or(0, Session::overhead);
    let (mut packet, mut reply) = (Vec::new(), Vec::new());
    for tick in 0..120u32 {
        let now = t0 + TICK * tick;
        if tick < 60 {
            mutate(&mut units, &mut rng, tick);
        }
        units.commit();
        packet.clear();
        conn.write_packet(now, MTU, &mut [&mut units], &mut packet)
            .unwrap();
        if (10..60).contains(&tick) && tick % 5 == 0 {
            let forged = forge(&mut rng, &packet, overhead);
            match client.apply(now, &forged, &mut [&mut mirror]) {
                Ok(_) => seen.forged_applied += 1,
                Err(error) => seen.forged_refused.push(error),
            }
        }
        if client.apply(now, &packet, &mut [&mut mirror]).is_err() {
            seen.genuine_refused += 1;
        }
        reply.clear();
        client.write_header(now, &mut reply).unwrap();
        conn.receive(now, &reply).unwrap();
    }
    seen.converged = mirror == units;
    seen
}

/// The attacker's packet in place of `genuine` (whose session adds
/// `overhead` bytes): the ack header guessed right (both sides send a
/// packet a tick, so sequences are the tick's number; a wrong guess is
/// refused as a duplicate or an ack from the future, a right one is what
/// this models), acknowledging nothing new, then a body that decodes (no
/// section). The kind byte and a sealed packet's counter are in clear,
/// so they are copied; the token, the encrypted bytes and the tag are
/// guessed.
fn forge(rng: &mut ChaCha8Rng, genuine: &[u8], overhead: usize) -> Vec<u8> {
    let mut forged = Vec::new();
    match overhead {
        0 | 9 => {
            if overhead == 9 {
                forged.push(genuine[0]);
                forged.extend((0..8).map(|_| rng.random::<u8>()));
            }
            let header = &genuine[overhead..overhead + AckHeader::BYTES];
            let header = AckHeader::from_bytes(header.try_into().unwrap());
            AckHeader {
                ack_bits: 0,
                ..header
            }
            .write(&mut forged);
            forged.push(0); // no section
        }
        _ => {
            forged.extend_from_slice(&genuine[..9]);
            forged.extend((9..genuine.len()).map(|_| rng.random::<u8>()));
        }
    }
    forged
}

/// A client's and a server's session, from a handshake between two
/// addresses (sans-IO); encrypted with `keys`.
fn handshake(keys: Option<SessionKeys>) -> (Session, Session) {
    let now = Instant::now();
    let client_at: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let protection = match keys {
        Some(_) => Protection::Encrypted,
        None => Protection::Token,
    };
    let mut server = ServerHandshake::new(PROTOCOL, protection).unwrap();
    let mut client = match keys.clone() {
        Some(keys) => ClientHandshake::encrypted(PROTOCOL, 7, keys).unwrap(),
        None => ClientHandshake::new(PROTOCOL, 7).unwrap(),
    };
    let (mut request, mut challenge, mut response) = (Vec::new(), Vec::new(), Vec::new());
    client.poll_transmit(now, &mut request);
    server
        .handle(now, &client_at, &request, &mut challenge)
        .unwrap();
    let at_client = client.receive(&challenge).unwrap().unwrap();
    client.poll_transmit(now, &mut response);
    let at_server = match keys {
        Some(keys) => server
            .handle_encrypted(now, &client_at, &response, &mut Vec::new(), |_| Some(keys))
            .unwrap(),
        None => server
            .handle(now, &client_at, &response, &mut Vec::new())
            .unwrap(),
    };
    (at_server.unwrap(), at_client)
}

fn keys() -> SessionKeys {
    SessionKeys {
        client_to_server: [0x5a; 32],
        server_to_client: [0xa5; 32],
    }
}

/// The plain constructors are for transports that authenticate packets
/// themselves: over bare UDP a forged packet reusing a genuine sequence is
/// applied and acknowledged, the genuine one is refused as its duplicate,
/// its content is taken as delivered, and the client refuses later
/// packets (a change to an item it never received).
#[test]
fn forged_packets_desync_the_plain_path() {
    for seed in 0..5 {
        let seen = spoof(seed, Connection::new(1), MirrorConnection::new(1));
        assert!(seen.forged_applied > 0, "seed {seed}: {seen:?}");
        assert!(!seen.converged, "seed {seed}: {seen:?}");
        assert!(
            seen.genuine_refused > seen.forged_applied,
            "seed {seed}: {seen:?}"
        );
    }
}

/// The same attack on a token-mode session: every forgery is refused for
/// its token, nothing is acknowledged, and the client converges.
#[test]
fn forged_packets_are_refused_by_the_token() {
    for seed in 0..5 {
        let (at_server, at_client) = handshake(None);
        let seen = spoof(
            seed,
            Connection::secure(at_server, 1),
            MirrorConnection::secure(at_client, 1),
        );
        assert_eq!(seen.forged_applied, 0, "seed {seed}: {seen:?}");
        assert_eq!(seen.forged_refused.len(), 10);
        for error in &seen.forged_refused {
            assert_eq!(*error, ConnectionError::Refused(PacketError::WrongToken));
        }
        assert_eq!(seen.genuine_refused, 0, "seed {seed}: {seen:?}");
        assert!(seen.converged, "seed {seed}: {seen:?}");
    }
}

/// And on a sealed session: every forgery fails its tag.
#[test]
fn forged_packets_are_refused_by_the_seal() {
    for seed in 0..5 {
        let (at_server, at_client) = handshake(Some(keys()));
        let seen = spoof(
            seed,
            Connection::secure(at_server, 1),
            MirrorConnection::secure(at_client, 1),
        );
        assert_eq!(seen.forged_applied, 0, "seed {seed}: {seen:?}");
        assert_eq!(seen.forged_refused.len(), 10);
        for error in &seen.forged_refused {
            assert_eq!(*error, ConnectionError::Refused(PacketError::Forged));
        }
        assert_eq!(seen.genuine_refused, 0, "seed {seed}: {seen:?}");
        assert!(seen.converged, "seed {seed}: {seen:?}");
    }
}

/// A refused packet changes nothing: the server's acknowledgements and
/// the client's mirror are as if it never came, in every mode.
#[test]
fn a_refused_packet_changes_nothing() {
    for keys in [None, Some(keys())] {
        let (at_server, at_client) = handshake(keys);
        let mut conn = Connection::secure(at_server, 1);
        let mut client = MirrorConnection::secure(at_client, 1);
        let mut units = units();
        let mut mirror = FastArray::<Unit>::mirror();
        let now = Instant::now();
        let mut packet = Vec::new();
        conn.write_packet(now, MTU, &mut [&mut units], &mut packet)
            .unwrap();
        let mut forged = packet.clone();
        let last = forged.len() - 1;
        forged[last] ^= 0x80;
        forged[5] ^= 1; // in the token, or the counter
        assert!(matches!(
            client.apply(now, &forged, &mut [&mut mirror]),
            Err(ConnectionError::Refused(_))
        ));
        assert_eq!(mirror.len(), 0);
        assert_eq!(client.acks().stats().received_bytes_per_second, 0.0);
        client.apply(now, &packet, &mut [&mut mirror]).unwrap();
        assert_eq!(mirror, units);
        // The client's replies: a forged one is refused by the server too.
        let mut reply = Vec::new();
        client.write_reply(now, b"inputs", &mut reply).unwrap();
        let mut forged = reply.clone();
        forged[3] ^= 4;
        assert!(matches!(
            conn.receive(now, &forged),
            Err(ConnectionError::Refused(_))
        ));
        assert_eq!(conn.poll_verdict(), None);
        let (_, inputs) = conn.receive(now, &reply).unwrap();
        assert_eq!(inputs, b"inputs");
        assert_eq!(conn.poll_verdict(), Some(fastarray::AckEvent::Acked(0)));
        // A replayed genuine reply is a duplicate (token mode: by its
        // header; sealed: by the replay window).
        assert!(conn.receive(now, &reply).is_err());
    }
}

fn socket() -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket
}

/// Over real sockets on 127.0.0.1: the handshake, then 80 ticks of deltas
/// while an attacker's socket sends the client forged packets (the client
/// does not check where datagrams come from: a spoofed source address
/// would pass that check anyway) and garbage handshake messages to the
/// server. The client converges; every forgery is refused.
#[test]
fn over_udp_the_handshake_holds_and_forgeries_are_refused() {
    let (server_socket, client_socket, attacker) = (socket(), socket(), socket());
    let server_at = server_socket.local_addr().unwrap();
    let client_at = client_socket.local_addr().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut buf = vec![0; 65_536];
    let t0 = Instant::now();

    // The handshake: request, challenge, response, each a datagram.
    let mut server_hs = ServerHandshake::new(PROTOCOL, Protection::Token).unwrap();
    let mut client_hs = ClientHandshake::new(PROTOCOL, 0).unwrap();
    let mut out = Vec::new();
    assert!(client_hs.poll_transmit(t0, &mut out));
    client_socket.send_to(&out, server_at).unwrap();
    // Garbage from the attacker first: refused, nothing sent back.
    for _ in 0..50 {
        let len = rng.random_range(0..60);
        let mut garbage: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        if let Some(first) = garbage.first_mut() {
            *first = 0xF3;
        }
        attacker.send_to(&garbage, server_at).unwrap();
    }
    let mut refused = 0;
    let mut client_session = None;
    let server_session = loop {
        let (len, from) = server_socket.recv_from(&mut buf).unwrap();
        out.clear();
        match server_hs.handle(Instant::now(), &from, &buf[..len], &mut out) {
            Ok(Some(session)) => {
                assert_eq!(from, client_at);
                break session;
            }
            Ok(None) => {
                // The challenge, to the client, which echoes it.
                server_socket.send_to(&out, from).unwrap();
                let (len, _) = client_socket.recv_from(&mut buf).unwrap();
                client_session = client_hs.receive(&buf[..len]).unwrap();
                out.clear();
                assert!(client_hs.poll_transmit(Instant::now(), &mut out));
                client_socket.send_to(&out, server_at).unwrap();
            }
            Err(_) => refused += 1,
        }
    };
    assert_eq!(refused, 50, "the attacker's garbage, and nothing else");
    assert_eq!(server_hs.recent_sessions(), 1);
    run_over_udp(
        &server_socket,
        &client_socket,
        &attacker,
        Connection::secure(server_session, 1),
        MirrorConnection::secure(client_session.unwrap(), 1),
        &mut rng,
    );
}

/// The ticks of [`over_udp_the_handshake_holds_and_forgeries_are_refused`].
fn run_over_udp(
    server_socket: &UdpSocket,
    client_socket: &UdpSocket,
    attacker: &UdpSocket,
    mut conn: Connection,
    mut client: MirrorConnection,
    rng: &mut ChaCha8Rng,
) {
    let server_at = server_socket.local_addr().unwrap();
    let client_at = client_socket.local_addr().unwrap();
    let mut units = units();
    let mut mirror = FastArray::<Unit>::mirror();
    let (mut packet, mut reply) = (Vec::new(), Vec::new());
    let mut buf = vec![0; 65_536];
    let (mut forged, mut refused) = (0, 0);
    for tick in 0..80 {
        let now = Instant::now();
        if tick < 50 {
            mutate(&mut units, rng, tick);
        }
        units.commit();
        packet.clear();
        conn.write_packet(now, MTU, &mut [&mut units], &mut packet)
            .unwrap();
        if tick % 3 == 0 {
            attacker
                .send_to(&forge(rng, &packet, 9), client_at)
                .unwrap();
            forged += 1;
        }
        server_socket.send_to(&packet, client_at).unwrap();
        // The forgery (if any) arrives first, then the genuine packet.
        loop {
            let (len, _) = client_socket.recv_from(&mut buf).unwrap();
            assert_eq!(PacketKind::of(&buf[..len]), Some(PacketKind::Data));
            match client.apply(now, &buf[..len], &mut [&mut mirror]) {
                Ok(_) => break,
                Err(ConnectionError::Refused(PacketError::WrongToken)) => refused += 1,
                Err(error) => panic!("tick {tick}: {error}"),
            }
        }
        reply.clear();
        client.write_reply(now, b"in", &mut reply).unwrap();
        client_socket.send_to(&reply, server_at).unwrap();
        let (len, from) = server_socket.recv_from(&mut buf).unwrap();
        assert_eq!(from, client_at);
        let (_, inputs) = conn.receive(Instant::now(), &buf[..len]).unwrap();
        assert_eq!(inputs, b"in");
    }
    assert_eq!((forged, refused), (27, 27));
    assert_eq!(mirror, units);
}

/// Secure sessions over the test kit's chaotic link (loss, bursts,
/// reordering, duplication): a duplicate is refused by the ack header
/// (token mode) or the replay window (sealed), nothing else is refused,
/// every packet fits the MTU with the session's bytes, and the client
/// converges once the links heal.
#[test]
fn secure_sessions_converge_over_a_chaotic_link() {
    const SMALL_MTU: usize = 600;
    for (seed, keys) in [(1, None), (2, Some(keys())), (3, Some(keys()))] {
        let (at_server, at_client) = handshake(keys);
        let mut conn = Connection::secure(at_server, 1);
        let mut client = MirrorConnection::secure(at_client, 1);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut units = FastArray::new();
        for n in 0..600 {
            units.push(Unit { x: n, hp: 100 });
        }
        units.commit();
        let mut mirror = FastArray::<Unit>::mirror();
        let mut down = Link::new(LinkProfile::chaos(), seed);
        let mut up = Link::new(LinkProfile::chaos(), seed ^ 0x5eed);
        let t0 = Instant::now();
        let (mut duplicates, mut packets) = (0, 0);
        for tick in 0..700u32 {
            let now = t0 + TICK * tick;
            if tick < 300 {
                mutate(&mut units, &mut rng, tick);
            } else if tick == 300 {
                down.heal();
                up.heal();
            }
            units.commit();
            for _ in 0..3 {
                let mut packet = Vec::new();
                let stats = conn
                    .write_packet(now, SMALL_MTU, &mut [&mut units], &mut packet)
                    .unwrap();
                assert!(packet.len() <= SMALL_MTU, "{} bytes", packet.len());
                down.send(tick, packets, packet);
                packets += 1;
                if stats.totals.deferred == 0 {
                    break;
                }
            }
            for packet in down.deliver(tick) {
                match client.apply(now, &packet, &mut [&mut mirror]) {
                    Ok(_) => {}
                    Err(ConnectionError::Ack(
                        AckError::Duplicate { .. } | AckError::TooOld { .. },
                    ))
                    | Err(ConnectionError::Refused(
                        PacketError::Replayed { .. } | PacketError::TooOld { .. },
                    )) => duplicates += 1,
                    Err(error) => panic!("seed {seed} tick {tick}: {error}"),
                }
            }
            let mut reply = Vec::new();
            let number = client.write_reply(now, b"in", &mut reply).unwrap();
            up.send(tick, number, reply);
            for reply in up.deliver(tick) {
                match conn.receive(now, &reply) {
                    Ok((_, inputs)) => assert_eq!(inputs, b"in"),
                    Err(ConnectionError::Ack(
                        AckError::Duplicate { .. } | AckError::TooOld { .. },
                    ))
                    | Err(ConnectionError::Refused(
                        PacketError::Replayed { .. } | PacketError::TooOld { .. },
                    )) => {}
                    Err(error) => panic!("seed {seed} tick {tick}: {error}"),
                }
            }
            down.reports(tick);
            up.reports(tick);
            while conn.poll_verdict().is_some() {}
        }
        assert!(duplicates > 0, "seed {seed}: the link duplicated nothing");
        assert!(units.is_settled(conn.state(0)), "seed {seed}");
        assert_eq!(mirror, units, "seed {seed}");
    }
}
