//! One run of the game over renet and renet_netcode on 127.0.0.1: a server
//! and four clients, each client behind a lossy, reordering [`Relay`], two of them
//! joining late. Everything runs in one thread, one tick after the other,
//! on a clock that advances a tick at a time (so a run takes as long as
//! the work, and every process sees the same times).

use std::collections::BTreeMap;
use std::error::Error;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use fastarray::{FastArray, InterestGrid, Replicate, Replicated, ReplicationId};
use fastarray_renet::{
    Received, RenetReplicationClient, RenetReplicationServer, connection_config,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use renet::{RenetClient, RenetServer, ServerEvent};
use renet_netcode::{
    ClientAuthentication, NetcodeClientTransport, NetcodeServerTransport, ServerAuthentication,
    ServerConfig,
};

use crate::relay::Relay;

/// One tick, 60 a second.
pub const TICK: Duration = Duration::from_micros(16_667);
/// The game's netcode protocol id.
const PROTOCOL: u64 = 0xfa57_a77a_0002;
/// Ticks the server waits, once the game stops and the links heal, for
/// every client to hold everything.
const DRAIN_TICKS: u32 = 600;
/// The map is a square of this half side.
const EDGE: f32 = 500.0;

/// A unit of the game.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Unit {
    #[replicate(quantize(min = -512.0, max = 512.0, bits = 16))]
    position: [f32; 2],
    #[replicate(quantize(min = -4.0, max = 4.0, bits = 8))]
    velocity: [f32; 2],
    health: u8,
    #[replicate(bits = 3)]
    kind: u8,
}

/// The match: one replicated object beside the units.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
pub struct Match {
    #[replicate(varint)]
    tick: u32,
    #[replicate(varint)]
    units: u32,
}

/// What a run is.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Ticks of play, before the links heal.
    pub ticks: u32,
    /// The share of datagrams each relay drops, each way, during play.
    pub loss: f64,
    /// Units at the start (spawns and deaths keep it about so).
    pub units: usize,
    pub seed: u64,
}

/// One client at the end of a run.
#[derive(Debug, Default)]
pub struct ClientReport {
    /// Its renet client id.
    pub id: u64,
    /// The tick the server saw it connect.
    pub joined: Option<u32>,
    /// Ticks of play it was connected for.
    pub ticks: u64,
    /// fastarray's bytes handed to renet for it during play.
    pub bytes: u64,
    /// The bytes of the datagrams the server sent it during play (renet's
    /// and netcode's headers, keep-alives and acks included).
    pub wire_bytes: u64,
    /// Units in its scope, summed over the ticks of play.
    pub in_scope: u64,
    /// Packets it applied, and the harmless refusals.
    pub received: Received,
    /// Datagrams its relay dropped, both ways.
    pub dropped: u64,
    /// The largest datagram the server sent it.
    pub largest_datagram: usize,
    /// Its mirrors hold exactly the server's units in its scope and the
    /// match, equal on the wire.
    pub matches: bool,
    /// A real error, if any.
    pub error: Option<String>,
}

impl ClientReport {
    /// fastarray's bytes per tick of play.
    pub fn bytes_per_tick(&self) -> f64 {
        self.bytes as f64 / self.ticks.max(1) as f64
    }

