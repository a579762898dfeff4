//! [`MirrorConnection`]: the client's side of its connection to the
//! server. It applies each packet's sections to the mirrors of their
//! channels, all or none, and acknowledges the packets it applied (on
//! the transport's delivery reports, the transport does).

use std::any::Any;
use std::time::Instant;

use super::channel::{Incoming, read_tag};
use super::delivery::Delivery;
use super::error::ConnectionError;
use super::observe;
use crate::ack::{AckConfig, AckHeader, Acks, LinkStats};
use crate::bits::BitReader;
use crate::receive_state::ApplyReport;
use crate::secure::{Session, inner_of, open_with};

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
/// **Over a network that anyone can send to (bare UDP), make it with
/// [`secure`](Self::secure)** from the [`Session`] a
/// [`ClientHandshake`](crate::ClientHandshake) established: a packet that
/// is not the server's is then refused ([`ConnectionError::Refused`])
/// before its header is read, and acknowledges nothing. The plain
/// constructors are for transports that authenticate packets themselves
/// (QUIC, Steam's sockets).
///
/// It is not `Clone`: a copy of a sealed session would seal its replies
/// with the nonces the original uses. To check that a packet changed
/// nothing, compare its `Debug` output (the whole state; secrets are not
/// shown) and the mirrors' [`mirror_state`](crate::FastArray::mirror_state)
/// before and after.
#[derive(Debug)]
pub struct MirrorConnection {
    /// Who numbers the packets and reports their fate.
    delivery: Delivery,
    /// The header's acknowledgements ([`Delivery::Header`]; unused on
    /// the transport's reports).
    acks: Acks,
    channels: usize,
    /// The packets' protection, when made [`secure`](Self::secure).
    session: Option<Session>,
    /// A server's packet, decrypted.
    opened: Vec<u8>,
}

/// A decoded section: its channel, and the delta its mirror decoded.
type Section = (usize, Box<dyn Any>);

