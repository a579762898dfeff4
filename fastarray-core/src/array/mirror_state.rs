//! [`FastArray::mirror_state`]: everything an array holds as a mirror but
//! its items' values, to compare two mirrors whole.

use super::FastArray;
use crate::receive_state::mirror_state::{ItemState, MirrorState};
use crate::replicate::Replicate;

impl<T: Replicate> FastArray<T> {
    /// Everything this array holds as a mirror but its items' values (see
    /// [`MirrorState`]): with `==` on the arrays, it tells whether two
    /// mirrors are in the same state — tombstones, field frames and the
    /// arrays inside items included. Costs O(len) and a copy of it.
    pub fn mirror_state(&self) -> MirrorState {
        let items = self.store.slots().iter().enumerate().map(|(pos, slot)| {
            let mut arrays = Vec::new();
            slot.value
                .for_each_array(&mut |array| arrays.push(array.mirror_state()));
            ItemState {
                id: slot.id,
                key: slot.key,
                returned_after: slot.returned_after(),
                field_frames: self.store.field_frames(pos).to_vec(),
                arrays,
            }
        });
        MirrorState::new(self.store.frame(), self.mirror.as_deref(), items.collect())
    }
}
