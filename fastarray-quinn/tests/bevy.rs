//! fastarray's Bevy plugins over QUIC with quinn, on 127.0.0.1 with a
//! certificate made at start: clients joining by snapshot (on a
//! unidirectional stream) and by delta, one late, 20% of the datagrams
//! lost both ways.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::thread::sleep;
use std::time::{Duration, Instant};

use bevy_app::App;
use bevy_ecs::prelude::*;
use fastarray::Replicate;
use fastarray_bevy::{
    AppReplicationExt, ClientPlugin, Conditioned, Join, LinkConditioner, ReplicaEntities,
    Replicated, ReplicationClient, ReplicationServer, ServerPlugin,
};
use fastarray_quinn::bevy::{QuicClientTransport, QuicServerTransport};
use fastarray_quinn::{DevCertificate, client_endpoint};
use tokio::runtime::Runtime;

#[derive(Component, Replicate, Clone, Debug, PartialEq)]
struct Ship {
    hull: u16,
    name: String,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn units(app: &mut App) -> HashMap<Entity, Ship> {
    let world = app.world_mut();
    world
        .query::<(Entity, &Ship)>()
        .iter(world)
        .map(|(entity, ship)| (entity, ship.clone()))
        .collect()
}

/// Whether `client` holds the server's ships, each under the client's
/// entity for it.
fn same(server: &mut App, client: &mut App) -> bool {
    let here = units(client);
    let map: HashMap<Entity, Entity> = client
        .world()
        .resource::<ReplicaEntities>()
        .iter()
        .collect();
    let there = units(server);
    there.len() == here.len()
        && there
            .iter()
            .all(|(entity, ship)| map.get(entity).and_then(|mine| here.get(mine)) == Some(ship))
}

fn run(join: Join) {
    let runtime = runtime();
    let certificate = DevCertificate::generate(["localhost"]).unwrap();
    let transport = QuicServerTransport::bind(
        runtime.handle(),
        localhost(),
        certificate.server_config().unwrap(),
    )
    .unwrap();
    let address = transport.local_addr().unwrap();
    let mut server = App::new();
    server
        .add_plugins(ServerPlugin {
            packets_per_tick: 1,
        })
        .replicate::<Ship>()
        .insert_resource(
            ReplicationServer::new(Conditioned::new(transport, LinkConditioner::lossy(0.2, 5)))
                .with_join(join),
        );
    for hull in 0..600 {
        server.world_mut().spawn((
            Replicated,
            Ship {
                hull,
                name: format!("ship {hull}"),
            },
        ));
    }
    let client = |seed: u64| {
        let transport = QuicClientTransport::connect(
            runtime.handle(),
            client_endpoint(runtime.handle(), localhost()).unwrap(),
            certificate.client_config().unwrap(),
            address,
            "localhost",
        )
        .unwrap();
        let mut app = App::new();
        app.add_plugins(ClientPlugin)
            .replicate::<Ship>()
            .insert_resource(ReplicationClient::new(Conditioned::new(
                transport,
                LinkConditioner::lossy(0.2, seed),
            )));
        app
    };
    let mut clients = vec![client(6)];
    let mut late_first = None;
    for tick in 0..150u32 {
        if tick == 40 {
            clients.push(client(7));
        }
        {
            let world = server.world_mut();
            let ships: Vec<Entity> = world
                .query_filtered::<Entity, With<Ship>>()
                .iter(world)
                .collect();
            world
                .get_mut::<Ship>(ships[tick as usize % ships.len()])
                .unwrap()
                .hull += 1;
            if tick % 5 == 0 {
                world.despawn(ships[(tick as usize * 7) % ships.len()]);
                world.spawn((
                    Replicated,
                    Ship {
                        hull: 1,
                        name: format!("new {tick}"),
                    },
                ));
            }
        }
        server.update();
        for client in &mut clients {
            client.update();
        }
        if clients.len() == 2 && late_first.is_none() {
            let held = units(&mut clients[1]).len();
            if held > 0 {
                late_first = Some(held);
            }
        }
        sleep(Duration::from_millis(3));
    }
    for client in &mut clients {
        client
            .world_mut()
            .resource_mut::<ReplicationClient>()
            .transport_mut::<Conditioned<QuicClientTransport>>()
            .unwrap()
            .heal();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !clients.iter_mut().all(|client| same(&mut server, client)) {
        assert!(Instant::now() < deadline, "the clients did not converge");
        server.update();
        for client in &mut clients {
            client.update();
        }
        sleep(Duration::from_millis(3));
    }
    let late_first = late_first.expect("the late joiner got ships");
    match join {
        // All of it at once (a few spawned meanwhile aside)...
        Join::Snapshot => assert!(late_first >= 595, "the snapshot brought {late_first}"),
        // ...or a packet a tick: the datagrams queued before the client's
        // first poll bring some of it.
        Join::Delta => assert!(late_first < 450, "the first packets brought {late_first}"),
    }
}

#[test]
fn clients_join_by_snapshot_over_quic() {
    run(Join::Snapshot);
}

#[test]
fn clients_join_by_delta_over_quic() {
    run(Join::Delta);
}
