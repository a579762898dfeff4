//! [`Acks`]: one side of a connection's acknowledgement state.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::config::AckConfig;
use super::error::AckError;
use super::header::AckHeader;
use super::received::ReceivedPackets;
use super::rtt::RttEstimator;
use super::sent::SentPackets;
use super::sequence::{HALF, after};
use super::stats::{LinkStats, LossWindow, RateWindow};

/// What became of one of this side's packets ([`Acks::poll`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckEvent {
    /// The peer applied the packet: hand its number to
    /// [`SendState::on_ack`](crate::SendState::on_ack).
    Acked(u32),
    /// The packet is given up on: hand its number to
    /// [`SendState::on_loss`](crate::SendState::on_loss), which makes its
    /// content due again.
    Lost(u32),
}

/// One side of a connection's packet acknowledgements (each side has
/// one): numbers outgoing packets, reads the acknowledgements in incoming
/// headers, and reports each of its own packets acknowledged or lost.
/// Sans-IO: it never touches a socket or a clock; every method that needs
/// the time takes it.
///
/// The calls, per packet:
///
/// - **sending**: [`send`](Self::send) gives the header to write first
///   and the packet's number (the one to pass to
///   [`FastArray::write_delta`](crate::FastArray::write_delta));
/// - **receiving**: [`AckHeader::read`], then [`receive`](Self::receive),
///   which reads the header's acknowledgements and gives the peer's packet
///   number (drop the packet on an error); decode the payload and, if it
///   applied, call [`applied`](Self::applied) with that number;
/// - **after each** (and on a timer, see [`poll_timeout`](Self::poll_timeout)):
///   [`poll`](Self::poll) until `None`, handing each
///   [`AckEvent`] to the [`SendState`](crate::SendState).
///
/// Getters: [`stats`](Self::stats), [`in_flight`](Self::in_flight),
/// [`config`](Self::config).
///
/// Each packet sent gets exactly one event. Events wait in a queue until
/// polled (one per packet at most); everything else has a fixed size,
/// whatever the peer sends.
///
/// Limits: acknowledgements are exact while fewer than 32 768 packets of
/// one side go by without the other side applying one (the 16-bit `ack`
/// is then extended to the wrong packet); close a connection that stops
/// hearing from its peer well before (game transports time out in seconds).
#[derive(Clone, Debug)]
pub struct Acks {
    config: AckConfig,
    sent: SentPackets,
    received: ReceivedPackets,
    rtt: RttEstimator,
    events: VecDeque<AckEvent>,
    /// The newest of this side's packets a header acknowledged.
    largest_acked: Option<u32>,
    /// The oldest peer packet seen acknowledging something: from then on
    /// the peer's "nothing applied" header value is a real acknowledgement.
    peer_acking_since: Option<u32>,
    loss: LossWindow,
    sent_rate: RateWindow,
    received_rate: RateWindow,
    packets_acked: u64,
    packets_lost: u64,
    /// Scratch list of packets to declare lost (kept to reuse its memory).
    losing: Vec<u32>,
    /// The packets declared lost by reordering that a header can still
    /// acknowledge (33 back from the newest acknowledged, so a header's
    /// check of them is short): one acknowledged after all was only
    /// overtaken, and widens the reordering window.
    overtaken: VecDeque<u32>,
    /// The reordering window's multiple: 1, doubled (up to
    /// [`MAX_REORDER_SCALE`]) by each loss found spurious, halved after
    /// [`CALM_ACKS`] acknowledgements without one (as TCP's RACK adapts
    /// its window).
    reorder_scale: u8,
    /// Acknowledgements since the last spurious loss.
    calm: u32,
}

/// The most packets kept to tell a spurious loss by reordering.
const OVERTAKEN_KEPT: usize = 64;
/// The widest reordering window, in multiples of the configured one.
const MAX_REORDER_SCALE: u8 = 8;
/// Acknowledgements without a spurious loss that halve the window again.
const CALM_ACKS: u32 = 256;

impl Default for Acks {
    fn default() -> Self {
        Self::new(AckConfig::default())
    }
}

