//! renet as the transport of fastarray's Bevy plugins (feature `bevy`):
//! [`RenetServerTransport`] and [`RenetClientTransport`] own a renet
//! endpoint and its netcode transport, and carry the plugins' packets in
//! [`CHANNEL_ID`], at most [`MTU`] bytes each, and a join's snapshot in
//! renet's reliable ordered channel.
//!
//! ```no_run
//! use std::net::UdpSocket;
//! use std::time::SystemTime;
//! use bevy_app::App;
//! use fastarray_bevy::{Join, ReplicationServer, ServerPlugin};
//! use fastarray_renet::bevy::RenetServerTransport;
//! use renet::RenetServer;
//! use renet_netcode::{NetcodeServerTransport, ServerAuthentication, ServerConfig};
//!
//! let socket = UdpSocket::bind("127.0.0.1:5000").unwrap();
//! let config = ServerConfig {
//!     current_time: SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap(),
//!     max_clients: 64,
//!     protocol_id: 7,
//!     public_addresses: vec![socket.local_addr().unwrap()],
//!     authentication: ServerAuthentication::Unsecure, // development only
//! };
//! let netcode = NetcodeServerTransport::new(config, socket).unwrap();
//! let renet = RenetServer::new(fastarray_renet::connection_config());
//! let mut app = App::new();
//! app.add_plugins(ServerPlugin::default());
//! app.insert_resource(
//!     ReplicationServer::new(RenetServerTransport::new(renet, netcode)).with_join(Join::Snapshot),
//! );
//! ```

use std::collections::HashSet;
use std::time::Instant;

use fastarray_bevy::{ClientId as BevyClientId, ClientTransport, ServerEvent, ServerTransport};
use renet::{DefaultChannel, RenetClient, RenetServer};
use renet_netcode::{NetcodeClientTransport, NetcodeServerTransport, NetcodeTransportError};

use crate::config::{CHANNEL_ID, MTU};

/// A renet server and its netcode transport, as the
/// [`ServerPlugin`](fastarray_bevy::ServerPlugin)'s transport. renet's
/// client ids are the plugin's ([`ClientView`](fastarray_bevy::ClientView)s,
/// [`Viewer`](fastarray_bevy::Viewer)s).
///
/// A client counts as connected from its first packet on, not from
/// renet's `ClientConnected`: netcode completes a connection with a
/// keep-alive that it repeats only while nothing else is sent, so a
/// server that wrote to a client at once could leave one whose keep-alive
/// was lost never connected (see the crate docs).
pub struct RenetServerTransport {
    renet: RenetServer,
    netcode: NetcodeServerTransport,
    last: Option<Instant>,
    heard: HashSet<u64>,
    error: Option<NetcodeTransportError>,
}

impl RenetServerTransport {
    /// The transport over `renet` (made with
    /// [`connection_config`](crate::connection_config)) and `netcode`.
    pub fn new(renet: RenetServer, netcode: NetcodeServerTransport) -> Self {
        Self {
            renet,
            netcode,
            last: None,
            heard: HashSet::new(),
            error: None,
        }
    }

    /// The renet server: the game's own channels.
    pub fn renet(&mut self) -> &mut RenetServer {
        &mut self.renet
    }

    /// The netcode transport.
    pub fn netcode(&mut self) -> &mut NetcodeServerTransport {
        &mut self.netcode
    }

    /// The last error netcode reported, if any (taken).
    pub fn take_error(&mut self) -> Option<NetcodeTransportError> {
        self.error.take()
    }
}

impl ServerTransport for RenetServerTransport {
    fn poll(&mut self, now: Instant, events: &mut Vec<ServerEvent>) {
        let elapsed = self.last.map_or_else(Default::default, |last| now - last);
        self.last = Some(now);
        self.renet.update(elapsed);
        if let Err(error) = self.netcode.update(elapsed, &mut self.renet) {
            self.error = Some(error);
        }
        while let Some(event) = self.renet.get_event() {
            if let renet::ServerEvent::ClientDisconnected { client_id, .. } = event
                && self.heard.remove(&client_id)
            {
                events.push(ServerEvent::Disconnected { client: client_id });
            }
        }
        for client in self.renet.clients_id() {
            while let Some(packet) = self.renet.receive_message(client, CHANNEL_ID) {
                if self.heard.insert(client) {
                    events.push(ServerEvent::Connected { client });
                }
                events.push(ServerEvent::Packet {
                    client,
                    packet: packet.to_vec(),
                });
            }
        }
    }

    fn send(&mut self, client: BevyClientId, packet: &[u8]) {
        self.renet.send_message(client, CHANNEL_ID, packet.to_vec());
    }

    fn max_packet(&self, _: BevyClientId) -> usize {
        MTU
    }

    fn flush(&mut self) {
        self.netcode.send_packets(&mut self.renet);
    }

    fn has_reliable(&self) -> bool {
        true
    }

    fn send_reliable(&mut self, client: BevyClientId, message: &[u8]) {
        self.renet
            .send_message(client, DefaultChannel::ReliableOrdered, message.to_vec());
    }
}

/// A renet client and its netcode transport, as the
/// [`ClientPlugin`](fastarray_bevy::ClientPlugin)'s transport.
pub struct RenetClientTransport {
    renet: RenetClient,
    netcode: NetcodeClientTransport,
    last: Option<Instant>,
    error: Option<NetcodeTransportError>,
}

impl RenetClientTransport {
    /// The transport over `renet` (made with
    /// [`connection_config`](crate::connection_config)) and `netcode`.
    pub fn new(renet: RenetClient, netcode: NetcodeClientTransport) -> Self {
        Self {
            renet,
            netcode,
            last: None,
            error: None,
        }
    }

    /// The renet client: the game's own channels.
    pub fn renet(&mut self) -> &mut RenetClient {
        &mut self.renet
    }

    /// Whether netcode's connection is up.
    pub fn is_connected(&self) -> bool {
        self.renet.is_connected()
    }

    /// The last error netcode reported, if any (taken).
    pub fn take_error(&mut self) -> Option<NetcodeTransportError> {
        self.error.take()
    }

    /// renet and netcode, brought to `now` once per tick (the plugin polls
    /// the reliable channel, then the packets, with the same `now`).
    fn update(&mut self, now: Instant) {
        if self.last == Some(now) {
            return;
        }
        let elapsed = self.last.map_or_else(Default::default, |last| now - last);
        self.last = Some(now);
        self.renet.update(elapsed);
        if let Err(error) = self.netcode.update(elapsed, &mut self.renet) {
            self.error = Some(error);
        }
    }
}

impl ClientTransport for RenetClientTransport {
    fn poll(&mut self, now: Instant, packets: &mut Vec<Vec<u8>>) {
        self.update(now);
        while let Some(packet) = self.renet.receive_message(CHANNEL_ID) {
            packets.push(packet.to_vec());
        }
    }

    fn send(&mut self, packet: &[u8]) {
        if self.renet.is_connected() {
            self.renet.send_message(CHANNEL_ID, packet.to_vec());
        }
    }

    fn flush(&mut self) {
        if let Err(error) = self.netcode.send_packets(&mut self.renet) {
            self.error = Some(error);
        }
    }

    fn has_reliable(&self) -> bool {
        true
    }

    fn poll_reliable(&mut self, now: Instant, messages: &mut Vec<Vec<u8>>) {
        self.update(now);
        while let Some(message) = self.renet.receive_message(DefaultChannel::ReliableOrdered) {
            messages.push(message.to_vec());
        }
    }
}
