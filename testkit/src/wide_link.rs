//! The lossy link of the wide convergence suite (`tests/convergence_wide.rs`).
//!
//! Like `link.rs` it models one direction of one connection plus the path
//! of delivery reports back to the sender, in virtual ticks, with every
//! random draw from a seeded [`ChaCha8Rng`] and every collection ordered,
//! so a run is determined by the profile, the seed and the calls. Besides
//! loss, bursts, reordering, duplication, losses delivered after their
//! report and outages, it has the transport misbehaviours that `link.rs`
//! leaves out:
//!
//! * **ghosts**: a packet that arrives but is reported [`Report::Lost`]
//!   (its acknowledgement was lost, or the transport timed out too early),
//!   the report coming before or after the arrival;
//! * **held packets**: a packet (or a duplicate copy) kept 65–300 ticks in
//!   the network and then delivered, far past the library's 64-frame
//!   window; the transport reports it lost at the usual time, or
//!   acknowledges it when it finally arrives.
//!
//! Acknowledgements follow arrival, as in most UDP game transports: a
//! packet is reported [`Report::Acked`] when its first copy is handed out by
//! [`WideLink::deliver`], whatever the receiver makes of it. Every packet
//! gets one report, except half the ghosts, whose acknowledgement also
//! comes through after all (before or after the loss report): a
//! transport that timed out and then heard the ack.

use std::collections::{BTreeMap, BTreeSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How long a held packet stays in the network, in ticks.
pub const HOLD: (u32, u32) = (65, 300);

/// A Gilbert–Elliott two-state channel, advanced once per packet sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Burst {
    /// Probability of moving from the good to the bad state, per packet.
    pub enter: f64,
    /// Probability of moving from the bad to the good state, per packet.
    pub leave: f64,
    /// Loss probability in the bad state.
    pub loss: f64,
}

/// How a [`WideLink`] misbehaves.
#[derive(Clone, Debug, PartialEq)]
pub struct WideProfile {
    /// A short name for messages.
    pub name: &'static str,
    /// Independent loss probability per packet (in the good state of
    /// `burst`, when set).
    pub loss: f64,
    /// Bursty loss on top of `loss`.
    pub burst: Option<Burst>,
    /// Probability that a delivered packet gets a second copy, later.
    pub duplicate: f64,
    /// One-way delay in ticks, uniform in `[min, max]`: a spread reorders.
    pub delay: (u32, u32),
    /// Delay of a report after the arrival (acks) or would-be arrival
    /// (losses), uniform in `[min, max]`.
    pub ack_delay: (u32, u32),
    /// Probability that a lost packet (not in an outage) is delivered anyway,
    /// after its loss report.
    pub late_after_loss: f64,
    /// Probability that a packet that arrives is reported lost, at a time
    /// drawn independently of its arrival (before or after it).
    pub ghost: f64,
    /// Probability that a packet, or a duplicate copy, is held [`HOLD`]
    /// ticks before it is delivered.
    pub hold: f64,
    /// Of the held packets (first copies), the share the transport
    /// acknowledges on arrival; the others it reports lost at the usual
    /// time.
    pub hold_acked: f64,
    /// `(start tick, length)`: every packet sent in that span is lost.
    pub outage: Option<(u32, u32)>,
}

impl WideProfile {
    /// One-tick delays, nothing lost.
    pub fn clean() -> Self {
        WideProfile {
            name: "clean",
            loss: 0.0,
            burst: None,
            duplicate: 0.0,
            delay: (1, 1),
            ack_delay: (1, 1),
            late_after_loss: 0.0,
            ghost: 0.0,
            hold: 0.0,
            hold_acked: 0.0,
            outage: None,
        }
    }

