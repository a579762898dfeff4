//! Datagrams in queues: the server's outbox and inbox, each client's; the
//! bench moves them between the apps
//! ([`deliver`](crate::memory::deliver)), as bevy_replicon's test harness
//! moves its messages.

use std::time::Instant;

use bevy_app::App;
use fastarray_bevy::{
    ClientId, ClientTransport, ReplicationClient, ReplicationServer, ServerEvent, ServerTransport,
};

/// The server's side: what clients sent, what it sends.
#[derive(Debug, Default)]
pub struct MemoryServer {
    inbox: Vec<(ClientId, Vec<u8>)>,
    outbox: Vec<(ClientId, Vec<u8>)>,
}

impl MemoryServer {
    /// The bytes waiting in the outbox, all clients.
    pub fn pending_bytes(&self) -> u64 {
        self.outbox.iter().map(|(_, p)| p.len() as u64).sum()
    }
}

impl ServerTransport for MemoryServer {
    fn poll(&mut self, _now: Instant, events: &mut Vec<ServerEvent>) {
        events.extend(
            self.inbox
                .drain(..)
                .map(|(client, packet)| ServerEvent::Packet { client, packet }),
        );
    }

    fn send(&mut self, client: ClientId, packet: &[u8]) {
        self.outbox.push((client, packet.to_vec()));
    }
}

/// A client's side.
#[derive(Debug, Default)]
pub struct MemoryClient {
    inbox: Vec<Vec<u8>>,
    outbox: Vec<Vec<u8>>,
}

impl ClientTransport for MemoryClient {
    fn poll(&mut self, _now: Instant, packets: &mut Vec<Vec<u8>>) {
        packets.append(&mut self.inbox);
    }

    fn send(&mut self, packet: &[u8]) {
        self.outbox.push(packet.to_vec());
    }
}

/// The server app's transport.
pub fn server_transport(server: &mut App) -> &mut MemoryServer {
    server
        .world_mut()
        .resource_mut::<ReplicationServer>()
        .into_inner()
        .transport_mut::<MemoryServer>()
        .expect("the server runs on a MemoryServer")
}

fn client_transport(client: &mut App) -> &mut MemoryClient {
    client
        .world_mut()
        .resource_mut::<ReplicationClient>()
        .into_inner()
        .transport_mut::<MemoryClient>()
        .expect("the client runs on a MemoryClient")
}

/// Moves the server's datagrams to the clients (client `i` is `clients[i]`)
/// and updates every client, then moves the clients' replies to the
/// server.
pub fn deliver(server: &mut App, clients: &mut [App]) {
    let outbox = std::mem::take(&mut server_transport(server).outbox);
    for (client, packet) in outbox {
        client_transport(&mut clients[client as usize])
            .inbox
            .push(packet);
    }
    for client in clients.iter_mut() {
        client.update();
    }
    let server = server_transport(server);
    for (id, client) in (0..).zip(clients.iter_mut()) {
        for packet in client_transport(client).outbox.drain(..) {
            server.inbox.push((id, packet));
        }
    }
}
