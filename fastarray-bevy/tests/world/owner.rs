//! Ownership: an [`Owner`] on a replicated entity sends its components'
//! owner-only fields to that client alone and their skip-owner fields to
//! every other client, over lossy links, as the owner moves and goes.

use bevy_app::App;
use bevy_ecs::prelude::*;
use fastarray_bevy::{Owner, ReplicaEntities, ReplicationServer, VisibilityPolicy};

use crate::support::{Loadout, client, heal_all, run, run_until, server, unit};

/// Each client's copy of `entity`'s loadout, once it has one.
fn loadouts(clients: &[App], entity: Entity) -> Option<Vec<Loadout>> {
    clients
        .iter()
        .map(|client| {
            let world = client.world();
            let mirror = world.resource::<ReplicaEntities>().get(entity)?;
            world.get::<Loadout>(mirror).cloned()
        })
        .collect()
}

/// Ticks until both clients hold `expected` (in either order).
fn settle_on(server: &mut App, clients: &mut [App], entity: Entity, expected: [Loadout; 2]) {
    run_until(server, clients, |_, clients| {
        loadouts(clients, entity)
            .is_some_and(|got| got == expected || got == [expected[1].clone(), expected[0].clone()])
    });
}

fn set(server: &mut App, entity: Entity, ammo: u16, aim: i16) {
    let mut loadout = server.world_mut().get_mut::<Loadout>(entity).unwrap();
    loadout.ammo = ammo;
    loadout.aim = aim;
}

#[test]
fn owners_see_their_fields_and_others_theirs_as_the_owner_moves() {
    let (mut server, address) = server(0.2, 50, VisibilityPolicy::All);
    let mut clients = [client(address, 0.2, 51), client(address, 0.2, 52)];
    run_until(&mut server, &mut clients, |s, _| {
        s.world().resource::<ReplicationServer>().clients().count() == 2
    });
    let ids: Vec<u64> = server
        .world()
        .resource::<ReplicationServer>()
        .clients()
        .collect();
    let ship = server
        .world_mut()
        .spawn((unit(5, "ship"), Owner(ids[0])))
        .insert(Loadout {
            model: 3,
            ammo: 30,
            aim: 7,
        })
        .id();
    // Lossy ticks with changes; at no point may the other client hold an
    // ammo, or the owner an aim.
    for n in 1..=20u16 {
        set(&mut server, ship, 100 + n, 200 + n as i16);
        run(&mut server, &mut clients, 1);
        if let Some(got) = loadouts(&clients, ship) {
            assert!(
                got.iter().all(|l| l.ammo == 0 || l.aim == 0),
                "a client holds both: {got:?}"
            );
        }
    }
    heal_all(&mut server, &mut clients);
    let owner_view = Loadout {
        model: 3,
        ammo: 120,
        aim: 0,
    };
    let other_view = Loadout {
        model: 3,
        ammo: 0,
        aim: 220,
    };
    settle_on(&mut server, &mut clients, ship, [owner_view, other_view]);
    let first_owner = loadouts(&clients, ship).unwrap()[0].ammo == 120;

    // The ship changes hands: the new owner is sent the ammo, the old one
    // the aim; each keeps what it last had of the other.
    server.world_mut().entity_mut(ship).insert(Owner(ids[1]));
    set(&mut server, ship, 500, 600);
    settle_on(
        &mut server,
        &mut clients,
        ship,
        [
            Loadout {
                model: 3,
                ammo: 120,
                aim: 600,
            },
            Loadout {
                model: 3,
                ammo: 500,
                aim: 220,
            },
        ],
    );
    // The same App is now the other side.
    let now = loadouts(&clients, ship).unwrap();
    assert_eq!(now[0].aim == 600, first_owner, "{now:?}");

    // Nobody's: both see the aim, neither the ammo's changes.
    server.world_mut().entity_mut(ship).remove::<Owner>();
    set(&mut server, ship, 900, 901);
    run_until(&mut server, &mut clients, |_, clients| {
        loadouts(clients, ship).is_some_and(|got| got.iter().all(|l| l.aim == 901))
    });
    run(&mut server, &mut clients, 10);
    let now = loadouts(&clients, ship).unwrap();
    assert!(now.iter().all(|l| l.ammo != 900), "{now:?}");
}
