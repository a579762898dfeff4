//! Item ownership on an array: [`FastArray::set_owner`], which decides who
//! is sent the `#[replicate(owner_only)]` and `#[replicate(skip_owner)]`
//! fields (the rule is `send_state::audience`'s).

use super::FastArray;
use crate::error::SendError;
use crate::id::ReplicationId;
use crate::replicate::Replicate;
use crate::send::sender::Sender;
use crate::send_state::audience::Owners;

impl<T: Replicate> FastArray<T> {
    /// Makes item `id` owned by the client numbered `owner` (`None`: by
    /// nobody), from the next [`commit`](Self::commit). A connection whose
    /// [client](crate::SendState::set_client) owns an item is sent its
    /// `#[replicate(owner_only)]` fields and not its
    /// `#[replicate(skip_owner)]` ones; every other connection that sees
    /// the item, the reverse. An item has at most one owner; a client may
    /// own any number of items.
    ///
    /// A move counts as a change of those fields at the commit: the new
    /// owner is sent its owner-only fields (their current values, with the
    /// connection's detail level and scope applying as to any change), the
    /// old owner the fields it was skipped, over the same loss repair as
    /// any change. Neither is told to forget what it held: the old owner
    /// keeps the owner-only values it was last sent, and is sent no more.
    /// An item's ownership ends with it. Like a change of the item, a move
    /// is uncommitted work until the commit: a write before it is refused
    /// ([`SendError::Uncommitted`]). Owners are saved with the array
    /// (feature `serde`). Returns whether the array holds `id` (nothing is
    /// done if not).
    ///
    /// # Errors
    /// [`SendError::NotAnAuthority`] on a mirror, [`SendError::Relay`] on a
    /// relay (its owners are its server's).
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Player {
    ///     hp: u8,
    ///     #[replicate(owner_only)]
    ///     ammo: u8,
    /// }
    ///
    /// let mut server = FastArray::new();
    /// let alice = server.push(Player { hp: 9, ammo: 30 });
    /// server.set_owner(alice, Some(1)).unwrap();
    /// server.commit();
    ///
    /// let mut packet = Vec::new();
    /// let mut seen = Vec::new();
    /// for client in [1, 2] {
    ///     let mut state = SendState::new();
    ///     state.set_client(client).unwrap();
    ///     let mut mirror = FastArray::<Player>::mirror();
    ///     packet.clear();
    ///     server.write_delta(&mut state, 1, &mut packet).unwrap();
    ///     mirror.apply_delta(&packet, &mut ()).unwrap();
    ///     seen.push(mirror.get(alice).unwrap().clone());
    /// }
    /// // Alice's client sees her ammo; Bob's holds its default.
    /// assert_eq!(seen, [Player { hp: 9, ammo: 30 }, Player { hp: 9, ammo: 0 }]);
    /// ```
    pub fn set_owner(&mut self, id: ReplicationId, owner: Option<u64>) -> Result<bool, SendError> {
        self.expect_writer()?;
        if self.is_relay() {
            return Err(SendError::Relay {
                type_name: T::TYPE_NAME,
            });
        }
        if self.store.position(id).is_none() {
            return Ok(false);
        }
        let sender = Sender::made(&mut self.sender);
        sender.owners.stage(id, owner);
        Ok(true)
    }
}

impl<T> FastArray<T> {
    /// Who owns which item (`None` before anything was ever sent or
    /// owned).
    pub(crate) fn owners(&self) -> Option<&Owners> {
        self.sender.as_deref().map(|sender| &sender.owners)
    }

    /// The client that owns item `id`, as last set with
    /// [`set_owner`](Self::set_owner) (before the commit that makes it
    /// count, too); `None` if nobody does (or on a mirror, which is told
    /// nothing of owners).
    pub fn owner(&self, id: ReplicationId) -> Option<u64> {
        self.sender
            .as_deref()
            .and_then(|sender| sender.owners.owner(id))
    }
}
