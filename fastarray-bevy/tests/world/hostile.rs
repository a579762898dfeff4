//! Packets that are not the server's change nothing in the client's
//! World: garbage, truncations, junk after a packet, replays.

use std::time::Instant;

use bevy_app::App;
use bevy_ecs::prelude::*;
use fastarray_bevy::{
    AppReplicationExt as _, ClientPlugin, ClientTransport, ReplicationClient, UdpClientTransport,
    VisibilityPolicy,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::{Stats, Target, Unit, caught_up, protocol, run_until, server, unit};

/// The UDP transport, keeping a copy of what arrives, and handing the
/// client the packets the test puts in.
struct Tap {
    udp: UdpClientTransport,
    seen: Vec<Vec<u8>>,
    forged: Vec<Vec<u8>>,
}

impl ClientTransport for Tap {
    fn poll(&mut self, now: Instant, packets: &mut Vec<Vec<u8>>) {
        let start = packets.len();
        self.udp.poll(now, packets);
        self.seen.extend(packets[start..].iter().cloned());
        packets.append(&mut self.forged);
    }

    fn send(&mut self, packet: &[u8]) {
        self.udp.send(packet);
    }
}

/// Every replicated component of the World, printed, by entity.
fn fingerprint(world: &mut World) -> Vec<String> {
    let mut all: Vec<String> = world
        .query::<(Entity, Option<&Unit>, Option<&Target>, Option<&Stats>)>()
        .iter(world)
        .map(|row| format!("{row:?}"))
        .collect();
    all.sort();
    all
}

#[test]
fn hostile_packets_change_nothing() {
    let (mut server, address) = server(0.0, 30, VisibilityPolicy::All);
    let mut client = App::new();
    client.add_plugins(ClientPlugin);
    protocol(&mut client);
    client.insert_resource(ReplicationClient::new(Tap {
        udp: UdpClientTransport::connect(address).unwrap(),
        seen: Vec::new(),
        forged: Vec::new(),
    }));
    let mut clients = [client];
    for n in 0..40 {
        server.world_mut().spawn(unit(n, "unit"));
    }
    run_until(&mut server, &mut clients, |s, c| caught_up(s, &mut c[0]));

    let before = fingerprint(clients[0].world_mut());
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut state = clients[0].world_mut().resource_mut::<ReplicationClient>();
    let tap = state.transport_mut::<Tap>().unwrap();
    let genuine: Vec<Vec<u8>> = tap.seen.iter().filter(|p| p.len() > 20).cloned().collect();
    assert!(!genuine.is_empty());
    let mut forged = Vec::new();
    for _ in 0..200 {
        let len = rng.random_range(0..300);
        forged.push((0..len).map(|_| rng.random()).collect::<Vec<u8>>());
    }
    for packet in &genuine {
        // Replays of packets applied already.
        forged.push(packet.clone());
        // Cut short anywhere after the header.
        for cut in [9, packet.len() / 2, packet.len() - 1] {
            forged.push(packet[..cut].to_vec());
        }
        // Junk after the end.
        let mut long = packet.clone();
        long.extend_from_slice(&[0xff, 0x13, 0x37]);
        forged.push(long);
    }
    let count = forged.len() as u64;
    tap.forged = forged;
    let applied = state.packets_applied();
    clients[0].update(); // only the client: nothing genuine can arrive

    let state = clients[0].world().resource::<ReplicationClient>();
    assert_eq!(state.packets_applied(), applied, "no forged packet applied");
    assert_eq!(state.packets_ignored() + state.packets_rejected(), count);
    assert!(
        state.packets_ignored() >= genuine.len() as u64,
        "the replays were ignored"
    );
    assert_eq!(fingerprint(clients[0].world_mut()), before);
}

/// A client whose protocol differs (a kind missing) refuses the server's
/// packets rather than misreading them.
#[test]
fn a_different_protocol_is_refused() {
    let (mut server, address) = server(0.0, 32, VisibilityPolicy::All);
    let mut client = App::new();
    client.add_plugins(ClientPlugin);
    client.replicate::<Stats>().replicate::<Unit>(); // wrong order
    client.insert_resource(ReplicationClient::new(
        UdpClientTransport::connect(address).unwrap(),
    ));
    let mut clients = [client];
    server
        .world_mut()
        .spawn((unit(1, "one"), Stats { armour: 1, ammo: 1 }));
    run_until(&mut server, &mut clients, |_, c| {
        c[0].world()
            .resource::<ReplicationClient>()
            .packets_rejected()
            > 0
    });
    let world = clients[0].world_mut();
    assert!(world.query::<&Unit>().iter(world).next().is_none());
    assert!(world.query::<&Stats>().iter(world).next().is_none());
}
