//! [`RenetReplicationServer`]: a fastarray [`Connection`] per renet client,
//! its packets sent and received on fastarray's renet channel.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use fastarray_core::{
    Connection, ConnectionError, FastArray, InterestGrid, Outgoing, Relevance, Replicate,
    ReplicationId,
};
use renet::{Bytes, ClientId, RenetServer, ServerEvent};

use crate::config::{CHANNEL_ID, MTU};
use crate::harmless::{Harmless, harmless};

/// At most this many packets per client per [`RenetReplicationServer::send`]
/// by default: work beyond them waits for the next tick (a joining client
/// gets the world over several ticks rather than in one burst).
pub const PACKETS_PER_TICK: usize = 4;

/// The server's side of replication over renet: one fastarray
/// [`Connection`] per renet [`ClientId`], made when the client connects
/// and dropped when it leaves, whose packets go out and come in on
/// fastarray's renet channel ([`CHANNEL_ID`] unless
/// [`with_channel_id`](Self::with_channel_id) says otherwise).
///
/// The client id is the key everywhere: of the connection
/// ([`connection_mut`](Self::connection_mut)), and of the client's viewer
/// in an [`InterestGrid`] ([`update_scope`](Self::update_scope)), so the
/// game never keeps a map of its own.
///
/// Each tick, in renet's order:
///
/// 1. `server.update(dt)`, `transport.update(dt, &mut server)`;
/// 2. for each of `server.get_event()`, [`handle_event`](Self::handle_event)
///    (and the game's own: a player to spawn, a viewer to remove);
/// 3. [`receive`](Self::receive): the clients' acknowledgements, and the
///    game's data they carry;
/// 4. the game's tick, then `commit()` every array and object;
/// 5. [`update_scope`](Self::update_scope) if the game uses an
///    [`InterestGrid`];
/// 6. [`send`](Self::send), then `transport.send_packets(&mut server)`.
///
/// Every connection has the same channels (the arrays and objects the
/// server replicates, in the same order in every call). See the crate
/// documentation for a whole example.
#[derive(Debug)]
pub struct RenetReplicationServer {
    /// The renet channel.
    channel_id: u8,
    /// fastarray channels per connection.
    channels: usize,
    /// At most this many packets per client per tick.
    packets_per_tick: usize,
    /// The connections, by renet client id.
    connections: BTreeMap<ClientId, Peer>,
}

/// One client's connection, and whether the client was heard from.
#[derive(Debug)]
struct Peer {
    conn: Connection,
    /// A packet of the client's arrived on the channel: netcode has
    /// connected it on its side too, so packets to it may start.
    heard: bool,
}

/// What one [`RenetReplicationServer::receive`] or
/// [`RenetReplicationClient::receive`](crate::RenetReplicationClient::receive)
/// read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Packets taken: on the server, their acknowledgements reached the
    /// connections; on the client, they were applied to the mirrors.
    pub packets: usize,
    /// Packets the network duplicated ([`Harmless::Duplicate`]).
    pub duplicates: usize,
    /// Packets too old to acknowledge ([`Harmless::TooOld`]).
    pub too_old: usize,
}

impl Received {
    /// Counts a harmless refusal.
    pub(crate) fn count(&mut self, harmless: Harmless) {
        match harmless {
            Harmless::Duplicate => self.duplicates += 1,
            Harmless::TooOld => self.too_old += 1,
        }
    }
}

/// What one [`RenetReplicationServer::send`] or
/// [`send_to`](RenetReplicationServer::send_to) handed renet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Messages (one fastarray packet each, one datagram unless an item
    /// alone is larger than [`MTU`]).
    pub packets: usize,
    /// Their bytes, fastarray's header included (renet's and netcode's
    /// are not).
    pub bytes: usize,
    /// Clients with work left for the next tick (the packet limit or
    /// renet's channel memory stopped the writing).
    pub deferred: usize,
    /// Clients not sent to because none of their packets has arrived yet
    /// (see [`RenetReplicationServer::send`]).
    pub waiting: usize,
}

impl Sent {
    fn absorb(&mut self, other: Sent) {
        self.packets += other.packets;
        self.bytes += other.bytes;
        self.deferred += other.deferred;
        self.waiting += other.waiting;
    }
}

