//! A deterministic lossy-link simulator for tests and examples.
//!
//! A [`Link`] models one direction of one connection (sender to receiver)
//! plus the path that carries delivery reports back to the sender. Time is
//! virtual, counted in ticks chosen by the caller; all randomness comes from
//! a [`ChaCha8Rng`](rand_chacha::ChaCha8Rng) seeded at construction, and
//! every internal collection is ordered, so a run is fully determined by the
//! profile, the seed and the sequence of calls.
//!
//! [`LinkProfile`] says how it misbehaves. The simulation itself is the
//! crate's one [`Channel`], which the wide suite also uses with its extra
//! misbehaviours on top ([`wide_link`](crate::wide_link)); a `Link` is a
//! channel of byte payloads without them.
//!
//! Payloads are opaque `Vec<u8>` tagged with a caller-chosen `u32` packet id.
//! Ids are treated as opaque labels: they may wrap or repeat over a long run,
//! although each id should be unique among the packets whose report has not
//! yet arrived if the caller wants to tell reports apart.
//!
//! The fate of every packet (delivered, duplicated, lost, or lost-but-late)
//! is decided when it is sent. The model guarantees:
//!
//! * every sent packet gets exactly one [`Report`];
//! * [`Report::Acked`] is only returned once the packet's first copy has been
//!   returned by [`Link::deliver`];
//! * [`Report::Lost`] is only returned for a packet none of whose copies has
//!   been delivered, and no copy is ever delivered afterwards, *except* for
//!   the deliberate `late_after_loss` case: its one copy is withheld until
//!   after the loss report has been returned, then delivered.
//!
//! These hold however the caller interleaves `deliver` and `reports` calls
//! and even if it skips ticks: an ack that falls due before its packet was
//! handed out, or a late copy that falls due before its loss report was
//! handed out, waits for the other side to catch up.

use crate::channel::{Channel, Extra};

/// Parameters of a Gilbert–Elliott two-state bursty loss channel.
///
/// The channel state advances once per packet sent: in the good state a
/// packet is lost with the profile's plain `loss`, in the bad state with
/// `loss_bad`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from the good to the bad state, per packet.
    pub p_good_to_bad: f64,
    /// Probability of moving from the bad to the good state, per packet.
    pub p_bad_to_good: f64,
    /// Loss probability while in the bad state.
    pub loss_bad: f64,
}

/// How a [`Link`] misbehaves. Plain data; build one with a named constructor
/// and adjust fields as needed.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkProfile {
    /// A short name for messages.
    pub name: &'static str,
    /// Independent loss probability per packet (in the "good" state when
    /// `burst` is set).
    pub loss: f64,
    /// Bursty loss on top of `loss`, if any.
    pub burst: Option<GilbertElliott>,
    /// Probability that a delivered packet is delivered a second time, at an
    /// independently drawn later tick.
    pub duplicate: f64,
    /// One-way delay in ticks, uniform in `[min, max]` per packet; a spread
    /// reorders packets.
    pub delay: (u32, u32),
    /// Delay in ticks of the report back to the sender, uniform in
    /// `[min, max]`, counted from delivery (acks) or from the would-be
    /// delivery tick (losses).
    pub ack_delay: (u32, u32),
    /// Probability that a packet that is lost (to `loss` or `burst`, not to an
    /// outage) is reported [`Report::Lost`] but still delivered, after the
    /// report.
    pub late_after_loss: f64,
    /// `(start tick, length)`: every packet sent in `start..start + length`
    /// is lost.
    pub outage: Option<(u32, u32)>,
}

impl LinkProfile {
    /// No loss, no duplication, fixed one-tick delay each way: everything
    /// arrives in order.
    pub fn perfect() -> Self {
        LinkProfile {
            name: "perfect",
            loss: 0.0,
            burst: None,
            duplicate: 0.0,
            delay: (1, 1),
            ack_delay: (1, 1),
            late_after_loss: 0.0,
            outage: None,
        }
    }

    /// Independent loss with probability `p`, and a small delay jitter
    /// (one tick plus `0..=2`).
    pub fn lossy(p: f64) -> Self {
        LinkProfile {
            name: "lossy",
            loss: p,
            delay: (1, 3),
            ack_delay: (1, 2),
            ..Self::perfect()
        }
    }

    /// No loss, delay uniform in `0..=6` ticks: heavy reordering.
    pub fn reordering() -> Self {
        LinkProfile {
            name: "reordering",
            delay: (0, 6),
            ack_delay: (0, 3),
            ..Self::perfect()
        }
    }

    /// No loss, 30% of packets delivered twice, small jitter.
    pub fn duplicating() -> Self {
        LinkProfile {
            name: "duplicating",
            duplicate: 0.3,
            delay: (1, 3),
            ack_delay: (1, 2),
            ..Self::perfect()
        }
    }

    /// Gilbert–Elliott bursty loss: 1% loss in the good state, 80% in the bad
    /// state, bad bursts lasting about three packets, entered about once per
    /// twenty packets.
    pub fn bursty() -> Self {
        LinkProfile {
            name: "bursty",
            loss: 0.01,
            burst: Some(GilbertElliott {
                p_good_to_bad: 0.05,
                p_bad_to_good: 0.3,
                loss_bad: 0.8,
            }),
            delay: (1, 3),
            ack_delay: (1, 2),
            ..Self::perfect()
        }
    }

