//! The one lossy-channel simulation behind [`Link`](crate::link::Link) and
//! the wide suite's links ([`wide_link`](crate::wide_link)).
//!
//! A [`Channel`] models one direction of one connection (sender to
//! receiver) plus the path that carries delivery reports back to the
//! sender. Time is virtual, counted in ticks chosen by the caller; all
//! randomness comes from a [`ChaCha8Rng`] seeded at construction, and every
//! internal collection is ordered, so a run is fully determined by the
//! configuration, the seed and the sequence of calls.
//!
//! Its configuration is a [`LinkProfile`] (loss, Gilbert–Elliott bursts,
//! delay and reordering, duplication, losses delivered after their report,
//! outages: what a [`Link`](crate::link::Link) does) and an [`Extra`] on top
//! of it (ghosts and held packets, for the wide suite; [`Extra::NONE`] for a
//! `Link`). A misbehaviour whose probability is 0 draws nothing, so the
//! extras leave the draws of a profile without them as they are.
//!
//! The fate of every packet is decided when it is sent. Two waits keep the
//! reports consistent with the deliveries however the caller interleaves
//! [`Channel::deliver`] and [`Channel::reports`], even if it skips ticks:
//!
//! * a [`Report::Acked`] is held until a copy of its packet has been
//!   returned by `deliver` (without extras, its first copy: a duplicate
//!   arrives after the copy it duplicates): acknowledgements follow
//!   arrival;
//! * a copy that is delivered after its loss report (`late_after_loss`) is
//!   held until that report has been returned by `reports`.

use std::collections::{BTreeMap, BTreeSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::link::{LinkProfile, LinkStats, Report};

/// How long a held packet stays in the network, in ticks: from just past
/// the library's 64-frame window to well beyond it.
pub const HOLD: (u32, u32) = (65, 300);

/// The misbehaviours a [`Channel`] adds to its [`LinkProfile`]'s: what the
/// wide suite's transports do besides losing, delaying and duplicating
/// (see [`wide_link`](crate::wide_link) for what each models).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Extra {
    /// Probability that a packet that arrives is reported lost (its
    /// acknowledgement was lost, or the transport timed out too early), at
    /// a time drawn independently of its arrival (before or after it). Half
    /// of these are acknowledged as well, after their arrival: a transport
    /// that timed out and then heard the ack.
    pub ghost: f64,
    /// Probability that a packet, or a duplicate copy, is held [`HOLD`]
    /// ticks before it is delivered.
    pub hold: f64,
    /// Of the held packets (first copies), the share the transport
    /// acknowledges on arrival; the others it reports lost at the usual
    /// time.
    pub hold_acked: f64,
}

impl Extra {
    /// No ghosts, nothing held: a plain [`Link`](crate::link::Link).
    pub const NONE: Extra = Extra {
        ghost: 0.0,
        hold: 0.0,
        hold_acked: 0.0,
    };
}

/// Why a copy is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fate {
    /// A packet's first copy, delivered in the ordinary delay.
    First,
    /// A second copy.
    Duplicate,
    /// A lost packet delivered after its loss report.
    LateAfterLoss,
    /// A packet reported lost that arrived all the same.
    Ghost,
    /// A packet or copy held [`HOLD`] ticks.
    Held,
}

/// One copy handed to the receiver.
#[derive(Clone, Debug)]
pub struct Arrival<P> {
    /// The caller's packet id.
    pub packet: u32,
    /// The tick it was sent.
    pub sent_at: u32,
    /// Why it is delivered.
    pub fate: Fate,
    /// Whether a [`Report::Lost`] for it had already been returned.
    pub reported_lost: bool,
    /// What was sent.
    pub payload: P,
}