/// A real error of one client's connection: what it is, and whose.
/// Disconnect the client (`server.disconnect(error.client)`) when it
/// comes from [`receive`](RenetReplicationServer::receive); from
/// [`send`](RenetReplicationServer::send) it is the game's (an array not
/// committed, the arrays given in another order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientError {
    /// The renet client.
    pub client: ClientId,
    /// What went wrong.
    pub error: ConnectionError,
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}: {}", self.client, self.error)
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl RenetReplicationServer {
    /// A server whose connections have `channels` fastarray channels (the
    /// arrays and objects every [`send`](Self::send) gives, in order), on
    /// renet channel [`CHANNEL_ID`].
    pub fn new(channels: usize) -> Self {
        Self {
            channel_id: CHANNEL_ID,
            channels,
            packets_per_tick: PACKETS_PER_TICK,
            connections: BTreeMap::new(),
        }
    }

    /// The same on renet channel `channel_id` (an unreliable channel both
    /// ways: [`channel_config`](crate::channel_config)). renet panics on a
    /// channel it was not configured with.
    pub fn with_channel_id(mut self, channel_id: u8) -> Self {
        self.channel_id = channel_id;
        self
    }

    /// The same, writing at most `packets` packets per client per
    /// [`send`](Self::send) (at least 1; [`PACKETS_PER_TICK`] by default).
    pub fn with_packets_per_tick(mut self, packets: usize) -> Self {
        self.packets_per_tick = packets.max(1);
        self
    }

    /// The renet channel.
    pub fn channel_id(&self) -> u8 {
        self.channel_id
    }

    /// Takes one of renet's events: a connected client gets a connection,
    /// a disconnected one loses its own. Returns whether the set of
    /// connections changed. A game that scopes its clients by hand rather
    /// than with [`update_scope`](Self::update_scope) gives the new
    /// connection its scope now, before its first packet (see
    /// [`FastArray::scope`]).
    ///
    /// [`receive`](Self::receive) and [`send`](Self::send) also make the
    /// connections of clients renet has connected and drop those it no
    /// longer has, so an event not passed on loses nothing but that
    /// chance. A client that reconnects starts over, with a new
    /// connection (its client must start with new mirrors too).
    pub fn handle_event(&mut self, event: &ServerEvent) -> bool {
        match *event {
            ServerEvent::ClientConnected { client_id } => self.connect(client_id),
            ServerEvent::ClientDisconnected { client_id, .. } => {
                self.connections.remove(&client_id).is_some()
            }
        }
    }

    /// Makes client `client`'s connection if it has none; returns whether
    /// it did.
    fn connect(&mut self, client: ClientId) -> bool {
        let channels = self.channels;
        let mut made = false;
        self.connections.entry(client).or_insert_with(|| {
            made = true;
            Peer {
                conn: Connection::new(channels),
                heard: false,
            }
        });
        made
    }

    /// Makes the connections of clients renet has connected, and drops
    /// those renet no longer has.
    fn sync(&mut self, server: &RenetServer) {
        self.connections
            .retain(|&client, _| server.is_connected(client));
        for client in server.clients_id_iter() {
            self.connect(client);
        }
    }

    /// The connected clients with a connection, in id order.
    pub fn clients(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.connections.keys().copied()
    }

    /// Client `client`'s connection: its link statistics
    /// ([`Connection::stats`]), its channels' send states.
    pub fn connection(&self, client: ClientId) -> Option<&Connection> {
        self.connections.get(&client).map(|peer| &peer.conn)
    }

    /// Client `client`'s connection, to change: its scope on an array is
    /// `array.scope(connection.state_mut(channel))`.
    pub fn connection_mut(&mut self, client: ClientId) -> Option<&mut Connection> {
        self.connections.get_mut(&client).map(|peer| &mut peer.conn)
    }

    /// Brings every client's scope on `array` (its fastarray channel
    /// `channel`) up to `grid`'s view, whose viewers are keyed by renet
    /// client id: `grid.set_viewer(client_id, center, radius)`. Every
    /// connection is scoped on `array` from then on, so a client without
    /// a viewer yet sees none of it (not all of it), and is scoped before
    /// its first packet when this runs each tick before
    /// [`send`](Self::send). Viewers without a connection are skipped;
    /// remove a client's viewer when it leaves
    /// (`grid.remove_viewer(client_id)`).
    ///
    /// # Panics
    ///
    /// If `channel` is not one of the connections' channels, if `array`
    /// is a mirror, or if the channel's connections are scoped on another
    /// array (each channel serves one array).
    pub fn update_scope<T: Replicate>(
        &mut self,
        grid: &mut InterestGrid,
        channel: usize,
        array: &mut FastArray<T>,
    ) {
        for peer in self.connections.values_mut() {
            array
                .scope(peer.conn.state_mut(channel))
                .expect("the server's array, scoped on this channel only");
        }
        // The events grouped per client, each client's scope changed in
        // one batch (`ScopeMut::update`).
        let mut events: BTreeMap<ClientId, Vec<(ReplicationId, Relevance)>> = BTreeMap::new();
        grid.update(|viewer, id, relevance| {
            if self.connections.contains_key(&viewer) {
                events.entry(viewer).or_default().push((id, relevance));
            }
        });
        for (client, events) in events {
            let peer = self.connections.get_mut(&client).expect("checked above");
            array
                .scope(peer.conn.state_mut(channel))
                .expect("the server's array, scoped on this channel only")
                .update(events);
        }
    }

    /// Reads every client's packets on the channel: their
    /// acknowledgements reach the connection, and the game's data each
    /// carries after its header (the client's
    /// [`send_with`](crate::RenetReplicationClient::send_with)) goes to
    /// `data` with the client's id. Duplicates and packets too old to
    /// acknowledge are counted ([`Received`]), not returned.
    ///
    /// A real error stops the reading and names its client
    /// ([`ClientError`]); disconnect it. The other messages wait in renet
    /// for the next call.
    pub fn receive(
        &mut self,
        now: Instant,
        server: &mut RenetServer,
        mut data: impl FnMut(ClientId, &[u8]),
    ) -> Result<Received, ClientError> {
        self.sync(server);
        let mut received = Received::default();
        for (&client, peer) in &mut self.connections {
            while let Some(message) = server.receive_message(client, self.channel_id) {
                peer.heard = true;
                match peer.conn.receive(now, &message) {
                    Ok((_, payload)) => {
                        received.packets += 1;
                        if !payload.is_empty() {
                            data(client, payload);
                        }
                    }
                    Err(error) => match harmless(&error) {
                        Some(harmless) => received.count(harmless),
                        None => return Err(ClientError { client, error }),
                    },
                }
            }
        }
        Ok(received)
    }

    /// Writes every client's packets for this tick and hands them to
    /// renet on the channel: each of at most [`MTU`] bytes, as many as the
    /// work needs, up to the packet limit ([`PACKETS_PER_TICK`] by
    /// default) and what renet's channel has room for. `sources` are the
    /// arrays and objects replicated (fastarray channel `n` is
    /// `sources[n]`), committed. Call `transport.send_packets(&mut server)`
    /// after.
    ///
    /// Every client gets at least one packet a tick, even with nothing
    /// new: its header acknowledges the client's packets. But a client
    /// gets none before its first packet arrives
    /// ([`Sent::waiting`]): renet_netcode's server completes a client's
    /// connection with a keep-alive that it repeats only after 100 ms
    /// without any other packet to that client, and the client reads
    /// nothing else until it has one. A server that sends from
    /// `ServerEvent::ClientConnected` on, every tick, leaves a client
    /// whose keep-alive was lost stuck until netcode's timeout (15 s
    /// unsecure) disconnects it. The client's first packet (it sends only
    /// once connected) ends the wait, and tells where it stands before
    /// its first delta. The same holds for the game's own messages: send
    /// none to a client before it was heard from.
    pub fn send(
        &mut self,
        now: Instant,
        server: &mut RenetServer,
        sources: &mut [&mut dyn Outgoing],
    ) -> Result<Sent, ClientError> {
        self.sync(server);
        let (channel_id, packets_per_tick) = (self.channel_id, self.packets_per_tick);
        let mut sent = Sent::default();
        for (&client, peer) in &mut self.connections {
            let to = (client, channel_id, packets_per_tick);
            sent.absorb(send_peer(now, server, to, peer, sources)?);
        }
        Ok(sent)
    }

    /// As [`send`](Self::send), to client `client` only (nothing if it
    /// has no connection): for a game that sends to its clients at
    /// different rates, or counts each one's bytes.
    pub fn send_to(
        &mut self,
        now: Instant,
        server: &mut RenetServer,
        client: ClientId,
        sources: &mut [&mut dyn Outgoing],
    ) -> Result<Sent, ClientError> {
        let Some(peer) = self.connections.get_mut(&client) else {
            return Ok(Sent::default());
        };
        send_peer(
            now,
            server,
            (client, self.channel_id, self.packets_per_tick),
            peer,
            sources,
        )
    }
}

