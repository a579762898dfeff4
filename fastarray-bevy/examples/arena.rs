//! A headless Bevy server and four Bevy clients over real UDP sockets on
//! 127.0.0.1: 1 200 units that walk, fight, die and spawn every tick, each
//! client seeing the units near its player (a `GridInterest`), two clients
//! joining late, every link losing, duplicating and reordering datagrams
//! (0%, 20%, 50%, 20%). At the end the links heal, and each client's World
//! is compared with the server's units in its scope: the program exits
//! with status 1 if any differs. It prints bytes per client per tick.
//!
//! ```sh
//! cargo run --release -p fastarray-bevy --example arena          # 300 ticks
//! cargo run --release -p fastarray-bevy --example arena -- 1000  # more
//! ```

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::thread::sleep;
use std::time::{Duration, Instant};

use bevy_app::{App, Update};
use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_transform::components::Transform;
use fastarray_bevy::{
    AppReplicationExt, ClientPlugin, Conditioned, GridInterest, LinkConditioner, ReplicaEntities,
    Replicate, Replicated, ReplicationClient, ReplicationServer, ServerPlugin, TransformRep,
    UdpClientTransport, UdpServerTransport, Viewer, VisibilityPolicy,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

// ---- What replicates: the same on the server and the clients. ----

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
struct Unit {
    health: u8,
    name: String,
    #[entities]
    #[replicate(with = fastarray_bevy::entity)]
    target: Option<Entity>,
}

fn protocol(app: &mut App) {
    app.replicate::<Unit>()
        .replicate_as::<Transform, TransformRep>();
}

// ---- The game (server side). ----

const UNITS: usize = 1200;
const WORLD: f32 = 1000.0;
const SIGHT: f32 = 150.0;
/// Each client's loss, and the tick it joins.
const CLIENTS: [(f64, u32); 4] = [(0.0, 0), (0.2, 0), (0.5, 60), (0.2, 120)];

#[derive(Resource)]
struct Dice(ChaCha8Rng, u64);

fn spawn_unit(commands: &mut Commands, dice: &mut Dice) {
    dice.1 += 1;
    let at = Vec3::new(
        dice.0.random_range(0.0..WORLD),
        0.0,
        dice.0.random_range(0.0..WORLD),
    );
    commands.spawn((
        Replicated,
        Unit {
            health: 100,
            name: format!("unit-{}", dice.1),
            target: None,
        },
        Transform::from_translation(at),
    ));
}

/// A tick of the game: 1% of the units die and as many spawn, 10% walk,
/// 2% are hurt, 1% pick a new target.
fn game(
    mut commands: Commands,
    mut dice: ResMut<Dice>,
    mut units: Query<(Entity, &mut Unit, &mut Transform)>,
) {
    let all: Vec<Entity> = units.iter().map(|(entity, ..)| entity).collect();
    let dice = &mut *dice;
    let mut died = 0;
    for (entity, mut unit, mut transform) in &mut units {
        let roll = dice.0.random::<f64>();
        if roll < 0.01 {
            commands.entity(entity).despawn();
            died += 1;
        } else if roll < 0.11 {
            let step = Vec3::new(
                dice.0.random_range(-3.0..3.0),
                0.0,
                dice.0.random_range(-3.0..3.0),
            );
            transform.translation =
                (transform.translation + step).clamp(Vec3::ZERO, Vec3::splat(WORLD));
            transform.rotation = bevy_math::Quat::from_rotation_y(step.x.atan2(step.z));
        } else if roll < 0.13 {
            unit.health = unit.health.saturating_sub(dice.0.random_range(1..20));
        } else if roll < 0.14 {
            unit.target = Some(all[dice.0.random_range(0..all.len())]);
        }
    }
    for _ in 0..died.max(usize::from(all.len() < UNITS)) {
        spawn_unit(&mut commands, dice);
    }
}

/// Each client's player walks a circle of its own around the map.
#[derive(Component)]
struct Walk {
    centre: Vec3,
    phase: f32,
}

fn walk(mut players: Query<(&mut Walk, &mut Transform)>) {
    for (mut walk, mut transform) in &mut players {
        walk.phase += 0.01;
        transform.translation =
            walk.centre + 250.0 * Vec3::new(walk.phase.cos(), 0.0, walk.phase.sin());
    }
}

fn server_app() -> (App, SocketAddr) {
    let udp = UdpServerTransport::bind("127.0.0.1:0").expect("a socket on 127.0.0.1");
    let address = udp.local_addr().unwrap();
    let mut app = App::new();
    app.add_plugins(ServerPlugin::default());
    protocol(&mut app);
    app.insert_resource(ReplicationServer::new(udp).with_visibility(VisibilityPolicy::Explicit))
        .insert_resource(GridInterest::new(SIGHT))
        .insert_resource(Dice(ChaCha8Rng::seed_from_u64(7), 0))
        .add_systems(Update, (game, walk));
    let world = app.world_mut();
    world.resource_scope(|world, mut dice: Mut<Dice>| {
        let mut commands = world.commands();
        for _ in 0..UNITS {
            spawn_unit(&mut commands, &mut dice);
        }
    });
    world.flush();
    // The players, one per client (the UDP transport numbers clients
    // from 1, in the order their first packets arrive: each joins alone).
    for client in 1..=CLIENTS.len() as u64 {
        let centre = Vec3::new(250.0 + 150.0 * client as f32, 0.0, 500.0);
        world.spawn((
            Transform::from_translation(centre),
            Walk {
                centre,
                phase: client as f32,
            },
            Viewer {
                client,
                radius: SIGHT,
            },
        ));
    }
    (app, address)
}

fn client_app(server: SocketAddr, loss: f64, seed: u64) -> App {
    let udp = UdpClientTransport::connect(server).expect("a socket on 127.0.0.1");
    let mut app = App::new();
    app.add_plugins(ClientPlugin);
    protocol(&mut app);
    app.insert_resource(ReplicationClient::new(Conditioned::new(
        udp,
        LinkConditioner::lossy(loss, seed),
    )));
    app
}

/// What differs between client `client`'s World and the server's units
/// in its scope.
fn differences(server: &mut World, client_id: u64, client: &mut World) -> Vec<String> {
    let map: HashMap<Entity, Entity> = client.resource::<ReplicaEntities>().iter().collect();
    let mut wrong = Vec::new();
    let mut expected = HashSet::new();
    let state = server.resource::<ReplicationServer>();
    let view = state.view(client_id).expect("connected");
    let shown: HashSet<Entity> = view.shown().collect();
    let mut units = server.query::<(Entity, &Unit, &Transform)>();
    for (entity, unit, transform) in units.iter(server) {
        if !shown.contains(&entity) {
            continue;
        }
        let Some(&here) = map.get(&entity) else {
            wrong.push(format!("{entity} missing"));
            continue;
        };
        expected.insert(here);
        let got = client.get::<Unit>(here);
        let same_target = match (unit.target, got.and_then(|got| got.target)) {
            (None, None) => true,
            (Some(want), Some(got)) if server.get_entity(want).is_ok() => {
                map.get(&want) == Some(&got)
            }
            // Despawned on the server: despawned here, or never seen here.
            (Some(_), Some(got)) => client.get::<Unit>(got).is_none(),
            _ => false,
        };
        if got.map(|got| (got.health, &got.name)) != Some((unit.health, &unit.name)) || !same_target
        {
            wrong.push(format!("{entity}: {got:?} != {unit:?}"));
        }
        match client.get::<Transform>(here) {
            Some(got) if got.translation.distance(transform.translation) < 0.01 => {}
            got => wrong.push(format!("{entity}: {got:?} != {transform:?}")),
        }
    }
    let mut held = client.query_filtered::<Entity, With<Unit>>();
    for entity in held.iter(client) {
        if !expected.contains(&entity) {
            wrong.push(format!("{entity} is not in the client's scope"));
        }
    }
    wrong
}

fn main() -> ExitCode {
    let ticks: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let (mut server, address) = server_app();
    let mut clients: Vec<(u64, u32, App)> = Vec::new();
    let started = Instant::now();
    let mut server_time = Duration::ZERO;
    for tick in 0..ticks {
        for (index, &(loss, joins)) in CLIENTS.iter().enumerate() {
            if joins == tick {
                let id = index as u64 + 1;
                clients.push((id, tick, client_app(address, loss, 100 + id)));
                // Its first packet, alone: the transport numbers it `id`.
                clients.last_mut().unwrap().2.update();
                sleep(Duration::from_millis(2));
            }
        }
        let at = Instant::now();
        server.update();
        server_time += at.elapsed();
        for (_, _, client) in &mut clients {
            client.update();
        }
        sleep(Duration::from_micros(500));
    }
    let played = started.elapsed();
    let bytes: Vec<(u64, u64, u32)> = clients
        .iter()
        .map(|(id, joined, _)| {
            let state = server.world().resource::<ReplicationServer>();
            (*id, state.bytes_sent(*id), ticks - joined)
        })
        .collect();

    // The links heal; the last repairs go out.
    for (_, _, client) in &mut clients {
        client
            .world_mut()
            .resource_mut::<ReplicationClient>()
            .transport_mut::<Conditioned<UdpClientTransport>>()
            .unwrap()
            .heal();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut wrong;
    loop {
        server.update();
        for (_, _, client) in &mut clients {
            client.update();
        }
        sleep(Duration::from_millis(2));
        wrong = clients
            .iter_mut()
            .map(|(id, _, client)| differences(server.world_mut(), *id, client.world_mut()))
            .collect::<Vec<_>>();
        if wrong.iter().all(Vec::is_empty) || Instant::now() > deadline {
            break;
        }
    }

    println!(
        "{ticks} ticks, {UNITS} units, 1% despawned and respawned a tick: {:.1} s, server {:.2} ms a tick",
        played.as_secs_f64(),
        server_time.as_secs_f64() * 1e3 / f64::from(ticks)
    );
    let mut failed = false;
    for ((id, sent, ticks_in), ((loss, joins), (_, _, client))) in
        bytes.iter().zip(CLIENTS.iter().zip(&mut clients))
    {
        let state = server.world().resource::<ReplicationServer>();
        let (packets, lost) = state.packets(*id);
        let seen = client
            .world_mut()
            .query::<&Unit>()
            .iter(client.world())
            .count();
        let differs = &wrong[*id as usize - 1];
        failed |= !differs.is_empty();
        println!(
            "client {id}: joined at tick {joins:>3}, loss {:>2.0}%: {:>6.0} bytes a tick, {} of {packets} packets lost, sees {seen} units: {}",
            loss * 100.0,
            *sent as f64 / f64::from(*ticks_in),
            lost,
            if differs.is_empty() {
                "same as the server".to_string()
            } else {
                format!("DIFFERS: {:?}", &differs[..differs.len().min(5)])
            }
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