/// What one [`MirrorConnection::apply`] or
/// [`MirrorConnection::apply_payload`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketReport {
    /// The packet's number (`0` from
    /// [`apply_payload`](MirrorConnection::apply_payload): the transport
    /// numbers those).
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
            delivery: Delivery::Header,
            acks: Acks::new(config),
            channels,
            session: None,
            opened: Vec::new(),
        }
    }

    /// The client's side of a connection protected by `session` (from a
    /// [`ClientHandshake`](crate::ClientHandshake)), with `channels`
    /// channels, acknowledging packets as [`AckConfig::default`] says.
    pub fn secure(session: Session, channels: usize) -> Self {
        Self::secure_with_config(session, channels, AckConfig::default())
    }

    /// As [`secure`](Self::secure), acknowledging packets as `config` says.
    pub fn secure_with_config(session: Session, channels: usize, config: AckConfig) -> Self {
        let mut conn = Self::with_config(channels, config);
        conn.session = Some(session);
        conn
    }

    /// The client's side of a connection with `channels` channels on the
    /// transport's delivery reports ([`Delivery::Reports`]): the server's
    /// payloads carry no header ([`apply_payload`](Self::apply_payload)),
    /// and the client writes none (the transport tells the server what
    /// arrived). No [`Session`] protects them: the transport authenticates
    /// its peer.
    pub fn with_delivery_reports(channels: usize) -> Self {
        let mut conn = Self::new(channels);
        conn.delivery = Delivery::Reports;
        conn
    }

    /// Who numbers the packets and reports their fate.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// Refuses a call of the other mode than the connection's, and
    /// `mirrors` that are not as many as the channels.
    fn expect(
        &self,
        delivery: Delivery,
        mirrors: Option<&[&mut dyn Incoming]>,
    ) -> Result<(), ConnectionError> {
        if self.delivery != delivery {
            return Err(ConnectionError::WrongDelivery {
                delivery: self.delivery,
            });
        }
        match mirrors {
            Some(mirrors) if mirrors.len() != self.channels => Err(ConnectionError::ChannelCount {
                expected: self.channels,
                given: mirrors.len(),
            }),
            _ => Ok(()),
        }
    }

    /// The session protecting the packets (`None`: made plain).
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The number of channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The packets' acknowledgements (unused, so empty, on the
    /// transport's delivery reports).
    pub fn acks(&self) -> &Acks {
        &self.acks
    }

    /// Round-trip time, loss and rates of the link (as seen from the
    /// client's own packets; on the transport's delivery reports, ask the
    /// transport).
    pub fn stats(&self) -> LinkStats {
        self.acks.stats()
    }

    /// Applies a packet from the server: its sections to `mirrors`
    /// (channel `n` is `mirrors[n]`), all decoded and checked first. A
    /// secure connection checks the packet's token (or opens its seal)
    /// before anything else: one that is not the server's is
    /// [`ConnectionError::Refused`]. On error no mirror changed and the
    /// packet is not acknowledged (a duplicate is refused by its header:
    /// [`AckError::Duplicate`]). [`ConnectionError::WrongDelivery`] on
    /// the transport's delivery reports: see
    /// [`apply_payload`](Self::apply_payload).
    ///
    /// [`AckError::Duplicate`]: crate::AckError::Duplicate
    pub fn apply(
        &mut self,
        now: Instant,
        packet: &[u8],
        mirrors: &mut [&mut dyn Incoming],
    ) -> Result<PacketReport, ConnectionError> {
        self.expect(Delivery::Header, Some(mirrors))?;
        let span = observe::Span::apply();
        span.bytes(packet.len());
        let opened = open_with(self.session.as_ref(), packet, &mut self.opened)
            .map_err(ConnectionError::Refused)?;
        let inner = inner_of(opened.as_ref(), packet, &self.opened);
        let (header, body) = AckHeader::read(inner)?;
        let decoded = self.decode(body, mirrors)?;
        let number = self.acks.receive(&header, now, packet.len())?;
        if let (Some(session), Some(opened)) = (&mut self.session, &opened) {
            session.take(opened);
        }
        self.acks.applied(number);
        span.packet(number);
        let sections = apply_sections(decoded, mirrors);
        // The client sends no deltas: what its own packets' fate says is
        // only kept for the link's statistics.
        while self.acks.poll(now).is_some() {}
        Ok(PacketReport {
            packet: number,
            sections,
        })
    }

    /// Applies a payload from the server on the transport's delivery
    /// reports ([`with_delivery_reports`](Self::with_delivery_reports)):
    /// the sections [`Connection::write_payload`](crate::Connection::write_payload)
    /// wrote, to `mirrors` (channel `n` is `mirrors[n]`), all decoded and
    /// checked first, as [`apply`](Self::apply) does after its header. On
    /// error no mirror changed: the transport should report the payload
    /// lost to the server, whose work then comes again (a transport that
    /// reports delivery on receipt reports it delivered anyway; the
    /// mirror's data is then behind until those items change again, so
    /// treat an error there as the peer misbehaving).
    /// [`ConnectionError::WrongDelivery`] on a connection with its own
    /// header. A payload arriving twice, or late, is read past by the
    /// mirrors' own rules.
    pub fn apply_payload(
        &mut self,
        payload: &[u8],
        mirrors: &mut [&mut dyn Incoming],
    ) -> Result<PacketReport, ConnectionError> {
        self.expect(Delivery::Reports, Some(mirrors))?;
        let span = observe::Span::apply_payload();
        span.bytes(payload.len());
        let decoded = self.decode(payload, mirrors)?;
        Ok(PacketReport {
            packet: 0,
            sections: apply_sections(decoded, mirrors),
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
    ///
    /// A secure connection writes the whole packet: with a token, data
    /// appended after it is still the client's (the token covers the
    /// packet); sealed, nothing may be appended (the server would refuse
    /// the packet), so put the game's data in with
    /// [`write_reply`](Self::write_reply), which works in every mode.
    pub fn write_header(
        &mut self,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Result<u32, ConnectionError> {
        self.write_reply(now, &[], out)
    }

    /// Appends the client's next packet to the server to `out`: the
    /// header acknowledging the packets applied so far, then `payload`
    /// (the game's inputs, commands; returned by the server's
    /// [`Connection::receive`](crate::Connection::receive)), protected by
    /// the session if the connection is secure. Returns the packet's
    /// number. Errs only when a sealed session's counter is exhausted
    /// ([`PacketError::Exhausted`](crate::PacketError::Exhausted)); then
    /// `out` is as it was. [`ConnectionError::WrongDelivery`] on the
    /// transport's delivery reports (the transport carries the game's data
    /// as it is, and the server learns what arrived from the transport).
    pub fn write_reply(
        &mut self,
        now: Instant,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<u32, ConnectionError> {
        self.expect(Delivery::Header, None)?;
        while self.acks.poll(now).is_some() {}
        let start = out.len();
        let inner = match &mut self.session {
            Some(session) => session.begin(out).map_err(ConnectionError::Refused)?,
            None => start,
        };
        let (header, packet) = self.acks.send(now, AckHeader::BYTES);
        header.write(out);
        out.extend_from_slice(payload);
        if let Some(session) = &mut self.session {
            if let Err(error) = session.finish(out, inner) {
                out.truncate(start);
                return Err(ConnectionError::Refused(error));
            }
        }
        Ok(packet)
    }
}

/// Applies decoded sections to their channels' mirrors: the same for both
/// modes.
fn apply_sections(
    decoded: Vec<Section>,
    mirrors: &mut [&mut dyn Incoming],
) -> Vec<(usize, ApplyReport)> {
    decoded
        .into_iter()
        .map(|(channel, decoded)| (channel, mirrors[channel].__apply(decoded)))
        .collect()
}
