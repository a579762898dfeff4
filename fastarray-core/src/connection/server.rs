//! [`Connection`]: the server's side of one client's connection. It keeps
//! a [`SendState`] per channel (each array or object the client mirrors),
//! learns each packet's fate from [`Acks`] (its own header) or from the
//! transport's reports ([`Delivery`]), and fills each packet up to an MTU
//! with the channels' deltas, the same way in both modes.

use std::collections::VecDeque;
use std::time::Instant;

use super::delivery::Delivery;
use super::error::ConnectionError;
use super::observe;

mod packing;
use super::stats::{ChannelStats, Counters};
use crate::ack::{AckConfig, AckEvent, AckHeader, Acks, LinkStats};
use crate::error::SendError;
use crate::secure::{Session, inner_of, open_with};
use crate::send_state::SendState;
use crate::send_state::stats::DeltaStats;

/// The largest packet written, even for an item larger than the MTU
/// (which then goes alone, in a packet the IP layer fragments): what a UDP
/// datagram can carry over IPv4.
pub const MAX_PACKET: usize = 65_507;

/// The verdicts a [`Connection`] keeps for [`Connection::poll_verdict`]:
/// past this many undrained, the oldest are dropped (and counted).
pub const MAX_VERDICTS: usize = 1024;

/// Fewer bits than this left in a packet are not offered to a channel.
const MIN_SECTION_BITS: u64 = 16;

/// The server's side of one client's connection: a [`SendState`] per
/// channel (each array or [`Replicated`](crate::Replicated) object the
/// client mirrors, in a fixed order), and the packets' acknowledgements
/// ([`Acks`]), whose every ack and loss reaches every channel.
///
/// Each tick, [`write_packet`](Self::write_packet) writes one packet of at
/// most `mtu` bytes: the [`AckHeader`], then a section per channel with
/// something to say, as much as fits; what does not fit stays due for the
/// next packets (so a joining client gets the world over several). Each
/// packet starts with another channel, so none starves the others. The
/// client's packets ([`receive`](Self::receive)) carry its
/// acknowledgements, and whatever the game puts after the header.
///
/// **Over a network that anyone can send to (bare UDP), make it with
/// [`secure`](Self::secure)** from the [`Session`] a
/// [`ServerHandshake`](crate::ServerHandshake) established: every packet
/// then carries the session's token (or is sealed, with encryption), and a
/// packet that is not the client's is refused
/// ([`ConnectionError::Refused`]) before its header is read. The plain
/// constructors ([`new`](Self::new), [`with_config`](Self::with_config))
/// are for transports that authenticate packets themselves (QUIC, Steam's
/// sockets, an encrypted netcode): on bare UDP, a forged packet that
/// reuses a genuine sequence is taken as the client's.
///
/// **On a transport that delivers every message or reports each one's
/// fate** (a reliable stream: TCP, WebSocket, a QUIC stream), make it with
/// [`with_delivery_reports`](Self::with_delivery_reports): no header is
/// written; [`write_payload`](Self::write_payload) takes the transport's
/// number and writes the same sections, and the transport's verdicts come
/// in through [`delivered`](Self::delivered) and [`lost`](Self::lost). See
/// [`Delivery`].
///
/// **What it decided** is counted per channel
/// ([`channel_stats`](Self::channel_stats): bits, items, verdicts,
/// deferred and oversized items, scope), and, with the features
/// `tracing` and `metrics`, told as spans and events (a span per write,
/// receive and apply with its packet number and bytes; an event per
/// verdict and per oversized item) and as counters and gauges
/// (`fastarray_bytes_sent_total{channel}`, `fastarray_packets_lost_total`,
/// `fastarray_rtt_seconds`, `fastarray_deferred_items{channel}`,
/// `fastarray_items_in_scope{channel}` and more: the README's "What an
/// operator watches" lists them).
///
/// Calls, in order: each tick, [`receive`](Self::receive) every packet of
/// the client's, [`write_packet`](Self::write_packet) (again while work is
/// deferred and the budget allows), then drain
/// [`poll_verdict`](Self::poll_verdict) if the game wants each packet's
/// fate; [`update`](Self::update) between ticks is optional.
///
/// ```
/// use std::time::Instant;
/// use fastarray_core::{Connection, FastArray, MirrorConnection, Replicated};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { name: String, hp: u8 }
///
/// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
/// #[replicate(crate = "fastarray_core")]
/// struct Match { round: u8 }
///
/// // The server: two channels, the units and the match.
/// let (mut units, mut game) = (FastArray::new(), Replicated::new(Match::default()));
/// for n in 0..100 {
///     units.push(Unit { name: format!("unit {n}"), hp: 100 });
/// }
/// units.commit();
/// game.commit();
/// let mut conn = Connection::new(2);
///
/// // The client: its mirrors, in the same order.
/// let (mut mirror_units, mut mirror_game) = (FastArray::<Unit>::mirror(), Replicated::<Match>::mirror());
/// let mut client = MirrorConnection::new(2);
///
/// let now = Instant::now();
/// let (mut packet, mut reply) = (Vec::new(), Vec::new());
/// for _ in 0..10 {
///     packet.clear();
///     conn.write_packet(now, 1_200, &mut [&mut units, &mut game], &mut packet).unwrap();
///     assert!(packet.len() <= 1_200);
///     client.apply(now, &packet, &mut [&mut mirror_units, &mut mirror_game]).unwrap();
///     // The client's packets carry its acknowledgements (and its inputs).
///     reply.clear();
///     client.write_header(now, &mut reply).unwrap();
///     conn.receive(now, &reply).unwrap();
/// }
/// assert_eq!(mirror_units, units);
/// assert_eq!(mirror_game.get(), game.get());
/// ```
#[derive(Debug)]
pub struct Connection {
    /// Who numbers the packets and reports their fate.
    delivery: Delivery,
    /// The header's acknowledgements ([`Delivery::Header`]; unused on
    /// the transport's reports).
    acks: Acks,
    /// The packets awaiting the transport's report ([`Delivery::Reports`]).
    states: Vec<SendState>,
    /// Per channel, the array or object it serves (its origin), once it
    /// wrote.
    sources: Vec<Option<u64>>,
    /// The channel offered room first in the next packet.
    turn: usize,
    /// The packets' protection, when made [`secure`](Self::secure).
    session: Option<Session>,
    /// A client's packet, decrypted.
    opened: Vec<u8>,
    /// The verdicts applied and not yet polled, oldest first.
    verdicts: VecDeque<AckEvent>,
    /// Verdicts dropped undrained past [`MAX_VERDICTS`].
    verdicts_dropped: u64,
    /// Per channel, what its writes and verdicts counted.
    counters: Vec<Counters>,
    /// The channels' writes into the packet being written (kept, so
    /// writing allocates nothing).
    written: Vec<Written>,
    /// Per channel, what the last write reported to `metrics` (feature
    /// `metrics`), so many connections' levels add up.
    #[cfg(feature = "metrics")]
    levels: Vec<observe::Levels>,
}

