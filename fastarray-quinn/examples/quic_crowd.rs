//! A crowd over QUIC datagrams on 127.0.0.1: one server, four clients,
//! each with its own quinn endpoint and a real TLS handshake against a
//! certificate generated at start.
//!
//! About 600 units move, take damage, spawn and die every tick. Each
//! client is a player walking a circle who sees the units within its
//! radius: its replies carry where it stands, and the server's
//! `InterestGrid` scopes its connection with it (its client id is the
//! grid's viewer). Two clients join a running game. Once connected, each
//! client's link drops 0%, 20% or 50% of the UDP datagrams both ways, at
//! the socket (`fastarray_quinn::loss`): QUIC sees its packets lost, and
//! fastarray's header repairs the game state.
//!
//! The game runs a bounded number of ticks, then stops; the loss stays
//! on, and the run counts the ticks each client takes to settle (hold
//! everything, acknowledged). Then the links heal, the last repairs go
//! out, and every client's mirror is checked against the server's units
//! in its scope, equal on the wire.
//!
//! ```sh
//! cargo run --release -p fastarray-quinn --example quic_crowd          # 300 ticks, about 7 s
//! cargo run --release -p fastarray-quinn --example quic_crowd -- 600  # more ticks
//! ```
//!
//! Exits with status 1 if a client differs from the server.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fastarray::{FastArray, InterestGrid, Relevance, Replicate, Replicated, ReplicationId};
use fastarray_quinn::loss::{Loss, lossy_endpoint};
use fastarray_quinn::{DevCertificate, QuicClient, QuicServer, ServerEvent};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// 60 ticks per second.
const TICK: Duration = Duration::from_micros(16_667);
/// Units at the start (and about as many throughout).
const UNITS: usize = 600;
/// At most this many datagrams per client per tick.
const PACKETS_PER_TICK: usize = 4;
/// Ticks the game may take to settle after it stops, with the loss on,
/// then again once healed.
const SETTLE_TICKS: u32 = 180;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    #[replicate(quantize(min = -1000.0, max = 1000.0, bits = 20))]
    x: f32,
    #[replicate(quantize(min = -1000.0, max = 1000.0, bits = 20))]
    z: f32,
    #[replicate(bits = 7)]
    hp: u8,
    name: String,
}

/// The match: one object beside the units.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Match {
    tick: u32,
    units: u32,
}

/// One client as the run knows it.
struct Player {
    loss: f64,
    /// The tick it starts connecting.
    joins: u32,
    home: [f32; 2],
    radius: f32,
    /// Its link's loss, both ways (its own socket drops what it sends;
    /// the server's drops what goes to it).
    link: Loss,
    client: Option<QuicClient>,
    units: FastArray<Unit>,
    game: Replicated<Match>,
    /// Its id on the server, once connected.
    id: Option<u64>,
    lossy: bool,
    /// Ticks the game ran with it connected.
    ticks: u64,
    /// The server's bytes to it (fastarray's packets) while the game ran.
    bytes: u64,
    /// The UDP bytes of its QUIC connection, server to client, when the
    /// game stopped (QUIC's headers, tags, acknowledgements included).
    udp_bytes: u64,
    /// The packet size of the first packets sent to it.
    first_size: usize,
    /// Ticks after the game stopped until it settled, with its loss on.
    settled_under_loss: Option<u32>,
    error: Option<String>,
}

fn position(home: [f32; 2], tick: u32) -> [f32; 2] {
    let angle = tick as f32 / 600.0 * std::f32::consts::TAU;
    [home[0] + 80.0 * angle.cos(), home[1] + 80.0 * angle.sin()]
}