    /// The profiles every case of the suite runs over.
    pub fn all() -> Vec<WideProfile> {
        vec![
            Self::clean(),
            // Acks reported the tick the packet arrives.
            WideProfile {
                name: "lossy 25%, acks on arrival",
                loss: 0.25,
                delay: (0, 3),
                ack_delay: (0, 0),
                ..Self::clean()
            },
            WideProfile {
                name: "reordering and duplicates",
                duplicate: 0.25,
                delay: (0, 8),
                ack_delay: (0, 4),
                ..Self::clean()
            },
            WideProfile {
                name: "bursty",
                loss: 0.02,
                burst: Some(Burst {
                    enter: 0.05,
                    leave: 0.25,
                    loss: 0.85,
                }),
                delay: (1, 3),
                ack_delay: (0, 2),
                ..Self::clean()
            },
            WideProfile {
                name: "lost reports of delivered packets",
                loss: 0.1,
                ghost: 0.25,
                late_after_loss: 0.3,
                delay: (0, 5),
                ack_delay: (0, 5),
                ..Self::clean()
            },
            WideProfile {
                name: "packets held 65-300 frames",
                loss: 0.05,
                duplicate: 0.05,
                hold: 0.06,
                hold_acked: 0.5,
                delay: (1, 3),
                ack_delay: (0, 2),
                ..Self::clean()
            },
            // Some acks arrive after the window (64 frames: 64 ticks, or 32
            // at two commits a tick) and count as losses. (All of them doing
            // so is `a_connection_whose_acks_take_64_frames_settles`.)
            WideProfile {
                name: "reports up to 70 ticks late",
                loss: 0.1,
                ghost: 0.05,
                delay: (1, 3),
                ack_delay: (0, 70),
                ..Self::clean()
            },
            WideProfile {
                name: "a fifth held, acked on arrival",
                loss: 0.05,
                hold: 0.2,
                hold_acked: 1.0,
                delay: (0, 4),
                ack_delay: (0, 0),
                ..Self::clean()
            },
            WideProfile {
                name: "chaos",
                loss: 0.15,
                burst: Some(Burst {
                    enter: 0.03,
                    leave: 0.3,
                    loss: 0.8,
                }),
                duplicate: 0.1,
                delay: (0, 8),
                ack_delay: (0, 6),
                late_after_loss: 0.25,
                ghost: 0.1,
                hold: 0.03,
                hold_acked: 0.5,
                outage: None,
            },
            WideProfile {
                name: "outage of 100 ticks",
                loss: 0.03,
                ghost: 0.05,
                hold: 0.02,
                hold_acked: 0.5,
                delay: (1, 3),
                ack_delay: (0, 3),
                outage: Some((40, 100)),
                ..Self::clean()
            },
        ]
    }
}

/// What the transport tells the sender about one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Report {
    /// The packet's first copy arrived.
    Acked(u32),
    /// The transport gave up on the packet (it may arrive all the same).
    Lost(u32),
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

/// Counters of fates decided at send time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WideStats {
    /// Packets sent.
    pub sent: u64,
    /// Packets reported lost (ghosts and late ones included).
    pub lost: u64,
    /// Packets with a second copy.
    pub duplicated: u64,
    /// Lost packets delivered after their report.
    pub late_after_loss: u64,
    /// Delivered packets reported lost.
    pub ghosts: u64,
    /// Packets or copies held [`HOLD`] ticks.
    pub held: u64,
}

#[derive(Debug)]
struct Flight<P> {
    /// Internal send counter of the packet.
    n: u64,
    packet: u32,
    sent_at: u32,
    fate: Fate,
    /// The copy whose delivery an ack waits for.
    first: bool,
    payload: P,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    n: u64,
    report: Report,
    /// A loss report that a late copy waits for.
    releases: bool,
}

/// One direction of one simulated connection and its report path.
#[derive(Debug)]
pub struct WideLink<P> {
    profile: WideProfile,
    rng: ChaCha8Rng,
    healed: bool,
    bad: bool,
    packets: u64,
    order: u64,
    in_flight: BTreeMap<(u32, u64), Flight<P>>,
    pending: BTreeMap<(u32, u64), Pending>,
    /// Packets whose ack waits for their first copy's delivery.
    awaiting_delivery: BTreeSet<u64>,
    /// Late packets whose copy waits for their loss report.
    awaiting_report: BTreeSet<u64>,
    /// Packets whose loss report was returned.
    reported_lost: BTreeSet<u64>,
    stats: WideStats,
}

impl<P: Clone> WideLink<P> {
    /// A fresh link, deterministic in `seed`.
    pub fn new(profile: WideProfile, seed: u64) -> Self {
        WideLink {
            profile,
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
            stats: WideStats::default(),
        }
    }

    /// From now on nothing sent is lost, duplicated, held or misreported;
    /// what is in transit keeps its fate.
    pub fn heal(&mut self) {
        self.healed = true;
    }

    /// Whether no packet or report is in transit.
    pub fn idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty()
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
    pub fn stats(&self) -> WideStats {
        self.stats
    }

