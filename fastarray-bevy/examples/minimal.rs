use std::{thread::sleep, time::Duration};

use bevy_app::{App, Update};
use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use fastarray_bevy::*;

#[derive(Component, Replicate, Clone, PartialEq, Debug)]
struct Unit {
    health: u8,
    #[entities] // mapped to the client's entities...
    #[replicate(with = fastarray_bevy::entity)] // ...and sent as the server's
    target: Option<Entity>,
}

/// What replicates: the same on both sides, in the same order.
fn protocol(app: &mut App) {
    app.replicate::<Unit>()
        .replicate_as::<Transform, TransformRep>();
}

fn fight(mut units: Query<&mut Unit>) {
    for mut unit in &mut units {
        unit.health = unit.health.saturating_sub(1);
    }
}

fn main() {
    // The server: its game runs as any Bevy game; `Replicated` entities go out.
    let udp = UdpServerTransport::bind("127.0.0.1:0").unwrap();
    let address = udp.local_addr().unwrap();
    let mut server = App::new();
    server.add_plugins(ServerPlugin::default());
    protocol(&mut server);
    server
        .insert_resource(ReplicationServer::new(udp))
        .add_systems(Update, fight);
    let ann = server
        .world_mut()
        .spawn((
            Replicated,
            Unit {
                health: 100,
                target: None,
            },
            Transform::default(),
        ))
        .id();
    server.world_mut().spawn((
        Replicated,
        Unit {
            health: 90,
            target: Some(ann),
        },
        Transform::from_xyz(1.0, 0.0, 2.0),
    ));

    // A client: the server's entities arrive as entities of its World.
    let mut client = App::new();
    client.add_plugins(ClientPlugin);
    protocol(&mut client);
    client.insert_resource(ReplicationClient::new(
        UdpClientTransport::connect(address).unwrap(),
    ));

    for _ in 0..50 {
        server.update();
        client.update();
        sleep(Duration::from_millis(2));
    }
    let world = client.world_mut();
    let units: Vec<(Entity, Unit)> = world
        .query::<(Entity, &Unit)>()
        .iter(world)
        .map(|(e, u)| (e, u.clone()))
        .collect();
    assert_eq!(units.len(), 2);
    let (archer, target) = units
        .iter()
        .find_map(|(e, u)| u.target.map(|t| (*e, t)))
        .unwrap();
    assert!(world.get::<Unit>(target).is_some() && target != archer); // the client's own `ann`
    println!("{units:?}");
}
