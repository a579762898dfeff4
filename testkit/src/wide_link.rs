//! The lossy links of the wide convergence suite (`tests/suite/convergence_wide.rs`).
//!
//! Its links are the crate's one simulation, a [`Channel`], as a
//! [`Link`](crate::link::Link) is: one direction of one connection plus the
//! path of delivery reports back to the sender, in virtual ticks, with every
//! random draw seeded and every collection ordered, so a run is determined
//! by the profile, the seed and the calls. A [`WideProfile`] is a
//! [`LinkProfile`] (loss, bursts, reordering, duplication, losses delivered
//! after their report and outages) plus an [`Extra`]: the transport
//! misbehaviours that a `Link` leaves out:
//!
//! * **ghosts** ([`Extra::ghost`]): a packet that arrives but is reported
//!   [`Report::Lost`](crate::link::Report::Lost) (its acknowledgement was
//!   lost, or the transport timed out too early), the report coming before
//!   or after the arrival;
//! * **held packets** ([`Extra::hold`], [`Extra::hold_acked`]): a packet
//!   (or a duplicate copy) kept 65–300 ticks ([`HOLD`](crate::channel::HOLD))
//!   in the network and then delivered, far past the library's 64-frame
//!   window; the transport reports it lost at the usual time, or
//!   acknowledges it when it finally arrives.
//!
//! Acknowledgements follow arrival, as in most UDP game transports: a
//! packet is reported [`Report::Acked`](crate::link::Report::Acked) when its
//! first copy is handed out by [`Channel::deliver`], whatever the receiver
//! makes of it. Every packet gets one report, except half the ghosts, whose
//! acknowledgement also comes through after all (before or after the loss
//! report): a transport that timed out and then heard the ack.

use crate::channel::{Channel, Extra};
use crate::link::{GilbertElliott, LinkProfile};

/// How a wide-suite link misbehaves: a [`LinkProfile`] and the extras on
/// top of it.
#[derive(Clone, Debug, PartialEq)]
pub struct WideProfile {
    /// Loss, bursts, duplication, delays, losses delivered after their
    /// report and outages, as for a [`Link`](crate::link::Link); its `name`
    /// names the profile.
    pub link: LinkProfile,
    /// Ghosts and held packets.
    pub extra: Extra,
}

impl WideProfile {
    /// `link` without extras.
    pub fn plain(link: LinkProfile) -> Self {
        WideProfile {
            link,
            extra: Extra::NONE,
        }
    }

    /// A fresh channel with this behaviour, deterministic in `seed`.
    pub fn channel<P: Clone + AsRef<[u8]>>(&self, seed: u64) -> Channel<P> {
        Channel::new(self.link.clone(), self.extra, seed)
    }

    /// The profiles every case of the suite runs over.
    pub fn all() -> Vec<WideProfile> {
        let perfect = LinkProfile::perfect;
        vec![
            Self::plain(LinkProfile {
                name: "clean",
                ..perfect()
            }),
            // Acks reported the tick the packet arrives.
            Self::plain(LinkProfile {
                name: "lossy 25%, acks on arrival",
                loss: 0.25,
                delay: (0, 3),
                ack_delay: (0, 0),
                ..perfect()
            }),
            Self::plain(LinkProfile {
                name: "reordering and duplicates",
                duplicate: 0.25,
                delay: (0, 8),
                ack_delay: (0, 4),
                ..perfect()
            }),
            Self::plain(LinkProfile {
                name: "bursty",
                loss: 0.02,
                burst: Some(GilbertElliott {
                    p_good_to_bad: 0.05,
                    p_bad_to_good: 0.25,
                    loss_bad: 0.85,
                }),
                delay: (1, 3),
                ack_delay: (0, 2),
                ..perfect()
            }),
            WideProfile {
                link: LinkProfile {
                    name: "lost reports of delivered packets",
                    loss: 0.1,
                    late_after_loss: 0.3,
                    delay: (0, 5),
                    ack_delay: (0, 5),
                    ..perfect()
                },
                extra: Extra {
                    ghost: 0.25,
                    ..Extra::NONE
                },
            },
            WideProfile {
                link: LinkProfile {
                    name: "packets held 65-300 frames",
                    loss: 0.05,
                    duplicate: 0.05,
                    delay: (1, 3),
                    ack_delay: (0, 2),
                    ..perfect()
                },
                extra: Extra {
                    hold: 0.06,
                    hold_acked: 0.5,
                    ..Extra::NONE
                },
            },
            // Some acks arrive after the window (64 frames: 64 ticks, or 32
            // at two commits a tick) and count as losses. (All of them doing
            // so is `a_connection_whose_acks_take_64_frames_settles`.)
            WideProfile {
                link: LinkProfile {
                    name: "reports up to 70 ticks late",
                    loss: 0.1,
                    delay: (1, 3),
                    ack_delay: (0, 70),
                    ..perfect()
                },
                extra: Extra {
                    ghost: 0.05,
                    ..Extra::NONE
                },
            },
            WideProfile {
                link: LinkProfile {
                    name: "a fifth held, acked on arrival",
                    loss: 0.05,
                    delay: (0, 4),
                    ack_delay: (0, 0),
                    ..perfect()
                },
                extra: Extra {
                    hold: 0.2,
                    hold_acked: 1.0,
                    ..Extra::NONE
                },
            },
            WideProfile {
                link: LinkProfile {
                    name: "chaos",
                    loss: 0.15,
                    burst: Some(GilbertElliott {
                        p_good_to_bad: 0.03,
                        p_bad_to_good: 0.3,
                        loss_bad: 0.8,
                    }),
                    duplicate: 0.1,
                    delay: (0, 8),
                    ack_delay: (0, 6),
                    late_after_loss: 0.25,
                    outage: None,
                },
                extra: Extra {
                    ghost: 0.1,
                    hold: 0.03,
                    hold_acked: 0.5,
                },
            },
            WideProfile {
                link: LinkProfile {
                    name: "outage of 100 ticks",
                    loss: 0.03,
                    delay: (1, 3),
                    ack_delay: (0, 3),
                    outage: Some((40, 100)),
                    ..perfect()
                },
                extra: Extra {
                    ghost: 0.05,
                    hold: 0.02,
                    hold_acked: 0.5,
                },
            },
        ]
    }
}
