//! What the game hears on the client: spawned, changed (with the fields),
//! left scope, despawned; entity references in cycles and to entities not
//! yet arrived; a despawn and a respawn in one tick.

use bevy_app::{App, Update};
use bevy_ecs::prelude::*;
use fastarray_bevy::{
    FieldMask, ReplicaChanged, ReplicaDespawned, ReplicaEntities, ReplicaLeftScope, ReplicaSpawned,
    VisibilityPolicy,
};

use crate::support::{Score, Target, Unit, caught_up, client, run, run_until, server, unit};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    Spawned(Entity),
    Changed(Entity, FieldMask, bool),
    LeftScope(Entity),
    Despawned(Entity),
}

#[derive(Resource, Default)]
pub struct Log(pub Vec<Heard>);

pub fn listen(app: &mut App) {
    app.init_resource::<Log>().add_systems(Update, record);
}

fn record(
    mut log: ResMut<Log>,
    mut spawned: MessageReader<ReplicaSpawned>,
    mut changed: MessageReader<ReplicaChanged<Unit>>,
    mut left: MessageReader<ReplicaLeftScope>,
    mut despawned: MessageReader<ReplicaDespawned>,
) {
    log.0
        .extend(spawned.read().map(|m| Heard::Spawned(m.entity)));
    log.0.extend(
        changed
            .read()
            .map(|m| Heard::Changed(m.entity, m.fields, m.arrived)),
    );
    log.0
        .extend(left.read().map(|m| Heard::LeftScope(m.entity)));
    log.0
        .extend(despawned.read().map(|m| Heard::Despawned(m.entity)));
}

fn take(app: &mut App) -> Vec<Heard> {
    std::mem::take(&mut app.world_mut().resource_mut::<Log>().0)
}

fn mirror_of(client: &App, server: Entity) -> Entity {
    client
        .world()
        .resource::<ReplicaEntities>()
        .get(server)
        .expect("arrived")
}

#[test]
fn spawn_change_and_despawn_are_heard_with_their_fields() {
    let (mut server, address) = server(0.0, 10, VisibilityPolicy::All);
    let mut clients = [client(address, 0.0, 11)];
    listen(&mut clients[0]);
    let ann = server.world_mut().spawn(unit(50, "ann")).id();
    run_until(&mut server, &mut clients, |s, c| caught_up(s, &mut c[0]));
    let mirror = mirror_of(&clients[0], ann);
    let heard = take(&mut clients[0]);
    assert_eq!(heard[0], Heard::Spawned(mirror));
    assert!(heard.contains(&Heard::Changed(mirror, FieldMask::all(2), true)));

    server.world_mut().get_mut::<Unit>(ann).unwrap().health = 49;
    run_until(&mut server, &mut clients, |s, c| caught_up(s, &mut c[0]));
    assert_eq!(
        take(&mut clients[0]),
        [Heard::Changed(mirror, Unit::HEALTH, false)]
    );

    // A mutable borrow that changes nothing sends nothing: the array's
    // diff finds no field changed.
    let _ = &mut *server.world_mut().get_mut::<Unit>(ann).unwrap();
    run(&mut server, &mut clients, 5);
    assert_eq!(take(&mut clients[0]), []);

    server.world_mut().despawn(ann);
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world()
            .resource::<ReplicaEntities>()
            .get(ann)
            .is_none()
    });
    assert!(clients[0].world().get_entity(mirror).is_err());
    assert!(take(&mut clients[0]).contains(&Heard::Despawned(mirror)));
}

#[test]
fn references_in_a_cycle_resolve_both_ways() {
    let (mut server, address) = server(0.0, 12, VisibilityPolicy::All);
    let mut clients = [client(address, 0.0, 13)];
    let a = server.world_mut().spawn(unit(1, "a")).id();
    let b = server.world_mut().spawn(unit(2, "b")).id();
    let c = server.world_mut().spawn(unit(3, "c")).id();
    // a → b → c → a, and c also targets itself later.
    server.world_mut().entity_mut(a).insert(Target(Some(b)));
    server.world_mut().entity_mut(b).insert(Target(Some(c)));
    server.world_mut().entity_mut(c).insert(Target(Some(a)));
    run_until(&mut server, &mut clients, |s, c| caught_up(s, &mut c[0]));
    let world = clients[0].world();
    let [ma, mb, mc] = [a, b, c].map(|e| mirror_of(&clients[0], e));
    assert_eq!(world.get::<Target>(ma), Some(&Target(Some(mb))));
    assert_eq!(world.get::<Target>(mb), Some(&Target(Some(mc))));
    assert_eq!(world.get::<Target>(mc), Some(&Target(Some(ma))));
    server.world_mut().entity_mut(c).insert(Target(Some(c)));
    run_until(&mut server, &mut clients, |s, c| caught_up(s, &mut c[0]));
    assert_eq!(
        clients[0].world().get::<Target>(mc),
        Some(&Target(Some(mc)))
    );
}

#[test]
fn a_despawn_and_a_respawn_in_one_tick_are_two_entities() {
    let (mut server, address) = server(0.0, 14, VisibilityPolicy::All);
    let mut clients = [client(address, 0.0, 15)];
    listen(&mut clients[0]);
    let old = server.world_mut().spawn(unit(7, "old")).id();
    let watcher = server.world_mut().spawn(unit(8, "watcher")).id();
    server
        .world_mut()
        .entity_mut(watcher)
        .insert(Target(Some(old)));
    run_until(&mut server, &mut clients, |s, c| caught_up(s, &mut c[0]));
    let old_mirror = mirror_of(&clients[0], old);
    take(&mut clients[0]);

    // In one tick: the old one goes, a new one comes (Bevy may give it the
    // old one's index, with a new generation), and the watcher follows it.
    server.world_mut().despawn(old);
    let new = server.world_mut().spawn(unit(7, "new")).id();
    server
        .world_mut()
        .entity_mut(watcher)
        .insert(Target(Some(new)));
    assert_ne!(old, new);
    run_until(&mut server, &mut clients, |s, c| caught_up(s, &mut c[0]));
    let new_mirror = mirror_of(&clients[0], new);
    assert_ne!(old_mirror, new_mirror);
    assert!(clients[0].world().get_entity(old_mirror).is_err());
    let watcher_mirror = mirror_of(&clients[0], watcher);
    assert_eq!(
        clients[0].world().get::<Target>(watcher_mirror),
        Some(&Target(Some(new_mirror)))
    );
    let heard = take(&mut clients[0]);
    assert!(heard.contains(&Heard::Despawned(old_mirror)));
    assert!(heard.contains(&Heard::Spawned(new_mirror)));
}

#[test]
fn a_resource_replicates_as_one_object() {
    let (mut server, address) = server(0.0, 16, VisibilityPolicy::All);
    let mut clients = [client(address, 0.0, 17)];
    run(&mut server, &mut clients, 5);
    assert!(
        clients[0].world().get_resource::<Score>().is_none(),
        "not there before the server's"
    );
    server.insert_resource(Score { red: 1, blue: 0 });
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world().get_resource::<Score>() == Some(&Score { red: 1, blue: 0 })
    });
    server.world_mut().resource_mut::<Score>().blue = 3;
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world().get_resource::<Score>() == Some(&Score { red: 1, blue: 3 })
    });
}
