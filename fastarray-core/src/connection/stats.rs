//! What a [`Connection`](crate::Connection) did for each of its channels
//! ([`ChannelStats`]): counters its writes and verdicts add to, plain
//! additions on the send path, and what the channel's state says when
//! asked.

use crate::send_state::SendState;
use crate::send_state::stats::DeltaStats;

/// What a [`Connection`](crate::Connection) did for one channel since it
/// was made: [`Connection::channel_stats`](crate::Connection::channel_stats).
///
/// The counters (`bits` to `packets_lost`) only grow: sample them, and
/// take differences for rates. `deferred` and `oversized` are what the
/// channel's last write said; `pending`, `in_flight`, `client_items`
/// and `in_scope` are read from the channel's state when asked.
///
/// ```
/// use std::time::Instant;
/// use fastarray_core::{Connection, FastArray};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { hp: u8 }
///
/// let mut units = FastArray::new();
/// for hp in 0..200 {
///     units.push(Unit { hp });
/// }
/// units.commit();
/// let mut conn = Connection::with_delivery_reports(1);
/// let mut payload = Vec::new();
/// conn.write_payload(7, 100, &mut [&mut units], &mut payload).unwrap();
/// conn.lost(7).unwrap();
///
/// let stats = conn.channel_stats(0);
/// assert_eq!((stats.sections, stats.packets_lost), (1, 1));
/// assert!(stats.added > 0 && stats.deferred > 0); // 200 units do not fit in 100 bytes
/// assert!(stats.bits <= 8 * 100);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelStats {
    /// Bits of the channel's sections in the packets written (each
    /// section's tag included; a packet's header and end are not any
    /// channel's).
    pub bits: u64,
    /// Packets that carried a section of the channel.
    pub sections: u64,
    /// Whole items written (new to the client, or resent whole).
    pub added: u64,
    /// Items written as their changed fields.
    pub changed: u64,
    /// Removals of destroyed items written.
    pub removed: u64,
    /// Scope exits written.
    pub left_scope: u64,
    /// Packets that carried a section of the channel and were acknowledged
    /// (by the client's headers, or reported delivered).
    pub packets_acked: u64,
    /// Packets that carried a section of the channel and were lost (or
    /// reported lost).
    pub packets_lost: u64,
    /// Items the channel's last write left for later packets (for the
    /// packet's room, or their detail level's interval).
    pub deferred: u64,
    /// Items the channel's last write found too large for any packet of
    /// its MTU: the connection sends them alone, when nothing else is due.
    pub oversized: u64,
    /// Items with work not yet written ([`SendState::pending_items`]).
    pub pending: u64,
    /// Packets with a section of the channel awaiting their verdict.
    pub in_flight: u64,
    /// Items the client may hold ([`SendState::client_items`]).
    pub client_items: u64,
    /// Items in the channel's scope ([`FastArray::scope`](crate::FastArray::scope)),
    /// `None` when it has none (every item is in scope).
    pub in_scope: Option<u64>,
}

impl ChannelStats {
    /// The channel's sections' bytes: [`bits`](Self::bits), rounded up.
    pub fn bytes(&self) -> u64 {
        self.bits.div_ceil(8)
    }
}

/// The counters of one channel, kept by the connection.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    stats: ChannelStats,
}

impl Counters {
    /// Counts a write of the channel: `bits` of section (0 if it said
    /// nothing), and what its delta said.
    #[inline]
    pub(super) fn wrote(&mut self, bits: u64, delta: &DeltaStats) {
        let stats = &mut self.stats;
        if bits > 0 {
            stats.bits += bits;
            stats.sections += 1;
        }
        stats.added += delta.added as u64;
        stats.changed += delta.changed as u64;
        stats.removed += delta.removed as u64;
        stats.left_scope += delta.left_scope as u64;
        stats.deferred = delta.deferred as u64;
        stats.oversized = delta.oversized.map_or(0, |item| item.count as u64);
    }

    /// The bits of the channel's sections so far.
    #[inline]
    pub(super) fn bits(&self) -> u64 {
        self.stats.bits
    }

    /// Counts a verdict on a packet that carried a section of the channel.
    #[inline]
    pub(super) fn verdict(&mut self, acked: bool) {
        if acked {
            self.stats.packets_acked += 1;
        } else {
            self.stats.packets_lost += 1;
        }
    }

    /// The counters, with what `state` says now.
    pub(super) fn read(&self, state: &SendState) -> ChannelStats {
        ChannelStats {
            pending: state.pending_items() as u64,
            in_flight: state.packets_in_flight() as u64,
            client_items: state.client_items() as u64,
            in_scope: state.scope().map(|scope| scope.len() as u64),
            ..self.stats
        }
    }
}
