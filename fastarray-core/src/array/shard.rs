//! Shards: an array that is one server of a world split across several
//! (see the "Shards and handoff" section of [`FastArray`]'s
//! documentation). Each shard pushes ids from a range of its own
//! ([`ShardId`]), hands an item that crosses into another shard's region
//! off to it ([`hand_off`](FastArray::hand_off)), and adopts the items
//! handed to it ([`adopt`](FastArray::adopt)); a relay that follows several
//! shards' feeds merges them into one world, in which a handoff is a change
//! of the item, not a removal and an add.

use super::FastArray;
use super::limits::read_whole;
use super::snapshot::write_truncating;
use crate::error::{DecodeError, SendError};
use crate::feed_message;
use crate::id::ReplicationId;
use crate::limits::{ArrayLimits, MirrorLimits};
use crate::replicate::Replicate;
use crate::send::sender::Sender;
use crate::send_state::tenures::Tenures;
use crate::shard::ShardId;

impl<T> FastArray<T> {
    /// An empty authority that is shard `shard` of a sharded world: it
    /// pushes ids from the shard's range ([`ShardId::ids`]), so ids never
    /// collide across shards, and its feed names the shard, so that a relay
    /// can follow several shards at once.
    ///
    /// A shard writes feeds ([`write_feed`](Self::write_feed),
    /// [`write_feed_snapshot`](Self::write_feed_snapshot)) for relays,
    /// which serve its clients; it refuses deltas, snapshots and scopes for
    /// clients of its own ([`SendError::ShardClients`]). Its items leave
    /// and come back as they cross borders, and a client's mirror keeps the
    /// ids it saw removed a while, to tell a late add from a new one; a
    /// relay that merges the shards keeps a handed-off item where a shard
    /// cannot.
    ///
    /// # Panics
    /// At a [`commit`](Self::commit) that finds the shard pushed past its
    /// range (2^40 ids).
    pub fn shard(shard: ShardId) -> Self {
        let mut array = Self::new();
        array.store.raise_next_id(shard.first_id().to_raw());
        let mut sender = Box::<Sender>::default();
        sender.tenures = Some(Box::new(Tenures::of_shard(shard)));
        array.sender = Some(sender);
        array
    }

    /// The shard this array is: the one it was made for with
    /// [`shard`](Self::shard), shard 0 for any other array.
    pub fn shard_id(&self) -> ShardId {
        (self.sender.as_deref()).map_or_else(ShardId::default, Sender::shard)
    }

    /// The items that left this shard recently, by the frame they left in
    /// (what a save keeps: see `Tenures::departed`); none on an array that
    /// is not a shard.
    #[cfg(feature = "serde")]
    pub(crate) fn departed(&self) -> Vec<(ReplicationId, u32, u64)> {
        let tenures = (self.sender.as_deref()).and_then(|sender| sender.tenures.as_deref());
        let mut departed: Vec<_> = tenures.into_iter().flat_map(Tenures::departed).collect();
        departed.sort_unstable_by_key(|&(id, _, frame)| (frame, id));
        departed
    }

    /// Makes a restored array shard `shard` again, its items' tenures and
    /// recent departures as saved.
    #[cfg(feature = "serde")]
    pub(crate) fn restore_shard(
        &mut self,
        shard: ShardId,
        tenures: Vec<(ReplicationId, u32)>,
        mut departed: Vec<(ReplicationId, u32, u64)>,
    ) {
        // Their expiry takes them oldest first, whatever order a save
        // lists them in.
        departed.sort_unstable_by_key(|&(id, _, frame)| (frame, id));
        let mut restored = Tenures::of_shard(shard);
        for (id, count) in tenures {
            restored.restore(id, count);
        }
        for (id, count, frame) in departed {
            restored.restore_departed(id, count, frame);
        }
        let sender = Sender::made(&mut self.sender);
        sender.tenures = Some(Box::new(restored));
    }

    /// Whether this array was made as a shard ([`shard`](Self::shard)).
    pub fn is_shard(&self) -> bool {
        (self.sender.as_deref()).is_some_and(|sender| sender.tenures.is_some())
    }
}

