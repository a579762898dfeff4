//! A `FastArray` as an array inside an item (a `#[replicate(array)]`
//! field): the [`ArrayField`] the derive requires and the [`InnerArray`]
//! its owner drives.

use core::any::Any;

use crate::array::FastArray;
use crate::array::relay::take;
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError, SendError};
use crate::feed_message::{self, ArrayChanges};
use crate::id::ReplicationId;
use crate::inner_array::{ArrayField, Follower, InnerArray, InnerDelta, Lineage};
use crate::limits::ArrayLimits;
use crate::receive::apply::report_whole;
use crate::receive::decode::{Decoded, skip_delta};
use crate::receive_state::events::{ApplyReport, ArrayPath, Forward, InnerChange, InnerEvent};
use crate::receive_state::mirror_state::MirrorState;
use crate::replicate::Replicate;
use crate::send::sender::Sender;
use crate::send_state::SendState;
use crate::send_state::stats::{Budget, DeltaStats};
use crate::snapshot_message;

/// A `FastArray` of any item type is what an array field may be.
impl<U: Replicate + 'static> ArrayField for FastArray<U> {
    const ELEMENT_SCHEMA_HASH: u64 = U::SCHEMA_HASH;

    fn empty_like(&self) -> Self {
        Self::from_store(self.store().empty_like())
    }

    fn empty() -> Self {
        Self::new()
    }

    fn as_inner(&self) -> &dyn InnerArray {
        self
    }

    fn as_inner_mut(&mut self) -> &mut dyn InnerArray {
        self
    }
}

/// A `FastArray` as an array inside an item, driven by its owner.
impl<U: Replicate + 'static> InnerArray for FastArray<U> {
    fn lineage(&self) -> Lineage {
        self.store().lineage()
    }

    fn has_uncommitted_work(&self) -> bool {
        self.has_uncommitted_work()
    }

    fn commit_changes(&mut self) -> bool {
        !self.commit().is_empty()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn wire_eq_array(&self, other: &dyn InnerArray) -> bool {
        other
            .as_any()
            .downcast_ref::<Self>()
            .is_some_and(|other| self.wire_eq(other))
    }

    fn write_delta_into(
        &mut self,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        self.write_budgeted(state, packet, writer, budget)
    }

    fn decode_delta_from(
        &self,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<Option<InnerDelta>, DecodeError> {
        let decoded = self.decode_delta_under(reader, limits)?;
        Ok(decoded.has_effect().then(|| InnerDelta::new(decoded)))
    }

    fn skip_delta_from(&self, reader: &mut BitReader<'_>) -> Result<(), DecodeError> {
        skip_delta::<U>(reader)
    }

    fn apply_decoded_delta(
        &mut self,
        decoded: InnerDelta,
        at: &ArrayPath<'_>,
        sink: &mut dyn FnMut(&InnerEvent<'_>),
    ) -> ApplyReport {
        match decoded.take::<Decoded<U>>() {
            Some(decoded) => self.apply_decoded(decoded, &mut Forward { at, sink }, Some(at)),
            // Only `decode_delta_from` of this same array makes it.
            None => ApplyReport::default(),
        }
    }

    fn is_settled_for(&self, state: &SendState) -> bool {
        self.is_settled(state)
    }

    fn announce(&self, at: &ArrayPath<'_>, sink: &mut dyn FnMut(&InnerEvent<'_>)) {
        for (id, item) in self.iter() {
            report_whole(id, item, at, InnerChange::Added, sink);
        }
    }

    fn retire(&self, at: &ArrayPath<'_>, sink: &mut dyn FnMut(&InnerEvent<'_>)) {
        for (id, item) in self.iter() {
            report_whole(id, item, at, InnerChange::Removed, sink);
        }
    }

    fn snapshot_state(&self, client: Option<u64>) -> SendState {
        snapshot_message::snapshot_state(self.store(), client)
    }

    fn encode_snapshot_body(
        &self,
        client: Option<u64>,
        writer: &mut BitWriter<'_>,
    ) -> Result<(), EncodeError> {
        snapshot_message::encode_body(self.store(), self.owners(), client, writer)
            .map_err(|(_, error)| error)
    }

    fn decode_snapshot_body(
        &mut self,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<(), DecodeError> {
        *self = Self::decode_snapshot_body(reader, limits)?;
        Ok(())
    }

    fn mirror_state(&self) -> MirrorState {
        self.mirror_state()
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn write_follow(
        &self,
        follower: Follower,
        writer: &mut BitWriter<'_>,
    ) -> Result<(), EncodeError> {
        feed_message::write_array(self.store(), self.owners(), follower, writer)
    }

    fn read_follow(
        &mut self,
        follower: Follower,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<(), DecodeError> {
        let (next_id, items) = feed_message::read_array::<U>(reader, follower, limits)?;
        let owners = &mut Sender::made(&mut self.sender).owners;
        for (id, owner, value) in items {
            take(&mut self.store, owners, id, owner, value);
        }
        self.store.raise_next_id(next_id);
        Ok(())
    }

    fn take_follow(&mut self, copy: &mut dyn InnerArray) {
        let Some(copy) = copy.as_any_mut().downcast_mut::<Self>() else {
            return;
        };
        let mut copy = core::mem::take(copy);
        let gone: Vec<ReplicationId> = self.ids().filter(|&id| copy.get(id).is_none()).collect();
        for id in gone {
            self.store.remove(id);
        }
        let ids: Vec<ReplicationId> = copy.ids().collect();
        let owners = &mut Sender::made(&mut self.sender).owners;
        for id in ids {
            let owner = copy.owner(id);
            let Some(value) = copy.store.remove(id) else {
                continue;
            };
            take(&mut self.store, owners, id, owner, value);
        }
        self.store.raise_next_id(copy.store.next_id());
    }

    fn write_follow_changes(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        let changes = self
            .sender
            .as_deref()
            .and_then(|sender| sender.history.newest());
        feed_message::write_array_changes(self.store(), self.owners(), changes, writer)
    }

    fn read_follow_changes(
        &self,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<Option<InnerDelta>, DecodeError> {
        let changes = feed_message::read_array_changes::<U>(reader, limits)?;
        Ok(changes.map(InnerDelta::new))
    }

    fn check_follow_changes(&self, changes: &InnerDelta) -> Result<(), DecodeError> {
        match changes.get::<ArrayChanges<U>>() {
            Some(changes) => feed_message::check_array_changes(self.store(), changes),
            // Only `read_follow_changes` of an array of this type makes it.
            None => Ok(()),
        }
    }

    fn apply_follow_changes(&mut self, changes: InnerDelta) {
        let Some(changes) = changes.take::<ArrayChanges<U>>() else {
            return;
        };
        for id in changes.removed {
            self.store.remove(id);
        }
        let owners = &mut Sender::made(&mut self.sender).owners;
        for (id, owner, value) in changes.added {
            take(&mut self.store, owners, id, owner, value);
        }
        for (id, value) in changes.changed {
            let owner = owners.owner(id);
            take(&mut self.store, owners, id, owner, value);
        }
        for (id, owner) in changes.moved {
            owners.stage(id, owner);
        }
    }

    fn swap_with(&mut self, other: &mut dyn InnerArray) {
        if let Some(other) = other.as_any_mut().downcast_mut::<Self>() {
            core::mem::swap(self, other);
        }
    }
}
