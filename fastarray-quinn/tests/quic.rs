//! The adapter over real QUIC on 127.0.0.1: a TLS handshake with a
//! certificate generated at start, datagrams both ways, loss at the
//! socket.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fastarray::{
    AckError, Connection, ConnectionError, FastArray, MirrorConnection, Replicate, Replicated,
    ReplicationId,
};
use fastarray_quinn::loss::{Loss, lossy_endpoint};
use fastarray_quinn::{
    ClientError, DevCertificate, QuicClient, QuicServer, ServerEvent, client_endpoint,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::runtime::Runtime;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    position: [f32; 2],
    hp: u8,
    name: String,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Round {
    tick: u32,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().expect("an address")
}

/// Ticks `step` (server, then client) until `done` or `deadline`.
fn until(deadline: Duration, mut step: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    while Instant::now() < end {
        if step() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// One game tick: units move, take damage, spawn and die.
fn change(units: &mut FastArray<Unit>, rng: &mut ChaCha8Rng, serial: &mut u32) {
    let ids: Vec<ReplicationId> = units.ids().collect();
    for &id in ids.iter().step_by(7) {
        let mut unit = units.get_mut(id).expect("a live id");
        unit.position[0] += rng.random_range(-1.0..1.0);
        if rng.random_bool(0.2) {
            unit.hp = unit.hp.saturating_sub(3);
        }
    }
    for &id in ids.iter().take(2) {
        units.remove(id);
    }
    for _ in 0..2 {
        units.push(unit(*serial));
        *serial += 1;
    }
}

fn unit(serial: u32) -> Unit {
    Unit {
        position: [serial as f32, 0.0],
        hp: 100,
        name: format!("unit {serial}"),
    }
}

struct Player {
    client: QuicClient,
    units: FastArray<Unit>,
    round: Replicated<Round>,
    rate: f64,
    loss: Loss,
}

/// Two clients at 20% and 50% loss both ways, 200 units changing for 100 ticks: once the game stops, every
/// client converges with the loss still on, within a bounded time, and
/// holds exactly the server's units.
#[test]
fn converges_under_loss_over_real_quic() {
    let runtime = runtime();
    let certificate = DevCertificate::generate(["localhost"]).expect("a certificate");
    let server_loss = Loss::new(0.0, 7);
    let endpoint = lossy_endpoint(
        runtime.handle(),
        localhost(),
        Some(certificate.server_config().expect("a server config")),
        &server_loss,
    )
    .expect("a server endpoint");
    let mut server = QuicServer::with_endpoint(runtime.handle(), endpoint, 2);
    let address = server.local_addr().expect("the server's address");

    let mut players: Vec<Player> = [0.2, 0.5]
        .into_iter()
        .enumerate()
        .map(|(n, rate)| {
            // No loss until both are connected (see below).
            let loss = Loss::new(0.0, 100 + n as u64);
            let endpoint = lossy_endpoint(runtime.handle(), localhost(), None, &loss)
                .expect("a client endpoint");
            let client = QuicClient::connect(
                runtime.handle(),
                endpoint,
                certificate.client_config().expect("a client config"),
                address,
                "localhost",
                2,
            )
            .expect("connecting");
            Player {
                client,
                units: FastArray::mirror(),
                round: Replicated::mirror(),
                rate,
                loss,
            }
        })
        .collect();

    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut units = FastArray::new();
    let mut serial = 0;
    for _ in 0..200 {
        units.push(unit(serial));
        serial += 1;
    }
    let mut round = Replicated::new(Round::default());
    let mut tick = 0u32;
    let mut step = |live: bool,
                    server: &mut QuicServer,
                    players: &mut [Player],
                    units: &mut FastArray<Unit>,
                    round: &mut Replicated<Round>| {
        let now = Instant::now();
        while let Some(event) = server.poll(now) {
            match event {
                ServerEvent::Connected { .. } | ServerEvent::Received { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        if live {
            change(units, &mut rng, &mut serial);
            tick += 1;
            round.get_mut().tick = tick;
        }
        units.commit();
        round.commit();
        let clients: Vec<u64> = server.clients().collect();
        for client in clients {
            let sent = server
                .send(now, client, &mut [units, round], 4)
                .expect("sending");
            // What QUIC carries over any path (1 200 bytes), less its
            // overhead, at least; more once MTU discovery raised it.
            assert!(sent.packet_size >= 1_100, "{sent:?}");
            assert!(sent.bytes <= sent.packets * sent.packet_size);
        }
        for player in players.iter_mut() {
            player
                .client
                .receive(now, &mut [&mut player.units, &mut player.round])
                .expect("applying");
            player.client.send_reply(now, b"").expect("replying");
        }
    };

    // Both join (over lossy links), then the game runs 100 ticks.
    assert!(
        until(Duration::from_secs(20), || {
            step(false, &mut server, &mut players, &mut units, &mut round);
            server.clients().count() == 2 && players.iter().all(|p| p.client.is_connected())
        }),
        "the clients did not connect"
    );
    // The loss starts: QUIC's handshake over 50% loss both ways can take
    // longer than its idle timeout, with its backoff.
    for player in &players {
        let local = player.client.endpoint().local_addr().expect("an address");
        server_loss.set_rate_to(local, player.rate);
        player.loss.set_rate(player.rate);
    }
    for _ in 0..100 {
        step(true, &mut server, &mut players, &mut units, &mut round);
        std::thread::sleep(Duration::from_millis(2));
    }
    // The game stops; the loss stays.
    let settled = |server: &QuicServer, units: &FastArray<Unit>, round: &Replicated<Round>| {
        server.clients().all(|client| {
            let conn = server.connection(client).expect("connected");
            units.is_settled(conn.state(0)) && round.is_settled(conn.state(1))
        })
    };
    let converged = until(Duration::from_secs(20), || {
        step(false, &mut server, &mut players, &mut units, &mut round);
        settled(&server, &units, &round)
    });
    for player in &players {
        let stats = player.loss.stats();
        assert!(
            stats.dropped > 0,
            "the {} link dropped nothing",
            player.rate
        );
    }
    if !converged {
        for client in server.clients() {
            let conn = server.connection(client).expect("connected");
            eprintln!(
                "client {client}: {:?} settled {} {} stats {:?} quic {:?}",
                server.traffic(client),
                units.is_settled(conn.state(0)),
                round.is_settled(conn.state(1)),
                conn.stats(),
                server.quic(client).map(|q| q.stats().path),
            );
        }
        for player in &players {
            eprintln!("{:?} {:?}", player.client.stats(), player.loss.stats());
        }
    }
    assert!(converged, "the clients did not converge under loss");
    for player in &players {
        assert!(player.units.wire_eq(&units), "a client's units differ");
        assert!(player.round.wire_eq(&round));
        assert!(player.client.stats().applied > 0);
    }
}

/// A client that trusts another certificate is refused by the TLS
/// handshake: its connection closes, and the server never sees it.
#[test]
fn a_certificate_not_trusted_is_refused() {
    let runtime = runtime();
    let real = DevCertificate::generate(["localhost"]).expect("a certificate");
    let other = DevCertificate::generate(["localhost"]).expect("a certificate");
    let mut server = QuicServer::bind(
        runtime.handle(),
        localhost(),
        real.server_config().expect("a server config"),
        1,
    )
    .expect("a server");
    let mut client = QuicClient::connect(
        runtime.handle(),
        client_endpoint(runtime.handle(), localhost()).expect("an endpoint"),
        other.client_config().expect("a client config"),
        server.local_addr().expect("an address"),
        "localhost",
        1,
    )
    .expect("connecting");
    let mut mirror = FastArray::<Unit>::mirror();
    let mut refused = None;
    assert!(until(Duration::from_secs(10), || {
        match client.receive(Instant::now(), &mut [&mut mirror]) {
            Err(error) => {
                refused = Some(error);
                true
            }
            Ok(_) => false,
        }
    }));
    assert!(
        matches!(refused, Some(ClientError::Closed(_))),
        "{refused:?}"
    );
    assert!(!client.is_connected());
    assert_eq!(server.poll(Instant::now()), None);
}

/// A server written with quinn directly sends the client a packet twice,
/// then one whose section is not the client's schema: the copy is read
/// past, the bad one returned typed, and the mirror holds what the first
/// said.
#[test]
fn the_client_reads_past_copies_and_returns_real_errors() {
    let runtime = runtime();
    let certificate = DevCertificate::generate(["localhost"]).expect("a certificate");
    let endpoint = {
        let _entered = runtime.enter();
        quinn::Endpoint::server(
            certificate.server_config().expect("a server config"),
            localhost(),
        )
        .expect("an endpoint")
    };
    let address = endpoint.local_addr().expect("an address");
    // The raw server: one packet of a one-unit array, twice, then garbage
    // in a header that is new.
    let mut units = FastArray::new();
    units.push(unit(1));
    units.commit();
    let mut conn = Connection::new(1);
    let mut packet = Vec::new();
    conn.write_packet(Instant::now(), 1_000, &mut [&mut units], &mut packet)
        .expect("a packet");
    let mut second = Vec::new();
    conn.write_packet(Instant::now(), 1_000, &mut [&mut units], &mut second)
        .expect("a packet");
    second.truncate(fastarray::AckHeader::BYTES);
    second.extend_from_slice(&[0xff; 8]); // sections of channel 7 and on
    let server = runtime.spawn(async move {
        let quic = endpoint
            .accept()
            .await
            .expect("a client")
            .await
            .expect("a handshake");
        for datagram in [packet.clone(), packet, second] {
            quic.send_datagram(Bytes::from(datagram))
                .expect("a datagram");
        }
        // Stay until the client is done.
        let _ = quic.closed().await;
    });
    let mut client = QuicClient::connect(
        runtime.handle(),
        client_endpoint(runtime.handle(), localhost()).expect("an endpoint"),
        certificate.client_config().expect("a client config"),
        address,
        "localhost",
        1,
    )
    .expect("connecting");
    let mut mirror = FastArray::<Unit>::mirror();
    let mut error = None;
    assert!(until(Duration::from_secs(10), || {
        match client.receive(Instant::now(), &mut [&mut mirror]) {
            Ok(_) => false,
            Err(e) => {
                error = Some(e);
                true
            }
        }
    }));
    // The call that failed applied the first two: its counts are the
    // client's.
    let stats = client.stats();
    assert_eq!((stats.applied, stats.harmless), (1, 1), "{error:?}");
    assert!(
        matches!(&error, Some(ClientError::Apply(e)) if !e.is_harmless()),
        "{error:?}"
    );
    assert!(mirror.wire_eq(&units));
    client.close(b"done");
    runtime.block_on(server).expect("the raw server");
}

/// A client written with quinn directly sends the server a datagram that
/// is no packet of fastarray's: the server reports it refused, and then
/// the client's leaving.
#[test]
fn the_server_refuses_a_bad_packet_and_sees_the_client_leave() {
    let runtime = runtime();
    let certificate = DevCertificate::generate(["localhost"]).expect("a certificate");
    let mut server = QuicServer::bind(
        runtime.handle(),
        localhost(),
        certificate.server_config().expect("a server config"),
        1,
    )
    .expect("a server");
    let address = server.local_addr().expect("an address");
    let endpoint = client_endpoint(runtime.handle(), localhost()).expect("an endpoint");
    let config = certificate.client_config().expect("a client config");
    // quinn spawns the connection's driver: inside the runtime.
    let quic = runtime
        .block_on(async {
            endpoint
                .connect_with(config, address, "localhost")
                .expect("connecting")
                .await
        })
        .expect("a handshake");
    quic.send_datagram(Bytes::from_static(b"abc"))
        .expect("a datagram");
    let mut events = Vec::new();
    assert!(until(Duration::from_secs(10), || {
        while let Some(event) = server.poll(Instant::now()) {
            let refused = matches!(event, ServerEvent::Refused { .. });
            events.push(event);
            if refused {
                quic.close(0u32.into(), b"bye");
            }
        }
        matches!(events.last(), Some(ServerEvent::Disconnected { .. }))
    }));
    assert!(matches!(events[0], ServerEvent::Connected { client: 0 }));
    assert!(matches!(
        events[1],
        ServerEvent::Refused {
            client: 0,
            error: ConnectionError::Ack(AckError::Truncated { len: 3 })
        }
    ));
    assert_eq!(server.clients().count(), 0);
}

/// What `is_harmless` says of the errors a real connection returns.
#[test]
fn duplicates_and_packets_too_old_are_harmless_and_nothing_else() {
    let mut units = FastArray::new();
    units.push(unit(1));
    units.commit();
    let mut conn = Connection::new(1);
    let mut client = MirrorConnection::new(1);
    let mut mirror = FastArray::<Unit>::mirror();
    let now = Instant::now();
    let mut packets = Vec::new();
    for _ in 0..40 {
        let mut packet = Vec::new();
        conn.write_packet(now, 1_000, &mut [&mut units], &mut packet)
            .expect("a packet");
        packets.push(packet);
    }
    client
        .apply(now, &packets[0], &mut [&mut mirror])
        .expect("the first");
    let duplicate = client
        .apply(now, &packets[0], &mut [&mut mirror])
        .expect_err("a copy");
    assert!(matches!(
        duplicate,
        ConnectionError::Ack(AckError::Duplicate { .. })
    ));
    assert!(duplicate.is_harmless());
    client
        .apply(now, &packets[39], &mut [&mut mirror])
        .expect("the newest");
    let old = client
        .apply(now, &packets[1], &mut [&mut mirror])
        .expect_err("too old");
    assert!(matches!(old, ConnectionError::Ack(AckError::TooOld { .. })));
    assert!(old.is_harmless());

    let truncated = client
        .apply(now, &[1, 2, 3], &mut [&mut mirror])
        .expect_err("no header");
    assert!(!truncated.is_harmless());
    let mut two = FastArray::<Unit>::mirror();
    let channels = client
        .apply(now, &packets[2], &mut [&mut mirror, &mut two])
        .expect_err("two mirrors for one channel");
    assert!(!channels.is_harmless());
}

/// The loss drops close to its share of the datagrams, and none once
/// healed.
#[test]
fn loss_drops_its_share_and_heals() {
    let runtime = runtime();
    // A server endpoint on a lossy socket, connected to first, then
    // losing half of what it sends.
    let loss = Loss::new(0.0, 3);
    let certificate = DevCertificate::generate(["localhost"]).expect("a certificate");
    let server = lossy_endpoint(
        runtime.handle(),
        localhost(),
        Some(certificate.server_config().expect("a server config")),
        &loss,
    )
    .expect("a server endpoint");
    let address = server.local_addr().expect("an address");
    let client = client_endpoint(runtime.handle(), localhost()).expect("an endpoint");
    let config = certificate.client_config().expect("a client config");
    let lossy = loss.clone();
    let accepted = runtime.spawn(async move {
        let quic = server.accept().await?.await.ok()?;
        lossy.set_rate(0.5);
        for n in 0..400u32 {
            quic.send_datagram(Bytes::copy_from_slice(&n.to_le_bytes()))
                .ok()?;
            tokio::task::yield_now().await;
        }
        // Healed: 20 more, every one of which arrives.
        quic.read_datagram().await.ok()?;
        for n in 0..20u32 {
            quic.send_datagram(Bytes::copy_from_slice(&n.to_le_bytes()))
                .ok()?;
        }
        let _ = quic.closed().await;
        Some(())
    });
    let quic = runtime
        .block_on(async {
            client
                .connect_with(config, address, "localhost")
                .expect("connecting")
                .await
        })
        .expect("a handshake");
    let mut received = 0;
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let datagram = runtime.block_on(async {
            tokio::time::timeout(Duration::from_millis(500), quic.read_datagram()).await
        });
        match datagram {
            Ok(Ok(_)) => received += 1,
            _ => break,
        }
    }
    let stats = loss.stats();
    let share = stats.dropped as f64 / (stats.sent + stats.dropped) as f64;
    assert!(
        (0.35..0.65).contains(&share),
        "dropped {share:.2} of the datagrams"
    );
    assert!(
        received > 0 && received < 400,
        "{received} datagrams of 400 came"
    );
    loss.heal();
    let before = loss.stats();
    quic.send_datagram(Bytes::from_static(b"healed"))
        .expect("a datagram");
    let healed = runtime.block_on(async {
        for _ in 0..20 {
            let datagram = tokio::time::timeout(Duration::from_secs(5), quic.read_datagram());
            if !matches!(datagram.await, Ok(Ok(_))) {
                return false;
            }
        }
        true
    });
    assert!(healed, "a datagram was lost after healing");
    assert_eq!(loss.stats().dropped, before.dropped);
    quic.close(0u32.into(), b"bye");
    let _ = runtime.block_on(accepted);
}

/// A server and a client connected over `server_loss`'s endpoint, the
/// server's transport changed by `transport`.
fn connected(
    runtime: &Runtime,
    server_loss: &Loss,
    transport: impl FnOnce(&mut quinn::TransportConfig),
) -> (QuicServer, QuicClient, u64) {
    let certificate = DevCertificate::generate(["localhost"]).expect("a certificate");
    let mut config = certificate.server_config().expect("a server config");
    let mut settings = fastarray_quinn::transport_config();
    transport(&mut settings);
    config.transport_config(std::sync::Arc::new(settings));
    let endpoint = lossy_endpoint(runtime.handle(), localhost(), Some(config), server_loss)
        .expect("a server endpoint");
    let mut server = QuicServer::with_endpoint(runtime.handle(), endpoint, 1);
    let mut client = QuicClient::connect(
        runtime.handle(),
        client_endpoint(runtime.handle(), localhost()).expect("an endpoint"),
        certificate.client_config().expect("a client config"),
        server.local_addr().expect("an address"),
        "localhost",
        1,
    )
    .expect("connecting");
    let mut id = None;
    let mut mirror = FastArray::<Unit>::mirror();
    assert!(until(Duration::from_secs(10), || {
        while let Some(event) = server.poll(Instant::now()) {
            if let ServerEvent::Connected { client } = event {
                id = Some(client);
            }
        }
        client
            .receive(Instant::now(), &mut [&mut mirror])
            .expect("connecting");
        id.is_some() && client.is_connected()
    }));
    (server, client, id.expect("connected"))
}

fn world(units: usize) -> FastArray<Unit> {
    let mut world = FastArray::new();
    for serial in 0..units as u32 {
        world.push(unit(serial));
    }
    world.commit();
    world
}

/// The packets are as large as the QUIC connection's maximum datagram
/// size (here fixed, MTU discovery off, at an initial MTU above QUIC's
/// 1 200-byte minimum), and full.
#[test]
fn packets_are_as_large_as_the_connection_carries() {
    let runtime = runtime();
    let (mut server, mut client, id) = connected(&runtime, &Loss::new(0.0, 1), |transport| {
        transport.mtu_discovery_config(None).initial_mtu(1_400);
    });
    let mut units = world(2_000);
    let sent = server
        .send(Instant::now(), id, &mut [&mut units], 4)
        .expect("sending");
    let quic = server.quic(id).expect("connected");
    let largest = quic.max_datagram_size().expect("datagrams");
    assert!(largest > 1_300, "{largest}");
    assert_eq!(sent.packet_size, largest);
    assert_eq!(sent.packets, 4);
    assert!(sent.deferred > 0);
    // Full, but for the last item that did not fit.
    assert!(sent.bytes > 4 * (largest - 60), "{sent:?}");
    // And quinn carried every one of them.
    let mut mirror = FastArray::<Unit>::mirror();
    let mut applied = 0;
    assert!(until(Duration::from_secs(5), || {
        applied += client
            .receive(Instant::now(), &mut [&mut mirror])
            .expect("applying")
            .applied;
        applied == 4
    }));
}

/// With every datagram to the client lost, QUIC's congestion control
/// soon holds the datagrams back, and the server writes nothing more
/// while it does; once healed, the client converges.
#[test]
fn the_server_holds_back_while_quinn_queues_and_recovers() {
    let runtime = runtime();
    let loss = Loss::new(0.0, 5);
    let (mut server, mut client, id) = connected(&runtime, &loss, |_| {});
    loss.set_rate(1.0);
    let mut units = world(500);
    let mut mirror = FastArray::<Unit>::mirror();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut serial = 500;
    let mut tick = |server: &mut QuicServer, units: &mut FastArray<Unit>, live: bool| {
        let now = Instant::now();
        while server.poll(now).is_some() {}
        if live {
            change(units, &mut rng, &mut serial);
        }
        units.commit();
        let sent = server.send(now, id, &mut [units], 4).expect("sending");
        client.receive(now, &mut [&mut mirror]).expect("applying");
        client.send_reply(now, b"").expect("replying");
        sent
    };
    assert!(
        until(Duration::from_secs(10), || tick(
            &mut server,
            &mut units,
            true
        )
        .held),
        "quinn never held a datagram back over a dead link"
    );
    assert!(server.traffic(id).expect("connected").held > 0);
    loss.heal();
    assert!(
        until(Duration::from_secs(20), || {
            tick(&mut server, &mut units, false);
            let conn = server.connection(id).expect("connected");
            units.is_settled(conn.state(0))
        }),
        "no convergence after healing"
    );
    assert!(mirror.wire_eq(&units));
}

/// A name that is no DNS name nor address makes no certificate, and says
/// why.
#[test]
fn a_certificate_needs_valid_names() {
    let error = DevCertificate::generate(["caf\u{e9}.example"]).expect_err("not ASCII");
    assert!(
        matches!(error, fastarray_quinn::SetupError::Certificate(_)),
        "{error:?}"
    );
    let certificate = DevCertificate::generate(["localhost", "127.0.0.1"]).expect("a certificate");
    assert!(
        !format!("{certificate:?}").contains("key:"),
        "the key is not shown"
    );
}
