//! What a connection tells `tracing` (feature `tracing`) and `metrics`
//! (feature `metrics`). Without the features every function here is empty
//! and inlined away: the send path pays nothing for them.
//!
//! Spans (level `DEBUG`, target this module's path): `write_packet`,
//! `write_payload`, `receive`, `apply`, `apply_payload`, each with the
//! fields `packet` and `bytes`. Events: `verdict = "acked"` (`TRACE`) and
//! `verdict = "lost"` (`DEBUG`) with `packet`; `oversized` (`DEBUG`) with
//! `channel`, `id`, `bits` and `count`, each write that finds an item too
//! large for its packet.
//!
//! Metrics (the `metrics` crate's facade; Prometheus-style names, counters
//! ending in `_total`, base units; summed over every connection): the
//! counters `fastarray_bytes_sent_total{channel}`,
//! `fastarray_items_sent_total{channel, kind}`,
//! `fastarray_packets_sent_total`, `fastarray_packet_bytes_sent_total`,
//! `fastarray_packets_acked_total`, `fastarray_packets_lost_total`; the
//! gauges `fastarray_rtt_seconds`, `fastarray_deferred_items{channel}`,
//! `fastarray_oversized_items{channel}`, `fastarray_items_in_scope{channel}`
//! (moved by differences, so every connection's levels add up, and taken
//! back when a connection is dropped).

use crate::ack::{AckEvent, Acks};
use crate::send_state::stats::{DeltaStats, Oversized};

/// A span entered for the length of one call (nothing without `tracing`).
pub(super) struct Span {
    #[cfg(feature = "tracing")]
    span: tracing::span::EnteredSpan,
}

macro_rules! span {
    ($name:literal) => {{
        Span {
            #[cfg(feature = "tracing")]
            span: tracing::debug_span!(
                $name,
                packet = tracing::field::Empty,
                bytes = tracing::field::Empty
            )
            .entered(),
        }
    }};
}

impl Span {
    /// [`Connection::write_packet`](crate::Connection::write_packet)'s.
    #[inline]
    pub(super) fn write_packet() -> Self {
        span!("write_packet")
    }

    /// [`Connection::write_payload`](crate::Connection::write_payload)'s.
    #[inline]
    pub(super) fn write_payload() -> Self {
        span!("write_payload")
    }

    /// [`Connection::receive`](crate::Connection::receive)'s.
    #[inline]
    pub(super) fn receive() -> Self {
        span!("receive")
    }

    /// [`MirrorConnection::apply`](crate::MirrorConnection::apply)'s.
    #[inline]
    pub(super) fn apply() -> Self {
        span!("apply")
    }

    /// [`MirrorConnection::apply_payload`](crate::MirrorConnection::apply_payload)'s.
    #[inline]
    pub(super) fn apply_payload() -> Self {
        span!("apply_payload")
    }

    /// Records the packet's number.
    #[inline]
    pub(super) fn packet(&self, packet: u32) {
        #[cfg(feature = "tracing")]
        self.span.record("packet", packet);
        #[cfg(not(feature = "tracing"))]
        let _ = packet;
    }

    /// Records the packet's size.
    #[inline]
    pub(super) fn bytes(&self, bytes: usize) {
        #[cfg(feature = "tracing")]
        self.span.record("bytes", bytes);
        #[cfg(not(feature = "tracing"))]
        let _ = bytes;
    }
}

/// A packet's verdict, applied to the channels.
#[inline]
pub(super) fn verdict(event: AckEvent) {
    #[cfg(feature = "tracing")]
    match event {
        AckEvent::Acked(packet) => {
            tracing::trace!(packet, verdict = "acked", "packet acknowledged")
        }
        AckEvent::Lost(packet) => tracing::debug!(packet, verdict = "lost", "packet lost"),
    }
    #[cfg(feature = "metrics")]
    match event {
        AckEvent::Acked(_) => metrics::counter!("fastarray_packets_acked_total").increment(1),
        AckEvent::Lost(_) => metrics::counter!("fastarray_packets_lost_total").increment(1),
    }
    #[cfg(not(any(feature = "tracing", feature = "metrics")))]
    let _ = event;
}

/// A write of channel `channel` found items too large for its packet.
#[inline]
pub(super) fn oversized(channel: usize, item: &Oversized) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        channel,
        id = item.id.to_raw(),
        bits = item.bits,
        count = item.count,
        "oversized"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (channel, item);
}

/// A packet of `bytes` bytes written.
#[inline]
pub(super) fn packet(bytes: usize) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("fastarray_packets_sent_total").increment(1);
        metrics::counter!("fastarray_packet_bytes_sent_total").increment(bytes as u64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = bytes;
}

/// Channel `channel`'s label value: the first 32 channels' are static
/// strings, so counting a section makes no label string.
#[cfg(feature = "metrics")]
fn channel_label(channel: usize) -> metrics::SharedString {
    const NAMES: [&str; 32] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
        "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31",
    ];
    match NAMES.get(channel) {
        Some(name) => metrics::SharedString::const_str(name),
        None => metrics::SharedString::from_owned(channel.to_string()),
    }
}

/// Channel `channel` wrote `bits` bits of section (its sections' bits
/// were `before` until then) with counts `delta`.
#[inline]
pub(super) fn section(channel: usize, before: u64, bits: u64, delta: &DeltaStats) {
    #[cfg(feature = "metrics")]
    {
        // Whole bytes of the channel's sections so far, so the counter's
        // total is exact whatever the sections' sizes in bits.
        let bytes = (before + bits) / 8 - before / 8;
        if bytes > 0 {
            metrics::counter!("fastarray_bytes_sent_total", "channel" => channel_label(channel))
                .increment(bytes);
        }
        for (kind, count) in [
            ("added", delta.added),
            ("changed", delta.changed),
            ("removed", delta.removed),
            ("left_scope", delta.left_scope),
        ] {
            if count > 0 {
                metrics::counter!(
                    "fastarray_items_sent_total",
                    "channel" => channel_label(channel),
                    "kind" => kind
                )
                .increment(count as u64);
            }
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (channel, before, bits, delta);
}

/// The levels a connection last reported for one channel: gauges move by
/// the difference, so every connection's levels add up in them.
#[cfg(feature = "metrics")]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Levels {
    deferred: u64,
    oversized: u64,
    in_scope: u64,
}

#[cfg(feature = "metrics")]
impl Levels {
    /// Moves channel `channel`'s gauges to `now`.
    pub(super) fn report(&mut self, channel: usize, now: Levels) {
        let moves = [
            ("fastarray_deferred_items", self.deferred, now.deferred),
            ("fastarray_oversized_items", self.oversized, now.oversized),
            ("fastarray_items_in_scope", self.in_scope, now.in_scope),
        ];
        for (name, old, new) in moves {
            if old != new {
                let gauge = metrics::gauge!(name, "channel" => channel_label(channel));
                gauge.increment(new as f64 - old as f64);
            }
        }
        *self = now;
    }

    /// The levels of a channel's `stats`.
    pub(super) fn of(stats: &super::ChannelStats) -> Self {
        Self {
            deferred: stats.deferred,
            oversized: stats.oversized,
            in_scope: stats.in_scope.unwrap_or(stats.client_items),
        }
    }
}

/// The link's round-trip time, as `acks` measured it now.
#[inline]
pub(super) fn rtt(acks: &Acks) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("fastarray_rtt_seconds").set(acks.stats().rtt.as_secs_f64());
    #[cfg(not(feature = "metrics"))]
    let _ = acks;
}
