//! fastarray's Bevy plugins over renet and its netcode transport, real
//! UDP on 127.0.0.1: clients joining by snapshot (renet's reliable
//! channel) and by delta, a late joiner, loss on the unreliable channel.

use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime};

use bevy_app::App;
use bevy_ecs::prelude::*;
use fastarray::Replicate;
use fastarray_bevy::{
    AppReplicationExt, ClientPlugin, Conditioned, Join, LinkConditioner, ReplicaEntities,
    Replicated, ReplicationClient, ReplicationServer, ServerPlugin,
};
use fastarray_renet::bevy::{RenetClientTransport, RenetServerTransport};
use renet::{RenetClient, RenetServer};
use renet_netcode::{
    ClientAuthentication, NetcodeClientTransport, NetcodeServerTransport, ServerAuthentication,
    ServerConfig,
};

const PROTOCOL: u64 = 0xfa57;

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u16,
    #[entities]
    #[replicate(with = fastarray_bevy::entity)]
    leader: Option<Entity>,
}

fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
}

fn server(join: Join) -> (App, SocketAddr) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = socket.local_addr().unwrap();
    let netcode = NetcodeServerTransport::new(
        ServerConfig {
            current_time: since_epoch(),
            max_clients: 8,
            protocol_id: PROTOCOL,
            public_addresses: vec![address],
            authentication: ServerAuthentication::Unsecure,
        },
        socket,
    )
    .unwrap();
    let renet = RenetServer::new(fastarray_renet::connection_config());
    let mut app = App::new();
    // A packet a tick: a join by delta takes many ticks.
    app.add_plugins(ServerPlugin {
        packets_per_tick: 1,
    })
    .replicate::<Unit>();
    app.insert_resource(
        ReplicationServer::new(Conditioned::new(
            RenetServerTransport::new(renet, netcode),
            LinkConditioner::lossy(0.2, 1),
        ))
        .with_join(join),
    );
    (app, address)
}

/// A client: it joins as the server says (no `Join` of its own).
fn client(server: SocketAddr, id: u64) -> App {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let netcode = NetcodeClientTransport::new(
        since_epoch(),
        ClientAuthentication::Unsecure {
            protocol_id: PROTOCOL,
            client_id: id,
            server_addr: server,
            user_data: None,
        },
        socket,
    )
    .unwrap();
    let renet = RenetClient::new(fastarray_renet::connection_config());
    let mut app = App::new();
    app.add_plugins(ClientPlugin).replicate::<Unit>();
    app.insert_resource(ReplicationClient::new(Conditioned::new(
        RenetClientTransport::new(renet, netcode),
        LinkConditioner::lossy(0.2, id),
    )));
    app
}

fn units_here(client: &mut App) -> usize {
    let world = client.world_mut();
    world.query::<&Unit>().iter(world).count()
}

/// Whether `client` holds exactly the server's units, leaders mapped.
fn same(server: &mut App, client: &mut App) -> bool {
    let map: std::collections::HashMap<Entity, Entity> = client
        .world()
        .resource::<ReplicaEntities>()
        .iter()
        .collect();
    let world = server.world_mut();
    let units: Vec<(Entity, Unit)> = world
        .query::<(Entity, &Unit)>()
        .iter(world)
        .map(|(entity, unit)| (entity, unit.clone()))
        .collect();
    let mut expected = HashSet::new();
    for (entity, unit) in &units {
        let Some(&here) = map.get(entity) else {
            return false;
        };
        expected.insert(here);
        let Some(got) = client.world().get::<Unit>(here) else {
            return false;
        };
        let same_leader = match (unit.leader, got.leader) {
            (None, None) => true,
            // A living leader: the client's entity for it.
            (Some(leader), Some(got)) if world.get_entity(leader).is_ok() => {
                map.get(&leader) == Some(&got)
            }
            // A despawned one: despawned here too, or never seen here.
            (Some(_), Some(got)) => client.world().get::<Unit>(got).is_none(),
            _ => false,
        };
        if got.hp != unit.hp || !same_leader {
            return false;
        }
    }
    units_here(client) == expected.len()
}

fn game(server: &mut App, tick: u32) {
    let world = server.world_mut();
    let units: Vec<Entity> = world
        .query_filtered::<Entity, With<Unit>>()
        .iter(world)
        .collect();
    for (n, &unit) in units.iter().enumerate() {
        if (n as u32 + tick) % 17 == 0 {
            world.get_mut::<Unit>(unit).unwrap().hp += 1;
        }
    }
    if tick % 3 == 0 {
        world.despawn(units[tick as usize % units.len()]);
        let leader = units[(tick as usize * 7) % units.len()];
        let leader = world.get_entity(leader).is_ok().then_some(leader);
        world.spawn((Replicated, Unit { hp: 1, leader }));
    }
}

fn run(join: Join) {
    let (mut server, address) = server(join);
    {
        let world = server.world_mut();
        let first = world
            .spawn((
                Replicated,
                Unit {
                    hp: 0,
                    leader: None,
                },
            ))
            .id();
        for hp in 1..400 {
            world.spawn((
                Replicated,
                Unit {
                    hp,
                    leader: Some(first),
                },
            ));
        }
    }
    let mut clients = vec![client(address, 11)];
    let mut late_arrival = None;
    for tick in 0..200u32 {
        if tick == 60 {
            clients.push(client(address, 12));
        }
        game(&mut server, tick);
        server.update();
        for client in &mut clients {
            client.update();
        }
        if clients.len() == 2 && late_arrival.is_none() && units_here(&mut clients[1]) > 0 {
            // The late joiner's first tick with anything: what it holds then.
            late_arrival = Some(units_here(&mut clients[1]));
        }
        sleep(Duration::from_millis(2));
    }
    for client in &mut clients {
        client
            .world_mut()
            .resource_mut::<ReplicationClient>()
            .transport_mut::<Conditioned<RenetClientTransport>>()
            .unwrap()
            .heal();
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while !clients.iter_mut().all(|client| same(&mut server, client)) {
        if Instant::now() > deadline {
            let world = server.world_mut();
            let total = world.query::<&Unit>().iter(world).count();
            let state = server.world().resource::<ReplicationServer>();
            let connected: Vec<u64> = state.clients().collect();
            let report: Vec<String> = clients
                .iter_mut()
                .map(|client| {
                    let held = units_here(client);
                    let state = client.world().resource::<ReplicationClient>();
                    format!(
                        "holds {held}, joined {}, applied {}, ignored {}, rejected {} ({:?})",
                        state.joined(),
                        state.packets_applied(),
                        state.packets_ignored(),
                        state.packets_rejected(),
                        state.last_error()
                    )
                })
                .collect();
            panic!("not converged: server {total} units, clients {connected:?}: {report:?}");
        }
        server.update();
        for client in &mut clients {
            client.update();
        }
        sleep(Duration::from_millis(2));
    }
    let late_arrival = late_arrival.expect("the late joiner got units");
    let everything = units_here(&mut clients[1]);
    match join {
        // The whole world in the tick the snapshot arrived.
        Join::Snapshot => assert!(
            late_arrival + 5 >= everything,
            "{late_arrival} of {everything}"
        ),
        // A packet's worth at a time: far from all of it at first.
        Join::Delta => assert!(
            late_arrival < everything * 3 / 4,
            "{late_arrival} of {everything}"
        ),
    }
    for client in &clients {
        assert!(client.world().resource::<ReplicationClient>().joined());
    }
}

#[test]
fn clients_join_by_snapshot_over_renet() {
    run(Join::Snapshot);
}

#[test]
fn clients_join_by_delta_over_renet() {
    run(Join::Delta);
}
