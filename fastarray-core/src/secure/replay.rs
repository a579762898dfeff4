//! The replay window of sealed packets: which of the last
//! [`WINDOW`] packet counters were received, as netcode keeps it.

/// How far back a counter is still taken: 256 packets.
pub(crate) const WINDOW: u64 = 256;

/// The counters received among the newest [`WINDOW`]: a bit per counter,
/// counter `c` at bit `c mod 256`.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplayWindow {
    /// The newest counter received, if any.
    newest: Option<u64>,
    bits: [u64; (WINDOW / 64) as usize],
}

/// Why a counter is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Replay {
    /// Received before.
    Duplicate,
    /// Older than the window reaches.
    TooOld,
}

impl ReplayWindow {
    fn bit(counter: u64) -> (usize, u64) {
        let slot = counter % WINDOW;
        ((slot / 64) as usize, 1 << (slot % 64))
    }

    /// Whether `counter` may be taken: newer than any, or within the window
    /// and not received. Changes nothing.
    pub(crate) fn check(&self, counter: u64) -> Result<(), Replay> {
        let Some(newest) = self.newest else {
            return Ok(());
        };
        if counter > newest {
            return Ok(());
        }
        if newest - counter >= WINDOW {
            return Err(Replay::TooOld);
        }
        let (word, mask) = Self::bit(counter);
        match self.bits[word] & mask {
            0 => Ok(()),
            _ => Err(Replay::Duplicate),
        }
    }

    /// Records `counter` as received (after [`check`](Self::check) took it
    /// and the packet authenticated).
    pub(crate) fn mark(&mut self, counter: u64) {
        match self.newest {
            Some(newest) if counter <= newest => {}
            Some(newest) if counter - newest < WINDOW => {
                // Forget the counters the window slides past.
                for gone in newest + 1..=counter {
                    let (word, mask) = Self::bit(gone);
                    self.bits[word] &= !mask;
                }
                self.newest = Some(counter);
            }
            _ => {
                self.bits = [0; (WINDOW / 64) as usize];
                self.newest = Some(counter);
            }
        }
        let (word, mask) = Self::bit(counter);
        self.bits[word] |= mask;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(window: &mut ReplayWindow, counter: u64) -> Result<(), Replay> {
        window.check(counter)?;
        window.mark(counter);
        Ok(())
    }

    #[test]
    fn duplicates_and_the_too_old_are_refused_reordering_is_not() {
        let mut window = ReplayWindow::default();
        assert_eq!(take(&mut window, 5), Ok(()));
        assert_eq!(take(&mut window, 5), Err(Replay::Duplicate));
        assert_eq!(take(&mut window, 3), Ok(())); // reordered
        assert_eq!(take(&mut window, 3), Err(Replay::Duplicate));
        assert_eq!(take(&mut window, 300), Ok(()));
        assert_eq!(take(&mut window, 45), Ok(())); // 255 behind: still in
        assert_eq!(take(&mut window, 44), Err(Replay::TooOld)); // 256 behind
        assert_eq!(take(&mut window, 5), Err(Replay::TooOld));
        assert_eq!(take(&mut window, 299), Ok(()));
        // A jump past the whole window forgets everything before it.
        assert_eq!(take(&mut window, 10_000), Ok(()));
        assert_eq!(take(&mut window, 9_999), Ok(()));
        assert_eq!(take(&mut window, 300), Err(Replay::TooOld));
        assert_eq!(take(&mut window, 10_000), Err(Replay::Duplicate));
    }

    #[test]
    fn a_sliding_window_forgets_the_slots_it_reuses() {
        let mut window = ReplayWindow::default();
        for counter in 0..1_000 {
            assert_eq!(take(&mut window, counter), Ok(()));
            // The slot of counter + 256 held counter: it must read as free.
            assert_eq!(window.check(counter + WINDOW), Ok(()));
            assert_eq!(window.check(counter), Err(Replay::Duplicate));
        }
        // Every other counter, then the skipped ones late.
        for counter in (1_000..1_200).step_by(2) {
            assert_eq!(take(&mut window, counter), Ok(()));
        }
        for counter in (1_001..1_200).step_by(2) {
            assert_eq!(take(&mut window, counter), Ok(()));
        }
        assert_eq!(window.check(u64::MAX), Ok(()));
    }
}
