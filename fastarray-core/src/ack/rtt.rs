//! The round-trip time estimate (RFC 6298) and the loss timeout it gives.

use std::time::Duration;

use super::config::AckConfig;

/// Smoothed round-trip time and its variation, as RFC 6298 computes them
/// (`srtt`, `rttvar`), in whole nanoseconds.
#[derive(Clone, Debug)]
pub(super) struct RttEstimator {
    srtt: u64,
    rttvar: u64,
    measured: bool,
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl RttEstimator {
    /// An estimate of `initial` (variation `initial / 2`) until the first sample.
    pub(super) fn new(initial: Duration) -> Self {
        let initial = nanos(initial);
        Self {
            srtt: initial,
            rttvar: initial / 2,
            measured: false,
        }
    }

    /// Takes one measured round trip.
    pub(super) fn sample(&mut self, rtt: Duration) {
        let rtt = nanos(rtt);
        if !self.measured {
            self.measured = true;
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            return;
        }
        // rttvar first, from the old srtt (RFC 6298, 2.3); u128 cannot overflow.
        let error = u128::from(self.srtt.abs_diff(rtt));
        let rttvar = (3 * u128::from(self.rttvar) + error) / 4;
        let srtt = (7 * u128::from(self.srtt) + u128::from(rtt)) / 8;
        self.rttvar = u64::try_from(rttvar).unwrap_or(u64::MAX);
        self.srtt = u64::try_from(srtt).unwrap_or(u64::MAX);
    }

    /// The smoothed round-trip time.
    pub(super) fn srtt(&self) -> Duration {
        Duration::from_nanos(self.srtt)
    }

    /// Its variation.
    pub(super) fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }

    /// How long after its sending an unacknowledged packet is lost.
    pub(super) fn timeout(&self, config: &AckConfig) -> Duration {
        let variance = u128::from(self.srtt) + 4 * u128::from(self.rttvar);
        let factor = f64::from(config.rtt_factor);
        let factor = if factor.is_finite() && factor > 0.0 {
            factor
        } else {
            0.0
        };
        // Saturates at u128::MAX for huge products (`as` from f64 saturates).
        let scaled = (self.srtt as f64 * factor) as u128;
        let timeout = variance.max(scaled);
        let (min, max) = (config.min_timeout.as_nanos(), config.max_timeout.as_nanos());
        let timeout = timeout.max(min).min(max);
        Duration::from_nanos(u64::try_from(timeout).unwrap_or(u64::MAX))
    }
}
