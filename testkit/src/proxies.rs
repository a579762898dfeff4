//! [`Proxies`]: a game's copies of what a mirror, relay or ghost array
//! holds, kept from its callbacks alone: the check that the callbacks say
//! everything that happens, and nothing that does not.

use std::collections::BTreeMap;

use fastarray::{ApplyReport, Callbacks, FastArray, FieldMask, ReplicationId};

/// The items the callbacks announced, each as its last event left it,
/// and the messages applied. Panics on an event that contradicts the
/// ones before it: an item added twice, or removed or changed before it
/// was added.
#[derive(Clone, Debug)]
pub struct Proxies<T> {
    /// The items, by id.
    pub items: BTreeMap<ReplicationId, T>,
    /// Messages applied (`post_receive`).
    pub received: u32,
}

impl<T> Default for Proxies<T> {
    fn default() -> Self {
        Self {
            items: BTreeMap::new(),
            received: 0,
        }
    }
}

impl<T: Clone + PartialEq> Proxies<T> {
    /// Whether the copies are exactly what `array` holds.
    pub fn follow(&self, array: &FastArray<T>) -> bool {
        self.items.len() == array.len()
            && (self.items.iter()).all(|(&id, item)| array.get(id) == Some(item))
    }
}

impl<T: Clone> Callbacks<T> for Proxies<T> {
    fn post_add(&mut self, id: ReplicationId, item: &T) {
        assert!(
            self.items.insert(id, item.clone()).is_none(),
            "{id} added twice"
        );
    }
    fn pre_remove(&mut self, id: ReplicationId, _: &T) {
        assert!(
            self.items.remove(&id).is_some(),
            "{id} removed, never added"
        );
    }
    fn post_change(&mut self, id: ReplicationId, item: &T, _: FieldMask) {
        *self
            .items
            .get_mut(&id)
            .expect("a change of an item never added") = item.clone();
    }
    fn post_receive(&mut self, _: &ApplyReport) {
        self.received += 1;
    }
}