/// Counters kept by a [`Channel`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// What a [`Link`](crate::link::Link) counts. With extras, `acked` and
    /// `lost` count reports: a ghost whose acknowledgement also comes
    /// through counts in both, and a held packet reported lost counts as
    /// lost although it is delivered.
    pub link: LinkStats,
    /// Delivered packets reported lost.
    pub ghosts: u64,
    /// Packets or copies held [`HOLD`] ticks.
    pub held: u64,
}

/// A copy in the network.
#[derive(Debug)]
struct Flight<P> {
    /// Internal send counter of the packet.
    n: u64,
    packet: u32,
    sent_at: u32,
    fate: Fate,
    payload: P,
}

/// A report on its way back to the sender.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Internal send counter of the packet.
    n: u64,
    report: Report,
}

/// One direction of one simulated connection and its report path,
/// carrying payloads of type `P` (a duplicate is a clone; `bytes_sent`
/// counts `P::as_ref().len()`).
#[derive(Debug)]
pub struct Channel<P> {
    profile: LinkProfile,
    extra: Extra,
    rng: ChaCha8Rng,
    healed: bool,
    /// Gilbert–Elliott state.
    bad: bool,
    /// Internal send counter; numbers packets independently of caller ids.
    packets: u64,
    /// Tie-breaker making scheduled events with equal ticks FIFO.
    order: u64,
    /// Copies by `(arrival tick, order)`.
    in_flight: BTreeMap<(u32, u64), Flight<P>>,
    /// Reports by `(due tick, order)`.
    pending: BTreeMap<(u32, u64), Pending>,
    /// Packets whose ack waits for a copy's delivery.
    awaiting_delivery: BTreeSet<u64>,
    /// Late packets whose copy waits for their loss report.
    awaiting_report: BTreeSet<u64>,
    /// Packets whose loss report was returned.
    reported_lost: BTreeSet<u64>,
    stats: ChannelStats,
}

impl<P: Clone + AsRef<[u8]>> Channel<P> {
    /// A fresh channel misbehaving as `profile` says, plus `extra`,
    /// deterministic in `seed`.
    pub fn new(profile: LinkProfile, extra: Extra, seed: u64) -> Self {
        Channel {
            profile,
            extra,
            rng: ChaCha8Rng::seed_from_u64(seed),
            healed: false,
            bad: false,
            packets: 0,
            order: 0,
            in_flight: BTreeMap::new(),
            pending: BTreeMap::new(),
            awaiting_delivery: BTreeSet::new(),
            awaiting_report: BTreeSet::new(),
            reported_lost: BTreeSet::new(),
            stats: ChannelStats::default(),
        }
    }

    /// The profile the channel was built with.
    pub fn profile(&self) -> &LinkProfile {
        &self.profile
    }

    /// Whether [`Channel::heal`] has been called.
    pub fn is_healed(&self) -> bool {
        self.healed
    }

    /// From now on nothing sent is lost, duplicated, held or misreported
    /// (delays stay); what is in transit keeps its fate.
    pub fn heal(&mut self) {
        self.healed = true;
    }

