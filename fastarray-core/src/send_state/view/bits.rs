//! [`Bits`]: the items of a connection naming items by ids whose view says
//! no more than one of three states, each kept as a bit rather than an
//! entry ([`Plain`] sets): known at rest; added by the one record in
//! flight that carried the item; removed by the one record in flight that
//! carried it, having been known at rest.
//!
//! The last two are what a follower of a churning array records of its
//! adds and removals while their packets are in flight: a tick's adds are
//! new ids, dealt out in order, and its removals are ids the set of known
//! items holds, so both sets share blocks as that one does. With entries,
//! each add and each removal cost an insertion into the view's map when
//! written and a removal when acknowledged, at a cache miss each once a
//! server has a few connections (16 connections whose acknowledgements
//! came two ticks late spent a third of their time there).

use super::Holding;
use super::plain::Plain;
use super::rest::Rest;
use crate::id::ReplicationId;

/// The three sets. An id is in at most one, and then has no entry.
#[derive(Clone, Debug, Default)]
pub(super) struct Bits {
    /// Known at rest: no record in flight carries the item, no flight is
    /// kept, no scope marks it.
    pub(super) known: Plain,
    /// The items in flight, once there were any (boxed: a connection's
    /// state is kept per array inside each item too, and most of those
    /// never have any).
    moving: Option<Box<Moving>>,
}

/// The items of [`Bits`] in flight.
#[derive(Clone, Debug, Default)]
struct Moving {
    /// Added by the one record in flight that carried the item.
    arriving: Plain,
    /// Known at rest until the one record in flight that carried the item
    /// removed it.
    departing: Plain,
}

impl Bits {
    /// What `id`'s entry would be, if it is in a set.
    #[inline]
    pub(super) fn get(&self, id: ReplicationId) -> Option<Rest> {
        if self.known.contains(id) {
            return Some(Rest::known());
        }
        let moving = self.moving.as_deref()?;
        if moving.arriving.contains(id) {
            Some(Rest::once(Holding::AddInFlight))
        } else if moving.departing.contains(id) {
            Some(Rest::once(Holding::RemoveInFlight))
        } else {
            None
        }
    }

    /// Takes `id` out of its set, returning what its entry is.
    #[inline]
    pub(super) fn take(&mut self, id: ReplicationId) -> Option<Rest> {
        if self.known.remove(id) {
            return Some(Rest::known());
        }
        self.land(id).map(Rest::once)
    }

    /// Whether `id` is in a set.
    #[inline]
    pub(super) fn holds(&self, id: ReplicationId) -> bool {
        self.known.contains(id) || self.is_moving(id)
    }

    /// Whether `id` is in flight.
    #[inline]
    pub(super) fn is_moving(&self, id: ReplicationId) -> bool {
        self.moving
            .as_deref()
            .is_some_and(|moving| moving.arriving.contains(id) || moving.departing.contains(id))
    }

    /// A record added `id`, which the view keeps nothing of.
    #[inline]
    pub(super) fn arrive(&mut self, id: ReplicationId) {
        self.moving
            .get_or_insert_with(Box::default)
            .arriving
            .insert(id);
    }

    /// A record removed `id`, if it is known at rest: returns whether it
    /// was.
    #[inline]
    pub(super) fn depart(&mut self, id: ReplicationId) -> bool {
        let known = self.known.remove(id);
        if known {
            self.moving
                .get_or_insert_with(Box::default)
                .departing
                .insert(id);
        }
        known
    }

    /// The record that added `id` was acknowledged: known at rest now, if
    /// it was arriving (returns whether it was).
    #[inline]
    pub(super) fn arrived(&mut self, id: ReplicationId) -> bool {
        let arrived = self
            .moving
            .as_deref_mut()
            .is_some_and(|moving| moving.arriving.remove(id));
        if arrived {
            self.known.insert(id);
        }
        arrived
    }

    /// The record that removed `id` was acknowledged: gone, if it was
    /// departing (returns whether it was).
    #[inline]
    pub(super) fn departed(&mut self, id: ReplicationId) -> bool {
        self.moving
            .as_deref_mut()
            .is_some_and(|moving| moving.departing.remove(id))
    }

    /// Takes `id` out of the items in flight, returning how it was held.
    #[inline]
    pub(super) fn land(&mut self, id: ReplicationId) -> Option<Holding> {
        let moving = self.moving.as_deref_mut()?;
        if moving.arriving.remove(id) {
            Some(Holding::AddInFlight)
        } else if moving.departing.remove(id) {
            Some(Holding::RemoveInFlight)
        } else {
            None
        }
    }

    /// The ids of every set, in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        let moving = self
            .moving
            .iter()
            .flat_map(|moving| moving.arriving.iter().chain(moving.departing.iter()));
        self.known.iter().chain(moving)
    }
}