/// Writes client `client`'s packets of the tick (on renet channel
/// `channel_id`, at most `packets_per_tick`) and hands them to renet: what
/// [`RenetReplicationServer::send`] does for each client.
fn send_peer(
    now: Instant,
    server: &mut RenetServer,
    (client, channel_id, packets_per_tick): (ClientId, u8, usize),
    Peer { conn, heard }: &mut Peer,
    sources: &mut [&mut dyn Outgoing],
) -> Result<Sent, ClientError> {
    let mut sent = Sent::default();
    if !*heard {
        sent.waiting = 1;
        return Ok(sent);
    }
    for _ in 0..packets_per_tick {
        // A packet renet would drop is not written: its work stays due.
        if !server.can_send_message(client, channel_id, MTU) {
            sent.deferred = 1;
            return Ok(sent);
        }
        // Written straight into the buffer renet sends.
        let mut packet = Vec::with_capacity(MTU);
        let stats = conn
            .write_packet(now, MTU, sources, &mut packet)
            .map_err(|error| ClientError { client, error })?;
        sent.packets += 1;
        sent.bytes += packet.len();
        server.send_message(client, channel_id, Bytes::from(packet));
        if stats.totals.deferred == 0 {
            return Ok(sent);
        }
    }
    sent.deferred = 1;
    Ok(sent)
}

