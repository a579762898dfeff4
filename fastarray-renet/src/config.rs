//! The renet channel fastarray's packets ride in, and the packet size that
//! keeps each one inside one of renet's slices.

use renet::{ChannelConfig, ConnectionConfig, SendType};

/// The renet channel id [`connection_config`] gives fastarray's packets:
/// the first after renet's three [`DefaultChannel`](renet::DefaultChannel)s (0, 1 and 2).
pub const CHANNEL_ID: u8 = 3;

/// renet's slice: an unreliable message longer than this is cut into
/// slices, each a datagram of its own, and the message is lost if any
/// slice is (`renet::packet::SLICE_SIZE`, private in renet 2.0).
pub const RENET_SLICE: usize = 1_200;

/// The largest fastarray packet, its 8-byte
/// [`AckHeader`](fastarray_core::AckHeader) included, that renet sends in
/// one datagram: [`RENET_SLICE`] less the 2-byte length renet writes in
/// front of each message it packs (its varint of 1 198 takes 2 bytes). A
/// message of 1 199 or 1 200 bytes already costs renet two datagrams (an
/// empty one first), and one of 1 201 or more is sliced.
///
/// The adapter writes packets of at most this many bytes; the one
/// exception is an item too large for any such packet, which
/// [`Connection::write_packet`](fastarray_core::Connection::write_packet)
/// sends alone and renet slices.
pub const MTU: usize = RENET_SLICE - 2;

/// The memory renet lets the channel hold, each way: messages queued and
/// not yet sent, or sliced messages being put back together. renet's own
/// default for its channels; an unreliable channel drops new messages
/// past it.
pub const CHANNEL_MEMORY: usize = 5 * 1024 * 1024;

/// The renet channel for fastarray's packets, numbered `channel_id`: an
/// unreliable one, both ways (the server's deltas one way, the client's
/// acknowledgements the other). Unreliable because fastarray repairs loss
/// itself, resending only what is still current; a reliable channel would
/// resend stale states and hold newer ones behind them.
///
/// Put it in both lists of your [`ConnectionConfig`]
/// (`server_channels_config` and `client_channels_config`), or take
/// [`connection_config`], which does.
pub fn channel_config(channel_id: u8) -> ChannelConfig {
    ChannelConfig {
        channel_id,
        max_memory_usage_bytes: CHANNEL_MEMORY,
        send_type: SendType::Unreliable,
    }
}

/// renet's default [`ConnectionConfig`] (its three [`DefaultChannel`](renet::DefaultChannel)s,
/// 60 000 bytes per update) with fastarray's channel, [`CHANNEL_ID`], added
/// both ways. Give the same to the `RenetServer` and every `RenetClient`.
///
/// ```
/// let config = fastarray_renet::connection_config();
/// assert_eq!(config.server_channels_config.len(), 4);
/// assert_eq!(config.server_channels_config[3].channel_id, fastarray_renet::CHANNEL_ID);
/// let server = renet::RenetServer::new(config.clone());
/// let client = renet::RenetClient::new(config);
/// # drop((server, client));
/// ```
pub fn connection_config() -> ConnectionConfig {
    let mut config = ConnectionConfig::default();
    config
        .server_channels_config
        .push(channel_config(CHANNEL_ID));
    config
        .client_channels_config
        .push(channel_config(CHANNEL_ID));
    config
}

#[cfg(test)]
mod tests {
    //! [`MTU`] against renet itself: the largest message it sends in one
    //! datagram.

    use super::*;
    use renet::RenetClient;

    /// The datagrams renet makes of one message of `len` bytes on the
    /// channel.
    fn datagrams(len: usize) -> Vec<Vec<u8>> {
        let mut client = RenetClient::new(connection_config());
        client.set_connected();
        client.send_message(CHANNEL_ID, vec![7u8; len]);
        client.get_packets_to_send()
    }

    #[test]
    fn a_packet_of_the_mtu_is_one_datagram_of_renet() {
        let one = datagrams(MTU);
        assert_eq!(one.len(), 1);
        // renet's own bytes around it: a handful, well within netcode's
        // 1 300-byte payload.
        assert!(
            one[0].len() > MTU && one[0].len() <= MTU + 16,
            "{}",
            one[0].len()
        );
    }

    #[test]
    fn a_byte_more_costs_renet_two_datagrams() {
        assert_eq!(datagrams(MTU + 1).len(), 2);
        assert_eq!(datagrams(RENET_SLICE).len(), 2);
        // Past the slice, renet slices the message.
        assert_eq!(datagrams(RENET_SLICE + 1).len(), 2);
    }
}
