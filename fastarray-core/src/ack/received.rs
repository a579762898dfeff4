//! The peer's packets: which were received (to refuse duplicates), which
//! were applied (what headers acknowledge).

use super::error::AckError;
use super::header::AckHeader;
use super::sequence::{after, extend_sequence};

/// A packet number and which of the 32 before it are in the set.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    newest: Option<u32>,
    /// Bit `i`: packet `newest - 1 - i` is in the set.
    bits: u32,
}

impl Window {
    fn contains(&self, packet: u32) -> bool {
        let Some(newest) = self.newest else {
            return false;
        };
        match newest.wrapping_sub(packet) {
            0 => true,
            behind @ 1..=32 => self.bits >> (behind - 1) & 1 == 1,
            _ => false,
        }
    }

    /// Adds `packet` (one more than 32 behind the newest is left out).
    fn insert(&mut self, packet: u32) {
        let Some(newest) = self.newest else {
            self.newest = Some(packet);
            return;
        };
        if after(packet, newest) {
            let ahead = u64::from(packet.wrapping_sub(newest));
            // The old newest becomes bit `ahead - 1`.
            self.bits = if ahead > 32 {
                0
            } else {
                ((u64::from(self.bits) << 1 | 1) << (ahead - 1)) as u32
            };
            self.newest = Some(packet);
        } else if let behind @ 1..=32 = newest.wrapping_sub(packet) {
            self.bits |= 1 << (behind - 1);
        }
    }
}

/// The peer's packets received and applied.
#[derive(Clone, Debug, Default)]
pub(super) struct ReceivedPackets {
    received: Window,
    applied: Window,
}

impl ReceivedPackets {
    /// The packet number of the peer's packet `sequence`, or why it is
    /// refused. Changes nothing.
    ///
    /// The first packet received is numbered as its sequence; later ones
    /// are extended relative to the newest received.
    pub(super) fn check(&self, sequence: u16) -> Result<u32, AckError> {
        let Some(newest) = self.received.newest else {
            return Ok(u32::from(sequence));
        };
        let packet = extend_sequence(sequence, newest);
        if after(packet, newest) {
            return Ok(packet);
        }
        if self.received.contains(packet) {
            return Err(AckError::Duplicate { packet });
        }
        if newest.wrapping_sub(packet) > 32 {
            return Err(AckError::TooOld { sequence });
        }
        Ok(packet)
    }

    /// Records `packet` (from [`check`](Self::check)) as received.
    pub(super) fn receive(&mut self, packet: u32) {
        self.received.insert(packet);
    }

    /// Records `packet` as applied, if it was received and is still in the
    /// received window.
    pub(super) fn apply(&mut self, packet: u32) {
        if self.received.contains(packet) {
            self.applied.insert(packet);
        }
    }

    /// The `ack` and `ack_bits` of the next header.
    pub(super) fn acks(&self) -> (u16, u32) {
        match self.applied.newest {
            // Truncation to the sequence is the point.
            Some(newest) => (newest as u16, self.applied.bits),
            None => (AckHeader::NOTHING, 0),
        }
    }
}