/// One channel's write into a packet: the channel, what its delta said,
/// and the bits of its section (0: it said nothing, and has none).
type Written = (usize, DeltaStats, u64);

/// What one [`Connection::write_packet`] or
/// [`Connection::write_payload`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// The packet's number, which its acknowledgement or loss names:
    /// [`Acks`]'s extended sequence with the header, the caller's with the
    /// transport's reports.
    pub packet: u32,
    /// The packet's size, header (and session) included; with the
    /// transport's reports, the payload's.
    pub bytes: usize,
    /// Channels with a section in the packet.
    pub sections: usize,
    /// The channels' counts, summed (see [`DeltaStats`]); `bits` is the
    /// sections' bits.
    pub totals: DeltaStats,
}

impl Connection {
    /// A connection with `channels` channels (the arrays and objects it
    /// sends, in the order every call gives them), acknowledging packets
    /// as [`AckConfig::default`] says.
    pub fn new(channels: usize) -> Self {
        Self::with_config(channels, AckConfig::default())
    }

    /// A connection with `channels` channels whose acknowledgements follow
    /// `config`.
    pub fn with_config(channels: usize, config: AckConfig) -> Self {
        Self {
            delivery: Delivery::Header,
            acks: Acks::new(config),
            states: (0..channels).map(|_| SendState::new()).collect(),
            sources: vec![None; channels],
            turn: 0,
            session: None,
            opened: Vec::new(),
            verdicts: VecDeque::new(),
            verdicts_dropped: 0,
            counters: vec![Counters::default(); channels],
            written: Vec::new(),
            #[cfg(feature = "metrics")]
            levels: vec![observe::Levels::default(); channels],
        }
    }

    /// A connection protected by `session` (the server's side of a
    /// [`ServerHandshake`](crate::ServerHandshake)), with `channels`
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

    /// A connection with `channels` channels on the transport's delivery
    /// reports ([`Delivery::Reports`]): no header is written, the caller
    /// numbers each packet ([`write_payload`](Self::write_payload)) and
    /// reports its fate ([`delivered`](Self::delivered),
    /// [`lost`](Self::lost)). The sections are those of the header mode:
    /// channels, MTU packing, budgets, oversized items and joins alike.
    ///
    /// No [`Session`] protects these packets: the mode is for transports
    /// that authenticate their peer themselves (TLS under a WebSocket, a
    /// QUIC stream, Steam's sockets' reliable messages).
    pub fn with_delivery_reports(channels: usize) -> Self {
        let mut conn = Self::new(channels);
        conn.delivery = Delivery::Reports;
        conn
    }

