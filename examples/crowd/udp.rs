//! The crowd over real UDP sockets on 127.0.0.1: the server on the main
//! thread, each client on a thread of its own with its own socket. Every
//! datagram, both ways, passes a seeded [`Shim`] that drops, duplicates
//! and delays it. The server keeps a [`Connection`] per client (two
//! channels: the agents, with interest management, and the match object)
//! and fills each packet up to the MTU; each client applies what arrives
//! with a [`MirrorConnection`] and answers every tick with its
//! acknowledgements and where its player stands, which is what the
//! server's grid uses as that client's view point.
//!
//! Every client connects with the handshake first: its request names its
//! player (the client id a login service would give), the server answers
//! with a challenge, the client echoes it, and both sides make their
//! connection from the resulting session. Every packet after that carries
//! the session's token (or, with `--encrypted`, is sealed with
//! ChaCha20-Poly1305 under keys a stand-in login service hands both
//! sides), and a packet without it is refused before it is read.

use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use fastarray::{
    AckError, ClientHandshake, Connection, ConnectionError, FastArray, FieldCosts, InterestGrid,
    MirrorConnection, PacketKind, Protection, Relevance, Replicate, Replicated, SendState,
    ServerHandshake, SessionKeys,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::shim::{Faults, Shim, ShimStats};
use crate::{Agent, START_AGENTS, ground, mirrors_scope, simulate, spawn};

/// Ticks per second, on both sides.
const TICK: Duration = Duration::from_micros(16_667);
/// The largest datagram the server writes (unless one agent alone needs
/// more).
const MTU: usize = 1_200;
/// At most this many packets per client per tick: work beyond them waits
/// for the next tick.
const PACKETS_PER_TICK: usize = 4;
/// Ticks the server waits, after the game stops and the links heal, for
/// every client to hold everything.
const DRAIN_TICKS: u32 = 600;

/// The game's protocol id (and version): a client of another is refused.
const PROTOCOL: u64 = 0xc0d0_0001;
/// The first byte of the server's last datagram (the game's own; every
/// other datagram is the library's, told apart by `PacketKind`). A real
/// game would send it inside its protected packets: anyone can forge this
/// one.
const BYE: u8 = 2;

/// The keys a login service would give player `n` and the server (with
/// `--encrypted`): a stand-in, derived from the player's number.
fn login_keys(player: u64) -> SessionKeys {
    let byte = player as u8;
    SessionKeys {
        client_to_server: [byte.wrapping_mul(31).wrapping_add(7); 32],
        server_to_client: [byte.wrapping_mul(17).wrapping_add(3); 32],
    }
}

/// The match: one replicated object beside the agents.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Match {
    tick: u32,
    agents: u32,
}

/// One client as the server and the final table know it.
struct Player {
    faults: Faults,
    loss_name: &'static str,
    radius: f32,
    home: [f32; 2],
    /// The tick its thread starts sending.
    joins: u32,
}

/// Where a player stands at tick `now`: walking a circle of 80 around its
/// home, one lap every 600 ticks.
fn position(home: [f32; 2], now: f64) -> [f32; 2] {
    let angle = (now / 600.0) as f32 * std::f32::consts::TAU;
    [home[0] + 80.0 * angle.cos(), home[1] + 80.0 * angle.sin()]
}

/// What a client's thread hands back at the end.
struct ClientEnd {
    agents: FastArray<Agent>,
    game: Replicated<Match>,
    applied: u64,
    duplicates: u64,
    errors: Vec<String>,
    shim: ShimStats,
}

/// The server's side of one client.
struct Peer {
    index: usize,
    address: SocketAddr,
    conn: Connection,
    shim: Shim,
    joined: u32,
    bytes: u64,
    packets: u64,
    in_scope: u64,
    ticks: u64,
}