    /// Everything at once: 20% loss, reordering, 10% duplication, 20% of
    /// losses delivered late after the loss report, and jittery report delays.
    pub fn chaos() -> Self {
        LinkProfile {
            name: "chaos",
            loss: 0.2,
            burst: None,
            duplicate: 0.1,
            delay: (0, 8),
            ack_delay: (0, 10),
            late_after_loss: 0.2,
            outage: None,
        }
    }

    /// A total outage of `len` ticks from tick `start`, plus 2% loss and a
    /// little jitter outside it.
    pub fn outage(start: u32, len: u32) -> Self {
        LinkProfile {
            name: "outage",
            loss: 0.02,
            delay: (1, 3),
            ack_delay: (1, 3),
            outage: Some((start, len)),
            ..Self::perfect()
        }
    }

    /// A representative set of profiles, including an outage of 100 ticks
    /// (from tick 20) that outlasts a 64-entry history.
    pub fn all_for_tests() -> Vec<LinkProfile> {
        vec![
            Self::perfect(),
            LinkProfile {
                name: "lossy 5%",
                ..Self::lossy(0.05)
            },
            LinkProfile {
                name: "lossy 30%",
                ..Self::lossy(0.3)
            },
            Self::reordering(),
            Self::duplicating(),
            Self::bursty(),
            Self::chaos(),
            Self::outage(20, 100),
        ]
    }
}

/// What the transport tells the sender about one packet id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Report {
    /// The packet's first copy was delivered.
    Acked(u32),
    /// The packet was not delivered (but see `late_after_loss`).
    Lost(u32),
}

impl Report {
    /// Tells `conn` what the transport learned of its packet: `on_ack` or
    /// `on_loss`. Returns whether a packet in flight had that id.
    pub fn tell(self, conn: &mut fastarray::SendState) -> bool {
        match self {
            Report::Acked(p) => conn.on_ack(p),
            Report::Lost(p) => conn.on_loss(p),
        }
    }

    /// The packet id the report is about.
    pub fn id(self) -> u32 {
        match self {
            Report::Acked(id) | Report::Lost(id) => id,
        }
    }
}

/// Counters kept by a [`Link`].
///
/// `sent`, `bytes_sent`, `acked`, `lost`, `duplicated` and `late_after_loss`
/// count fates decided at send time; `delivered` counts copies actually
/// returned by [`Link::deliver`] so far (duplicates and late copies
/// included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets handed to [`Link::send`].
    pub sent: u64,
    /// Total payload bytes handed to [`Link::send`].
    pub bytes_sent: u64,
    /// Copies returned by [`Link::deliver`] so far.
    pub delivered: u64,
    /// Packets that will be (or were) reported [`Report::Acked`].
    pub acked: u64,
    /// Packets that will be (or were) reported [`Report::Lost`], including
    /// the `late_after_loss` ones.
    pub lost: u64,
    /// Packets that get a second copy.
    pub duplicated: u64,
    /// Packets reported lost whose copy is still delivered after the report.
    pub late_after_loss: u64,
}

/// One direction of one simulated connection plus its report path: a
/// [`Channel`] of byte payloads without extras.
#[derive(Debug)]
pub struct Link {
    channel: Channel<Vec<u8>>,
}

impl Link {
    /// A fresh link with the given behaviour, deterministic in `seed`.
    pub fn new(profile: LinkProfile, seed: u64) -> Self {
        Link {
            channel: Channel::new(profile, Extra::NONE, seed),
        }
    }

    /// The profile the link was built with.
    pub fn profile(&self) -> &LinkProfile {
        self.channel.profile()
    }

    /// Whether [`Link::heal`] has been called.
    pub fn is_healed(&self) -> bool {
        self.channel.is_healed()
    }

    /// The sender hands a packet to the link at tick `now`. An empty payload
    /// is still a packet. Its fate is decided here.
    pub fn send(&mut self, now: u32, packet_id: u32, payload: Vec<u8>) {
        self.channel.send(now, packet_id, payload);
    }

    /// Packets that arrive at the receiver by tick `now` (everything due at
    /// or before `now` not yet returned), in arrival order; duplicates appear
    /// as separate copies.
    pub fn deliver(&mut self, now: u32) -> Vec<Vec<u8>> {
        let arrivals = self.channel.deliver(now);
        arrivals.into_iter().map(|a| a.payload).collect()
    }

    /// Delivery reports that reach the sender by tick `now`: every sent
    /// packet gets exactly one, [`Report::Acked`] if its first copy was
    /// delivered, [`Report::Lost`] otherwise.
    pub fn reports(&mut self, now: u32) -> Vec<Report> {
        self.channel.reports(now)
    }

    /// Stops all loss, duplication, late delivery and outages for packets
    /// sent from now on ("the link heals"), keeping delays. Packets and
    /// reports already in transit keep the fates they were given.
    pub fn heal(&mut self) {
        self.channel.heal();
    }

    /// Whether anything (packets or reports) is still in transit.
    pub fn idle(&self) -> bool {
        self.channel.idle()
    }

    /// The earliest tick at which a packet or report is due, if any.
    pub fn next_due(&self) -> Option<u32> {
        self.channel.next_due()
    }

    /// Counters so far.
    pub fn stats(&self) -> LinkStats {
        self.channel.stats().link
    }
}