fn main() -> ExitCode {
    let ticks = match std::env::args().nth(1).map(|arg| arg.parse()) {
        None => 300,
        Some(Ok(ticks)) => ticks,
        Some(Err(_)) => {
            eprintln!("usage: quic_crowd [TICKS]");
            return ExitCode::from(2);
        }
    };
    match run(ticks) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("MISMATCH: a client differs from the server");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn spawn(rng: &mut ChaCha8Rng, serial: u64) -> Unit {
    Unit {
        x: rng.random_range(-400.0..400.0),
        z: rng.random_range(-400.0..400.0),
        hp: 100,
        name: format!("unit-{serial}"),
    }
}

/// One tick of game logic: a third of the units move, some take damage,
/// a few die and as many spawn.
fn simulate(
    units: &mut FastArray<Unit>,
    grid: &mut InterestGrid,
    rng: &mut ChaCha8Rng,
    serial: &mut u64,
) {
    let ids: Vec<ReplicationId> = units.ids().collect();
    let mut deaths = Vec::new();
    for id in ids {
        if !rng.random_bool(0.33) {
            continue;
        }
        let mut unit = units.get_mut(id).expect("a live id");
        unit.x = (unit.x + rng.random_range(-2.0..2.0)).clamp(-999.0, 999.0);
        unit.z = (unit.z + rng.random_range(-2.0..2.0)).clamp(-999.0, 999.0);
        if rng.random_bool(0.05) {
            unit.hp = unit.hp.saturating_sub(rng.random_range(5..40));
        }
        if unit.hp == 0 || rng.random_bool(0.01) {
            deaths.push(id);
        }
        grid.set_item(id, [unit.x, unit.z]);
    }
    let died = deaths.len();
    for id in deaths {
        units.remove(id);
        grid.remove_item(id);
    }
    // As many as died, and a few more while below the crowd's size.
    let births = died + usize::from(units.len() < UNITS) * 2;
    for _ in 0..births {
        let unit = spawn(rng, *serial);
        let at = [unit.x, unit.z];
        grid.set_item(units.push(unit), at);
        *serial += 1;
    }
}

fn run(ticks: u32) -> Result<bool, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let certificate = DevCertificate::generate(["localhost"])?;
    let server_loss = Loss::new(0.0, 1);
    let localhost: SocketAddr = "127.0.0.1:0".parse()?;
    let endpoint = lossy_endpoint(
        runtime.handle(),
        localhost,
        Some(certificate.server_config()?),
        &server_loss,
    )?;
    let mut server = QuicServer::with_endpoint(runtime.handle(), endpoint, 2);
    let address = server.local_addr()?;
    println!(
        "server on {address} (QUIC, self-signed certificate made at start); {UNITS} units; {ticks} ticks"
    );

    let mut players: Vec<Player> = [(0.0, 0), (0.2, 0), (0.5, 60), (0.2, 150)]
        .into_iter()
        .enumerate()
        .map(|(n, (loss, joins))| {
            let angle = n as f32 * 1.57 + 0.4;
            Player {
                loss,
                joins,
                home: [250.0 * angle.cos(), 250.0 * angle.sin()],
                radius: [150.0, 250.0, 200.0, 120.0][n],
                link: Loss::new(0.0, 100 + n as u64),
                client: None,
                units: FastArray::mirror(),
                game: Replicated::mirror(),
                id: None,
                lossy: false,
                ticks: 0,
                bytes: 0,
                udp_bytes: 0,
                first_size: 0,
                settled_under_loss: None,
                error: None,
            }
        })
        .collect();

    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut units = FastArray::new();
    let mut game = Replicated::new(Match::default());
    let mut grid = InterestGrid::new(100.0);
    grid.set_leave_margin(10.0);
    let mut serial = 0;
    for _ in 0..UNITS {
        let unit = spawn(&mut rng, serial);
        let at = [unit.x, unit.z];
        grid.set_item(units.push(unit), at);
        serial += 1;
    }

    let last = ticks + 2 * SETTLE_TICKS;
    let mut healed_at = None;
    let mut settled_at = None;
    let mut reply = Vec::new();
    for tick in 0..last {
        let due = started + TICK * tick;
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let now = Instant::now();
        let live = tick < ticks;
        if tick == ticks {
            for player in &mut players {
                if let Some(id) = player.id {
                    player.udp_bytes = server.quic(id).map_or(0, |q| q.stats().udp_tx.bytes);
                }
            }
        }

        // Clients join when their time comes.
        for player in &mut players {
            if player.client.is_none() && tick >= player.joins {
                let endpoint = lossy_endpoint(runtime.handle(), localhost, None, &player.link)?;
                player.client = Some(QuicClient::connect(
                    runtime.handle(),
                    endpoint,
                    certificate.client_config()?,
                    address,
                    "localhost",
                    2,
                )?);
            }
        }

        // The server: who joined and left, the clients' packets.
        while let Some(event) = server.poll(now) {
            match event {
                ServerEvent::Connected { client } => {
                    println!("tick {tick:>4}  client id {client} connected");
                }
                ServerEvent::Disconnected { client, reason } => {
                    println!("tick {tick:>4}  client id {client} left: {reason}");
                    grid.remove_viewer(client);
                }
                ServerEvent::Received {
                    client, payload, ..
                } => {
                    if let Some(([x, z, radius], player)) = read_view(&payload) {
                        grid.set_viewer(client, [x, z], radius);
                        if let Some(player) = players.get_mut(usize::from(player)) {
                            player.id = Some(client);
                        }
                    }
                }
                ServerEvent::Refused { client, error } => {
                    return Err(format!("client id {client}: {error}").into());
                }
                _ => {}
            }
        }
        if live {
            simulate(&mut units, &mut grid, &mut rng, &mut serial);
            let mut state = game.get_mut();
            state.tick = tick;
            state.units = units.len() as u32;
        }
        units.commit();
        game.commit();
        grid.update(|viewer, id, relevance| {
            if let Some(conn) = server.connection_mut(viewer) {
                let mut scope = units.scope(conn.state_mut(0)).expect("the server's array");
                match relevance {
                    Relevance::Enter => scope.include(id),
                    Relevance::Leave => scope.exclude(id),
                };
            }
        });
        let clients: Vec<u64> = server.clients().collect();
        for client in clients {
            // A client's units go once the grid has its view point.
            if !players.iter().any(|player| player.id == Some(client)) {
                continue;
            }
            let sent = server.send(now, client, &mut [&mut units, &mut game], PACKETS_PER_TICK)?;
            let player = players.iter_mut().find(|p| p.id == Some(client));
            if let (true, Some(player)) = (live, player) {
                if player.first_size == 0 {
                    player.first_size = sent.packet_size;
                }
                player.ticks += 1;
                player.bytes += sent.bytes as u64;
            }
        }

        // The clients: apply, then reply with where the player stands.
        for (n, player) in players.iter_mut().enumerate() {
            let Some(client) = &mut player.client else {
                continue;
            };
            if let Err(error) = client.receive(now, &mut [&mut player.units, &mut player.game]) {
                player.error.get_or_insert(error.to_string());
                continue;
            }
            if client.is_connected() && !player.lossy && healed_at.is_none() {
                // Connected: its link starts losing, both ways.
                player.link.set_rate(player.loss);
                server_loss.set_rate_to(client.endpoint().local_addr()?, player.loss);
                player.lossy = true;
            }
            let at = position(player.home, tick.min(ticks));
            reply.clear();
            write_view(&mut reply, [at[0], at[1], player.radius], n);
            if let Err(error) = client.send_reply(now, &reply) {
                player.error.get_or_insert(error.to_string());
            }
        }

        // Stopped: who settled, with the loss on; then healed.
        if !live {
            let mut all = true;
            for player in &mut players {
                let settled = player
                    .id
                    .and_then(|id| server.connection(id))
                    .is_some_and(|conn| {
                        units.is_settled(conn.state(0)) && game.is_settled(conn.state(1))
                    });
                if settled && healed_at.is_none() && player.settled_under_loss.is_none() {
                    player.settled_under_loss = Some(tick - ticks);
                }
                all &= settled;
            }
            if all {
                settled_at = Some(tick);
                break;
            }
            if healed_at.is_none() && tick >= ticks + SETTLE_TICKS {
                println!("tick {tick:>4}  links healed");
                server_loss.heal();
                for player in &players {
                    player.link.heal();
                }
                healed_at = Some(tick);
            }
        } else if tick % 60 == 0 {
            println!(
                "tick {tick:>4}  units {:>4}  clients {}",
                units.len(),
                server.clients().count()
            );
        }
    }
    // The last packets the clients applied: once the server knows them
    // settled, the clients hold them (they acknowledged them).
    report(
        ticks,
        &mut players,
        &mut server,
        &mut units,
        &game,
        settled_at,
        started,
    )
}