/// Runs `ticks` ticks of the game over UDP, then lets every client catch
/// up over healed links, and checks them.
pub fn run(ticks: u32, protection: Protection) -> ExitCode {
    match serve(ticks, protection) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn players() -> Vec<Player> {
    let losses = [
        ("0%", 0.0),
        ("0%", 0.0),
        ("5%", 0.05),
        ("5%", 0.05),
        ("20%", 0.20),
        ("20%", 0.20),
        ("50%", 0.50),
        ("50%", 0.50),
    ];
    let radii = [60.0, 250.0, 100.0, 150.0, 60.0, 200.0, 100.0, 250.0];
    losses
        .into_iter()
        .enumerate()
        .map(|(n, (name, loss))| {
            let angle = (n + 1) as f32 * 0.785;
            Player {
                faults: Faults::lossy(loss),
                loss_name: name,
                radius: radii[n],
                home: [300.0 * angle.cos(), 300.0 * angle.sin()],
                // Three clients join a running game.
                joins: [0, 0, 0, 40, 0, 100, 0, 200][n],
            }
        })
        .collect()
}

fn serve(ticks: u32, protection: Protection) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.set_nonblocking(true)?;
    let server_address = socket.local_addr()?;
    let players = players();
    let healed = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let deadline = start + TICK * (ticks + DRAIN_TICKS + 120);
    println!(
        "server on {server_address}; {} clients on threads of their own, each behind a seeded shim; \
         packets protected by {protection:?}",
        players.len()
    );
    let mut handshake = ServerHandshake::new(PROTOCOL, protection)?;

    let threads: Vec<_> = players
        .iter()
        .enumerate()
        .map(|(n, player)| {
            let (faults, home, radius) = (player.faults, player.home, player.radius);
            let joins = start + TICK * player.joins;
            let healed = Arc::clone(&healed);
            thread::Builder::new()
                .name(format!("client {n}"))
                .spawn(move || {
                    client(
                        n,
                        protection,
                        server_address,
                        faults,
                        home,
                        radius,
                        joins,
                        deadline,
                        &healed,
                    )
                })
        })
        .collect::<Result<_, _>>()?;

    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut agents = FastArray::with_capacity(START_AGENTS + 12 * ticks as usize);
    let mut game = Replicated::new(Match::default());
    let mut grid = InterestGrid::new(100.0);
    grid.set_leave_margin(10.0);
    let mut serial = 0;
    for _ in 0..START_AGENTS {
        let agent = spawn(&mut rng, serial);
        let at = ground(&agent);
        grid.set_item(agents.push(agent), at);
        serial += 1;
    }
    // Everything to everyone, for comparison: one unscoped connection,
    // without loss.
    let mut everyone = SendState::new();
    let mut everyone_bytes = 0u64;
    // Which field costs what, in those messages: each commit's changed
    // fields measured alone, and what the messages spent besides.
    let mut costs = FieldCosts::<Agent>::new();

    let mut peers: Vec<Peer> = Vec::new();
    let mut datagram = [0u8; 2048];
    let mut packet = Vec::with_capacity(MTU);
    let mut settled_at = None;
    for tick in 0..ticks + DRAIN_TICKS {
        let live = tick < ticks;
        if tick == ticks {
            healed.store(true, Ordering::Relaxed);
            for peer in &mut peers {
                peer.shim.set_faults(Faults::NONE);
            }
        }
        // Until this tick is due: whatever the clients sent.
        let due = start + TICK * tick;
        loop {
            let now = Instant::now();
            match socket.recv_from(&mut datagram) {
                Ok((len, from)) => {
                    receive(
                        &mut peers,
                        &mut handshake,
                        &players,
                        &socket,
                        &datagram[..len],
                        from,
                        now,
                        tick,
                        &mut grid,
                    )?;
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    for peer in &mut peers {
                        peer.shim.flush(now)?;
                    }
                    if now >= due {
                        break;
                    }
                    thread::sleep(Duration::from_micros(300));
                }
                Err(error) => return Err(error.into()),
            }
        }
        let now = Instant::now();
        if now > deadline {
            eprintln!("the run took too long: stopping");
            break;
        }
        if live {
            simulate(&mut agents, &mut grid, &mut rng, &mut serial, tick);
            let mut state = game.get_mut();
            state.tick = tick;
            state.agents = agents.len() as u32;
        }
        agents.commit();
        game.commit();
        grid.update(|viewer, id, relevance| {
            if let Some(peer) = peers.iter_mut().find(|peer| peer.index as u64 == viewer) {
                let mut scope = agents
                    .scope(peer.conn.state_mut(0))
                    .expect("the server's array");
                match relevance {
                    Relevance::Enter => scope.include(id),
                    Relevance::Leave => scope.exclude(id),
                };
            }
        });
        if live {
            costs.record(&agents);
            packet.clear();
            let stats = agents.write_delta(&mut everyone, tick, &mut packet)?;
            costs.record_message(&stats);
            everyone.on_ack(tick);
            everyone_bytes += packet.len() as u64;
        }
        for peer in &mut peers {
            if live {
                peer.ticks += 1;
                peer.in_scope += agents.scope(peer.conn.state_mut(0)).map_or(0, |s| s.len()) as u64;
            }
            for _ in 0..PACKETS_PER_TICK {
                packet.clear();
                let stats =
                    peer.conn
                        .write_packet(now, MTU, &mut [&mut agents, &mut game], &mut packet)?;
                peer.shim.send_to(now, &packet, peer.address)?;
                peer.bytes += packet.len() as u64;
                peer.packets += 1;
                if stats.totals.deferred == 0 {
                    break;
                }
            }
        }
        if live && tick % 60 == 0 {
            let rates: Vec<String> = peers
                .iter()
                .map(|peer| format!("{:.0}", peer.bytes as f64 / peer.ticks.max(1) as f64))
                .collect();
            println!(
                "tick {tick:>4}  agents {:>5}  clients {}  bytes/tick per client so far [{}]",
                agents.len(),
                peers.len(),
                rates.join(" ")
            );
        }
        let all_joined = peers.len() == players.len();
        if !live
            && all_joined
            && peers.iter().all(|peer| {
                agents.is_settled(peer.conn.state(0))
                    && game.is_settled(peer.conn.state(1))
                    && !peer.shim.holding()
            })
        {
            settled_at = Some(tick);
            break;
        }
    }
    match settled_at {
        Some(tick) => println!(
            "game over after {ticks} ticks; links healed; every client settled {} ticks later ({:.1} s in all)",
            tick - ticks,
            start.elapsed().as_secs_f64()
        ),
        None => eprintln!("the clients did not settle within {DRAIN_TICKS} ticks of healing"),
    }
    for peer in &mut peers {
        for _ in 0..3 {
            socket.send_to(&[BYE], peer.address)?;
        }
    }
    let ends: Vec<ClientEnd> = threads
        .into_iter()
        .map(|thread| thread.join().map_err(|_| "a client thread panicked"))
        .collect::<Result<_, _>>()?;
    report(
        ticks,
        &players,
        &mut peers,
        &ends,
        &mut agents,
        &game,
        everyone_bytes,
        &costs,
        settled_at.is_some(),
    )
}

