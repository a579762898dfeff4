//! [`Watchers`]: per item in some scope, the slots of the connections that
//! see it. It holds an entry per (connection, item) pair, so it is kept
//! small: the first slot sits in the item's map entry (16 bytes with its
//! id), the others in a shared pool of 8-byte linked nodes. Most items in
//! a scope are seen by one connection.

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;

use crate::id::ReplicationId;

/// The end of a list, or no node.
const NONE: u32 = u32::MAX;

/// One watcher, and the next of the same item (or of the free list).
#[derive(Clone, Copy, Debug)]
struct Node {
    slot: u32,
    next: u32,
}

/// Per item, the slots that see it.
#[derive(Debug)]
pub(crate) struct Watchers {
    /// The first watcher of each item, and the rest in `pool`.
    heads: HashMap<ReplicationId, Node>,
    /// The second and later watchers of items; freed nodes are chained
    /// from `free`.
    pool: Vec<Node>,
    free: u32,
}

impl Default for Watchers {
    fn default() -> Self {
        Self {
            heads: HashMap::new(),
            pool: Vec::new(),
            free: NONE,
        }
    }
}

impl Watchers {
    /// Whether no item is watched.
    pub(crate) fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// `slot` sees `id` (once more, if it did already: callers add a pair
    /// once).
    pub(crate) fn add(&mut self, id: ReplicationId, slot: u32) {
        match self.heads.entry(id) {
            Entry::Vacant(entry) => {
                entry.insert(Node { slot, next: NONE });
            }
            Entry::Occupied(mut entry) => {
                let head = *entry.get();
                let node = match self.free {
                    NONE => {
                        self.pool.push(head);
                        u32::try_from(self.pool.len() - 1).expect("fewer than 2^32 watches")
                    }
                    free => {
                        self.free = self.pool[free as usize].next;
                        self.pool[free as usize] = head;
                        free
                    }
                };
                *entry.get_mut() = Node { slot, next: node };
            }
        }
    }

    /// `slot` no longer sees `id`.
    pub(crate) fn remove(&mut self, id: ReplicationId, slot: u32) {
        let Some(head) = self.heads.get_mut(&id) else {
            return;
        };
        if head.slot == slot {
            match head.next {
                NONE => {
                    self.heads.remove(&id);
                }
                next => {
                    *head = self.pool[next as usize];
                    self.release(next);
                }
            }
            return;
        }
        // Find the node before `slot`'s.
        let mut before = None;
        let mut at = head.next;
        while at != NONE {
            let node = self.pool[at as usize];
            if node.slot == slot {
                match before {
                    None => head.next = node.next,
                    Some(before) => self.pool[before as usize].next = node.next,
                }
                self.release(at);
                return;
            }
            before = Some(at);
            at = node.next;
        }
    }

    /// Calls `each` with the slots that see `id`.
    pub(crate) fn for_each(&self, id: ReplicationId, mut each: impl FnMut(u32)) {
        let Some(&head) = self.heads.get(&id) else {
            return;
        };
        each(head.slot);
        let mut at = head.next;
        while at != NONE {
            let node = self.pool[at as usize];
            each(node.slot);
            at = node.next;
        }
    }

    /// Forgets `id` (it is gone), calling `each` with the slots that saw it.
    pub(crate) fn take(&mut self, id: ReplicationId, mut each: impl FnMut(u32)) {
        let Some(head) = self.heads.remove(&id) else {
            return;
        };
        each(head.slot);
        let mut at = head.next;
        while at != NONE {
            let node = self.pool[at as usize];
            each(node.slot);
            self.release(at);
            at = node.next;
        }
    }

    /// Forgets every watch of the slots in `gone` (their connections are
    /// gone), and gives back the room they held: the lists are built
    /// anew, O(watches).
    pub(crate) fn forget_slots(&mut self, gone: &[u32]) {
        let mut kept = Vec::new();
        for (&id, &head) in &self.heads {
            let mut node = head;
            loop {
                if !gone.contains(&node.slot) {
                    kept.push((id, node.slot));
                }
                if node.next == NONE {
                    break;
                }
                node = self.pool[node.next as usize];
            }
        }
        *self = Self::default();
        for (id, slot) in kept {
            self.add(id, slot);
        }
    }

    /// Puts node `node` on the free list.
    fn release(&mut self, node: u32) {
        self.pool[node as usize] = Node {
            slot: NONE,
            next: self.free,
        };
        self.free = node;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(watchers: &Watchers, id: u64) -> Vec<u32> {
        let mut out = Vec::new();
        watchers.for_each(ReplicationId::from_raw(id), |slot| out.push(slot));
        out.sort_unstable();
        out
    }

    #[test]
    fn lists_follow_adds_and_removes_in_any_order() {
        let mut watchers = Watchers::default();
        let id = ReplicationId::from_raw;
        for slot in [3, 1, 4, 5, 9] {
            watchers.add(id(7), slot);
        }
        watchers.add(id(8), 1);
        assert_eq!(slots(&watchers, 7), [1, 3, 4, 5, 9]);
        watchers.remove(id(7), 4); // inside the list
        watchers.remove(id(7), 9); // the head (added last)
        watchers.remove(id(7), 3); // the tail
        watchers.remove(id(7), 6); // not there
        assert_eq!(slots(&watchers, 7), [1, 5]);
        // Freed nodes are reused.
        let pool = watchers.pool.len();
        watchers.add(id(7), 2);
        watchers.add(id(8), 2);
        assert_eq!(watchers.pool.len(), pool);
        assert_eq!(slots(&watchers, 8), [1, 2]);
        let mut taken = Vec::new();
        watchers.take(id(7), |slot| taken.push(slot));
        taken.sort_unstable();
        assert_eq!(taken, [1, 2, 5]);
        assert!(slots(&watchers, 7).is_empty());
        watchers.remove(id(8), 1);
        watchers.remove(id(8), 2);
        assert!(watchers.is_empty());
    }

    #[test]
    fn forgetting_slots_keeps_the_others_and_gives_back_room() {
        let mut watchers = Watchers::default();
        for id in 0..1_000 {
            for slot in 0..(id % 4) + 1 {
                watchers.add(ReplicationId::from_raw(id), slot as u32);
            }
        }
        watchers.forget_slots(&[0, 2]);
        for id in 0..1_000u64 {
            let expected: Vec<u32> = (0..(id % 4) as u32 + 1).filter(|s| s % 2 == 1).collect();
            assert_eq!(slots(&watchers, id), expected, "item {id}");
        }
        assert_eq!(
            watchers.pool.len(),
            250,
            "one extra node per item with slots 1 and 3"
        );
        watchers.forget_slots(&[1, 3]);
        assert!(watchers.is_empty());
        assert_eq!(watchers.heads.capacity(), 0);
    }
}
