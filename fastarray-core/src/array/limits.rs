//! A mirror's [`MirrorLimits`]: set when it is made or later, kept when a
//! snapshot replaces its contents, checked by every message applied to it.

use super::FastArray;
use crate::limits::MirrorLimits;
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
    /// ([`MirrorLimits::DEFAULT`] unless set).
    pub fn limits(&self) -> MirrorLimits {
        self.mirror
            .as_deref()
            .map_or(MirrorLimits::DEFAULT, Mirror::limits)
    }

    /// Checks every message applied from now on against `limits` (a
    /// mirror already past one of them refuses only the messages that
    /// would add to it: removals and changes still apply). A new array
    /// becomes a mirror here.
    ///
    /// # Panics
    /// On an authority (an array that has held items or committed), which
    /// applies no messages.
    #[track_caller]
    pub fn set_limits(&mut self, limits: MirrorLimits) {
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
