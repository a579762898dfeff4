//! What applying a message tells the game: [`Callbacks`] in Unreal's order,
//! the [`InnerEvent`]s of arrays inside items, and the [`ApplyReport`].

use core::any::Any;
use core::fmt;

use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// Events of applying a delta, called in Unreal's order: every
/// `pre_remove` (and `pre_leave_scope`), then every `post_add`, then every `post_change`, then
/// `post_receive` once. Every method does nothing by default; `()` is the
/// callbacks value that wants no events.
///
/// Items of `#[replicate(array)]` fields (inside the items, or inside a
/// [`Replicated`](crate::Replicated) object) are reported through
/// [`inner_event`](Self::inner_event), each event naming the item whose
/// array holds them. They come with their owner's own event, while the
/// owner is on the mirror:
///
/// - an owner removed: each of its inner items is `Removed` (an inner
///   item's own inner items before it), then the owner's `pre_remove`;
/// - an owner added: its `post_add`, then each of its inner items is
///   `Added` (an inner item before its own inner items);
/// - an owner held: the events of each of its arrays, in declaration
///   order, each in Unreal's order (`Removed`, `Added`, `Changed`), then
///   the owner's `post_change` (with an empty mask if only its arrays
///   changed).
///
/// So a game that spawns a visual on `Added` and despawns it on `Removed`
/// holds exactly the mirror's inner items, whatever the packets did on the
/// way: an inner item added and removed again while the packets that said
/// so were lost, or that arrive after its owner was removed, is never
/// reported at all. A snapshot applied with
/// [`FastArray::apply_snapshot_with`](crate::FastArray::apply_snapshot_with)
/// reports what it changed through the same calls, so a game spawns
/// through one path whether its client joins by snapshot or by delta
/// (`from_snapshot` reports nothing: read the array after loading it).
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
    /// An item is about to be removed: the server destroyed it.
    fn pre_remove(&mut self, id: ReplicationId, item: &T) {
        let _ = (id, item);
    }

    /// An item is about to be removed because it left this client's
    /// scope ([`FastArray::scope`](crate::FastArray::scope)): it still
    /// exists on the server, and is added again if it comes back. Called
    /// where `pre_remove` would be; by default it calls `pre_remove`, so a
    /// game that does not tell the two apart despawns it all the same.
    fn pre_leave_scope(&mut self, id: ReplicationId, item: &T) {
        self.pre_remove(id, item);
    }

    /// An item was added.
    fn post_add(&mut self, id: ReplicationId, item: &T) {
        let _ = (id, item);
    }

    /// Fields of an item changed: `changed` names exactly the fields whose
    /// value on the mirror is now different, compared as
    /// [`Replicate::diff`](crate::Replicate::diff) compares them (a field that arrived from a newer
    /// frame with the value the mirror held is not named, nor a `quantize`
    /// field whose new value quantizes the same). An empty `changed` means
    /// only the item's `#[replicate(array)]` fields did. An entry that
    /// changed nothing makes no call.
    fn post_change(&mut self, id: ReplicationId, item: &T, changed: FieldMask) {
        let _ = (id, item, changed);
    }

    /// As [`post_change`](Self::post_change), for an item the mirror held
    /// that a *whole* value changed (a lost whole value repaired, a
    /// persisted copy resynchronised, a new enum variant): `changed` names
    /// the fields it changed, as there. Called instead of `post_change`,
    /// which it calls by default: override it to tell the two apart.
    fn post_change_whole(&mut self, id: ReplicationId, item: &T, changed: FieldMask) {
        self.post_change(id, item, changed);
    }

    /// An item of an array inside an item was added, changed, or is about
    /// to be removed (see [`InnerEvent`], and the order above).
    fn inner_event(&mut self, event: &InnerEvent<'_>) {
        let _ = event;
    }

    /// The whole message was applied.
    fn post_receive(&mut self, report: &ApplyReport) {
        let _ = report;
    }
}