    /// Who numbers the packets and reports their fate.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// Refuses a call of the other mode than the connection's.
    fn expect(&self, delivery: Delivery) -> Result<(), ConnectionError> {
        if self.delivery == delivery {
            Ok(())
        } else {
            Err(ConnectionError::WrongDelivery {
                delivery: self.delivery,
            })
        }
    }

    /// The session protecting the packets (`None`: made plain).
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The bytes each packet carries in front of its [`AckHeader`] and
    /// after its body: 0 plain, the session's
    /// [`overhead`](Session::overhead) secure.
    fn overhead(&self) -> usize {
        self.session.as_ref().map_or(0, Session::overhead)
    }

    /// The number of channels.
    pub fn channels(&self) -> usize {
        self.states.len()
    }

    /// Names the client this connection serves on every channel, for item
    /// ownership ([`SendState::set_client`]): it is sent the owner-only
    /// fields of the items [owned](crate::FastArray::set_owner) by
    /// `client`, and not their skip-owner fields.
    ///
    /// # Errors
    /// [`SendError::ClientAfterWrite`] if a channel already wrote under
    /// another client; no channel is changed then.
    pub fn set_client(&mut self, client: u64) -> Result<(), SendError> {
        if !self.states.iter().all(|state| state.may_serve(client)) {
            return Err(SendError::ClientAfterWrite);
        }
        for state in &mut self.states {
            state.set_client(client)?;
        }
        Ok(())
    }

    /// The client this connection serves, if named
    /// ([`set_client`](Self::set_client)).
    pub fn client(&self) -> Option<u64> {
        self.states.first().and_then(SendState::client)
    }

    /// Channel `channel`'s send state: for what a [`SendState`] is asked,
    /// and for [`FastArray::scope`](crate::FastArray::scope) (interest
    /// management on that channel's array).
    ///
    /// # Panics
    ///
    /// If `channel >= self.channels()`.
    pub fn state(&self, channel: usize) -> &SendState {
        &self.states[channel]
    }

    /// Channel `channel`'s send state, to change: see
    /// [`state`](Self::state).
    ///
    /// # Panics
    ///
    /// If `channel >= self.channels()`.
    pub fn state_mut(&mut self, channel: usize) -> &mut SendState {
        &mut self.states[channel]
    }

    /// What the connection did for channel `channel` since it was made:
    /// bits and sections written, items sent, packets that carried it
    /// acknowledged or lost, and what its state holds now. See
    /// [`ChannelStats`].
    ///
    /// # Panics
    ///
    /// If `channel >= self.channels()`.
    pub fn channel_stats(&self, channel: usize) -> ChannelStats {
        self.counters[channel].read(&self.states[channel])
    }

    /// The packets' acknowledgements (unused, so empty, on the
    /// transport's delivery reports).
    pub fn acks(&self) -> &Acks {
        &self.acks
    }

    /// Round-trip time, loss and rates of the link, as the headers tell
    /// them (on the transport's delivery reports, ask the transport).
    pub fn stats(&self) -> LinkStats {
        self.acks.stats()
    }

    /// Declares lost the packets whose acknowledgement is overdue at `now`,
    /// and tells every channel. [`write_packet`](Self::write_packet) and
    /// [`receive`](Self::receive) do it too.
    pub fn update(&mut self, now: Instant) {
        while let Some(event) = self.acks.poll(now) {
            self.verdict(event);
        }
    }

    /// Applies a packet's verdict, whoever gave it (the headers or the
    /// transport): to every channel, and to [`poll_verdict`](Self::poll_verdict).
    fn verdict(&mut self, event: AckEvent) {
        for (state, counters) in self.states.iter_mut().zip(&mut self.counters) {
            let carried = match event {
                AckEvent::Acked(packet) => state.on_ack(packet),
                AckEvent::Lost(packet) => state.on_loss(packet),
            };
            if carried {
                counters.verdict(matches!(event, AckEvent::Acked(_)));
            }
        }
        observe::verdict(event);
        if self.verdicts.len() == MAX_VERDICTS {
            self.verdicts.pop_front();
            self.verdicts_dropped += 1;
        }
        self.verdicts.push_back(event);
    }

    /// The transport delivered `packet` (a number given to
    /// [`write_payload`](Self::write_payload)): what it carried is known to
    /// the client, on every channel, and [`poll_verdict`](Self::poll_verdict)
    /// says so. Returns whether `packet` awaited its report: a report for
    /// a number never written, written with no section, or already
    /// reported is ignored (`Ok(false)`) and changes nothing.
    /// [`ConnectionError::WrongDelivery`] on a connection with its own
    /// header.
    ///
    /// A reliable, ordered transport (a stream) delivers every packet:
    /// call this once the packet is handed to it, or when it is
    /// acknowledged.
    pub fn delivered(&mut self, packet: u32) -> Result<bool, ConnectionError> {
        self.report(AckEvent::Acked(packet))
    }

