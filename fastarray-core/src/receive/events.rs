//! What applying a message tells the game: [`Callbacks`] in Unreal's order,
//! and the [`ApplyReport`].

use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// Events of applying a delta, called in Unreal's order: every
/// `pre_remove`, then every `post_add`, then every `post_change`, then
/// `post_receive` once. Every method does nothing by default; `()` is the
/// callbacks value that wants no events.
///
/// ```
/// use fastarray_core::{Callbacks, FieldMask, ReplicationId};
///
/// #[derive(Default)]
/// struct Log(Vec<String>);
///
/// impl Callbacks<u32> for Log {
///     fn post_add(&mut self, id: ReplicationId, item: &u32) {
///         self.0.push(format!("spawn {id} = {item}"));
///     }
///     fn pre_remove(&mut self, id: ReplicationId, _item: &u32) {
///         self.0.push(format!("despawn {id}"));
///     }
/// }
/// ```
pub trait Callbacks<T> {
    /// An item is about to be removed.
    fn pre_remove(&mut self, id: ReplicationId, item: &T) {
        let _ = (id, item);
    }

    /// An item was added.
    fn post_add(&mut self, id: ReplicationId, item: &T) {
        let _ = (id, item);
    }

    /// Fields of an item changed: `changed` names exactly the fields whose
    /// value on the mirror is now different, compared as
    /// [`Replicate::diff`] compares them (a field that arrived from a newer
    /// frame with the value the mirror held is not named, nor a `quantize`
    /// field whose new value quantizes the same). An empty `changed` means
    /// only the item's `#[replicate(array)]` fields did. An entry that
    /// changed nothing makes no call.
    fn post_change(&mut self, id: ReplicationId, item: &T, changed: FieldMask) {
        let _ = (id, item, changed);
    }

    /// The whole message was applied.
    fn post_receive(&mut self, report: &ApplyReport) {
        let _ = report;
    }
}

impl<T> Callbacks<T> for () {}

/// What one [`apply_delta`](crate::FastArray::apply_delta) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// The server frame the message described (`None` for an empty message).
    pub frame: Option<u64>,
    /// Items added.
    pub added: usize,
    /// Items changed: those with a `post_change` call (a field's value or
    /// an array field changed, including whole items that replaced a
    /// different copy).
    pub changed: usize,
    /// Items removed.
    pub removed: usize,
    /// Entries for held or removed items that changed nothing: the item was
    /// removed, the mirror already had newer data for every field the
    /// entry carried, or every value it carried was the one the mirror held
    /// (and none of its arrays changed).
    pub skipped: usize,
    /// Whether the whole message was older than the mirror's window and
    /// ignored.
    pub stale: bool,
}
