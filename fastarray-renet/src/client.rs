//! [`RenetReplicationClient`]: the client's [`MirrorConnection`], fed from
//! fastarray's renet channel and acknowledging on it.

use std::time::Instant;

use fastarray_core::{ConnectionError, Incoming, MirrorConnection};
use renet::{Bytes, RenetClient};

use crate::config::CHANNEL_ID;
use crate::harmless::harmless;
use crate::server::Received;

/// The client's side of replication over renet: a [`MirrorConnection`]
/// that applies the server's packets from fastarray's renet channel
/// ([`CHANNEL_ID`] unless [`with_channel_id`](Self::with_channel_id) says
/// otherwise) to the client's mirrors, and acknowledges them on the same
/// channel.
///
/// Each tick, in renet's order:
///
/// 1. `client.update(dt)`, `transport.update(dt, &mut client)`;
/// 2. [`receive`](Self::receive) into the mirrors;
/// 3. [`send`](Self::send) (or [`send_with`](Self::send_with), with the
///    game's inputs), then `transport.send_packets(&mut client)`.
///
/// Duplicated and late packets ([`Harmless`](crate::Harmless)) are
/// counted, not returned. When the renet client reconnects, make a new
/// one, and new mirrors: the server starts the new connection over.
#[derive(Debug)]
pub struct RenetReplicationClient {
    /// The renet channel.
    channel_id: u8,
    /// fastarray's side of the connection.
    conn: MirrorConnection,
}

impl RenetReplicationClient {
    /// A client whose connection has `channels` fastarray channels (the
    /// mirrors every [`receive`](Self::receive) gives, in the server's
    /// order), on renet channel [`CHANNEL_ID`].
    pub fn new(channels: usize) -> Self {
        Self {
            channel_id: CHANNEL_ID,
            conn: MirrorConnection::new(channels),
        }
    }

    /// The same on renet channel `channel_id` (an unreliable channel both
    /// ways: [`channel_config`](crate::channel_config)). renet panics on a
    /// channel it was not configured with.
    pub fn with_channel_id(mut self, channel_id: u8) -> Self {
        self.channel_id = channel_id;
        self
    }

    /// The renet channel.
    pub fn channel_id(&self) -> u8 {
        self.channel_id
    }

    /// fastarray's side of the connection: its link statistics
    /// ([`MirrorConnection::stats`]).
    pub fn connection(&self) -> &MirrorConnection {
        &self.conn
    }

    /// Applies every packet waiting on the channel to `mirrors` (channel
    /// `n` is `mirrors[n]`), each whole or not at all. Duplicates and
    /// packets too old to acknowledge change nothing and are counted
    /// ([`Received`]).
    ///
    /// A real error (a packet that does not decode into these mirrors: the
    /// server runs other types, or another order) stops the reading; the
    /// packet is not acknowledged and no mirror changed. The other
    /// messages wait in renet for the next call.
    pub fn receive(
        &mut self,
        now: Instant,
        client: &mut RenetClient,
        mirrors: &mut [&mut dyn Incoming],
    ) -> Result<Received, ConnectionError> {
        let mut received = Received::default();
        while let Some(message) = client.receive_message(self.channel_id) {
            self.apply(now, &message, mirrors, &mut received)?;
        }
        Ok(received)
    }

    /// Applies one packet, counting it in `received`, or returns a real
    /// error.
    fn apply(
        &mut self,
        now: Instant,
        packet: &[u8],
        mirrors: &mut [&mut dyn Incoming],
        received: &mut Received,
    ) -> Result<(), ConnectionError> {
        match self.conn.apply(now, packet, mirrors) {
            Ok(_) => {
                received.packets += 1;
                Ok(())
            }
            Err(error) => match harmless(&error) {
                Some(harmless) => {
                    received.count(harmless);
                    Ok(())
                }
                None => Err(error),
            },
        }
    }

    /// Sends the client's packet for this tick on the channel: a header
    /// acknowledging the packets applied. Send one every tick, even with
    /// nothing else to say: the server learns what arrived only from
    /// these. Returns whether it went (not while renet is not
    /// connected). Call `transport.send_packets(&mut client)` after.
    pub fn send(
        &mut self,
        now: Instant,
        client: &mut RenetClient,
    ) -> Result<bool, ConnectionError> {
        self.send_with(now, client, &[])
    }

