//! [`GhostFeed`]: what a shard keeps of one neighbour's ghosts — which of
//! its items the neighbour holds a ghost of, and the stream it writes them
//! on — and the rule of what a frame sends it. It knows nothing of the
//! items' type: ids, field masks and frames; the façade asks the items.
//!
//! An item is ghosted while the shard's filter says it is within the
//! neighbour's reach. The filter is asked of an item when a commit added,
//! changed or adopted it (its answer can only change then, if it depends on
//! the item alone), and of every item after [`GhostFeed::refilter`].

use hashbrown::HashSet;

use crate::history::History;
use crate::id::ReplicationId;
use crate::mask::FieldMask;

/// One neighbour's ghosts of a shard's array: the items it holds a ghost
/// of, and the stream of ghost messages that keeps them
/// ([`FastArray::write_ghost_feed`](crate::FastArray::write_ghost_feed)).
/// Make one per neighbour and array, on the shard whose items they are.
///
/// A stream is the feed's own: a new `GhostFeed` (a restarted shard) is a
/// new stream, which its neighbour's ghost array joins from a snapshot.
#[derive(Clone, Debug)]
pub struct GhostFeed {
    /// The stream's number, drawn at random.
    epoch: u64,
    /// The number of the last message written (0: none).
    seq: u64,
    /// The array this feed follows (its feed epoch) and the frame of its
    /// last commit the last message covered.
    covered: Option<(u64, u64)>,
    /// The items the neighbour holds a ghost of.
    members: HashSet<ReplicationId>,
    /// Whether the next message asks the filter of every item.
    refilter: bool,
}

impl Default for GhostFeed {
    fn default() -> Self {
        Self::new()
    }
}

/// What the next ghost message says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct GhostPlan {
    /// Whether it is a snapshot (`entered` lists every ghost then).
    pub(crate) snapshot: bool,
    /// Ghosts that go, ascending.
    pub(crate) left: Vec<ReplicationId>,
    /// Ghosts that come, ascending (an item removed and added back since
    /// the last message, or whose arrays changed, is in both lists).
    pub(crate) entered: Vec<ReplicationId>,
    /// Ghosts that stay, with their ghost fields that changed, ascending.
    pub(crate) changed: Vec<(ReplicationId, FieldMask)>,
    /// Items adopted since the last message that the neighbour holds no
    /// ghost of (out of its reach), ascending: the neighbour that handed
    /// one off may keep a ghost of it until this says where it went
    /// ([`FastArray::keep_ghost`](crate::FastArray::keep_ghost)).
    pub(crate) settled: Vec<ReplicationId>,
}

/// What the frames since a message did to one item.
#[derive(Clone, Copy, Default)]
struct Touch {
    /// Fields changed.
    fields: FieldMask,
    /// Whether it goes whole: added (or adopted) since, or its
    /// `#[replicate(array)]` fields changed (a ghost's arrays are sent
    /// whole, as it enters).
    whole: bool,
}

impl GhostFeed {
    /// A feed that ghosts nothing yet: its first message is a snapshot of
    /// the items the filter keeps.
    pub fn new() -> Self {
        use core::hash::BuildHasher;
        Self {
            epoch: std::hash::RandomState::new().hash_one(1u8),
            seq: 0,
            covered: None,
            members: HashSet::new(),
            refilter: false,
        }
    }

    /// Asks the filter of every item at the next message, not only of
    /// those that changed: call it when what the filter depends on besides
    /// the item changed (a border that moved, a neighbour's new reach).
    pub fn refilter(&mut self) {
        self.refilter = true;
    }

    /// How many items the neighbour holds a ghost of, as of the last
    /// message.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the neighbour holds no ghost.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether the neighbour holds a ghost of item `id`, as of the last
    /// message.
    pub fn contains(&self, id: ReplicationId) -> bool {
        self.members.contains(&id)
    }