    /// Sends packet `packet` at tick `now`; its fate is decided here.
    pub fn send(&mut self, now: u32, packet: u32, payload: P) {
        let n = self.packets;
        self.packets += 1;
        self.stats.sent += 1;
        let arrival = now + self.draw(self.profile.delay);
        let report_at = arrival + self.draw(self.profile.ack_delay);
        if self.healed {
            self.deliver_at(n, packet, now, arrival, Fate::First, true, payload);
            self.report_at(report_at, n, Report::Acked(packet), false);
            self.awaiting_delivery.insert(n);
            return;
        }
        let outage = self
            .profile
            .outage
            .is_some_and(|(start, len)| now >= start && now - start < len);
        let loss = match self.profile.burst {
            Some(burst) => {
                let flip = if self.bad { burst.leave } else { burst.enter };
                if self.chance(flip) {
                    self.bad = !self.bad;
                }
                if self.bad {
                    burst.loss
                } else {
                    self.profile.loss
                }
            }
            None => self.profile.loss,
        };
        if outage || self.chance(loss) {
            self.stats.lost += 1;
            let late = !outage && self.chance(self.profile.late_after_loss);
            self.report_at(report_at, n, Report::Lost(packet), late);
            if late {
                self.stats.late_after_loss += 1;
                let extra = 1 + self.draw((0, self.profile.delay.1 + 4));
                self.awaiting_report.insert(n);
                let fate = Fate::LateAfterLoss;
                self.deliver_at(n, packet, now, report_at + extra, fate, false, payload);
            }
            return;
        }
        if self.chance(self.profile.hold) {
            self.stats.held += 1;
            let at = now + self.draw(HOLD);
            if self.chance(self.profile.hold_acked) {
                let report = at + self.draw(self.profile.ack_delay);
                self.report_at(report, n, Report::Acked(packet), false);
                self.awaiting_delivery.insert(n);
            } else {
                self.stats.lost += 1;
                self.report_at(report_at, n, Report::Lost(packet), false);
            }
            self.deliver_at(n, packet, now, at, Fate::Held, true, payload);
            return;
        }
        if self.chance(self.profile.duplicate) {
            self.stats.duplicated += 1;
            let at = if self.chance(self.profile.hold) {
                self.stats.held += 1;
                now + self.draw(HOLD)
            } else {
                arrival + 1 + self.draw(self.profile.delay)
            };
            let fate = if at >= now + HOLD.0 {
                Fate::Held
            } else {
                Fate::Duplicate
            };
            self.deliver_at(n, packet, now, at, fate, false, payload.clone());
        }
        if self.chance(self.profile.ghost) {
            self.stats.ghosts += 1;
            self.stats.lost += 1;
            // The transport's timer knows nothing of the arrival.
            let spread = self.profile.delay.1 + self.profile.ack_delay.1 + 2;
            let at = now + self.draw((0, spread));
            self.report_at(at, n, Report::Lost(packet), false);
            self.deliver_at(n, packet, now, arrival, Fate::Ghost, true, payload);
            if self.chance(0.5) {
                self.report_at(report_at, n, Report::Acked(packet), false);
                self.awaiting_delivery.insert(n);
            }
            return;
        }
        self.deliver_at(n, packet, now, arrival, Fate::First, true, payload);
        self.report_at(report_at, n, Report::Acked(packet), false);
        self.awaiting_delivery.insert(n);
    }

    /// Copies that arrive by tick `now`, in arrival order.
    pub fn deliver(&mut self, now: u32) -> Vec<Arrival<P>> {
        let mut out = Vec::new();
        let mut held = Vec::new();
        while let Some(entry) = self.in_flight.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (key, flight) = entry.remove_entry();
            if flight.fate == Fate::LateAfterLoss && self.awaiting_report.contains(&flight.n) {
                held.push((key, flight));
                continue;
            }
            if flight.first {
                self.awaiting_delivery.remove(&flight.n);
            }
            out.push(Arrival {
                packet: flight.packet,
                sent_at: flight.sent_at,
                fate: flight.fate,
                reported_lost: self.reported_lost.contains(&flight.n),
                payload: flight.payload,
            });
        }
        self.in_flight.extend(held);
        out
    }

    /// Reports that reach the sender by tick `now`.
    pub fn reports(&mut self, now: u32) -> Vec<Report> {
        let mut out = Vec::new();
        let mut held = Vec::new();
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (key, pending) = entry.remove_entry();
            if matches!(pending.report, Report::Acked(_))
                && self.awaiting_delivery.contains(&pending.n)
            {
                held.push((key, pending));
                continue;
            }
            if let Report::Lost(_) = pending.report {
                self.reported_lost.insert(pending.n);
                if pending.releases {
                    self.awaiting_report.remove(&pending.n);
                }
            }
            out.push(pending.report);
        }
        self.pending.extend(held);
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn deliver_at(
        &mut self,
        n: u64,
        packet: u32,
        sent_at: u32,
        at: u32,
        fate: Fate,
        first: bool,
        payload: P,
    ) {
        let key = self.key(at);
        self.in_flight.insert(
            key,
            Flight {
                n,
                packet,
                sent_at,
                fate,
                first,
                payload,
            },
        );
    }

    fn report_at(&mut self, at: u32, n: u64, report: Report, releases: bool) {
        let key = self.key(at);
        self.pending.insert(
            key,
            Pending {
                n,
                report,
                releases,
            },
        );
    }

    fn key(&mut self, tick: u32) -> (u32, u64) {
        self.order += 1;
        (tick, self.order)
    }

    fn draw(&mut self, (lo, hi): (u32, u32)) -> u32 {
        if lo >= hi {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.rng.random::<f64>() < p)
    }
}