impl<T> Callbacks<T> for () {}

/// What happened to an item of an array inside an item: the
/// [`Callbacks`] event of the same name, for an inner item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InnerChange {
    /// The item was added (`post_add`).
    Added,
    /// Fields of the item changed (`post_change`): exactly those whose
    /// value on the mirror is now different; an empty mask means only the
    /// item's own `#[replicate(array)]` fields did.
    Changed(FieldMask),
    /// The item is about to be removed (`pre_remove`): it is still there,
    /// and [`InnerEvent::item`] reads it.
    Removed,
}

/// An array field of an item: the item's id and the field's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArrayOwner {
    /// The item that holds the array (`#0` for a
    /// [`Replicated`](crate::Replicated) object).
    pub id: ReplicationId,
    /// The array field's name as declared (`"members"`; `"0"` for the
    /// first field of a tuple struct).
    pub field: &'static str,
}

/// An array inside an item, and the arrays it is inside of: a path from
/// the array out to the top-level item, kept on the stack while a message
/// is applied. (Named by the hidden inner-array plumbing; not an API.)
#[derive(Clone, Copy)]
#[doc(hidden)]
pub struct ArrayPath<'a> {
    /// The array: its item and field.
    pub(crate) owner: ArrayOwner,
    /// The array that holds its item, if that item is itself an inner item.
    pub(crate) up: Option<&'a ArrayPath<'a>>,
}

/// An item added to, changed in, or about to be removed from an array
/// inside an item (a `#[replicate(array)]` field), as
/// [`Callbacks::inner_event`] hears it.
///
/// It names the item ([`id`](Self::id)), what happened to it
/// ([`change`](Self::change)), the array that holds it
/// ([`owner`](Self::owner): the owning item's id and the array field's
/// name), and gives the item itself as its type, which is the item type of
/// that array field ([`item`](Self::item)).
///
/// ```
/// use fastarray_core::{
///     Callbacks, FastArray, InnerChange, InnerEvent, ReplicationId, SendState,
/// };
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Member { hp: u16 }
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")]
/// struct Squad {
///     tag: u8,
///     #[replicate(array)]
///     members: FastArray<Member>,
/// }
///
/// /// The visuals a client spawns: one per member, by squad.
/// #[derive(Default)]
/// struct Visuals(Vec<(ReplicationId, ReplicationId, u16)>);
///
/// impl Callbacks<Squad> for Visuals {
///     fn inner_event(&mut self, event: &InnerEvent<'_>) {
///         let (squad, member) = (event.owner().id, event.id());
///         let Some(&Member { hp }) = event.item::<Member>() else { return };
///         match event.change() {
///             InnerChange::Added => self.0.push((squad, member, hp)),
///             InnerChange::Changed(_) => {
///                 for visual in &mut self.0 {
///                     if (visual.0, visual.1) == (squad, member) {
///                         visual.2 = hp;
///                     }
///                 }
///             }
///             InnerChange::Removed => self.0.retain(|v| (v.0, v.1) != (squad, member)),
///         }
///     }
/// }
///
/// let mut server = FastArray::new();
/// let alpha = server.push(Squad { tag: 1, members: FastArray::new() });
/// let ann = server.get_mut(alpha).unwrap().members.push(Member { hp: 100 });
/// server.commit();
/// let (mut state, mut client, mut visuals) = (SendState::new(), FastArray::new(), Visuals::default());
/// let mut packet = Vec::new();
/// server.write_delta(&mut state, 1, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut visuals).unwrap();
/// state.on_ack(1);
/// assert_eq!(visuals.0, [(alpha, ann, 100)]);
///
/// server.get_mut(alpha).unwrap().members.get_mut(ann).unwrap().hp = 60;
/// let bob = server.get_mut(alpha).unwrap().members.push(Member { hp: 90 });
/// server.commit();
/// let mut packet = Vec::new();
/// server.write_delta(&mut state, 2, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut visuals).unwrap();
/// assert_eq!(visuals.0, [(alpha, ann, 60), (alpha, bob, 90)]);
/// ```
pub struct InnerEvent<'a> {
    at: &'a ArrayPath<'a>,
    id: ReplicationId,
    change: InnerChange,
    item: &'a dyn Any,
}