    /// The datagrams' bytes per tick of play.
    pub fn wire_bytes_per_tick(&self) -> f64 {
        self.wire_bytes as f64 / self.ticks.max(1) as f64
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    pub clients: Vec<ClientReport>,
    /// Ticks after healing until every client was settled.
    pub settled_after: Option<u32>,
    /// Units on the server at the end.
    pub units: usize,
}

impl Outcome {
    /// Whether every client converged.
    pub fn converged(&self) -> bool {
        self.settled_after.is_some() && self.clients.iter().all(|client| client.matches)
    }
}

/// One client: its player, its sockets, its mirrors.
struct Player {
    id: u64,
    /// The tick it starts connecting.
    joins: u32,
    home: [f32; 2],
    radius: f32,
    relay: Relay,
    renet: Option<(RenetClient, NetcodeClientTransport)>,
    replication: RenetReplicationClient,
    units: FastArray<Unit>,
    game: Replicated<Match>,
    report: ClientReport,
}

/// Where a player stands at tick `tick`: walking a circle of 100 around
/// its home, a lap every 600 ticks.
fn position(home: [f32; 2], tick: u32) -> [f32; 2] {
    let angle = tick as f32 / 600.0 * std::f32::consts::TAU;
    [home[0] + 100.0 * angle.cos(), home[1] + 100.0 * angle.sin()]
}

/// The client's data after its header: where it stands, how far it sees.
fn write_view(center: [f32; 2], radius: f32) -> Vec<u8> {
    [center[0], center[1], radius]
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect()
}

fn read_view(data: &[u8]) -> Option<([f32; 2], f32)> {
    let mut values = data
        .chunks_exact(4)
        .map(|bytes| f32::from_le_bytes(bytes.try_into().expect("4 bytes")));
    let (x, z, radius) = (values.next()?, values.next()?, values.next()?);
    [x, z, radius]
        .iter()
        .all(|value| value.is_finite())
        .then_some(([x, z], radius))
}

fn spawn(rng: &mut ChaCha8Rng) -> Unit {
    let moving = rng.random_bool(0.4);
    let mut speed = || {
        if moving {
            rng.random_range(-3.0..3.0)
        } else {
            0.0
        }
    };
    let velocity = [speed(), speed()];
    Unit {
        position: [rng.random_range(-EDGE..EDGE), rng.random_range(-EDGE..EDGE)],
        velocity,
        health: 100,
        kind: rng.random_range(0..8),
    }
}

/// One tick of the game: units move and take damage, some die, some spawn.
fn simulate(
    units: &mut FastArray<Unit>,
    grid: &mut InterestGrid,
    rng: &mut ChaCha8Rng,
    target: usize,
) {
    let ids: Vec<ReplicationId> = units.ids().collect();
    let mut deaths = Vec::new();
    for id in ids {
        let unit = units.get(id).expect("a live id");
        let (moving, hurt) = (unit.velocity != [0.0; 2], rng.random_bool(0.02));
        if !moving && !hurt {
            continue;
        }
        let mut unit = units.get_mut(id).expect("a live id");
        for axis in 0..2 {
            unit.position[axis] += unit.velocity[axis];
            if unit.position[axis].abs() > EDGE {
                unit.velocity[axis] = -unit.velocity[axis];
                unit.position[axis] = unit.position[axis].clamp(-EDGE, EDGE);
            }
        }
        if hurt {
            unit.health = unit.health.saturating_sub(rng.random_range(5..40));
        }
        if unit.health == 0 || rng.random_bool(0.002) {
            deaths.push(id);
        }
        grid.set_item(id, unit.position);
    }
    for id in deaths {
        units.remove(id);
        grid.remove_item(id);
    }
    while units.len() < target {
        let unit = spawn(rng);
        let at = unit.position;
        grid.set_item(units.push(unit), at);
    }
}

/// Whether `mirror` holds exactly the units in client `client`'s scope,
/// equal on the wire.
fn mirrors_scope(
    units: &mut FastArray<Unit>,
    replication: &mut RenetReplicationServer,
    client: u64,
    mirror: &FastArray<Unit>,
) -> bool {
    let Some(conn) = replication.connection_mut(client) else {
        return false;
    };
    let Ok(scope) = units.scope(conn.state_mut(0)) else {
        return false;
    };
    let ids: Vec<ReplicationId> = scope.ids().collect();
    ids.len() == mirror.len()
        && ids.iter().all(|&id| {
            let (ours, theirs) = (units.get(id), mirror.get(id));
            ours.zip(theirs).is_some_and(|(a, b)| a.wire_eq(b))
        })
}

/// Runs the game: `setup.ticks` of play at `setup.loss`, then healed links
/// until every client settles (or [`DRAIN_TICKS`] pass); then checks
/// every client.
pub fn run(setup: Setup) -> Result<Outcome, Box<dyn Error>> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    let server_address = socket.local_addr()?;
    let mut players = Vec::new();
    for n in 0..4u32 {
        let angle = n as f32 * std::f32::consts::FRAC_PI_2 + 0.5;
        let relay = Relay::new(server_address, setup.loss, setup.seed * 10 + u64::from(n))?;
        players.push(Player {
            id: 1 + u64::from(n),
            // Two clients join a running game.
            joins: [0, 0, setup.ticks / 4, setup.ticks / 2][n as usize],
            home: [250.0 * angle.cos(), 250.0 * angle.sin()],
            radius: [120.0, 200.0, 160.0, 300.0][n as usize],
            relay,
            renet: None,
            replication: RenetReplicationClient::new(2),
            units: FastArray::mirror(),
            game: Replicated::mirror(),
            report: ClientReport {
                id: 1 + u64::from(n),
                ..ClientReport::default()
            },
        });
    }
    // Clients connect to their relay, which the server must name as its
    // own address.
    let public_addresses = players
        .iter()
        .map(|player| player.relay.front())
        .collect::<Result<_, _>>()?;
    let mut server = RenetServer::new(connection_config());
    let mut transport = NetcodeServerTransport::new(
        ServerConfig {
            current_time: Duration::ZERO,
            max_clients: players.len(),
            protocol_id: PROTOCOL,
            public_addresses,
            authentication: ServerAuthentication::Unsecure,
        },
        socket,
    )?;
    // Two channels: the units (scoped per client) and the match.
    let mut replication = RenetReplicationServer::new(2);

