//! [`MirrorConnection`]: the client's side of its connection to the
//! server. It applies each packet's sections to the mirrors of their
//! channels, all or none, and acknowledges the packets it applied.

use std::any::Any;
use std::time::Instant;

use super::channel::{Incoming, read_tag};
use super::error::ConnectionError;
use crate::ack::{AckConfig, AckHeader, Acks, LinkStats};
use crate::bits::BitReader;
use crate::receive::ApplyReport;

/// The client's side of its connection to a server's
/// [`Connection`](crate::Connection): [`apply`](Self::apply) takes each
/// packet from the server and applies its sections to the mirrors of their
/// channels (the arrays and objects the server sends, in the server's
/// order), and [`write_header`](Self::write_header) starts each packet to
/// the server with the acknowledgements of the packets applied.
///
/// A packet is applied whole or not at all: every section is decoded and
/// checked before any mirror changes, and a packet that fails is not
/// acknowledged, so the server sends its work again. A packet arriving
/// twice, or late, is read past by the mirrors' own rules.
///
/// A clone is a copy of the acknowledgement state (to compare it before
/// and after a packet, or to try a packet on a copy).
#[derive(Clone, Debug)]
pub struct MirrorConnection {
    acks: Acks,
    channels: usize,
}

/// A decoded section: its channel, and the delta its mirror decoded.
type Section = (usize, Box<dyn Any>);

/// What one [`MirrorConnection::apply`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketReport {
    /// The packet's number.
    pub packet: u32,
    /// Per channel with a section in the packet: the channel and what
    /// applying its delta did.
    pub sections: Vec<(usize, ApplyReport)>,
}

impl MirrorConnection {
    /// The client's side of a connection with `channels` channels,
    /// acknowledging packets as [`AckConfig::default`] says.
    pub fn new(channels: usize) -> Self {
        Self::with_config(channels, AckConfig::default())
    }

    /// The client's side of a connection with `channels` channels whose
    /// acknowledgements follow `config`.
    pub fn with_config(channels: usize, config: AckConfig) -> Self {
        Self {
            acks: Acks::new(config),
            channels,
        }
    }

    /// The number of channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The packets' acknowledgements.
    pub fn acks(&self) -> &Acks {
        &self.acks
    }

    /// Round-trip time, loss and rates of the link (as seen from the
    /// client's own packets).
    pub fn stats(&self) -> LinkStats {
        self.acks.stats()
    }

    /// Applies a packet from the server: its sections to `mirrors`
    /// (channel `n` is `mirrors[n]`), all decoded and checked first. On
    /// error no mirror changed and the packet is not acknowledged (a
    /// duplicate is refused by its header: [`AckError::Duplicate`]).
    ///
    /// [`AckError::Duplicate`]: crate::AckError::Duplicate
    pub fn apply(
        &mut self,
        now: Instant,
        packet: &[u8],
        mirrors: &mut [&mut dyn Incoming],
    ) -> Result<PacketReport, ConnectionError> {
        if mirrors.len() != self.channels {
            return Err(ConnectionError::ChannelCount {
                expected: self.channels,
                given: mirrors.len(),
            });
        }
        let (header, body) = AckHeader::read(packet)?;
        let decoded = self.decode(body, mirrors)?;
        let number = self.acks.receive(&header, now, packet.len())?;
        self.acks.applied(number);
        let sections = decoded
            .into_iter()
            .map(|(channel, decoded)| (channel, mirrors[channel].__apply(decoded)))
            .collect();
        // The client sends no deltas: what its own packets' fate says is
        // only kept for the link's statistics.
        while self.acks.poll(now).is_some() {}
        Ok(PacketReport {
            packet: number,
            sections,
        })
    }

    /// Decodes and checks every section of `body`.
    fn decode(
        &self,
        body: &[u8],
        mirrors: &[&mut dyn Incoming],
    ) -> Result<Vec<Section>, ConnectionError> {
        let framing = |error| ConnectionError::Decode {
            channel: usize::MAX,
            error,
        };
        let mut reader = BitReader::new(body);
        let mut decoded: Vec<Section> = Vec::new();
        while let Some(channel) = read_tag(&mut reader).map_err(framing)? {
            let channel = usize::try_from(channel)
                .ok()
                .filter(|&channel| channel < self.channels)
                .ok_or(ConnectionError::UnknownChannel {
                    channel,
                    channels: self.channels,
                })?;
            if decoded.iter().any(|&(other, _)| other == channel) {
                return Err(ConnectionError::RepeatedChannel { channel });
            }
            let section = mirrors[channel]
                .__decode(&mut reader)
                .map_err(|error| ConnectionError::Decode { channel, error })?;
            decoded.push((channel, section));
        }
        reader.expect_end().map_err(framing)?;
        Ok(decoded)
    }

    /// Appends the header of the client's next packet to the server to
    /// `out`, and returns the packet's number: it acknowledges the packets
    /// applied so far. The game's own data (inputs, commands) may follow
    /// it in the same packet (the link's sent rate counts the header
    /// only). Send one regularly (every tick), even with nothing after the
    /// header: the server learns what arrived only from these.
    pub fn write_header(&mut self, now: Instant, out: &mut Vec<u8>) -> u32 {
        while self.acks.poll(now).is_some() {}
        let (header, packet) = self.acks.send(now, AckHeader::BYTES);
        header.write(out);
        packet
    }
}