    /// Whether no packet or report is in transit.
    pub fn idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty()
    }

    /// The earliest tick at which a copy or report is due, if any.
    pub fn next_due(&self) -> Option<u32> {
        let copy = self.in_flight.keys().next().map(|k| k.0);
        let report = self.pending.keys().next().map(|k| k.0);
        match (copy, report) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What is still in transit, for failure messages: `(tick, packet,
    /// fate)` of each copy and `(tick, report)` of each report.
    pub fn in_transit(&self) -> String {
        let copies: Vec<_> = self
            .in_flight
            .iter()
            .map(|(&(tick, _), f)| (tick, f.packet, f.fate))
            .collect();
        let reports: Vec<_> = self
            .pending
            .iter()
            .map(|(&(tick, _), p)| (tick, p.report))
            .collect();
        format!("copies {copies:?}, reports {reports:?}")
    }

    /// Counters so far.
    pub fn stats(&self) -> ChannelStats {
        self.stats
    }

    /// The sender hands packet `packet` to the channel at tick `now`; its
    /// fate is decided here.
    pub fn send(&mut self, now: u32, packet: u32, payload: P) {
        let sent = Sent {
            n: self.packets,
            packet,
            now,
        };
        self.packets += 1;
        self.stats.link.sent += 1;
        self.stats.link.bytes_sent += payload.as_ref().len() as u64;
        let arrival = now.saturating_add(self.draw(self.profile.delay));
        let report_at = arrival.saturating_add(self.draw(self.profile.ack_delay));
        if self.healed {
            self.copy(sent, arrival, Fate::First, payload);
            self.ack(sent, report_at);
            return;
        }
        let outage = self
            .profile
            .outage
            .is_some_and(|(start, len)| now >= start && now - start < len);
        // The loss is drawn in an outage too: a `Link`'s seeds have always
        // given runs with that draw, and keep giving the same runs.
        let loss = self.loss();
        let lost = self.chance(loss);
        if outage || lost {
            self.loss_report(sent, report_at);
            if !outage && self.chance(self.profile.late_after_loss) {
                self.stats.link.late_after_loss += 1;
                // Strictly after the loss report, by up to a full extra
                // one-way delay and a few ticks.
                let spread = longest(self.profile.delay).saturating_add(4);
                let late = report_at.saturating_add(1 + self.draw((0, spread)));
                self.awaiting_report.insert(sent.n);
                self.copy(sent, late, Fate::LateAfterLoss, payload);
            }
            return;
        }
        if self.chance(self.extra.hold) {
            self.stats.held += 1;
            let at = now.saturating_add(self.draw(HOLD));
            if self.chance(self.extra.hold_acked) {
                let acked_at = at.saturating_add(self.draw(self.profile.ack_delay));
                self.ack(sent, acked_at);
            } else {
                self.loss_report(sent, report_at);
            }
            self.copy(sent, at, Fate::Held, payload);
            return;
        }
        if self.chance(self.profile.duplicate) {
            self.stats.link.duplicated += 1;
            let (at, fate) = if self.chance(self.extra.hold) {
                self.stats.held += 1;
                (now.saturating_add(self.draw(HOLD)), Fate::Held)
            } else {
                let delay = self.draw(self.profile.delay);
                (
                    arrival.saturating_add(1).saturating_add(delay),
                    Fate::Duplicate,
                )
            };
            self.copy(sent, at, fate, payload.clone());
        }
        if self.chance(self.extra.ghost) {
            self.stats.ghosts += 1;
            // The transport's timer knows nothing of the arrival.
            let spread = longest(self.profile.delay) + longest(self.profile.ack_delay) + 2;
            let lost_at = now.saturating_add(self.draw((0, spread)));
            self.loss_report(sent, lost_at);
            self.copy(sent, arrival, Fate::Ghost, payload);
            if self.chance(0.5) {
                self.ack(sent, report_at);
            }
            return;
        }
        self.copy(sent, arrival, Fate::First, payload);
        self.ack(sent, report_at);
    }

    /// Copies that arrive by tick `now` (everything due at or before `now`
    /// not yet returned), in arrival order; duplicates appear as separate
    /// copies.
    pub fn deliver(&mut self, now: u32) -> Vec<Arrival<P>> {
        let awaiting_report = &self.awaiting_report;
        let copies = due(&mut self.in_flight, now, |flight| {
            flight.fate == Fate::LateAfterLoss && awaiting_report.contains(&flight.n)
        });
        let mut out = Vec::with_capacity(copies.len());
        for flight in copies {
            self.awaiting_delivery.remove(&flight.n);
            self.stats.link.delivered += 1;
            out.push(Arrival {
                packet: flight.packet,
                sent_at: flight.sent_at,
                fate: flight.fate,
                reported_lost: self.reported_lost.contains(&flight.n),
                payload: flight.payload,
            });
        }
        out
    }

    /// Reports that reach the sender by tick `now`, an ack only once a copy
    /// of its packet has been delivered.
    pub fn reports(&mut self, now: u32) -> Vec<Report> {
        let awaiting_delivery = &self.awaiting_delivery;
        let reports = due(&mut self.pending, now, |pending| {
            matches!(pending.report, Report::Acked(_)) && awaiting_delivery.contains(&pending.n)
        });
        let mut out = Vec::with_capacity(reports.len());
        for pending in reports {
            if let Report::Lost(_) = pending.report {
                self.reported_lost.insert(pending.n);
                self.awaiting_report.remove(&pending.n);
            }
            out.push(pending.report);
        }
        out
    }

    /// The loss probability of the packet being sent, advancing the
    /// Gilbert–Elliott state once if the profile has bursts.
    fn loss(&mut self) -> f64 {
        let Some(ge) = self.profile.burst else {
            return self.profile.loss;
        };
        let flip = if self.bad {
            ge.p_bad_to_good
        } else {
            ge.p_good_to_bad
        };
        if self.chance(flip) {
            self.bad = !self.bad;
        }
        if self.bad {
            ge.loss_bad
        } else {
            self.profile.loss
        }
    }

    /// Schedules a copy of `sent` to arrive at tick `at`.
    fn copy(&mut self, sent: Sent, at: u32, fate: Fate, payload: P) {
        let key = self.key(at);
        self.in_flight.insert(
            key,
            Flight {
                n: sent.n,
                packet: sent.packet,
                sent_at: sent.now,
                fate,
                payload,
            },
        );
    }

    /// Schedules `sent`'s acknowledgement at tick `at`, to wait for a
    /// copy's delivery.
    fn ack(&mut self, sent: Sent, at: u32) {
        self.stats.link.acked += 1;
        self.awaiting_delivery.insert(sent.n);
        self.report(sent.n, at, Report::Acked(sent.packet));
    }

    /// Schedules `sent`'s loss report at tick `at`.
    fn loss_report(&mut self, sent: Sent, at: u32) {
        self.stats.link.lost += 1;
        self.report(sent.n, at, Report::Lost(sent.packet));
    }

    fn report(&mut self, n: u64, at: u32, report: Report) {
        let key = self.key(at);
        self.pending.insert(key, Pending { n, report });
    }

    fn key(&mut self, tick: u32) -> (u32, u64) {
        self.order += 1;
        (tick, self.order)
    }

    /// Uniform in `[lo, hi]` (bounds in either order).
    fn draw(&mut self, (lo, hi): (u32, u32)) -> u32 {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        if lo == hi {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }

    /// True with probability `p` (clamped to `[0, 1]`); draws nothing when
    /// `p` is 0 or 1.
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.rng.random::<f64>() < p)
    }
}

/// The packet a send schedules copies and reports for.
#[derive(Clone, Copy, Debug)]
struct Sent {
    /// Internal send counter.
    n: u64,
    /// The caller's packet id.
    packet: u32,
    /// The tick it was sent.
    now: u32,
}

/// Takes from `queue` (keyed by `(tick, order)`) the entries due by tick
/// `now`, in order, but those that `waits` holds back: they stay where
/// they are, for a later call. (What the caller does with the entries it
/// takes never changes what `waits` says.)
fn due<V>(queue: &mut BTreeMap<(u32, u64), V>, now: u32, waits: impl Fn(&V) -> bool) -> Vec<V> {
    let mut out = Vec::new();
    let mut held = Vec::new();
    while let Some(entry) = queue.first_entry() {
        if entry.key().0 > now {
            break;
        }
        let (key, value) = entry.remove_entry();
        if waits(&value) {
            held.push((key, value));
        } else {
            out.push(value);
        }
    }
    queue.extend(held);
    out
}

/// The upper bound of a `[min, max]` range given in either order.
fn longest((a, b): (u32, u32)) -> u32 {
    a.max(b)
}
