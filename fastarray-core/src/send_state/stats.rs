//! What a write reports ([`DeltaStats`], [`Oversized`]) and the bit budget
//! it is given ([`Budget`]).

use crate::id::ReplicationId;

/// What one [`write_delta`](crate::FastArray::write_delta) wrote. The counts
/// include the items of `#[replicate(array)]` fields inside the items sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeltaStats {
    /// Bits of the message (before the padding of the byte variant).
    pub bits: u64,
    /// Removals of destroyed items written.
    pub removed: usize,
    /// Scope exits written: items that left the connection's scope
    /// ([`FastArray::scope`](crate::FastArray::scope)).
    pub left_scope: usize,
    /// Whole items written (new to the client, or resent whole).
    pub added: usize,
    /// Items written as changed fields only.
    pub changed: usize,
    /// Items with work left for a later packet because of the bit budget.
    pub deferred: usize,
    /// Items that cannot fit in a message of this budget even alone: they
    /// stay due (and are counted in `deferred`), and every budgeted write
    /// reports them until a larger budget, or a write without one, sends
    /// them. The rest of the work flows around them.
    pub oversized: Option<Oversized>,
    /// Whether this write compared the whole array against what the client
    /// holds, because the connection was more than
    /// [`HISTORY_LEN`](crate::HISTORY_LEN) commits behind.
    pub resynced: bool,
    /// Whether the message was this frame's shared message: the connection
    /// was caught up (everything up to the last frame written, every add
    /// acknowledged, nothing to repair), so its message was the same bits
    /// as every other caught-up connection's. The first such connection of
    /// a frame writes it straight from the frame's changes and keeps it;
    /// the later ones copy it. None of them records or acknowledges
    /// anything per changed item.
    pub shared: bool,
}

/// Items too large for a write's bit budget (see [`DeltaStats::oversized`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oversized {
    /// The largest of them. For an item inside an array field, the item
    /// of this array that holds it (its array's work cannot complete).
    pub id: ReplicationId,
    /// The bits a message carrying only that item needs.
    pub bits: u64,
    /// How many items this write found too large.
    pub count: usize,
}

impl Oversized {
    /// Both reports in one: the larger item, and the counts summed.
    pub(crate) fn merge(this: Option<Self>, other: Option<Self>) -> Option<Self> {
        match (this, other) {
            (Some(a), Some(b)) => {
                let largest = if b.bits > a.bits { b } else { a };
                Some(Self {
                    count: a.count + b.count,
                    ..largest
                })
            }
            (a, b) => a.or(b),
        }
    }
}

impl DeltaStats {
    /// Adds the counts of a delta written inside this one (an array inside
    /// an item); its bits are already part of this message's.
    pub(crate) fn absorb(&mut self, inner: &DeltaStats) {
        self.added += inner.added;
        self.changed += inner.changed;
        self.removed += inner.removed;
        self.deferred += inner.deferred;
    }
}

/// A write's bit budget: what this message may take, and what a message
/// may take at most (for an array inside an item: if its owner's message
/// carried that item alone), against which an item is judged too large.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Budget {
    /// Bits this message may take.
    pub bits: u64,
    /// Bits a message carrying a single item could take.
    pub alone: u64,
}

impl Budget {
    /// A budget of `bits` for a message of its own.
    pub fn of(bits: u64) -> Self {
        Self { bits, alone: bits }
    }
}
