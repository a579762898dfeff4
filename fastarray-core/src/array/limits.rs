//! A mirror's [`MirrorLimits`]: set when it is made or later, kept when a
//! snapshot replaces its contents, checked by every message applied to it.

use super::FastArray;
use crate::bits::BitReader;
use crate::error::{DecodeError, Limit};
use crate::limits::{MirrorLimits, check_message_bytes};
use crate::receive_state::mirror::Mirror;

impl<T> FastArray<T> {
    /// An empty mirror, as [`mirror`](Self::mirror), that refuses any
    /// message that would take it past `limits`
    /// ([`DecodeError::LimitExceeded`](crate::DecodeError::LimitExceeded),
    /// changing nothing). The arrays inside its items are held to
    /// [`MirrorLimits::inner_items`].
    pub fn mirror_with_limits(limits: MirrorLimits) -> Self {
        let mut array = Self::mirror();
        array.set_limits(limits);
        array
    }

    /// The limits messages applied to this array are checked against
    /// ([`MirrorLimits::DEFAULT`] unless set): a mirror's deltas and
    /// snapshots, a relay's feed, a ghost array's ghost feed.
    pub fn limits(&self) -> MirrorLimits {
        if let Some(sources) = self.sources() {
            return sources.limits;
        }
        if let Some(limits) = self.ghost_limits() {
            return limits;
        }
        self.mirror
            .as_deref()
            .map_or(MirrorLimits::DEFAULT, Mirror::limits)
    }

    /// Checks every message applied from now on against `limits` (a
    /// mirror already past one of them refuses only the messages that
    /// would add to it: removals and changes still apply). A new array
    /// becomes a mirror here. On a [relay](Self::relay) or a
    /// [ghost array](Self::ghost), the feed messages it applies are
    /// checked against them: their size, and the entries of each list
    /// (a world larger than the defaults' 262 144 items needs larger
    /// ones).
    ///
    /// # Panics
    /// On an authority (an array that has held items or committed, and is
    /// neither a relay nor a ghost array), which applies no messages.
    #[track_caller]
    pub fn set_limits(&mut self, limits: MirrorLimits) {
        if let Some(sources) = self.sources_mut() {
            sources.limits = limits;
            return;
        }
        if let Some(ghost) = self.ghost_limits_mut() {
            *ghost = limits;
            return;
        }
        if self.is_authority() {
            panic!(
                "FastArray::set_limits on an authority of `{}`: limits are a mirror's",
                core::any::type_name::<T>()
            );
        }
        self.mirror
            .get_or_insert_with(Box::default)
            .set_limits(limits);
    }
}

/// Runs `read` on `reader` cut to `limits.message_bytes` bytes from where
/// it is: a read past that point (the end of the input, or a length too
/// large for what is left) refuses the message as
/// [`Limit::MessageBytes`], `would_be` the bytes the input held from its
/// start.
pub(crate) fn within_message_bytes<R>(
    reader: &mut BitReader<'_>,
    limits: &MirrorLimits,
    read: impl FnOnce(&mut BitReader<'_>) -> Result<R, DecodeError>,
) -> Result<R, DecodeError> {
    let left = reader.remaining_bits();
    let max_bits = (limits.message_bytes as u64).saturating_mul(8);
    let (result, cut) = reader.within(max_bits, read);
    match result {
        Err(DecodeError::UnexpectedEnd { .. } | DecodeError::LengthTooLarge { .. }) if cut => {
            Err(DecodeError::LimitExceeded {
                limit: Limit::MessageBytes,
                max: limits.message_bytes as u64,
                would_be: left.div_ceil(8),
            })
        }
        result => result,
    }
}

/// Reads with `read` a message given whole in `bytes`: refused before it
/// is read if it is longer than `limits.message_bytes`, and if anything
/// but zero padding follows what `read` took.
pub(crate) fn read_whole<R>(
    bytes: &[u8],
    limits: &MirrorLimits,
    read: impl FnOnce(&mut BitReader<'_>) -> Result<R, DecodeError>,
) -> Result<R, DecodeError> {
    check_message_bytes(limits, bytes.len())?;
    let mut reader = BitReader::new(bytes);
    let value = read(&mut reader)?;
    reader.expect_end()?;
    Ok(value)
}
