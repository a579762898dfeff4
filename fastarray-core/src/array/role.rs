//! Authority or mirror: which side of the replication an array is, and
//! the refusals that keep each side to its own work (see the "Authority or
//! mirror" section of [`FastArray`]'s documentation).

use super::FastArray;
use crate::error::{DecodeError, SendError};
use crate::replicate::Replicate;

impl<T> FastArray<T> {
    /// An empty mirror: a client's array, which follows a server's through
    /// [`apply_delta`](Self::apply_delta) and refuses changes of its own
    /// (see [Authority or mirror](Self#authority-or-mirror)).
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16 }
    ///
    /// let mut server = FastArray::new();
    /// server.push(Unit { hp: 3 });
    /// server.commit();
    /// let mut client = FastArray::mirror();
    /// assert!(client.is_mirror() && !server.is_mirror());
    ///
    /// let (mut state, mut packet) = (SendState::new(), Vec::new());
    /// server.write_delta(&mut state, 0, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!(client, server);
    /// ```
    pub fn mirror() -> Self {
        Self {
            mirror: Some(Box::default()),
            ..Self::new()
        }
    }

    /// Whether this is a mirror (from [`mirror`](Self::mirror),
    /// [`from_snapshot`](Self::from_snapshot), or a delta applied to a new
    /// array), which applies a server's deltas and refuses changes of its
    /// own.
    pub fn is_mirror(&self) -> bool {
        self.mirror.is_some()
    }

    /// Whether this is an authority: not a mirror, and it has held items
    /// or committed (a delta applied to it would overwrite its own work).
    pub(crate) fn is_authority(&self) -> bool {
        !self.is_mirror() && (self.sender.is_some() || !self.store.never_held_items())
    }

    /// Panics if this is a mirror: `what` (`Type::method`) is a local
    /// change, which the next delta would overwrite.
    #[track_caller]
    pub(crate) fn expect_authority(&self, what: &str) {
        if self.is_mirror() {
            refuse_on_mirror(what, core::any::type_name::<T>());
        }
        if self.is_relay() {
            refuse_on_relay(what, core::any::type_name::<T>());
        }
        if self.is_ghost() {
            refuse_on_ghost(what, core::any::type_name::<T>());
        }
    }
}

impl<T: Replicate> FastArray<T> {
    /// Refuses to write deltas from a mirror or a ghost array.
    pub(super) fn expect_writer(&self) -> Result<(), SendError> {
        if self.is_mirror() {
            return Err(SendError::NotAnAuthority {
                type_name: T::TYPE_NAME,
            });
        }
        if self.is_ghost() {
            return Err(SendError::Ghost {
                type_name: T::TYPE_NAME,
            });
        }
        Ok(())
    }

    /// Refuses to write for clients from a mirror, or from a shard, whose
    /// clients are served by relays.
    pub(super) fn expect_client_writer(&self) -> Result<(), SendError> {
        self.expect_writer()?;
        if self.is_shard() {
            return Err(SendError::ShardClients {
                shard: self.shard_id(),
            });
        }
        Ok(())
    }

    /// Refuses to apply a message to an authority, whose own items it
    /// would overwrite.
    pub(crate) fn expect_receiver(&self) -> Result<(), DecodeError> {
        if self.is_ghost() {
            return Err(DecodeError::Ghost {
                type_name: T::TYPE_NAME,
            });
        }
        if self.is_authority() {
            return Err(DecodeError::NotAMirror {
                type_name: T::TYPE_NAME,
            });
        }
        Ok(())
    }
}

/// The panic of a local change to a mirror.
#[cold]
#[track_caller]
fn refuse_on_mirror(what: &str, type_name: &str) -> ! {
    panic!(
        "{what} on a mirror of `{type_name}`: a mirror follows its server through apply_delta, \
         and the next delta would overwrite or collide with local changes. Change the server's \
         copy instead (reordering a FastArray with swap or sort_by is allowed)."
    )
}

/// The panic of a local change to a relay.
#[cold]
#[track_caller]
fn refuse_on_relay(what: &str, type_name: &str) -> ! {
    panic!(
        "{what} on a relay of `{type_name}`: a relay follows its server through apply_feed, \
         and commits what the feed brings; its ids are its server's. Change the server's copy \
         instead (reordering a FastArray with swap or sort_by is allowed)."
    )
}

/// The panic of a local change to a ghost array.
#[cold]
#[track_caller]
fn refuse_on_ghost(what: &str, type_name: &str) -> ! {
    panic!(
        "{what} on a ghost array of `{type_name}`: a ghost array follows a neighbour shard's \
         ghost feed through apply_feed, and holds that shard's items, read-only. Change them on \
         the shard that is their authority (reordering a FastArray with swap or sort_by is \
         allowed)."
    )
}
