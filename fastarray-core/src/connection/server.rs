//! [`Connection`]: the server's side of one client's connection. It keeps
//! a [`SendState`] per channel (each array or object the client mirrors),
//! acknowledges packets with [`Acks`], and fills each packet up to an MTU
//! with the channels' deltas.

use std::collections::VecDeque;
use std::time::Instant;

use super::channel::{Outgoing, tag_bits, write_end, write_tag};
use super::error::ConnectionError;
use crate::ack::{AckConfig, AckEvent, AckHeader, Acks, LinkStats};
use crate::bits::BitWriter;
use crate::secure::Session;
use crate::send::SendState;
use crate::send::stats::{Budget, DeltaStats, Oversized};

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
    acks: Acks,
    states: Vec<SendState>,
    /// Per channel, the array or object it serves (its origin), once it
    /// wrote.
    sources: Vec<Option<u64>>,
    /// The channel offered room first in the next packet.
    turn: usize,
    /// One channel's section, before it is known to say something.
    scratch: Vec<u8>,
    /// The packets' protection, when made [`secure`](Self::secure).
    session: Option<Session>,
    /// A client's packet, decrypted.
    opened: Vec<u8>,
    /// The verdicts applied and not yet polled, oldest first.
    verdicts: VecDeque<AckEvent>,
    /// Verdicts dropped undrained past [`MAX_VERDICTS`].
    verdicts_dropped: u64,
}

