//! Filling a packet: each channel offered the room left, in turn from a
//! rotating first channel, its section written straight into the packet
//! after its tag (and taken back if it said nothing); the largest item too
//! large for the MTU alone when nothing else fits; and, on error, every
//! section of the packet taken back.

use std::time::Instant;

use super::{Connection, MAX_PACKET, MIN_SECTION_BITS, PacketStats, Written};
use crate::ack::AckHeader;
use crate::bits::BitWriter;
use crate::connection::channel::{Outgoing, tag_bits, write_end, write_tag};
use crate::connection::delivery::Delivery;
use crate::connection::error::ConnectionError;
use crate::connection::observe;
use crate::send_state::stats::{Budget, DeltaStats, Oversized};

impl Connection {
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
    /// [`ConnectionError::WrongDelivery`] on the transport's delivery
    /// reports: see [`write_payload`](Self::write_payload).
    pub fn write_packet(
        &mut self,
        now: Instant,
        mtu: usize,
        sources: &mut [&mut dyn Outgoing],
        out: &mut Vec<u8>,
    ) -> Result<PacketStats, ConnectionError> {
        self.expect(Delivery::Header)?;
        self.check_sources(sources)?;
        let span = observe::Span::write_packet();
        self.update(now);
        let start = out.len();
        let inner = match &mut self.session {
            Some(session) => session.begin(out).map_err(ConnectionError::Refused)?,
            None => start,
        };
        // The number comes first (the channels record it); the size is
        // counted once known.
        let (header, packet) = self.acks.send(now, 0);
        span.packet(packet);
        out.extend_from_slice(&header.to_bytes());
        let head = AckHeader::BYTES + self.overhead();
        let (totals, sections) = self.pack(sources, packet, mtu, head, out, start)?;
        if let Some(session) = &mut self.session {
            if let Err(error) = session.finish(out, inner) {
                self.unwrite(packet, out, start);
                return Err(ConnectionError::Refused(error));
            }
        }
        let stats = self.written_packet(&span, packet, out.len() - start, totals, sections);
        self.acks.add_sent_bytes(now, stats.bytes);
        Ok(stats)
    }

    /// Appends to `out` the next payload to the client on the transport's
    /// delivery reports ([`with_delivery_reports`](Self::with_delivery_reports)),
    /// numbered `packet` by the caller: the same sections
    /// [`write_packet`](Self::write_packet) writes after its header, as
    /// much as fits in `mtu` bytes (the most the transport carries in one
    /// message), and an item too large for any payload of `mtu` bytes
    /// alone, in one of up to [`MAX_PACKET`] bytes, when no other work is
    /// due.
    ///
    /// Send it as one message and report its fate by `packet`:
    /// [`delivered`](Self::delivered) or [`lost`](Self::lost). A payload
    /// with no section ([`PacketStats::sections`] `== 0`, one byte) need
    /// not be sent: nothing was recorded for it, and a report on it is
    /// ignored. `packet` may be any number not awaiting its report (a
    /// counter that wraps is fine); one still awaited is refused
    /// ([`ConnectionError::PacketInFlight`]). On error `out` is left as it
    /// was, and nothing is recorded as sent; on a connection with its own
    /// header, [`ConnectionError::WrongDelivery`].
    ///
    /// ```
    /// use fastarray_core::{Connection, FastArray, MirrorConnection};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { name: String, hp: u8 }
    ///
    /// let mut units = FastArray::new();
    /// for n in 0..200 {
    ///     units.push(Unit { name: format!("unit {n}"), hp: 100 });
    /// }
    /// units.commit();
    /// let mut conn = Connection::with_delivery_reports(1);
    /// let mut client = MirrorConnection::with_delivery_reports(1);
    /// let mut mirror = FastArray::<Unit>::mirror();
    ///
    /// // The transport's message numbers (here a counter); the join goes
    /// // over several payloads of at most 1 200 bytes.
    /// let mut payload = Vec::new();
    /// for number in 0..20u32 {
    ///     payload.clear();
    ///     let stats = conn.write_payload(number, 1_200, &mut [&mut units], &mut payload).unwrap();
    ///     if stats.sections == 0 {
    ///         break; // nothing to say: send nothing
    ///     }
    ///     assert!(payload.len() <= 1_200);
    ///     // The transport carries it; the client applies it...
    ///     client.apply_payload(&payload, &mut [&mut mirror]).unwrap();
    ///     // ...and the transport reports it delivered (or lost).
    ///     assert!(conn.delivered(number).unwrap());
    /// }
    /// assert_eq!(mirror, units);
    /// ```
    pub fn write_payload(
        &mut self,
        packet: u32,
        mtu: usize,
        sources: &mut [&mut dyn Outgoing],
        out: &mut Vec<u8>,
    ) -> Result<PacketStats, ConnectionError> {
        self.expect(Delivery::Reports)?;
        self.check_sources(sources)?;
        if self.awaits(packet) {
            return Err(ConnectionError::PacketInFlight { packet });
        }
        let span = observe::Span::write_payload();
        span.packet(packet);
        let start = out.len();
        let (totals, sections) = self.pack(sources, packet, mtu, 0, out, start)?;
        Ok(self.written_packet(&span, packet, out.len() - start, totals, sections))
    }