fn report(
    ticks: u32,
    players: &mut [Player],
    server: &mut QuicServer,
    units: &mut FastArray<Unit>,
    game: &Replicated<Match>,
    settled_at: Option<u32>,
    started: Instant,
) -> Result<bool, Box<dyn std::error::Error>> {
    println!(
        "\nclient  loss  joined  radius  ticks  bytes/tick  udp bytes/tick   datagram  quic lost  held  applied  harmless  settled under loss  matches"
    );
    let mut all_match = settled_at.is_some();
    for (n, player) in players.iter_mut().enumerate() {
        let Some(id) = player.id else {
            println!("{n:>6}  never connected: {:?}", player.error);
            all_match = false;
            continue;
        };
        let Some(conn) = server.connection_mut(id) else {
            println!("{n:>6}  gone");
            all_match = false;
            continue;
        };
        let matches = player.error.is_none()
            && mirrors_scope(units, conn.state_mut(0), &player.units)
            && player.game.wire_eq(game);
        all_match &= matches;
        let quic = server.quic(id).ok_or("a connected client")?;
        let client = player.client.as_ref().ok_or("a client")?;
        let per_tick = player.bytes as f64 / player.ticks.max(1) as f64;
        println!(
            "{n:>6}  {:>3.0}%  {:>6}  {:>6.0}  {:>5}  {:>10.0}  {:>14.0}  {:>9}  {:>9}  {:>4}  {:>7}  {:>8}  {:>18}  {}",
            player.loss * 100.0,
            player.joins,
            player.radius,
            player.ticks,
            per_tick,
            player.udp_bytes as f64 / player.ticks.max(1) as f64,
            format!(
                "{}>{}",
                player.first_size,
                quic.max_datagram_size().unwrap_or(0)
            ),
            quic.stats().path.lost_packets,
            server.traffic(id).map_or(0, |t| t.held),
            client.stats().applied,
            client.stats().harmless,
            player
                .settled_under_loss
                .map_or("no (healed)".to_string(), |t| format!("{t} ticks")),
            if matches { "yes" } else { "NO" },
        );
        if let Some(error) = &player.error {
            println!("        error: {error}");
        }
    }
    println!(
        "\nloss: UDP datagrams dropped both ways once connected; joined: the tick it started connecting;\n\
         bytes/tick: fastarray's packets to it per tick while the game ran (its 8-byte header included);\n\
         udp bytes/tick: the same connection's UDP bytes, QUIC's packet headers, AEAD tags, acks and keep-alives included;\n\
         datagram: the packet size (the connection's max datagram size) at first > at the end (MTU discovery raises it);\n\
         quic lost: packets QUIC declared lost; held: ticks nothing was written, quinn still holding a datagram;\n\
         applied / harmless: packets the client applied / read past;\n\
         settled under loss: ticks after the game stopped until the server knew it held everything, loss still on;\n\
         matches: its mirror holds exactly the server's units in its scope and the match, equal on the wire."
    );
    match settled_at {
        Some(tick) => println!(
            "\nevery client settled {} ticks after the game stopped ({:.1} s in all)",
            tick - ticks,
            started.elapsed().as_secs_f64()
        ),
        None => println!("\nthe clients did not all settle"),
    }
    Ok(all_match)
}