impl<T: Replicate> FastArray<T> {
    /// Hands item `id` off to shard `to`, as BigWorld offloads an entity
    /// that crosses into another cell: appends to `out` the message that
    /// carries the item (its id, owner and every field) for `to` to
    /// [`adopt`](Self::adopt), and removes the item from this array. Send
    /// the message to `to`'s server, which adopts it; if it cannot (it is
    /// gone, or refuses), adopt the message back here.
    ///
    /// The shard's feed marks the removal as a handoff, so that a relay
    /// following both shards keeps the item for its connections until the
    /// adoption comes, and sends them what the adopting shard changed, if
    /// anything: the relay's clients never see the item leave. A relay
    /// that does not follow the shard the item went to keeps it a while
    /// (64 of the frames it hears), then removes it: it left that relay's
    /// world. Returns the bits written.
    ///
    /// # Errors
    /// [`SendError::NotAShard`] on an array not made as a shard (a mirror,
    /// a relay, a server of one process), [`SendError::UnknownItem`] if
    /// the array does not hold `id`, [`SendError::HandoffToSelf`] if `to` is
    /// this array's own shard, [`SendError::Encode`] if the item fails to
    /// encode. Nothing is written or removed then.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState, ShardId};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Agent { x: i32 }
    ///
    /// let (west_id, east_id) = (ShardId::new(0), ShardId::new(1));
    /// let mut west = FastArray::shard(west_id);
    /// let mut east = FastArray::shard(east_id);
    /// let walker = west.push(Agent { x: -1 });
    /// west.commit();
    /// east.commit();
    ///
    /// // A relay follows both shards, and serves one world.
    /// let mut relay = FastArray::<Agent>::relay();
    /// let mut bus = Vec::new();
    /// for shard in [&mut west, &mut east] {
    ///     bus.clear();
    ///     shard.write_feed_snapshot(&mut bus).unwrap();
    ///     relay.apply_feed(&bus).unwrap();
    /// }
    /// let (mut client, mut state, mut packet) = (FastArray::mirror(), SendState::new(), Vec::new());
    /// relay.write_delta(&mut state, 0, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    ///
    /// // The walker crosses the border: west hands it off, east adopts it.
    /// let mut handoff = Vec::new();
    /// west.hand_off(walker, east_id, &mut handoff).unwrap();
    /// let adopted = east.adopt(&handoff).unwrap();
    /// assert_eq!(adopted, walker, "it keeps its id");
    /// east.get_mut(walker).unwrap().x = 1;
    /// west.commit();
    /// east.commit();
    /// for shard in [&west, &east] {
    ///     bus.clear();
    ///     shard.write_feed(&mut bus).unwrap();
    ///     relay.apply_feed(&bus).unwrap();
    /// }
    ///
    /// // The relay's client is sent a change of `x`, not a removal and an add.
    /// packet.clear();
    /// relay.write_delta(&mut state, 1, &mut packet).unwrap();
    /// let report = client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!((report.added, report.removed, report.changed), (0, 0, 1));
    /// assert_eq!(client.get(walker), Some(&Agent { x: 1 }));
    /// assert_eq!(relay.feed_stats().handoffs, 1);
    /// ```
    pub fn hand_off(
        &mut self,
        id: ReplicationId,
        to: ShardId,
        out: &mut Vec<u8>,
    ) -> Result<u64, SendError> {
        if !self.is_shard() {
            return Err(SendError::NotAShard {
                type_name: T::TYPE_NAME,
            });
        }
        let Some(value) = self.store.get(id) else {
            return Err(SendError::UnknownItem { id });
        };
        let sender = self.sender.as_deref_mut().expect("a shard has a sender");
        let tenures = sender.tenures.as_deref_mut().expect("a shard has tenures");
        if to == tenures.shard() {
            return Err(SendError::HandoffToSelf { shard: to });
        }
        let count = tenures.count(id);
        let owner = sender.owners.owner(id);
        let bits = write_truncating(out, |writer| {
            feed_message::write_handoff(writer, id, count, owner, value)
                .map_err(|error| SendError::Encode { id, error })
        })?;
        tenures.hand_off(id, to);
        self.store.remove(id);
        Ok(bits)
    }
}

