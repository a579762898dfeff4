//! Per-client visibility: entities shown and hidden, references to
//! entities out of scope resolved when they come in, detail levels.

use bevy_app::App;
use bevy_ecs::prelude::*;
use fastarray_bevy::{ReplicaEntities, ReplicationServer, VisibilityPolicy};

use crate::events::{Heard, listen};
use crate::support::{Stats, Target, Unit, client, holding, run, run_until, server, unit};

fn view(server: &mut App, client: u64) -> Mut<'_, ReplicationServer> {
    let state = server.world_mut().resource_mut::<ReplicationServer>();
    assert!(state.view(client).is_some(), "client {client} connected");
    state
}

/// Ticks until every client is connected; their ids.
fn connect(server: &mut App, clients: &mut [App]) -> Vec<u64> {
    let count = clients.len();
    run_until(server, clients, |s, _| {
        s.world().resource::<ReplicationServer>().clients().count() == count
    });
    server
        .world()
        .resource::<ReplicationServer>()
        .clients()
        .collect()
}

fn mirror(client: &App, server: Entity) -> Option<Entity> {
    client.world().resource::<ReplicaEntities>().get(server)
}

#[test]
fn a_client_sees_what_it_is_shown_and_references_resolve_on_arrival() {
    let (mut server, address) = server(0.0, 20, VisibilityPolicy::Explicit);
    let mut clients = [client(address, 0.0, 21)];
    listen(&mut clients[0]);
    let id = connect(&mut server, &mut clients)[0];

    let near = server.world_mut().spawn(unit(10, "near")).id();
    let far = server.world_mut().spawn(unit(20, "far")).id();
    server
        .world_mut()
        .entity_mut(near)
        .insert(Target(Some(far)));
    view(&mut server, id).view_mut(id).unwrap().show(near);
    run_until(&mut server, &mut clients, |_, c| {
        mirror(&c[0], near).is_some()
    });
    run(&mut server, &mut clients, 5);

    // Only `near` arrived; its target names the entity kept for `far`,
    // which holds nothing yet.
    let near_here = mirror(&clients[0], near).unwrap();
    let far_here = mirror(&clients[0], far).expect("an entity kept for the reference");
    let world = clients[0].world_mut();
    assert_eq!(holding::<Unit>(world).len(), 1);
    assert_eq!(
        world.get::<Target>(near_here),
        Some(&Target(Some(far_here)))
    );
    assert!(world.get::<Unit>(far_here).is_none());

    // `far` comes into scope: onto that same entity.
    view(&mut server, id).view_mut(id).unwrap().show(far);
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world().get::<Unit>(far_here).is_some()
    });
    assert_eq!(
        clients[0].world().get::<Unit>(far_here).unwrap().name,
        "far"
    );
    assert!(
        clients[0]
            .world()
            .resource::<crate::events::Log>()
            .0
            .contains(&Heard::Spawned(far_here))
    );

    // `near` leaves the scope: its components go, the entity stays, and
    // comes back whole.
    view(&mut server, id).view_mut(id).unwrap().hide(near);
    server.world_mut().get_mut::<Unit>(near).unwrap().health = 11;
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world().get::<Unit>(near_here).is_none()
    });
    assert!(clients[0].world().get_entity(near_here).is_ok());
    assert!(
        clients[0]
            .world()
            .resource::<crate::events::Log>()
            .0
            .contains(&Heard::LeftScope(near_here))
    );
    view(&mut server, id).view_mut(id).unwrap().show(near);
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world()
            .get::<Unit>(near_here)
            .is_some_and(|unit| unit.health == 11)
    });
    assert_eq!(mirror(&clients[0], near), Some(near_here));
}