    /// A packet (or payload) of `bytes` written: the next one starts with
    /// the next channel, and what it was is told and returned.
    fn written_packet(
        &mut self,
        span: &observe::Span,
        packet: u32,
        bytes: usize,
        totals: DeltaStats,
        sections: usize,
    ) -> PacketStats {
        self.next_turn();
        span.bytes(bytes);
        observe::packet(bytes);
        PacketStats {
            packet,
            bytes,
            sections,
            totals,
        }
    }

    /// Writes the sections of `packet` to `out` and their end, in a packet
    /// of `mtu` bytes of which `head` go to what precedes and follows them
    /// (the header, the session's), and returns their counts summed and how
    /// many channels wrote one: the rules of both modes, in one place. On
    /// error `out` is truncated to `start` and nothing is recorded as sent.
    fn pack(
        &mut self,
        sources: &mut [&mut dyn Outgoing],
        packet: u32,
        mtu: usize,
        head: usize,
        out: &mut Vec<u8>,
        start: usize,
    ) -> Result<(DeltaStats, usize), ConnectionError> {
        let limit = (mtu.clamp(head + 1, MAX_PACKET) - head) as u64 * 8;
        let mut writer = BitWriter::new(out);
        let mut wrote = core::mem::take(&mut self.written);
        wrote.clear();
        let written = self.write_sections(sources, packet, limit, head, &mut writer, &mut wrote);
        let result = match written {
            Ok(totals) => {
                write_end(&mut writer);
                writer.finish();
                Ok((totals, self.count(&wrote)))
            }
            Err(error) => {
                drop(writer);
                self.unwrite(packet, out, start);
                Err(error)
            }
        };
        self.written = wrote;
        result
    }

    /// Counts the channels' writes into a packet written, and returns how
    /// many wrote a section.
    fn count(&mut self, wrote: &[Written]) -> usize {
        let mut sections = 0;
        for &(channel, ref delta, bits) in wrote {
            let counters = &mut self.counters[channel];
            observe::section(channel, counters.bits(), bits, delta);
            counters.wrote(bits, delta);
            sections += usize::from(bits > 0);
            if let Some(item) = &delta.oversized {
                observe::oversized(channel, item);
            }
        }
        #[cfg(feature = "metrics")]
        for (channel, levels) in self.levels.iter_mut().enumerate() {
            let stats = self.counters[channel].read(&self.states[channel]);
            levels.report(channel, observe::Levels::of(&stats));
        }
        sections
    }

    /// The next packet starts with the next channel, so none starves.
    fn next_turn(&mut self) {
        self.turn = (self.turn + 1) % self.states.len().max(1);
    }

    /// Writes the sections of `packet`, each channel offered the room left
    /// in `limit` bits, in turn; then, if none had anything that fit, the
    /// largest item too large for the MTU alone (within what a datagram
    /// holds, less `head` bytes). Pushes to `wrote` each channel's write
    /// (with the bits of its section, 0 for none), and returns the counts
    /// of those with a section summed.
    fn write_sections(
        &mut self,
        sources: &mut [&mut dyn Outgoing],
        packet: u32,
        limit: u64,
        head: usize,
        writer: &mut BitWriter<'_>,
        wrote: &mut Vec<Written>,
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
            wrote.push((channel, section, said));
            if said > 0 {
                add(&mut totals, &section);
            }
            if let Some(item) = section.oversized {
                if oversized.is_none_or(|(_, bits)| item.bits > bits) {
                    oversized = Some((channel, item.bits));
                }
            }
        }
        let none = wrote.iter().all(|&(_, _, said)| said == 0);
        if let (true, Some((channel, bits))) = (none, oversized) {
            let most = (MAX_PACKET - head) as u64 * 8 - tag_bits(channel) - 1;
            let budget = Budget::of(bits.min(most));
            let (section, said) = self.write_section(sources, channel, packet, budget, writer)?;
            wrote.push((channel, section, said));
            if said > 0 {
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
    /// `writer` if it says something, and returns its counts and the
    /// section's bits, tag included (0 if it said nothing). The tag goes
    /// first and the channel writes straight after it, into the packet;
    /// if the channel said nothing or failed, both are taken back.
    fn write_section(
        &mut self,
        sources: &mut [&mut dyn Outgoing],
        channel: usize,
        packet: u32,
        budget: Budget,
        writer: &mut BitWriter<'_>,
    ) -> Result<(DeltaStats, u64), ConnectionError> {
        let source = &mut *sources[channel];
        self.sources[channel] = Some(source.__origin());
        let mark = writer.bits_written();
        write_tag(writer, channel);
        let result = source.__write(&mut self.states[channel], packet, writer, budget);
        let said = writer.bits_written() - mark;
        // An empty delta is its one `0` bit: the channel has nothing to say,
        // and recorded nothing for the packet.
        let said = if result.is_ok() && said > tag_bits(channel) + 1 {
            said
        } else {
            writer.truncate(mark);
            0
        };
        result
            .map(|stats| (stats, said))
            .map_err(|error| ConnectionError::Send { channel, error })
    }

    /// Takes back the sections of `packet` (a later channel or the
    /// session failed): they count as lost, so their work is due again (a
    /// channel that wrote none for it has nothing to take back).
    fn unwrite(&mut self, packet: u32, out: &mut Vec<u8>, start: usize) {
        for state in &mut self.states {
            state.on_loss(packet);
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