impl<T: Replicate + Clone> FastArray<T> {
    /// Adopts the item another shard [handed off](Self::hand_off) to this
    /// one (or this one's own handoff, taken back): the item is added with
    /// its id, owner and every field, and this shard is its authority from
    /// now on. The shard's feed marks the add as an adoption, which a relay
    /// following both shards applies as a change of the item it already
    /// holds. Returns the item's id.
    ///
    /// # Errors
    /// [`DecodeError::NotAShard`] on an array not made as a shard;
    /// [`DecodeError::DuplicateId`] if the array holds the id already (the
    /// handoff was adopted before); [`DecodeError::StaleHandoff`] if the
    /// item was here at that tenure and left since (a late copy of the
    /// handoff, sent again for want of a reply); a [`DecodeError`] for a message that
    /// does not decode, or is of another item type. The array is then
    /// unchanged.
    pub fn adopt(&mut self, bytes: &[u8]) -> Result<ReplicationId, DecodeError> {
        self.adopt_at(bytes, 1)
    }

    /// Takes back an item this shard [handed off](Self::hand_off), when
    /// the shard it went to refused it or never answered: as
    /// [`adopt`](Self::adopt), one tenure above what an adoption of that
    /// handoff holds. If the other shard did adopt it after all (its reply
    /// was lost, or came too late), both hold the item, and every relay
    /// follows this shard's copy; the other shard should
    /// [`release`](Self::release) its own, which `fastarray-nats`'
    /// `HandoffPort` asks of it when the late reply comes.
    ///
    /// # Errors
    /// As [`adopt`](Self::adopt).
    pub fn take_back(&mut self, bytes: &[u8]) -> Result<ReplicationId, DecodeError> {
        self.adopt_at(bytes, 2)
    }

    /// Adopts a handoff at its tenure plus `step`.
    fn adopt_at(&mut self, bytes: &[u8], step: u32) -> Result<ReplicationId, DecodeError> {
        if !self.is_shard() {
            return Err(DecodeError::NotAShard {
                type_name: T::TYPE_NAME,
            });
        }
        let handoff = read_whole(bytes, &MirrorLimits::DEFAULT, |reader| {
            feed_message::read_handoff::<T>(reader, ArrayLimits::top(MirrorLimits::DEFAULT))
        })?;
        let id = handoff.id;
        if self.store.position(id).is_some() {
            return Err(DecodeError::DuplicateId { id });
        }
        let sender = self.sender.as_deref_mut().expect("a shard has a sender");
        let tenures = sender.tenures.as_deref_mut().expect("a shard has tenures");
        let count = handoff.count.saturating_add(step);
        if tenures.is_stale(id, count) {
            return Err(DecodeError::StaleHandoff { id });
        }
        self.store.push_adopted(id, handoff.value);
        if handoff.owner.is_some() {
            sender.owners.stage(id, handoff.owner);
        }
        tenures.adopt(id, count);
        Ok(id)
    }
}

impl<T> FastArray<T> {
    /// Drops item `id` if this shard holds it at tenure `tenure`: an
    /// adoption the shard that handed the item off overruled by
    /// [taking it back](Self::take_back) (relays follow that shard's copy,
    /// and drop what this one says of the item). Whether it holds the item
    /// or not (the handoff may not have come yet, or this shard restarted
    /// from a save older than its adoption), it then refuses a copy of that
    /// handoff as [stale](DecodeError::StaleHandoff), for as long as it
    /// remembers the items that left it (1 024 commits; a save keeps
    /// them). Returns whether it dropped the item; `false` on an array that
    /// is not a shard, or one that holds the item at another tenure (it
    /// came back since, and stays). The removal goes in the next commit,
    /// as a plain removal.
    pub fn release(&mut self, id: ReplicationId, tenure: u32) -> bool {
        if !self.is_shard() {
            return false;
        }
        let held = self.contains(id);
        if held && self.tenure(id) != tenure {
            return false;
        }
        let sender = self.sender.as_deref_mut().expect("a shard has a sender");
        let tenures = sender.tenures.as_deref_mut().expect("a shard has tenures");
        tenures.release(id, tenure);
        if held {
            self.store.remove(id);
        }
        held
    }

    /// How many times item `id` changed shards before it came to this one
    /// ([`hand_off`](Self::hand_off), [`adopt`](Self::adopt)): 0 for an
    /// item that never moved, or one this array does not hold.
    pub fn tenure(&self, id: ReplicationId) -> u32 {
        (self.sender.as_deref())
            .and_then(|sender| sender.tenures.as_deref())
            .map_or(0, |tenures| tenures.count(id))
    }
}