    /// The transport lost `packet` (a number given to
    /// [`write_payload`](Self::write_payload)): what it carried is due
    /// again, on every channel, unless newer packets cover it, and
    /// [`poll_verdict`](Self::poll_verdict) says so. Returns whether
    /// `packet` awaited its report, as [`delivered`](Self::delivered) does.
    pub fn lost(&mut self, packet: u32) -> Result<bool, ConnectionError> {
        self.report(AckEvent::Lost(packet))
    }

    /// A transport's report on a packet.
    fn report(&mut self, event: AckEvent) -> Result<bool, ConnectionError> {
        self.expect(Delivery::Reports)?;
        let (AckEvent::Acked(packet) | AckEvent::Lost(packet)) = event;
        if !self.awaits(packet) {
            return Ok(false);
        }
        self.verdict(event);
        Ok(true)
    }

    /// How many packets [`write_payload`](Self::write_payload) wrote whose
    /// report has not come (none with the connection's own header): those
    /// some channel still has in flight. A channel counts a packet lost
    /// once it is a window of frames old, so one the transport never
    /// reports is not kept for ever.
    pub fn awaiting_reports(&self) -> usize {
        let mut packets: Vec<u32> = self.states.iter().flat_map(SendState::in_flight).collect();
        packets.sort_unstable();
        packets.dedup();
        packets.len()
    }

    /// Whether `packet` awaits its report: some channel has it in flight
    /// (every payload with a section recorded it in the channels it
    /// carried), so the channels' records are the one account of it.
    fn awaits(&self, packet: u32) -> bool {
        self.states.iter().any(|state| state.has_in_flight(packet))
    }

    /// The next verdict the connection applied to its channels, oldest
    /// first: [`AckEvent::Acked`] with the number of a packet the client
    /// applied, or [`AckEvent::Lost`] with one whose work was due again.
    /// Every packet [`write_packet`](Self::write_packet) wrote (its
    /// [`PacketStats::packet`]) gets exactly one; on the transport's
    /// delivery reports, every payload with a section gets the one the
    /// transport reported ([`delivered`](Self::delivered),
    /// [`lost`](Self::lost)), when it does. They are kept until
    /// polled, at most [`MAX_VERDICTS`] of them: drain them every tick.
    pub fn poll_verdict(&mut self) -> Option<AckEvent> {
        self.verdicts.pop_front()
    }

    /// How many verdicts were dropped because more than [`MAX_VERDICTS`]
    /// waited to be polled.
    pub fn verdicts_dropped(&self) -> u64 {
        self.verdicts_dropped
    }

    /// Reads a packet from the client: the acknowledgements its header
    /// carries reach every channel, and what follows the header (the
    /// game's own data: inputs, commands) is returned, with the packet's
    /// number. The packet counts as received from then on (the next
    /// headers acknowledge it). A secure connection first checks the
    /// packet's token (or opens its seal): a packet that is not the
    /// client's is [`ConnectionError::Refused`] before its header is read.
    /// On error nothing changes. [`ConnectionError::WrongDelivery`] on
    /// the transport's delivery reports (the transport tells the server
    /// what arrived: [`delivered`](Self::delivered), [`lost`](Self::lost)).
    pub fn receive<'a>(
        &'a mut self,
        now: Instant,
        packet: &'a [u8],
    ) -> Result<(u32, &'a [u8]), ConnectionError> {
        self.expect(Delivery::Header)?;
        let span = observe::Span::receive();
        span.bytes(packet.len());
        let opened = open_with(self.session.as_ref(), packet, &mut self.opened)
            .map_err(ConnectionError::Refused)?;
        let inner = inner_of(opened.as_ref(), packet, &self.opened);
        let (header, payload) = AckHeader::read(inner)?;
        let payload_at = inner.len() - payload.len();
        let number = self.acks.receive(&header, now, packet.len())?;
        if let (Some(session), Some(opened)) = (&mut self.session, &opened) {
            session.take(opened);
        }
        self.acks.applied(number);
        span.packet(number);
        self.update(now);
        observe::rtt(&self.acks);
        let payload = &inner_of(opened.as_ref(), packet, &self.opened)[payload_at..];
        Ok((number, payload))
    }
}

/// A connection gone no longer counts in the gauges of `metrics`.
#[cfg(feature = "metrics")]
impl Drop for Connection {
    fn drop(&mut self) {
        for (channel, levels) in self.levels.iter_mut().enumerate() {
            levels.report(channel, observe::Levels::default());
        }
    }
}