    let mut rng = ChaCha8Rng::seed_from_u64(setup.seed);
    let mut units = FastArray::new();
    let mut game = Replicated::new(Match::default());
    let mut grid = InterestGrid::new(100.0);
    grid.set_leave_margin(10.0);
    simulate(&mut units, &mut grid, &mut rng, setup.units);
    let mut joined: BTreeMap<u64, u32> = BTreeMap::new();

    let start = Instant::now();
    let mut settled_after = None;
    for tick in 0..setup.ticks + DRAIN_TICKS {
        let live = tick < setup.ticks;
        let since_start = TICK * tick;
        let now = start + since_start;
        if tick == setup.ticks {
            for player in &mut players {
                player.relay.set_loss(0.0);
            }
        }
        for player in &mut players {
            if player.renet.is_none() && tick >= player.joins {
                let socket = UdpSocket::bind("127.0.0.1:0")?;
                let authentication = ClientAuthentication::Unsecure {
                    protocol_id: PROTOCOL,
                    client_id: player.id,
                    server_addr: player.relay.front()?,
                    user_data: None,
                };
                let client = RenetClient::new(connection_config());
                let transport = NetcodeClientTransport::new(since_start, authentication, socket)?;
                player.renet = Some((client, transport));
            }
            player.relay.pump(tick)?;
        }

        // The server's tick.
        server.update(TICK);
        transport.update(TICK, &mut server)?;
        while let Some(event) = server.get_event() {
            replication.handle_event(&event);
            match event {
                ServerEvent::ClientConnected { client_id } => {
                    // It sees what the grid says once it tells where it
                    // stands (update_scope scopes it, empty, till then).
                    joined.insert(client_id, tick);
                }
                ServerEvent::ClientDisconnected { client_id, reason } => {
                    grid.remove_viewer(client_id);
                    return Err(format!("client {client_id} disconnected: {reason}").into());
                }
            }
        }
        replication.receive(now, &mut server, |client, data| {
            if let Some((center, radius)) = read_view(data) {
                grid.set_viewer(client, center, radius);
            }
        })?;
        if live {
            simulate(&mut units, &mut grid, &mut rng, setup.units);
            let mut state = game.get_mut();
            state.tick = tick;
            state.units = units.len() as u32;
        }
        units.commit();
        game.commit();
        replication.update_scope(&mut grid, 0, &mut units);
        let clients: Vec<u64> = replication.clients().collect();
        for client in clients {
            let sent =
                replication.send_to(now, &mut server, client, &mut [&mut units, &mut game])?;
            let player = players
                .iter_mut()
                .find(|player| player.id == client)
                .ok_or("an unknown client")?;
            if live {
                let conn = replication.connection_mut(client).ok_or("its connection")?;
                player.report.ticks += 1;
                player.report.bytes += sent.bytes as u64;
                player.report.in_scope += units.scope(conn.state_mut(0))?.len() as u64;
            }
        }
        transport.send_packets(&mut server);

        // The clients' ticks.
        for player in &mut players {
            let wire_before = player.relay.stats.to_client_bytes;
            player.relay.pump(tick)?;
            if live {
                player.report.wire_bytes += player.relay.stats.to_client_bytes - wire_before;
            }
            let Some((client, transport)) = &mut player.renet else {
                continue;
            };
            client.update(TICK);
            transport
                .update(TICK, client)
                .map_err(|error| format!("client {} at tick {tick}: {error}", player.id))?;
            if client.is_connected() {
                let mirrors: &mut [&mut dyn fastarray::Incoming] =
                    &mut [&mut player.units, &mut player.game];
                match player.replication.receive(now, client, mirrors) {
                    Ok(received) => {
                        let total = &mut player.report.received;
                        total.packets += received.packets;
                        total.duplicates += received.duplicates;
                        total.too_old += received.too_old;
                    }
                    Err(error) => {
                        player.report.error.get_or_insert(error.to_string());
                    }
                }
                // The player stops walking when the game does.
                let at = position(player.home, tick.min(setup.ticks));
                player
                    .replication
                    .send_with(now, client, &write_view(at, player.radius))?;
            }
            transport.send_packets(client)?;
        }

        let everyone = players.iter().all(|player| {
            replication.connection(player.id).is_some_and(|conn| {
                units.is_settled(conn.state(0)) && game.is_settled(conn.state(1))
            })
        });
        if !live && everyone {
            settled_after = Some(tick - setup.ticks);
            break;
        }
    }

    for player in &mut players {
        player.report.joined = joined.get(&player.id).copied();
        player.report.dropped = player.relay.stats.dropped;
        player.report.largest_datagram = player.relay.stats.largest_to_client;
        player.report.matches = player.report.error.is_none()
            && mirrors_scope(&mut units, &mut replication, player.id, &player.units)
            && player.game.wire_eq(&game);
    }
    Ok(Outcome {
        clients: players.into_iter().map(|player| player.report).collect(),
        settled_after,
        units: units.len(),
    })
}
