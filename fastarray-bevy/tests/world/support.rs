//! What the tests share: the components, the apps, a tick, and the
//! comparison of a client's World with the server's.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::thread::sleep;
use std::time::{Duration, Instant};

use bevy_app::App;
use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use fastarray_bevy::{
    AppReplicationExt, ClientPlugin, Conditioned, LinkConditioner, ReplicaEntities, Replicate,
    Replicated, ReplicationClient, ReplicationServer, ServerPlugin, TransformRep,
    UdpClientTransport, UdpServerTransport, VisibilityPolicy,
};

/// A unit: spawned whole with only the fields in which it differs from
/// a fresh unit (`default_baseline`: full health, no name).
#[derive(Component, Replicate, Clone, Debug, PartialEq)]
#[replicate(default_baseline)]
pub struct Unit {
    pub health: u8,
    pub name: String,
}

impl Default for Unit {
    fn default() -> Self {
        Unit {
            health: 100,
            name: String::new(),
        }
    }
}

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
pub struct Target(
    #[entities]
    #[replicate(with = fastarray_bevy::entity)]
    pub Option<Entity>,
);

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
pub struct Squad {
    #[entities]
    #[replicate(with = fastarray_bevy::entity)]
    pub members: Vec<Entity>,
}

/// A component with a field only close viewers see.
#[derive(Component, Replicate, Clone, Debug, PartialEq)]
pub struct Stats {
    pub armour: u8,
    #[replicate(detail = 1)]
    pub ammo: u16,
}

/// A component with a field for its owner's client alone and one for
/// everyone else's.
#[derive(Component, Replicate, Clone, Debug, PartialEq, Default)]
pub struct Loadout {
    pub model: u8,
    #[replicate(owner_only)]
    pub ammo: u16,
    #[replicate(skip_owner)]
    pub aim: i16,
}

/// A replicated resource.
#[derive(Resource, Replicate, Clone, Debug, Default, PartialEq)]
pub struct Score {
    pub red: u16,
    pub blue: u16,
}

pub fn protocol(app: &mut App) {
    app.replicate::<Unit>()
        .replicate::<Target>()
        .replicate::<Squad>()
        .replicate_as::<Transform, TransformRep>()
        .replicate::<Stats>()
        .replicate::<Loadout>()
        .replicate_resource::<Score>();
}

pub fn server(loss: f64, seed: u64, policy: VisibilityPolicy) -> (App, SocketAddr) {
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

pub fn client(server: SocketAddr, loss: f64, seed: u64) -> App {
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

pub fn heal_all(server: &mut App, clients: &mut [App]) {
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

/// Whether `client`'s World holds exactly the server's replicated
/// entities in `seen` (all if `None`), each with the same components,
/// entity fields naming the client's own entities. Returns what differs.
pub fn differences(
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
pub fn same_reference(
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

pub fn tick(server: &mut App, clients: &mut [App]) {
    server.update();
    for client in clients.iter_mut() {
        client.update();
    }
    sleep(Duration::from_micros(300));
}

/// Runs the heal phase until every client matches, or fails with what
/// still differs.
pub fn settle(server: &mut App, clients: &mut [App], seen: &[Option<HashSet<Entity>>]) {
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

/// Ticks every app (1 ms apart, for loopback to deliver) until `done`
/// holds, or panics after 10 s.
pub fn run_until(
    server: &mut App,
    clients: &mut [App],
    mut done: impl FnMut(&mut App, &mut [App]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        tick(server, clients);
        sleep(Duration::from_millis(1));
        if done(server, clients) {
            return;
        }
        assert!(Instant::now() < deadline, "not done in 10 s");
    }
}

/// Ticks every app `ticks` times, 1 ms apart.
pub fn run(server: &mut App, clients: &mut [App], ticks: usize) {
    for _ in 0..ticks {
        tick(server, clients);
        sleep(Duration::from_millis(1));
    }
}

/// Whether the server's replicated units have all arrived at `client`,
/// as the server holds them.
pub fn caught_up(server: &mut App, client: &mut App) -> bool {
    differences(server.world_mut(), client.world_mut(), None).is_empty()
}

/// A unit with no target at `x`.
pub fn unit(health: u8, name: &str) -> (Replicated, Unit, Target, Transform) {
    (
        Replicated,
        Unit {
            health,
            name: name.into(),
        },
        Target(None),
        Transform::from_xyz(f32::from(health), 0.0, 0.0),
    )
}

/// The entities of `world` holding a `C`.
pub fn holding<C: Component>(world: &mut World) -> HashSet<Entity> {
    world
        .query_filtered::<Entity, With<C>>()
        .iter(world)
        .collect()
}