#[cfg(test)]
mod tests {
    //! The server's side over renet's in-memory local clients: the
    //! connections follow renet's clients, nothing goes to a client before
    //! it is heard from, and a copy of a client's packet is counted.

    use super::*;
    use crate::{RenetReplicationClient, connection_config};
    use fastarray::{FastArray, MirrorConnection, Replicate};

    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Unit {
        hp: u8,
    }

    fn units() -> FastArray<Unit> {
        let mut units = FastArray::new();
        for hp in 0..50 {
            units.push(Unit { hp });
        }
        units.commit();
        units
    }

    #[test]
    fn connections_follow_renet_clients() {
        let mut server = RenetServer::new(connection_config());
        let mut replication = RenetReplicationServer::new(1);
        let mut client = server.new_local_client(7);
        let event = server.get_event().expect("the connection");
        assert!(replication.handle_event(&event));
        assert!(!replication.handle_event(&event));
        assert_eq!(replication.clients().collect::<Vec<_>>(), [7]);
        // A client renet connected without the event passed on gets one
        // on the next call.
        let _other = server.new_local_client(8);
        replication
            .receive(Instant::now(), &mut server, |_, _| {})
            .unwrap();
        assert_eq!(replication.clients().collect::<Vec<_>>(), [7, 8]);
        // One renet no longer has loses it.
        server.disconnect_local_client(7, &mut client);
        replication
            .send(Instant::now(), &mut server, &mut [&mut units()])
            .unwrap();
        assert_eq!(replication.clients().collect::<Vec<_>>(), [8]);
        assert!(replication.connection(7).is_none());
    }

    #[test]
    fn nothing_goes_to_a_client_before_it_is_heard_from() {
        let mut server = RenetServer::new(connection_config());
        let mut replication = RenetReplicationServer::new(1);
        let mut client = server.new_local_client(7);
        let mut units = units();
        let now = Instant::now();
        let sent = replication
            .send(now, &mut server, &mut [&mut units])
            .unwrap();
        assert_eq!((sent.packets, sent.waiting), (0, 1));

        let mut mirror = RenetReplicationClient::new(1);
        assert!(mirror.send(now, &mut client).unwrap());
        server.process_local_client(7, &mut client).unwrap();
        let received = replication.receive(now, &mut server, |_, _| {}).unwrap();
        assert_eq!(received.packets, 1);
        let sent = replication
            .send(now, &mut server, &mut [&mut units])
            .unwrap();
        assert_eq!((sent.packets, sent.waiting), (1, 0));
        assert!(sent.bytes <= MTU);
    }

