//! This side's packets awaiting acknowledgement.

use std::collections::VecDeque;
use std::time::Instant;

/// One sent packet's record.
#[derive(Clone, Debug)]
struct Sent {
    time: Instant,
    /// Later packets acknowledged while this one was not.
    later_acked: u16,
    resolved: bool,
}

/// The packets sent, from the oldest unresolved one (neither acknowledged
/// nor lost) to the newest: a ring of at most `window` records, indexed by
/// packet number.
#[derive(Clone, Debug)]
pub(super) struct SentPackets {
    ring: VecDeque<Sent>,
    /// The packet number of `ring[0]`.
    front: u32,
    /// Packets sent, ever.
    count: u64,
    unresolved: usize,
    window: usize,
}

impl SentPackets {
    /// No packet sent; the first will be `first`.
    pub(super) fn new(first: u32, window: usize) -> Self {
        Self {
            ring: VecDeque::new(),
            front: first,
            count: 0,
            unresolved: 0,
            window,
        }
    }

    /// The next packet's number.
    pub(super) fn next(&self) -> u32 {
        self.front.wrapping_add(self.ring.len() as u32)
    }

    /// The newest packet sent, if any.
    pub(super) fn newest(&self) -> Option<u32> {
        (self.count > 0).then(|| self.next().wrapping_sub(1))
    }

    /// Packets sent, ever.
    pub(super) fn count(&self) -> u64 {
        self.count
    }

    /// Packets neither acknowledged nor lost.
    pub(super) fn unresolved(&self) -> usize {
        self.unresolved
    }

    /// The oldest unresolved packet, if the window is full: it must be
    /// declared lost (resolved) before the next packet is recorded.
    pub(super) fn overflowing(&self) -> Option<u32> {
        (self.ring.len() >= self.window).then_some(self.front)
    }

    /// Records the next packet, sent at `time`; returns its number. Call
    /// only when [`overflowing`](Self::overflowing) is `None`.
    pub(super) fn push(&mut self, time: Instant) -> u32 {
        let packet = self.next();
        self.ring.push_back(Sent {
            time,
            later_acked: 0,
            resolved: false,
        });
        self.count += 1;
        self.unresolved += 1;
        packet
    }

    fn index(&self, packet: u32) -> Option<usize> {
        let index = packet.wrapping_sub(self.front) as usize;
        (index < self.ring.len()).then_some(index)
    }

    /// The send time of `packet` if it is unresolved.
    pub(super) fn unresolved_time(&self, packet: u32) -> Option<Instant> {
        let sent = &self.ring[self.index(packet)?];
        (!sent.resolved).then_some(sent.time)
    }

    /// The oldest unresolved packet and its send time.
    pub(super) fn oldest(&self) -> Option<(u32, Instant)> {
        self.ring.front().map(|sent| (self.front, sent.time))
    }

    /// Marks `packet` resolved; returns whether it was unresolved.
    pub(super) fn resolve(&mut self, packet: u32) -> bool {
        let Some(index) = self.index(packet) else {
            return false;
        };
        if std::mem::replace(&mut self.ring[index].resolved, true) {
            return false;
        }
        self.unresolved -= 1;
        while self.ring.front().is_some_and(|sent| sent.resolved) {
            self.ring.pop_front();
            self.front = self.front.wrapping_add(1);
        }
        true
    }

    /// Counts one more acknowledged packet after every unresolved packet
    /// before `packet` sent at or before `cutoff`; returns those that
    /// reach `threshold`, oldest first.
    pub(super) fn count_later_ack(
        &mut self,
        packet: u32,
        cutoff: Option<Instant>,
        threshold: u16,
        out: &mut Vec<u32>,
    ) {
        let Some(cutoff) = cutoff else {
            return;
        };
        let end = self.index(packet).unwrap_or(0);
        for (index, sent) in self.ring.iter_mut().take(end).enumerate() {
            if !sent.resolved && sent.time <= cutoff {
                sent.later_acked = sent.later_acked.saturating_add(1);
                if sent.later_acked >= threshold {
                    out.push(self.front.wrapping_add(index as u32));
                }
            }
        }
    }

    /// The unresolved packets before `packet` (oldest first).
    pub(super) fn unresolved_before(&self, packet: u32, out: &mut Vec<u32>) {
        let end = match self.index(packet) {
            Some(index) => index,
            // Past the newest: all of them. Before the oldest: none.
            None if super::sequence::after(packet, self.front) => self.ring.len(),
            None => 0,
        };
        for (index, sent) in self.ring.iter().take(end).enumerate() {
            if !sent.resolved {
                out.push(self.front.wrapping_add(index as u32));
            }
        }
    }
}
