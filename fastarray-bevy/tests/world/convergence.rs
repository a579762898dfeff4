//! Convergence under loss, with churn, entity references and a late
//! joiner.

use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_transform::components::Transform;
use fastarray_bevy::{Replicated, ReplicationServer, VisibilityPolicy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::{Squad, Target, Unit, client, server, settle, tick};

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