impl<'a> InnerEvent<'a> {
    /// An event about `item`, of id `id`, in the array at `at`.
    pub(crate) fn new(
        at: &'a ArrayPath<'a>,
        id: ReplicationId,
        change: InnerChange,
        item: &'a dyn Any,
    ) -> Self {
        Self {
            at,
            id,
            change,
            item,
        }
    }

    /// The inner item's id (in its array: ids of different arrays are
    /// unrelated).
    pub fn id(&self) -> ReplicationId {
        self.id
    }

    /// What happened to it.
    pub fn change(&self) -> InnerChange {
        self.change
    }

    /// The array that holds it: the owning item's id and the array field's
    /// name.
    pub fn owner(&self) -> ArrayOwner {
        self.at.owner
    }

    /// The arrays it is inside of, from the one that holds it
    /// ([`owner`](Self::owner)) out to the top-level item: one for an
    /// array of an item of the array the callbacks were given to (or of a
    /// [`Replicated`](crate::Replicated) object), more for arrays inside
    /// inner items.
    pub fn owners(&self) -> impl Iterator<Item = ArrayOwner> + use<'a> {
        let mut next = Some(self.at);
        core::iter::from_fn(move || {
            let at = next?;
            next = at.up;
            Some(at.owner)
        })
    }

    /// The item (after the change; before its removal for `Removed`), if
    /// `U` is its type: the item type of the array field
    /// [`owner`](Self::owner) names.
    pub fn item<U: 'static>(&self) -> Option<&'a U> {
        self.item.downcast_ref()
    }
}

impl fmt::Debug for InnerEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InnerEvent")
            .field("id", &self.id)
            .field("change", &self.change)
            .field("owners", &self.owners().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The [`Callbacks`] of an array inside an item: its events go, as
/// [`InnerEvent`]s of the array at `at`, to `sink` (its owner's callbacks).
pub(crate) struct Forward<'a, 'p> {
    pub(crate) at: &'a ArrayPath<'p>,
    pub(crate) sink: &'a mut dyn FnMut(&InnerEvent<'_>),
}

impl<U: 'static> Callbacks<U> for Forward<'_, '_> {
    fn pre_remove(&mut self, id: ReplicationId, item: &U) {
        (self.sink)(&InnerEvent::new(self.at, id, InnerChange::Removed, item));
    }

    fn post_add(&mut self, id: ReplicationId, item: &U) {
        (self.sink)(&InnerEvent::new(self.at, id, InnerChange::Added, item));
    }

    fn post_change(&mut self, id: ReplicationId, item: &U, changed: FieldMask) {
        let change = InnerChange::Changed(changed);
        (self.sink)(&InnerEvent::new(self.at, id, change, item));
    }

    fn inner_event(&mut self, event: &InnerEvent<'_>) {
        (self.sink)(event);
    }
}

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
    /// Items removed because the server destroyed them.
    pub removed: usize,
    /// Items removed because they left this client's scope.
    pub left_scope: usize,
    /// Entries for held or removed items that changed nothing: the item was
    /// removed, the mirror already had newer data for every field the
    /// entry carried, or every value it carried was the one the mirror held
    /// (and none of its arrays changed).
    pub skipped: usize,
    /// Entries with changed fields of items this mirror does not hold yet:
    /// a frame's shared message may reach the client before an add still
    /// in flight. They wait for the add (at most a window of frames) and
    /// apply with it, the add reporting the item as it is then.
    pub early: usize,
    /// Whether the whole message was older than the mirror's window and
    /// ignored.
    pub stale: bool,
}