    /// The ghosts, ascending, for a snapshot.
    pub(crate) fn sorted_members(&self) -> Vec<ReplicationId> {
        let mut ids: Vec<ReplicationId> = self.members.iter().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The stream's epoch and the number of the last message.
    pub(crate) fn at(&self) -> (u64, u64) {
        (self.epoch, self.seq)
    }

    /// The array (by its feed epoch) and frame the last message covered.
    pub(crate) fn covered(&self) -> Option<(u64, u64)> {
        self.covered
    }

    /// What the next message of array `array` at `frame` says: the
    /// changes `history` holds since the last message, `fields` of them
    /// (the ghost fields), for the items `near` keeps (`false` for an id no
    /// longer held); a snapshot of `all` that `near` keeps if the history
    /// does not reach back that far, or this is the first message.
    pub(crate) fn plan(
        &self,
        array: u64,
        frame: u64,
        history: Option<&History>,
        fields: FieldMask,
        all: impl Iterator<Item = ReplicationId>,
        mut near: impl FnMut(ReplicationId) -> bool,
    ) -> GhostPlan {
        let since = match self.covered {
            Some((epoch, covered)) if epoch == array => history.and_then(|h| h.since(covered + 1)),
            _ => None,
        };
        let Some(frames) = since else {
            let mut entered: Vec<ReplicationId> = all.filter(|&id| near(id)).collect();
            entered.sort_unstable();
            return GhostPlan {
                snapshot: true,
                entered,
                ..GhostPlan::default()
            };
        };
        // What the frames did to each item, in one list sorted by id (each
        // frame's lists are; a sort of their concatenation is cheap).
        let mut touched: Vec<(ReplicationId, Touch)> = Vec::new();
        let mut adopted: Vec<ReplicationId> = Vec::new();
        for changes in frames.take_while(|changes| changes.frame <= frame) {
            adopted.extend(changes.adopted.iter().map(|&(id, _)| id));
            let whole = Touch {
                fields: FieldMask::EMPTY,
                whole: true,
            };
            touched.extend(changes.added.iter().map(|&id| (id, whole)));
            touched.extend(changes.arrays_changed.iter().map(|&id| (id, whole)));
            touched.extend(changes.removed.iter().map(|&id| (id, Touch::default())));
            let changed = changes.changed.iter().chain(&changes.initial);
            touched.extend(changed.map(|&(id, fields)| {
                let touch = Touch {
                    fields,
                    whole: false,
                };
                (id, touch)
            }));
        }
        touched.sort_unstable_by_key(|&(id, _)| id);
        touched.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same {
                first.1.fields |= later.1.fields;
                first.1.whole |= later.1.whole;
            }
            same
        });
        let mut plan = GhostPlan::default();
        let mut decide = |id: ReplicationId, touch: Touch, near: bool| match (
            self.members.contains(&id),
            near,
        ) {
            (true, false) => plan.left.push(id),
            (false, true) => plan.entered.push(id),
            (true, true) if touch.whole => {
                plan.left.push(id);
                plan.entered.push(id);
            }
            (true, true) => {
                let changed = touch.fields & fields;
                if !changed.is_empty() {
                    plan.changed.push((id, changed));
                }
            }
            (false, false) => {}
        };
        if self.refilter {
            let mut ids: Vec<ReplicationId> = all.chain(self.members.iter().copied()).collect();
            ids.extend(touched.iter().map(|&(id, _)| id));
            ids.sort_unstable();
            ids.dedup();
            for id in ids {
                let touch = (touched.binary_search_by_key(&id, |&(id, _)| id))
                    .map_or_else(|_| Touch::default(), |at| touched[at].1);
                decide(id, touch, near(id));
            }
        } else {
            for (id, touch) in touched {
                decide(id, touch, near(id));
            }
        }
        adopted.sort_unstable();
        adopted.dedup();
        let listed = |list: &[ReplicationId], id: &ReplicationId| list.binary_search(id).is_ok();
        plan.settled = (adopted.into_iter())
            .filter(|id| {
                let stays = self.members.contains(id) && !listed(&plan.left, id);
                !stays && !listed(&plan.entered, id)
            })
            .collect();
        plan
    }

    /// The message planned as `plan` for array `array` at `frame` was
    /// written: returns its number.
    pub(crate) fn wrote(&mut self, plan: &GhostPlan, array: u64, frame: u64) -> u64 {
        if plan.snapshot {
            self.members.clear();
        }
        for id in &plan.left {
            self.members.remove(id);
        }
        self.members.extend(plan.entered.iter().copied());
        self.seq += 1;
        self.covered = Some((array, frame));
        self.refilter = false;
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changeset::Changeset;

    fn id(raw: u64) -> ReplicationId {
        ReplicationId::from_raw(raw)
    }

    /// A history of frames 1.., each changeset's frame set to its place.
    fn history(frames: Vec<Changeset>) -> History {
        let mut history = History::default();
        for (at, mut changes) in (1..).zip(frames) {
            changes.frame = at;
            history.push(changes);
        }
        history
    }

    /// A feed of array 7 that wrote its first message at frame 1, of
    /// items `ids` (those `near` keeps).
    fn fed(ids: &[u64], near: impl FnMut(ReplicationId) -> bool) -> GhostFeed {
        let mut feed = GhostFeed::new();
        let all = ids.iter().copied().map(id);
        let first = feed.plan(7, 1, None, FieldMask::all(2), all, near);
        feed.wrote(&first, 7, 1);
        feed
    }

    fn none() -> Changeset {
        Changeset::default()
    }

    #[test]
    fn the_first_message_is_a_snapshot_of_what_the_filter_keeps() {
        let feed = GhostFeed::new();
        let all = [3, 1, 2].map(id).into_iter();
        let plan = feed.plan(7, 0, None, FieldMask::all(2), all, |i| i != id(2));
        assert!(plan.snapshot);
        assert_eq!(plan.entered, vec![id(1), id(3)]);
    }

    #[test]
    fn a_frame_sends_only_ghost_fields_of_ghosts_that_stay() {
        let feed = fed(&[1, 2], |_| true);
        let changes = Changeset {
            changed: vec![(id(1), FieldMask::single(1)), (id(2), FieldMask::single(0))],
            ..none()
        };
        let history = history(vec![none(), changes]);
        // Field 1 is not a ghost field: item 1's change is not sent.
        let ghost = FieldMask::single(0);
        let plan = feed.plan(7, 2, Some(&history), ghost, std::iter::empty(), |_| true);
        assert!(!plan.snapshot);
        assert_eq!(plan.changed, vec![(id(2), FieldMask::single(0))]);
        assert!(plan.left.is_empty() && plan.entered.is_empty());
    }

    #[test]
    fn an_item_removed_and_added_back_leaves_and_enters() {
        let feed = fed(&[1], |_| true);
        let removed = Changeset {
            removed: vec![id(1)],
            ..none()
        };
        let added = Changeset {
            added: vec![id(1)],
            ..none()
        };
        let history = history(vec![none(), removed, added]);
        let all = FieldMask::all(2);
        let plan = feed.plan(7, 3, Some(&history), all, std::iter::empty(), |_| true);
        assert_eq!((plan.left, plan.entered), (vec![id(1)], vec![id(1)]));
    }

    #[test]
    fn another_array_or_a_history_too_short_takes_a_snapshot() {
        let feed = fed(&[1], |_| true);
        let plan = |array, frame, history: &History| {
            let all = [1].map(id).into_iter();
            feed.plan(array, frame, Some(history), FieldMask::all(2), all, |_| {
                true
            })
        };
        let mut short = History::default();
        short.push(Changeset { frame: 5, ..none() });
        assert!(plan(7, 5, &short).snapshot, "frame 2 left the history");
        let history = history(vec![none(), none()]);
        assert!(plan(8, 2, &history).snapshot, "another array");
        assert!(!plan(7, 2, &history).snapshot);
    }

    #[test]
    fn an_adoption_out_of_reach_is_settled_and_one_in_reach_enters() {
        let feed = fed(&[], |_| true);
        let adopted = Changeset {
            added: vec![id(4), id(5)],
            adopted: vec![(id(4), 1), (id(5), 1)],
            ..none()
        };
        let history = history(vec![none(), adopted]);
        let all = FieldMask::all(2);
        let plan = feed.plan(7, 2, Some(&history), all, std::iter::empty(), |i| {
            i == id(5)
        });
        assert_eq!((plan.entered, plan.settled), (vec![id(5)], vec![id(4)]));
    }

    #[test]
    fn refilter_asks_every_item() {
        let mut feed = fed(&[1, 2], |i| i == id(1));
        let history = history(vec![none(), none()]);
        let all = || [1, 2].map(id).into_iter();
        let flip = |i: ReplicationId| i == id(2);
        let plan = feed.plan(7, 2, Some(&history), FieldMask::all(2), all(), flip);
        assert_eq!(plan, GhostPlan::default(), "nothing changed, nothing asked");
        feed.refilter();
        let plan = feed.plan(7, 2, Some(&history), FieldMask::all(2), all(), flip);
        assert_eq!((plan.left, plan.entered), (vec![id(1)], vec![id(2)]));
        feed.wrote(&GhostPlan::default(), 7, 2);
        assert!(!feed.refilter);
    }
}