impl Acks {
    /// An endpoint that has sent and received nothing.
    pub fn new(config: AckConfig) -> Self {
        Self {
            sent: SentPackets::new(config.first_packet, config.window()),
            received: ReceivedPackets::default(),
            rtt: RttEstimator::new(config.initial_rtt),
            events: VecDeque::new(),
            largest_acked: None,
            peer_acking_since: None,
            loss: LossWindow::default(),
            sent_rate: RateWindow::default(),
            received_rate: RateWindow::default(),
            packets_acked: 0,
            packets_lost: 0,
            losing: Vec::new(),
            overtaken: VecDeque::new(),
            reorder_scale: 1,
            calm: 0,
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &AckConfig {
        &self.config
    }

    /// Starts an outgoing packet: the header to write at its start (it
    /// acknowledges what this side applied so far) and the packet's number,
    /// its sequence extended to 32 bits: the number to hand to
    /// [`FastArray::write_delta`](crate::FastArray::write_delta), and the
    /// one its [`AckEvent`] will carry. `bytes` is the packet's whole size,
    /// for [`LinkStats::sent_bytes_per_second`].
    ///
    /// If the oldest packet awaiting acknowledgement is
    /// [`max_in_flight`](AckConfig::max_in_flight) packets old, it is
    /// declared lost first.
    pub fn send(&mut self, now: Instant, bytes: usize) -> (AckHeader, u32) {
        if let Some(oldest) = self.sent.overflowing() {
            self.lose(oldest);
        }
        let packet = self.sent.push(now);
        self.sent_rate.record(now, bytes);
        self.received_rate.advance(now);
        let (ack, ack_bits) = self.received.acks();
        let header = AckHeader {
            sequence: packet as u16, // the low bits are the sequence
            ack,
            ack_bits,
        };
        (header, packet)
    }

    /// Adds `bytes` to the bytes sent at `now`, for a packet whose size
    /// was not known yet at [`send`](Self::send) (which took 0 for it):
    /// the packet number comes before the payload is written.
    pub fn add_sent_bytes(&mut self, now: Instant, bytes: usize) {
        self.sent_rate.record(now, bytes);
    }

    /// Reads the acknowledgements in a header received from the peer
    /// (queuing [`AckEvent`]s) and returns the peer's packet number, the
    /// one to give [`applied`](Self::applied) once the payload is applied.
    /// This does not acknowledge the peer's packet yet.
    ///
    /// On an error nothing changed: drop the packet. A duplicate
    /// ([`AckError::Duplicate`]) and a packet more than 32 packets older
    /// than the newest received ([`AckError::TooOld`]) are refused; so is a
    /// header acknowledging a packet this side never sent
    /// ([`AckError::AckFromFuture`]). Bits of `ack_bits` naming packets
    /// never sent or already resolved are ignored.
    ///
    /// The peer's packet numbers: the first packet received is numbered as
    /// its sequence, later ones relative to the newest received (nearest
    /// number with those low 16 bits). They match the peer's own numbers
    /// when its packets start below 65 536 (the default) and fewer than
    /// 32 768 are lost in a row.
    ///
    /// `bytes` is the whole packet's size, for
    /// [`LinkStats::received_bytes_per_second`].
    pub fn receive(
        &mut self,
        header: &AckHeader,
        now: Instant,
        bytes: usize,
    ) -> Result<u32, AckError> {
        let packet = self.received.check(header.sequence)?;
        let acked = self.acked_by(header, packet)?;
        // Checked: from here on, nothing fails.
        self.received.receive(packet);
        if acked.is_some()
            && !self
                .peer_acking_since
                .is_some_and(|since| after(packet, since))
        {
            self.peer_acking_since = Some(packet);
        }
        self.received_rate.record(now, bytes);
        self.sent_rate.advance(now);
        if let Some(ack) = acked {
            self.on_acks(ack, header.ack_bits, now);
        }
        Ok(packet)
    }

    /// The packet number the header's `ack` names (`None` if it
    /// acknowledges nothing), or why the header is refused.
    fn acked_by(&self, header: &AckHeader, packet: u32) -> Result<Option<u32>, AckError> {
        let nothing = header.ack == AckHeader::NOTHING && header.ack_bits == 0;
        if nothing
            && !self
                .peer_acking_since
                .is_some_and(|since| after(packet, since))
        {
            return Ok(None);
        }
        let Some(newest) = self.sent.newest() else {
            return Err(AckError::AckFromFuture {
                ack: header.ack,
                newest_sent: None,
            });
        };
        let newest_sequence = newest as u16; // the low bits are the sequence
        let behind = newest_sequence.wrapping_sub(header.ack);
        if behind > HALF || u64::from(behind) >= self.sent.count() {
            return Err(AckError::AckFromFuture {
                ack: header.ack,
                newest_sent: Some(newest_sequence),
            });
        }
        Ok(Some(newest.wrapping_sub(u32::from(behind))))
    }

    /// Handles the packets a header acknowledges: `ack` and those `bits`
    /// names, oldest first.
    fn on_acks(&mut self, ack: u32, bits: u32, now: Instant) {
        for bit in (0..32u32).rev() {
            if bits >> bit & 1 == 1 {
                self.ack(ack.wrapping_sub(bit + 1));
            }
        }
        // Karn: the round trip of the header's newest packet, if this
        // header is the first to acknowledge it (not a packet already lost).
        if let Some(sent) = self.sent.unresolved_time(ack) {
            self.rtt.sample(now.saturating_duration_since(sent));
        }
        self.ack(ack);
        if self.largest_acked.is_none_or(|largest| after(ack, largest)) {
            self.largest_acked = Some(ack);
        }
        // Out of the window of the newest acknowledgement: no later header
        // can acknowledge these.
        if let Some(largest) = self.largest_acked {
            // Nor can they tell an overtaken packet from a lost one.
            let reach = largest.wrapping_sub(32);
            self.overtaken.retain(|&lost| !after(reach, lost));
            let mut losing = std::mem::take(&mut self.losing);
            self.sent.unresolved_before(reach, &mut losing);
            for packet in losing.drain(..) {
                self.lose(packet);
            }
            self.losing = losing;
        }
    }

    /// `packet` was acknowledged: an event if it was unresolved, and one
    /// more later acknowledgement for each unresolved packet before it.
    fn ack(&mut self, packet: u32) {
        let Some(time) = self.sent.unresolved_time(packet) else {
            if let Some(index) = self.overtaken.iter().position(|&lost| lost == packet) {
                // Declared lost by reordering, yet it arrived: the path
                // reorders more than the window allowed.
                self.overtaken.remove(index);
                self.reorder_scale = (self.reorder_scale * 2).min(MAX_REORDER_SCALE);
                self.calm = 0;
            }
            return;
        };
        self.sent.resolve(packet);
        self.calm += 1;
        if self.calm >= CALM_ACKS && self.reorder_scale > 1 {
            self.reorder_scale /= 2;
            self.calm = 0;
        }
        self.events.push_back(AckEvent::Acked(packet));
        self.packets_acked += 1;
        self.loss.push(false);
        let mut losing = std::mem::take(&mut self.losing);
        // Packets sent within the reordering window before this one may
        // just have been overtaken.
        let fraction = self.config.window_fraction() * f32::from(self.reorder_scale);
        let window = self.rtt.srtt().mul_f32(fraction);
        let cutoff = time.checked_sub(window);
        self.sent
            .count_later_ack(packet, cutoff, self.config.threshold(), &mut losing);
        for lost in losing.drain(..) {
            self.lose(lost);
            if self.overtaken.len() == OVERTAKEN_KEPT {
                self.overtaken.pop_front();
            }
            self.overtaken.push_back(lost);
        }
        self.losing = losing;
    }

    /// Declares `packet` lost, if it is unresolved.
    fn lose(&mut self, packet: u32) {
        if self.sent.resolve(packet) {
            self.events.push_back(AckEvent::Lost(packet));
            self.packets_lost += 1;
            self.loss.push(true);
        }
    }

    /// The peer applied its packet `packet` (a number
    /// [`receive`](Self::receive) returned): from now on this side's
    /// headers acknowledge it. A packet that failed to decode is never
    /// acknowledged, so its sender repairs what it carried. A number never
    /// received, or more than 32 packets older than the newest received
    /// or applied, does nothing.
    pub fn applied(&mut self, packet: u32) {
        self.received.apply(packet);
    }

    /// The next event about this side's own packets, after declaring lost
    /// the packets unacknowledged for longer than the timeout at `now`.
    ///
    /// Each packet sent gets exactly one event, [`AckEvent::Acked`] or
    /// [`AckEvent::Lost`]. A packet is lost when it was not acknowledged
    /// while [`reorder_threshold`](AckConfig::reorder_threshold) later
    /// packets were, when no acknowledgement came within the timeout (see
    /// [`AckConfig::rtt_factor`]), when it fell out of the 33 packets a
    /// header can acknowledge behind the newest acknowledged, or when the
    /// window of [`max_in_flight`](AckConfig::max_in_flight) packets is
    /// full at a [`send`](Self::send). A lost packet may yet have been
    /// applied (its acknowledgements were lost); an acknowledged one was.
    pub fn poll(&mut self, now: Instant) -> Option<AckEvent> {
        let timeout = self.timeout();
        while let Some((packet, sent)) = self.sent.oldest() {
            if now.saturating_duration_since(sent) < timeout {
                break;
            }
            self.lose(packet);
        }
        self.sent_rate.advance(now);
        self.received_rate.advance(now);
        self.events.pop_front()
    }

    /// When [`poll`](Self::poll) will next declare a packet lost by
    /// timeout, if no acknowledgement comes first: a time to wake up at.
    /// `None` when no packet awaits acknowledgement.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let (_, sent) = self.sent.oldest()?;
        sent.checked_add(self.timeout())
    }

    /// How long after its sending an unacknowledged packet is lost:
    /// `max(srtt + 4 × rttvar, rtt_factor × srtt)`, clamped to
    /// `min_timeout..=max_timeout`.
    pub fn timeout(&self) -> Duration {
        self.rtt.timeout(&self.config)
    }

    /// What was measured of the link so far.
    pub fn stats(&self) -> LinkStats {
        LinkStats {
            rtt: self.rtt.srtt(),
            rtt_variance: self.rtt.rttvar(),
            loss: self.loss.rate(),
            sent_bytes_per_second: self.sent_rate.per_second(),
            received_bytes_per_second: self.received_rate.per_second(),
            packets_sent: self.sent.count(),
            packets_acked: self.packets_acked,
            packets_lost: self.packets_lost,
        }
    }

    /// This side's packets neither acknowledged nor declared lost yet.
    pub fn in_flight(&self) -> usize {
        self.sent.unresolved()
    }
}