    #[test]
    fn scopes_follow_the_grid_by_client_id() {
        let mut server = RenetServer::new(connection_config());
        let mut replication = RenetReplicationServer::new(1);
        let mut client = server.new_local_client(7);
        let mut mirror = RenetReplicationClient::new(1);
        let mut mirror_units = FastArray::<Unit>::mirror();
        let mut units = units();
        let mut grid = InterestGrid::new(10.0);
        let ids: Vec<_> = units.ids().collect();
        for (n, &id) in ids.iter().enumerate() {
            grid.set_item(id, [n as f32 * 10.0, 0.0]);
        }
        let now = Instant::now();
        let mut tick = |replication: &mut RenetReplicationServer,
                        grid: &mut InterestGrid,
                        mirror_units: &mut FastArray<Unit>| {
            mirror.send(now, &mut client).unwrap();
            server.process_local_client(7, &mut client).unwrap();
            replication.receive(now, &mut server, |_, _| {}).unwrap();
            units.commit();
            replication.update_scope(grid, 0, &mut units);
            replication
                .send(now, &mut server, &mut [&mut units])
                .unwrap();
            server.process_local_client(7, &mut client).unwrap();
            mirror
                .receive(now, &mut client, &mut [mirror_units])
                .unwrap();
        };
        // No viewer yet: nothing of the array.
        for _ in 0..3 {
            tick(&mut replication, &mut grid, &mut mirror_units);
        }
        assert!(mirror_units.is_empty());
        // Client 7 looks at the first units.
        grid.set_viewer(7, [0.0, 0.0], 25.0);
        for _ in 0..3 {
            tick(&mut replication, &mut grid, &mut mirror_units);
        }
        let seen: Vec<_> = mirror_units.ids().collect();
        assert_eq!(seen.len(), grid.visible(7).count());
        assert!(!seen.is_empty() && seen.len() < ids.len());
        assert!(seen.iter().all(|&id| grid.is_visible(7, id)));
    }

    #[test]
    fn the_games_data_comes_with_the_clients_id() {
        let mut server = RenetServer::new(connection_config());
        let mut replication = RenetReplicationServer::new(1);
        let mut client = server.new_local_client(7);
        let mut mirror = RenetReplicationClient::new(1);
        let now = Instant::now();
        mirror.send_with(now, &mut client, b"jump").unwrap();
        server.process_local_client(7, &mut client).unwrap();
        let mut data = Vec::new();
        replication
            .receive(now, &mut server, |client, bytes| {
                data.push((client, bytes.to_vec()))
            })
            .unwrap();
        assert_eq!(data, [(7, b"jump".to_vec())]);
    }

    #[test]
    fn a_copy_of_a_clients_packet_is_counted_not_returned() {
        let mut server = RenetServer::new(connection_config());
        let mut replication = RenetReplicationServer::new(1);
        let mut client = server.new_local_client(7);
        let now = Instant::now();
        // The same packet twice on the channel, as a network that
        // duplicates would deliver it.
        let mut packet = Vec::new();
        MirrorConnection::new(1)
            .write_header(now, &mut packet)
            .unwrap();
        client.send_message(CHANNEL_ID, packet.clone());
        client.send_message(CHANNEL_ID, packet);
        server.process_local_client(7, &mut client).unwrap();
        let received = replication.receive(now, &mut server, |_, _| {}).unwrap();
        assert_eq!(
            received,
            Received {
                packets: 1,
                duplicates: 1,
                too_old: 0
            }
        );
    }

    #[test]
    fn a_broken_packet_names_its_client() {
        let mut server = RenetServer::new(connection_config());
        let mut replication = RenetReplicationServer::new(1);
        let mut client = server.new_local_client(7);
        client.send_message(CHANNEL_ID, vec![1, 2, 3]);
        server.process_local_client(7, &mut client).unwrap();
        let error = replication
            .receive(Instant::now(), &mut server, |_, _| {})
            .unwrap_err();
        assert_eq!(error.client, 7);
        assert_eq!(
            error.error,
            ConnectionError::Ack(fastarray::AckError::Truncated { len: 3 })
        );
        assert_eq!(error.to_string(), format!("client 7: {}", error.error));
    }
}