    /// As [`send`](Self::send), with the game's `data` (inputs, where the
    /// player looks) after the header, in the same datagram: the server's
    /// [`receive`](crate::RenetReplicationServer::receive) hands it over.
    /// Keep it small: the packet should stay within [`MTU`](crate::MTU).
    pub fn send_with(
        &mut self,
        now: Instant,
        client: &mut RenetClient,
        data: &[u8],
    ) -> Result<bool, ConnectionError> {
        if !client.is_connected() {
            return Ok(false);
        }
        let mut packet = Vec::with_capacity(fastarray_core::AckHeader::BYTES + data.len());
        self.conn.write_reply(now, data, &mut packet)?;
        client.send_message(self.channel_id, Bytes::from(packet));
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    //! The harmless refusals, as a renet client meets them: the same
    //! packet twice, and a packet 40 packets late.

    use super::*;
    use crate::connection_config;
    use fastarray::{AckError, Connection, FastArray, Replicate};

    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Unit {
        hp: u8,
    }

    /// A server's array of `n` units and a connection to it.
    fn world(n: u8) -> (FastArray<Unit>, Connection) {
        let mut units = FastArray::new();
        for hp in 0..n {
            units.push(Unit { hp });
        }
        units.commit();
        (units, Connection::new(1))
    }

    #[test]
    fn a_duplicate_is_counted_and_changes_nothing() {
        let now = Instant::now();
        let (mut units, mut conn) = world(10);
        let mut packet = Vec::new();
        conn.write_packet(now, crate::MTU, &mut [&mut units], &mut packet)
            .unwrap();
        let mut client = RenetReplicationClient::new(1);
        let mut mirror = FastArray::<Unit>::mirror();
        let mut received = Received::default();
        client
            .apply(now, &packet, &mut [&mut mirror], &mut received)
            .unwrap();
        let state = mirror.mirror_state();
        client
            .apply(now, &packet, &mut [&mut mirror], &mut received)
            .unwrap();
        assert_eq!(
            received,
            Received {
                packets: 1,
                duplicates: 1,
                too_old: 0
            }
        );
        assert_eq!(mirror.mirror_state(), state);
        assert_eq!(mirror, units);
    }

    #[test]
    fn a_packet_too_old_is_counted_and_changes_nothing() {
        let now = Instant::now();
        let (mut units, mut conn) = world(3);
        let mut packets = Vec::new();
        for _ in 0..40 {
            let mut packet = Vec::new();
            conn.write_packet(now, crate::MTU, &mut [&mut units], &mut packet)
                .unwrap();
            packets.push(packet);
        }
        let mut client = RenetReplicationClient::new(1);
        let mut mirror = FastArray::<Unit>::mirror();
        let mut received = Received::default();
        // The newest first, then the first one, 39 packets older.
        client
            .apply(now, &packets[39], &mut [&mut mirror], &mut received)
            .unwrap();
        let state = mirror.mirror_state();
        client
            .apply(now, &packets[0], &mut [&mut mirror], &mut received)
            .unwrap();
        assert_eq!(
            received,
            Received {
                packets: 1,
                duplicates: 0,
                too_old: 1
            }
        );
        assert_eq!(mirror.mirror_state(), state);
    }

    #[test]
    fn a_real_error_is_returned_and_changes_nothing() {
        let now = Instant::now();
        let (mut units, _) = world(10);
        let (mut more, _) = world(5);
        // The server sends two arrays; the client expects one.
        let mut conn = Connection::new(2);
        let mut packet = Vec::new();
        conn.write_packet(now, crate::MTU, &mut [&mut units, &mut more], &mut packet)
            .unwrap();
        let mut client = RenetReplicationClient::new(1);
        let mut mirror = FastArray::<Unit>::mirror();
        let mut received = Received::default();
        let error = client
            .apply(now, &packet, &mut [&mut mirror], &mut received)
            .unwrap_err();
        assert_eq!(
            error,
            ConnectionError::UnknownChannel {
                channel: 1,
                channels: 1
            }
        );
        assert_eq!(harmless(&error), None);
        assert_eq!(received, Received::default());
        assert!(mirror.is_empty());
        // Not acknowledged: the same packet again is no duplicate.
        let error = client
            .apply(now, &packet, &mut [&mut mirror], &mut received)
            .unwrap_err();
        assert!(matches!(error, ConnectionError::UnknownChannel { .. }));
        // Nor is a truncated packet harmless.
        let error = client
            .apply(now, &packet[..5], &mut [&mut mirror], &mut received)
            .unwrap_err();
        assert_eq!(error, ConnectionError::Ack(AckError::Truncated { len: 5 }));
    }

    #[test]
    fn nothing_is_sent_before_renet_connects() {
        let mut renet = RenetClient::new(connection_config());
        renet.set_connecting();
        let mut client = RenetReplicationClient::new(1);
        assert!(!client.send(Instant::now(), &mut renet).unwrap());
        renet.set_connected();
        assert!(client.send(Instant::now(), &mut renet).unwrap());
    }
}
