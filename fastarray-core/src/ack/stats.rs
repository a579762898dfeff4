//! What an [`Acks`](super::Acks) measures of its link: [`LinkStats`], and
//! the windows behind its loss rate and byte rates.

use std::time::{Duration, Instant};

/// What an [`Acks`](super::Acks) measured of its link
/// ([`Acks::stats`](super::Acks::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkStats {
    /// Smoothed round-trip time (RFC 6298 `srtt`); the configured initial
    /// RTT until the first measurement. It includes the time the peer
    /// holds an acknowledgement until it next sends.
    pub rtt: Duration,
    /// Variation of the round-trip time (RFC 6298 `rttvar`).
    pub rtt_variance: Duration,
    /// The fraction of the last 256 resolved packets (acknowledged or
    /// lost) that were lost; 0 before any is resolved.
    pub loss: f32,
    /// Bytes sent per second over the last second (100 ms buckets), as of
    /// the newest time given to the endpoint.
    pub sent_bytes_per_second: f64,
    /// Bytes received (in accepted packets) per second, the same way.
    pub received_bytes_per_second: f64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets reported acknowledged.
    pub packets_acked: u64,
    /// Packets reported lost.
    pub packets_lost: u64,
}

/// Which of the last [`LossWindow::LEN`] resolved packets were lost.
#[derive(Clone, Debug, Default)]
pub(super) struct LossWindow {
    bits: [u64; 4],
    len: u16,
    next: u8,
    lost: u16,
}

impl LossWindow {
    /// How many resolved packets the rate is over.
    pub(super) const LEN: u16 = 256;

    /// One more packet resolved.
    pub(super) fn push(&mut self, lost: bool) {
        let (word, bit) = (usize::from(self.next / 64), self.next % 64);
        if self.len == Self::LEN {
            if self.bits[word] >> bit & 1 == 1 {
                self.lost -= 1;
            }
        } else {
            self.len += 1;
        }
        if lost {
            self.bits[word] |= 1 << bit;
            self.lost += 1;
        } else {
            self.bits[word] &= !(1 << bit);
        }
        self.next = self.next.wrapping_add(1);
    }

    /// The fraction lost.
    pub(super) fn rate(&self) -> f32 {
        if self.len == 0 {
            0.0
        } else {
            f32::from(self.lost) / f32::from(self.len)
        }
    }
}

/// Bytes per 100 ms bucket over the last second: fixed memory whatever
/// the packet rate.
#[derive(Clone, Debug, Default)]
pub(super) struct RateWindow {
    /// The first time seen: buckets are counted from it.
    origin: Option<Instant>,
    /// The newest time seen, since `origin`.
    newest: Duration,
    /// The bucket `newest` falls in.
    bucket: u64,
    bytes: [u64; Self::BUCKETS],
}

impl RateWindow {
    const BUCKETS: usize = 10;
    const WIDTH: Duration = Duration::from_millis(100);

    fn index(&self, now: Instant) -> (Duration, u64) {
        let since = self.origin.map_or(Duration::ZERO, |origin| {
            now.saturating_duration_since(origin)
        });
        let bucket = since.as_nanos() / Self::WIDTH.as_nanos();
        (since, u64::try_from(bucket).unwrap_or(u64::MAX))
    }

    /// Moves the window's end to `now` (a time earlier than the newest
    /// seen changes nothing).
    pub(super) fn advance(&mut self, now: Instant) {
        if self.origin.is_none() {
            self.origin = Some(now);
        }
        let (since, bucket) = self.index(now);
        if since <= self.newest {
            return;
        }
        self.newest = since;
        // Empty the buckets entered since (all of them after a second).
        let entered = (bucket - self.bucket).min(Self::BUCKETS as u64);
        for step in 1..=entered {
            let index = (self.bucket % Self::BUCKETS as u64 + step) % Self::BUCKETS as u64;
            self.bytes[index as usize] = 0;
        }
        self.bucket = bucket;
    }

    /// `bytes` sent or received at `now`.
    pub(super) fn record(&mut self, now: Instant, bytes: usize) {
        self.advance(now);
        let (_, bucket) = self.index(now);
        if bucket + (Self::BUCKETS as u64) <= self.bucket {
            return; // older than the window
        }
        let slot = &mut self.bytes[(bucket % Self::BUCKETS as u64) as usize];
        *slot = slot.saturating_add(u64::try_from(bytes).unwrap_or(u64::MAX));
    }

    /// Bytes per second over the window (at most the last second).
    pub(super) fn per_second(&self) -> f64 {
        let total: u64 = self.bytes.iter().fold(0, |sum, b| sum.saturating_add(*b));
        let first = self.bucket.saturating_sub(Self::BUCKETS as u64 - 1);
        let start = Self::WIDTH.saturating_mul(u32::try_from(first).unwrap_or(u32::MAX));
        let span = self.newest.saturating_sub(start).max(Self::WIDTH);
        total as f64 / span.as_secs_f64()
    }
}