#[test]
fn a_component_added_to_a_shown_entity_follows_it() {
    let (mut server, address) = server(0.0, 22, VisibilityPolicy::Explicit);
    let mut clients = [client(address, 0.0, 23)];
    let id = connect(&mut server, &mut clients)[0];
    let shown = server.world_mut().spawn(unit(1, "shown")).id();
    let hidden = server.world_mut().spawn(unit(2, "hidden")).id();
    view(&mut server, id).view_mut(id).unwrap().show(shown);
    run_until(&mut server, &mut clients, |_, c| {
        mirror(&c[0], shown).is_some()
    });
    server
        .world_mut()
        .entity_mut(shown)
        .insert(Stats { armour: 3, ammo: 9 });
    server
        .world_mut()
        .entity_mut(hidden)
        .insert(Stats { armour: 4, ammo: 8 });
    let here = mirror(&clients[0], shown).unwrap();
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world().get::<Stats>(here).is_some()
    });
    run(&mut server, &mut clients, 5);
    assert_eq!(holding::<Stats>(clients[0].world_mut()).len(), 1);
    assert!(mirror(&clients[0], hidden).is_none());
}

#[test]
fn detail_levels_withhold_fields_per_client() {
    let (mut server, address) = server(0.0, 24, VisibilityPolicy::Explicit);
    let mut clients = [client(address, 0.0, 25), client(address, 0.0, 26)];
    let ids = connect(&mut server, &mut clients);
    let tank = server
        .world_mut()
        .spawn((
            unit(5, "tank"),
            Stats {
                armour: 7,
                ammo: 300,
            },
        ))
        .id();
    {
        let mut state = server.world_mut().resource_mut::<ReplicationServer>();
        let far = state.view_mut(ids[0]).unwrap();
        far.show(tank);
        far.set_detail(tank, 0);
        let close = state.view_mut(ids[1]).unwrap();
        close.show(tank);
        close.set_detail(tank, 1);
    }
    run_until(&mut server, &mut clients, |_, c| {
        c.iter()
            .all(|c| mirror(c, tank).is_some_and(|e| c.world().get::<Stats>(e).is_some()))
    });
    server.world_mut().get_mut::<Stats>(tank).unwrap().ammo = 299;
    run(&mut server, &mut clients, 10);
    // Which client got which id depends on which packet came first:
    // look at both.
    let stats: Vec<Stats> = clients
        .iter()
        .map(|c| {
            c.world()
                .get::<Stats>(mirror(c, tank).unwrap())
                .unwrap()
                .clone()
        })
        .collect();
    assert!(stats.contains(&Stats { armour: 7, ammo: 0 }), "{stats:?}");
    assert!(
        stats.contains(&Stats {
            armour: 7,
            ammo: 299
        }),
        "{stats:?}"
    );
}

#[test]
fn a_grid_shows_each_client_what_is_near_its_viewer() {
    use bevy_transform::components::Transform;
    use fastarray_bevy::{GridInterest, Viewer};

    let (mut server, address) = server(0.0, 27, VisibilityPolicy::Explicit);
    server.insert_resource(GridInterest::new(50.0));
    let mut clients = [client(address, 0.0, 28)];
    // The viewer is placed before its client connects: it is shown its
    // area when it does.
    let id = 1; // the UDP transport's first client
    let eyes = server
        .world_mut()
        .spawn((
            Transform::from_xyz(0.0, 0.0, 0.0),
            Viewer {
                client: id,
                radius: 60.0,
            },
        ))
        .id();
    let near = server.world_mut().spawn(unit(1, "near")).id();
    let far = server.world_mut().spawn(unit(2, "far")).id();
    server
        .world_mut()
        .get_mut::<Transform>(far)
        .unwrap()
        .translation
        .x = 500.0;
    run_until(&mut server, &mut clients, |_, c| {
        mirror(&c[0], near).is_some()
    });
    run(&mut server, &mut clients, 5);
    assert!(mirror(&clients[0], far).is_none());

    // The player walks to the far one.
    server
        .world_mut()
        .get_mut::<Transform>(eyes)
        .unwrap()
        .translation
        .x = 480.0;
    let near_here = mirror(&clients[0], near).unwrap();
    run_until(&mut server, &mut clients, |_, c| {
        mirror(&c[0], far).is_some_and(|e| c[0].world().get::<Unit>(e).is_some())
            && c[0].world().get::<Unit>(near_here).is_none()
    });
    // And something comes to it.
    server
        .world_mut()
        .get_mut::<Transform>(near)
        .unwrap()
        .translation
        .x = 470.0;
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world().get::<Unit>(near_here).is_some()
    });
}