/// Takes one datagram from a client: a packet of its connection, or, from
/// an address without one, a handshake message; a client whose echo of
/// its challenge holds joins.
#[allow(clippy::too_many_arguments)]
fn receive(
    peers: &mut Vec<Peer>,
    handshake: &mut ServerHandshake,
    players: &[Player],
    socket: &UdpSocket,
    datagram: &[u8],
    from: SocketAddr,
    now: Instant,
    tick: u32,
    grid: &mut InterestGrid,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(index) = peers.iter().position(|peer| peer.address == from) else {
        let mut reply = Vec::new();
        let session = match handshake.protection() {
            Protection::Token => handshake.handle(now, &from, datagram, &mut reply),
            Protection::Encrypted => {
                handshake.handle_encrypted(now, &from, datagram, &mut reply, |player| {
                    (player < players.len() as u64).then(|| login_keys(player))
                })
            }
        };
        match session {
            // A request: the challenge goes back (straight, not through
            // a shim: the client's own shim loses its share of them).
            Ok(None) => {
                socket.send_to(&reply, from)?;
            }
            Ok(Some(session)) => {
                // The client's id names its player.
                let player = session.client_id() as usize;
                if player >= players.len() || peers.iter().any(|peer| peer.index == player) {
                    return Ok(());
                }
                peers.push(Peer {
                    index: player,
                    address: from,
                    conn: Connection::secure(session, 2),
                    shim: Shim::new(
                        socket.try_clone()?,
                        players[player].faults,
                        100 + player as u64,
                    ),
                    joined: tick,
                    bytes: 0,
                    packets: 0,
                    in_scope: 0,
                    ticks: 0,
                });
                println!("tick {tick:>4}  client {player} joined from {from}");
            }
            // Not a handshake message, or one refused: changes nothing.
            Err(_) => {}
        }
        return Ok(());
    };
    let peer = &mut peers[index];
    match peer.conn.receive(now, datagram) {
        Ok((_, payload)) => {
            if let Some(([x, z, radius], _)) = read_view(payload) {
                grid.set_viewer(peer.index as u64, [x, z], radius);
            }
        }
        // Duplicates, stale or broken headers, and packets that are not
        // the client's (its echoes repeated after it joined, forgeries)
        // change nothing.
        Err(ConnectionError::Ack(_) | ConnectionError::Refused(_)) => {}
        Err(error) => return Err(error.into()),
    }
    Ok(())
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

/// A client's thread: joins at `joins`, applies what the server sends,
/// answers every tick, until the server says bye (or `deadline`).
#[allow(clippy::too_many_arguments)]
fn client(
    n: usize,
    protection: Protection,
    server: SocketAddr,
    faults: Faults,
    home: [f32; 2],
    radius: f32,
    joins: Instant,
    deadline: Instant,
    healed: &AtomicBool,
) -> ClientEnd {
    let mut end = ClientEnd {
        agents: FastArray::mirror(),
        game: Replicated::mirror(),
        applied: 0,
        duplicates: 0,
        errors: Vec::new(),
        shim: ShimStats::default(),
    };
    let setup = || -> std::io::Result<(UdpSocket, Shim)> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        socket.set_nonblocking(true)?;
        let shim = Shim::new(socket.try_clone()?, faults, 1_000 + n as u64);
        Ok((socket, shim))
    };
    let (socket, mut shim) = match setup() {
        Ok(pair) => pair,
        Err(error) => {
            end.errors.push(format!("socket: {error}"));
            return end;
        }
    };
    thread::sleep(joins.saturating_duration_since(Instant::now()));
    let handshake = match protection {
        Protection::Token => ClientHandshake::new(PROTOCOL, n as u64),
        Protection::Encrypted => {
            ClientHandshake::encrypted(PROTOCOL, n as u64, login_keys(n as u64))
        }
    };
    let mut handshake = match handshake {
        Ok(handshake) => handshake,
        Err(error) => {
            end.errors.push(format!("handshake: {error}"));
            return end;
        }
    };
    // Made from the session once the challenge arrives.
    let mut conn: Option<MirrorConnection> = None;
    let mut datagram = vec![0u8; fastarray::MAX_PACKET + 1];
    let mut out = Vec::with_capacity(64);
    let mut reply = Vec::with_capacity(64);
    let mut view = Vec::with_capacity(16);
    let mut next_reply = Instant::now();
    let mut was_healed = false;
    let started = Instant::now();
    let mut at = home;
    while Instant::now() < deadline {
        let now = Instant::now();
        if !was_healed && healed.load(Ordering::Relaxed) {
            shim.set_faults(Faults::NONE);
            was_healed = true;
        }
        // The handshake's request, then its echo, until the server's
        // first packet shows it holds the session.
        out.clear();
        if end.applied == 0 && handshake.poll_transmit(now, &mut out) {
            if let Err(error) = shim.send_to(now, &out, server) {
                end.errors.push(format!("send: {error}"));
            }
        }
        match socket.recv_from(&mut datagram) {
            Ok((len, _)) => {
                let datagram = &datagram[..len];
                match (PacketKind::of(datagram), &mut conn) {
                    (Some(PacketKind::Challenge), _) => match handshake.receive(datagram) {
                        Ok(Some(session)) => conn = Some(MirrorConnection::secure(session, 2)),
                        Ok(None) => {} // an answer to a resent request
                        Err(error) => end.errors.push(format!("handshake: {error}")),
                    },
                    (Some(PacketKind::Data | PacketKind::Sealed), Some(conn)) => {
                        match conn.apply(now, datagram, &mut [&mut end.agents, &mut end.game]) {
                            Ok(_) => end.applied += 1,
                            Err(ConnectionError::Ack(AckError::Duplicate { .. })) => {
                                end.duplicates += 1
                            }
                            // A late packet the header window no longer
                            // reaches: its news is older than what came since.
                            Err(ConnectionError::Ack(AckError::TooOld { .. })) => {
                                end.duplicates += 1
                            }
                            // A sealed duplicate: refused by the replay window.
                            Err(ConnectionError::Refused(fastarray::PacketError::Replayed {
                                ..
                            })) => end.duplicates += 1,
                            Err(error) => end.errors.push(error.to_string()),
                        }
                    }
                    _ if datagram.first() == Some(&BYE) => break,
                    _ => end.errors.push("a datagram of unknown kind".into()),
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_micros(300));
            }
            Err(error) => {
                end.errors.push(format!("receive: {error}"));
                break;
            }
        }
        if let (Some(conn), true) = (&mut conn, now >= next_reply) {
            next_reply += TICK;
            // The player stops when the game does.
            if !was_healed {
                at = position(home, (now - started).as_secs_f64() / TICK.as_secs_f64());
            }
            view.clear();
            write_view(&mut view, [at[0], at[1], radius], n);
            reply.clear();
            match conn.write_reply(now, &view, &mut reply) {
                Ok(_) => {
                    if let Err(error) = shim.send_to(now, &reply, server) {
                        end.errors.push(format!("send: {error}"));
                    }
                }
                Err(error) => end.errors.push(error.to_string()),
            }
        }
        if let Err(error) = shim.flush(now) {
            end.errors.push(format!("send: {error}"));
        }
    }
    end.shim = shim.stats();
    end
}

