//! The settings of an [`Acks`](super::Acks).

use std::time::Duration;

/// The settings of an [`Acks`](super::Acks). Build one with struct update
/// syntax: `AckConfig { reorder_threshold: 5, ..AckConfig::default() }`.
///
/// Out-of-range values are not errors: they are brought into range as
/// each field says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckConfig {
    /// A packet is lost once this many later packets were acknowledged
    /// while it was not (the reordering tolerated). Default 3; 0 counts as 1.
    pub reorder_threshold: u16,
    /// A later acknowledged packet counts toward `reorder_threshold` only
    /// if it was sent at least this fraction of the smoothed RTT after
    /// the one it overtakes (as TCP's RACK): packets sent together in a
    /// burst, which a jittery path reorders freely, are never lost by
    /// reordering alone (the timeout still finds them). A packet declared
    /// lost this way that is acknowledged after all doubles the window (up
    /// to 8 times), and 256 acknowledgements without such a surprise halve
    /// it again, as RACK adapts its own. Default 0.25; 0 counts packets
    /// alone; a negative or non-finite value counts as 0, one above 16 as
    /// 16.
    pub reorder_window: f32,
    /// The shortest loss timeout. Default 100 ms.
    pub min_timeout: Duration,
    /// The longest loss timeout (wins over `min_timeout` if smaller).
    /// Default 2 s.
    pub max_timeout: Duration,
    /// A packet unacknowledged this long after it was sent is lost:
    /// `timeout = max(srtt + 4 × rttvar, rtt_factor × srtt)`, clamped to
    /// `min_timeout..=max_timeout`. Default 1.5; a negative or non-finite
    /// factor counts as 0.
    pub rtt_factor: f32,
    /// The round-trip time assumed until the first measurement. Default
    /// 100 ms.
    pub initial_rtt: Duration,
    /// The most packets kept for acknowledgement: when the oldest packet
    /// not yet acknowledged is this many packets behind the next one sent,
    /// it is declared lost. Bounds memory (about 24 bytes a packet).
    /// Default 1 024; brought into `1..=32 768` (farther than 32 768 back,
    /// a 16-bit ack is ambiguous).
    pub max_in_flight: usize,
    /// The number of this side's first packet. Default 0. The peer sees
    /// packet numbers below 65 536 as they are; past that, it numbers
    /// them modulo 65 536 from the first it receives (see
    /// [`Acks::receive`](super::Acks::receive)).
    pub first_packet: u32,
}

impl Default for AckConfig {
    fn default() -> Self {
        Self {
            reorder_threshold: 3,
            reorder_window: 0.25,
            min_timeout: Duration::from_millis(100),
            max_timeout: Duration::from_secs(2),
            rtt_factor: 1.5,
            initial_rtt: Duration::from_millis(100),
            max_in_flight: 1024,
            first_packet: 0,
        }
    }
}

impl AckConfig {
    /// The largest `max_in_flight` honoured.
    pub const MAX_IN_FLIGHT: usize = 1 << 15;

    /// `max_in_flight` brought into range.
    pub(super) fn window(&self) -> usize {
        self.max_in_flight.clamp(1, Self::MAX_IN_FLIGHT)
    }

    /// `reorder_window` brought into range.
    pub(super) fn window_fraction(&self) -> f32 {
        if self.reorder_window.is_finite() {
            self.reorder_window.clamp(0.0, 16.0)
        } else {
            0.0
        }
    }

    /// `reorder_threshold` brought into range.
    pub(super) fn threshold(&self) -> u16 {
        self.reorder_threshold.max(1)
    }
}
