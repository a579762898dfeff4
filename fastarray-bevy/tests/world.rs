//! Real Bevy `App`s over real UDP sockets on 127.0.0.1: a server and
//! clients, the links conditioned (loss, duplication, reordering), the
//! clients' Worlds checked against the server's.

use std::collections::{HashMap, HashSet};
use std::thread::sleep;
use std::time::{Duration, Instant};

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_transform::components::Transform;
use fastarray_bevy::{
    AppReplicationExt, ClientPlugin, Conditioned, LinkConditioner, ReplicaEntities, Replicate,
    Replicated, ReplicationClient, ReplicationServer, ServerPlugin, TransformRep,
    UdpClientTransport, UdpServerTransport, VisibilityPolicy,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
struct Unit {
    health: u8,
    name: String,
}

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
struct Target(
    #[entities]
    #[replicate(with = fastarray_bevy::entity)]
    Option<Entity>,
);

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
struct Squad {
    #[entities]
    #[replicate(with = fastarray_bevy::entity)]
    members: Vec<Entity>,
}

fn protocol(app: &mut App) {
    app.replicate::<Unit>()
        .replicate::<Target>()
        .replicate::<Squad>()
        .replicate_as::<Transform, TransformRep>();
}

fn server(loss: f64, seed: u64, policy: VisibilityPolicy) -> (App, std::net::SocketAddr) {
    let udp = UdpServerTransport::bind("127.0.0.1:0").unwrap();
    let address = udp.local_addr().unwrap();
    let mut app = App::new();
    app.add_plugins(ServerPlugin::default());
    protocol(&mut app);
    app.insert_resource(
        ReplicationServer::new(Conditioned::new(udp, LinkConditioner::lossy(loss, seed)))
            .with_visibility(policy),
    );
    (app, address)
}

fn client(server: std::net::SocketAddr, loss: f64, seed: u64) -> App {
    let udp = UdpClientTransport::connect(server).unwrap();
    let mut app = App::new();
    app.add_plugins(ClientPlugin);
    protocol(&mut app);
    app.insert_resource(ReplicationClient::new(Conditioned::new(
        udp,
        LinkConditioner::lossy(loss, seed),
    )));
    app
}

fn heal_all(server: &mut App, clients: &mut [App]) {
    server
        .world_mut()
        .resource_mut::<ReplicationServer>()
        .transport_mut::<Conditioned<UdpServerTransport>>()
        .unwrap()
        .heal();
    for client in clients {
        client
            .world_mut()
            .resource_mut::<ReplicationClient>()
            .transport_mut::<Conditioned<UdpClientTransport>>()
            .unwrap()
            .heal();
    }
}

/// A game tick on the server: units spawn, die, lose health, walk,
/// retarget; squads regroup.
fn churn(world: &mut World, rng: &mut ChaCha8Rng, serial: &mut u64) {
    let units: Vec<Entity> = world
        .query_filtered::<Entity, With<Unit>>()
        .iter(world)
        .collect();
    for &unit in &units {
        if rng.random_bool(0.02) {
            world.despawn(unit);
        } else if rng.random_bool(0.2) {
            world.get_mut::<Unit>(unit).unwrap().health = rng.random();
        }
    }
    let units: Vec<Entity> = world
        .query_filtered::<Entity, With<Unit>>()
        .iter(world)
        .collect();
    for &unit in &units {
        if rng.random_bool(0.1) {
            let mut transform = world.get_mut::<Transform>(unit).unwrap();
            transform.translation += Vec3::new(rng.random_range(-1.0..1.0), 0.0, 1.0);
            transform.rotate_y(0.1);
        }
        if rng.random_bool(0.05) && !units.is_empty() {
            let target = units[rng.random_range(0..units.len())];
            world.entity_mut(unit).insert(Target(Some(target)));
        }
    }
    for _ in 0..rng.random_range(0..4) {
        *serial += 1;
        spawn_unit(world, rng, *serial, &units);
    }
    // Squads: a few entities listing units (some despawned since: their
    // lists are rebuilt from the living).
    let squads: Vec<Entity> = world
        .query_filtered::<Entity, With<Squad>>()
        .iter(world)
        .collect();
    for squad in squads {
        if rng.random_bool(0.3) {
            let members: Vec<Entity> = (0..3)
                .map(|_| units[rng.random_range(0..units.len())])
                .filter(|&member| world.get_entity(member).is_ok())
                .collect();
            world.get_mut::<Squad>(squad).unwrap().members = members;
        }
    }
}

fn spawn_unit(world: &mut World, rng: &mut ChaCha8Rng, serial: u64, others: &[Entity]) -> Entity {
    let target = (!others.is_empty() && rng.random_bool(0.5))
        .then(|| others[rng.random_range(0..others.len())])
        .filter(|&other| world.get_entity(other).is_ok());
    world
        .spawn((
            Replicated,
            Unit {
                health: 100,
                name: format!("unit-{serial}"),
            },
            Target(target),
            Transform::from_xyz(rng.random_range(-100.0..100.0), 0.0, 0.0),
        ))
        .id()
}

/// Whether `client`'s World holds exactly the server's replicated
/// entities in `seen` (all if `None`), each with the same components,
/// entity fields naming the client's own entities. Returns what differs.
fn differences(
    server: &mut World,
    client: &mut World,
    seen: Option<&HashSet<Entity>>,
) -> Vec<String> {
    let map: HashMap<Entity, Entity> = client.resource::<ReplicaEntities>().iter().collect();
    let to_client = |entity: Entity| map.get(&entity).copied();
    let mut wrong = Vec::new();
    let mut expected = HashSet::new();
    let mut units =
        server.query_filtered::<(Entity, &Unit, &Target, &Transform), With<Replicated>>();
    for (entity, unit, target, transform) in units.iter(server) {
        if seen.is_some_and(|seen| !seen.contains(&entity)) {
            continue;
        }
        let Some(mirror) = to_client(entity) else {
            wrong.push(format!("{entity} missing"));
            continue;
        };
        expected.insert(mirror);
        if client.get::<Unit>(mirror) != Some(unit) {
            wrong.push(format!(
                "{entity}: unit {:?} != {unit:?}",
                client.get::<Unit>(mirror)
            ));
        }
        let got = client.get::<Target>(mirror).map(|target| target.0);
        if !same_reference(server, client, target.0, got.flatten(), &map) || got.is_none() {
            wrong.push(format!("{entity}: target {got:?} != {target:?}"));
        }
        match client.get::<Transform>(mirror) {
            Some(got)
                if got.translation.distance(transform.translation) < 0.01
                    && got.rotation.angle_between(transform.rotation) < 0.01
                    && got.scale == transform.scale => {}
            got => wrong.push(format!("{entity}: transform {got:?} != {transform:?}")),
        }
    }
    let mut squads = server.query_filtered::<(Entity, &Squad), With<Replicated>>();
    for (entity, squad) in squads.iter(server) {
        if seen.is_some_and(|seen| !seen.contains(&entity)) {
            continue;
        }
        let Some(mirror) = to_client(entity) else {
            wrong.push(format!("squad {entity} missing"));
            continue;
        };
        expected.insert(mirror);
        let got = client
            .get::<Squad>(mirror)
            .map(|squad| squad.members.clone());
        let same = got.as_ref().is_some_and(|got| {
            got.len() == squad.members.len()
                && got.iter().zip(&squad.members).all(|(&got, &want)| {
                    same_reference(server, client, Some(want), Some(got), &map)
                })
        });
        if !same {
            wrong.push(format!("squad {entity}: {got:?} != {:?}", squad.members));
        }
    }
    let mut held = client.query_filtered::<Entity, Or<(With<Unit>, With<Squad>)>>();
    for entity in held.iter(client) {
        if !expected.contains(&entity) {
            wrong.push(format!("client entity {entity} is not the server's"));
        }
    }
    wrong
}

/// Whether the client's reference `got` names what the server's `want`
/// does: the client's entity for a living one; for a despawned one, a
/// despawned entity, or an empty one if the entity died before this
/// client ever received it (the client cannot know it existed).
fn same_reference(
    server: &World,
    client: &World,
    want: Option<Entity>,
    got: Option<Entity>,
    map: &HashMap<Entity, Entity>,
) -> bool {
    match (want, got) {
        (None, None) => true,
        (Some(want), Some(got)) if server.get_entity(want).is_ok() => map.get(&want) == Some(&got),
        (Some(_), Some(got)) => client.get_entity(got).map_or(true, |entity| {
            !entity.contains::<Unit>() && !entity.contains::<Squad>()
        }),
        _ => false,
    }
}

fn tick(server: &mut App, clients: &mut [App]) {
    server.update();
    for client in clients.iter_mut() {
        client.update();
    }
    sleep(Duration::from_micros(300));
}

/// Runs the heal phase until every client matches, or fails with what
/// still differs.
fn settle(server: &mut App, clients: &mut [App], seen: &[Option<HashSet<Entity>>]) {
    heal_all(server, clients);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        tick(server, clients);
        sleep(Duration::from_millis(2));
        let wrong: Vec<Vec<String>> = clients
            .iter_mut()
            .zip(seen)
            .map(|(client, seen)| {
                differences(server.world_mut(), client.world_mut(), seen.as_ref())
            })
            .collect();
        if wrong.iter().all(Vec::is_empty) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "clients still differ: {:?}",
            wrong
                .iter()
                .map(|w| w.iter().take(5).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        );
    }
}

fn converges(loss: f64, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut server, address) = server(loss, seed, VisibilityPolicy::All);
    let mut serial = 0;
    let mut first = Vec::new();
    for _ in 0..60 {
        serial += 1;
        first.push(spawn_unit(server.world_mut(), &mut rng, serial, &first));
    }
    let members = first[..4].to_vec();
    server.world_mut().spawn((Replicated, Squad { members }));
    let mut clients = vec![client(address, loss, seed + 1)];
    for round in 0..120 {
        if round == 40 {
            // A late joiner: everything it needs comes by delta.
            clients.push(client(address, loss, seed + 2));
        }
        churn(server.world_mut(), &mut rng, &mut serial);
        tick(&mut server, &mut clients);
    }
    settle(&mut server, &mut clients, &[None, None]);
    let server_state = server.world().resource::<ReplicationServer>();
    assert_eq!(server_state.clients().count(), 2);
}

#[test]
fn converges_on_a_perfect_link() {
    converges(0.0, 1);
}

#[test]
fn converges_at_20_percent_loss() {
    converges(0.2, 2);
}

#[test]
fn converges_at_50_percent_loss() {
    converges(0.5, 3);
}