/// Prints the table and checks every client.
#[allow(clippy::too_many_arguments)]
fn report(
    ticks: u32,
    players: &[Player],
    peers: &mut [Peer],
    ends: &[ClientEnd],
    agents: &mut FastArray<Agent>,
    game: &Replicated<Match>,
    everyone_bytes: u64,
    costs: &FieldCosts<Agent>,
    settled: bool,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let everyone = everyone_bytes as f64 / f64::from(ticks.max(1));
    println!("\neverything to everyone: {everyone:.0} bytes/tick per client\n");
    println!(
        "which field costs what, in those {ticks} messages (bits; share of all they carried):\n{costs}\n"
    );
    println!(
        "client  loss  joined  radius  in scope  bytes/tick  vs all  packets  lost  rtt ms  applied  dup  matches"
    );
    let mut all_match = settled;
    peers.sort_by_key(|peer| peer.index);
    for (n, (player, end)) in players.iter().zip(ends).enumerate() {
        let Some(peer) = peers.iter_mut().find(|peer| peer.index == n) else {
            println!("{n:>6}  never joined");
            all_match = false;
            continue;
        };
        let matches = end.errors.is_empty()
            && mirrors_scope(agents, peer.conn.state_mut(0), &end.agents)
            && end.game.get() == game.get();
        all_match &= matches;
        let stats = peer.conn.stats();
        let per_tick = peer.bytes as f64 / peer.ticks.max(1) as f64;
        println!(
            "{n:>6}  {:>4}  {:>6}  {:>6.0}  {:>8.0}  {:>10.0}  {:>5.1}%  {:>7}  {:>4}  {:>6.1}  {:>7}  {:>3}  {}",
            player.loss_name,
            peer.joined,
            player.radius,
            peer.in_scope as f64 / peer.ticks.max(1) as f64,
            per_tick,
            100.0 * per_tick / everyone.max(1.0),
            peer.packets,
            stats.packets_lost,
            stats.rtt.as_secs_f64() * 1e3,
            end.applied,
            end.duplicates,
            if matches { "yes" } else { "NO" },
        );
        for error in &end.errors {
            println!("        error: {error}");
        }
    }
    println!(
        "\nloss: what the shim drops, both ways (it also duplicates 2% and delays each datagram by 5-40 ms, \
         so they reorder);\njoined: the tick its handshake completed; radius: how far its player sees; \
         in scope: agents it saw, on average;\nbytes/tick: sent to it per tick while the game ran, headers included; \
         vs all: that against sending everything to everyone;\npackets: datagrams the server sent it; \
         lost: those the server's acknowledgements declared lost; rtt: the smoothed round trip;\napplied: \
         packets the client applied; dup: copies it refused (duplicates, or older than its header window);\n\
         matches: its mirrors hold exactly the server's agents in its scope and the match object, equal on the wire."
    );
    println!(
        "\nwhat each connection decided for its agents (Connection::channel_stats(0)):\n\
         client  sections     bytes   added  changed  removed  left scope  acked  lost  in scope"
    );
    for peer in peers.iter() {
        let c = peer.conn.channel_stats(0);
        println!(
            "{:>6}  {:>8}  {:>8}  {:>6}  {:>7}  {:>7}  {:>10}  {:>5}  {:>4}  {:>8}",
            peer.index,
            c.sections,
            c.bytes(),
            c.added,
            c.changed,
            c.removed,
            c.left_scope,
            c.packets_acked,
            c.packets_lost,
            c.in_scope.unwrap_or(c.client_items),
        );
    }
    if !all_match {
        eprintln!("MISMATCH: a client differs from the server");
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "\nevery client matches the server over real sockets ({} agents at the end)",
        agents.len()
    );
    Ok(ExitCode::SUCCESS)
}