/// What one [`Connection::write_packet`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// The packet's number ([`Acks`]'s extended sequence), which its
    /// acknowledgement or loss names.
    pub packet: u32,
    /// The packet's size, header included.
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
            acks: Acks::new(config),
            states: (0..channels).map(|_| SendState::new()).collect(),
            sources: vec![None; channels],
            turn: 0,
            scratch: Vec::new(),
            session: None,
            opened: Vec::new(),
            verdicts: VecDeque::new(),
            verdicts_dropped: 0,
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

    /// The packets' acknowledgements.
    pub fn acks(&self) -> &Acks {
        &self.acks
    }

    /// Round-trip time, loss and rates of the link.
    pub fn stats(&self) -> LinkStats {
        self.acks.stats()
    }

    /// Declares lost the packets whose acknowledgement is overdue at `now`,
    /// and tells every channel. [`write_packet`](Self::write_packet) and
    /// [`receive`](Self::receive) do it too.
    pub fn update(&mut self, now: Instant) {
        while let Some(event) = self.acks.poll(now) {
            for state in &mut self.states {
                match event {
                    AckEvent::Acked(packet) => state.on_ack(packet),
                    AckEvent::Lost(packet) => state.on_loss(packet),
                };
            }
            if self.verdicts.len() == MAX_VERDICTS {
                self.verdicts.pop_front();
                self.verdicts_dropped += 1;
            }
            self.verdicts.push_back(event);
        }
    }

    /// The next verdict the connection applied to its channels, oldest
    /// first: [`AckEvent::Acked`] with the number of a packet the client
    /// applied, or [`AckEvent::Lost`] with one whose work was due again.
    /// Every packet [`write_packet`](Self::write_packet) wrote (its
    /// [`PacketStats::packet`]) gets exactly one. They are kept until
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
    /// On error nothing changes.
    pub fn receive<'a>(
        &'a mut self,
        now: Instant,
        packet: &'a [u8],
    ) -> Result<(u32, &'a [u8]), ConnectionError> {
        let opened = match &self.session {
            Some(session) => Some(
                session
                    .unwrap(packet, &mut self.opened)
                    .map_err(ConnectionError::Refused)?,
            ),
            None => None,
        };
        let inner = match &opened {
            Some(opened) if opened.decrypted => &self.opened[opened.inner.clone()],
            Some(opened) => &packet[opened.inner.clone()],
            None => packet,
        };
        let (header, payload) = AckHeader::read(inner)?;
        let payload_at = inner.len() - payload.len();
        let number = self.acks.receive(&header, now, packet.len())?;
        if let (Some(session), Some(opened)) = (&mut self.session, &opened) {
            session.take(opened);
        }
        self.acks.applied(number);
        self.update(now);
        let payload = match &opened {
            Some(opened) if opened.decrypted => &self.opened[opened.inner.start + payload_at..],
            Some(opened) => &packet[opened.inner.start + payload_at..],
            None => &packet[payload_at..],
        };
        Ok((number, payload))
    }

    /// Appends to `out` the next packet to the client: the [`AckHeader`],
    /// then the deltas of `sources` (channel `n` is `sources[n]`, the same
    /// array or object every time), each as much as fits in `mtu` bytes in
    /// all. Work that does not fit stays due for the next packets. An item
    /// too large for any packet of `mtu` bytes goes alone, in a packet of
    /// up to [`MAX_PACKET`] bytes, when no other work is due.
    ///
    /// Send the packet even when it carries no section: its header
    /// acknowledges the client's packets. On error `out` is left as it
    /// was, and nothing is recorded as sent.
    pub fn write_packet(
        &mut self,
        now: Instant,
        mtu: usize,
        sources: &mut [&mut dyn Outgoing],
        out: &mut Vec<u8>,
    ) -> Result<PacketStats, ConnectionError> {
        self.check_sources(sources)?;
        self.update(now);
        let start = out.len();
        let overhead = self.overhead();
        let inner = match &mut self.session {
            Some(session) => session.begin(out).map_err(ConnectionError::Refused)?,
            None => start,
        };
        // The number comes first (the channels record it); the size is
        // counted once known.
        let (header, packet) = self.acks.send(now, 0);
        let head = AckHeader::BYTES + overhead;
        let limit = (mtu.clamp(head + 1, MAX_PACKET) - head) as u64 * 8;
        out.extend_from_slice(&header.to_bytes());
        let mut stats = PacketStats {
            packet,
            ..PacketStats::default()
        };
        let mut writer = BitWriter::new(out);
        let mut wrote = Vec::new();
        let written = self.write_sections(sources, packet, limit, &mut writer, &mut wrote);
        match written {
            Ok(totals) => stats.totals = totals,
            Err(error) => {
                drop(writer);
                self.unwrite(&wrote, packet, out, start);
                return Err(error);
            }
        }
        stats.sections = wrote.len();
        write_end(&mut writer);
        writer.finish();
        if let Some(session) = &mut self.session {
            if let Err(error) = session.finish(out, inner) {
                self.unwrite(&wrote, packet, out, start);
                return Err(ConnectionError::Refused(error));
            }
        }
        self.turn = (self.turn + 1) % self.states.len().max(1);
        let bytes = out.len() - start;
        self.acks.add_sent_bytes(now, bytes);
        stats.bytes = bytes;
        Ok(stats)
    }

    /// Writes the sections of `packet`, each channel offered the room left
    /// in `limit` bits, in turn; then, if none had anything that fit, the
    /// largest item too large for the MTU alone (within what a datagram
    /// holds). Pushes to `wrote` the channels that wrote a section, and
    /// returns their counts summed.
    fn write_sections(
        &mut self,
        sources: &mut [&mut dyn Outgoing],
        packet: u32,
        limit: u64,
        writer: &mut BitWriter<'_>,
        wrote: &mut Vec<usize>,
    ) -> Result<DeltaStats, ConnectionError> {
        let mut totals = DeltaStats::default();
        let mut oversized: Option<(usize, u64)> = None;
        let channels = self.states.len();
        for step in 0..channels {
            let channel = (self.turn + step) % channels;
            // Room for the tag, the section and the end bit.
            let room = limit.saturating_sub(writer.bits_written() + tag_bits(channel) + 1);
            if room < MIN_SECTION_BITS {
                continue;
            }
            let (section, said) =
                self.write_section(sources, channel, packet, Budget::of(room), writer)?;
            if said {
                wrote.push(channel);
                add(&mut totals, &section);
            }
            if let Some(item) = section.oversized {
                if oversized.is_none_or(|(_, bits)| item.bits > bits) {
                    oversized = Some((channel, item.bits));
                }
            }
        }
        if let (true, Some((channel, bits))) = (wrote.is_empty(), oversized) {
            let most = (MAX_PACKET - AckHeader::BYTES - self.overhead()) as u64 * 8
                - tag_bits(channel)
                - 1;
            let budget = Budget::of(bits.min(most));
            let (section, said) = self.write_section(sources, channel, packet, budget, writer)?;
            if said {
                wrote.push(channel);
                add(&mut totals, &section);
            }
        }
        Ok(totals)
    }

    /// Refuses `sources` that are not the connection's channels.
    fn check_sources(&self, sources: &[&mut dyn Outgoing]) -> Result<(), ConnectionError> {
        if sources.len() != self.states.len() {
            return Err(ConnectionError::ChannelCount {
                expected: self.states.len(),
                given: sources.len(),
            });
        }
        for (channel, (source, known)) in sources.iter().zip(&self.sources).enumerate() {
            if known.is_some_and(|origin| origin != source.__origin()) {
                return Err(ConnectionError::WrongSource { channel });
            }
            if source.__has_uncommitted_work() {
                return Err(ConnectionError::Send {
                    channel,
                    error: crate::error::SendError::Uncommitted,
                });
            }
        }
        Ok(())
    }

    /// Writes channel `channel`'s delta within `budget`, as a section of
    /// `writer` if it says something (then `true`), and returns its counts.
    fn write_section(
        &mut self,
        sources: &mut [&mut dyn Outgoing],
        channel: usize,
        packet: u32,
        budget: Budget,
        writer: &mut BitWriter<'_>,
    ) -> Result<(DeltaStats, bool), ConnectionError> {
        let source = &mut *sources[channel];
        self.sources[channel] = Some(source.__origin());
        let mut scratch = core::mem::take(&mut self.scratch);
        scratch.clear();
        let mut section = BitWriter::new(&mut scratch);
        let result = source.__write(&mut self.states[channel], packet, &mut section, budget);
        let bits = section.finish();
        // An empty delta is its one `0` bit: the channel has nothing to say,
        // and recorded nothing for the packet.
        let said = result.is_ok() && bits > 1;
        if said {
            write_tag(writer, channel);
            writer.write_bits_from(&scratch, bits);
        }
        self.scratch = scratch;
        result
            .map(|stats| (stats, said))
            .map_err(|error| ConnectionError::Send { channel, error })
    }

    /// Takes back the sections of `packet` written to `channels` (a later
    /// channel failed): they count as lost, so their work is due again.
    fn unwrite(&mut self, channels: &[usize], packet: u32, out: &mut Vec<u8>, start: usize) {
        for &channel in channels {
            self.states[channel].on_loss(packet);
        }
        out.truncate(start);
    }
}

/// Adds a section's counts to the packet's.
fn add(totals: &mut DeltaStats, section: &DeltaStats) {
    totals.absorb(section);
    totals.bits += section.bits;
    totals.left_scope += section.left_scope;
    totals.oversized = Oversized::merge(totals.oversized, section.oversized);
    totals.resynced |= section.resynced;
}