/// A client's payload: its player's x, z and view radius, then its index.
fn write_view(out: &mut Vec<u8>, view: [f32; 3], player: usize) {
    for value in view {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.push(player as u8);
}

fn read_view(payload: &[u8]) -> Option<([f32; 3], u8)> {
    let (floats, rest) = payload.split_at_checked(12)?;
    let mut view = [0.0; 3];
    for (value, bytes) in view.iter_mut().zip(floats.chunks_exact(4)) {
        *value = f32::from_le_bytes(bytes.try_into().ok()?);
    }
    let player = *rest.first()?;
    view.iter().all(|v| v.is_finite()).then_some((view, player))
}

/// Whether `mirror` holds exactly the units in `conn`'s scope, equal on
/// the wire.
fn mirrors_scope(
    units: &mut FastArray<Unit>,
    conn: &mut fastarray::SendState,
    mirror: &FastArray<Unit>,
) -> bool {
    let Ok(scope) = units.scope(conn) else {
        return false;
    };
    let ids: Vec<ReplicationId> = scope.ids().collect();
    ids.len() == mirror.len()
        && ids.iter().all(|&id| {
            let (ours, theirs) = (units.get(id), mirror.get(id));
            ours.zip(theirs).is_some_and(|(a, b)| a.wire_eq(b))
        })
}
