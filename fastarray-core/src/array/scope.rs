//! Interest management on an array: [`FastArray::scope`] and
//! [`ScopeMut`], which say which items a connection's client sees.

use super::FastArray;
use crate::error::SendError;
use crate::id::ReplicationId;
use crate::interest_grid::Relevance;
use crate::replicate::Replicate;
use crate::send::sender::Sender;
use crate::send_state::scope::ScopeExit;
use crate::send_state::{LOOKAHEAD, SendState};
use crate::store::Store;

impl<T: Replicate> FastArray<T> {
    /// The scope of `state` on this array: which items its client sees.
    ///
    /// A [`SendState`] sees every item until its first `scope` call; from
    /// then on it sees only the items [included](ScopeMut::include), and
    /// whatever its client held that is not is told to leave. An item
    /// out of scope is never written to the connection and costs it
    /// nothing: no view, no pending work, no lookup when it changes (the
    /// array hands each connection the changes of its own items at
    /// [`commit`](Self::commit)). An item entering the scope goes whole;
    /// one leaving it is sent as a removal that the client can tell from
    /// destruction ([`Callbacks::pre_leave_scope`](crate::Callbacks::pre_leave_scope)).
    /// An item that leaves and comes back is sent whole again once the
    /// client acknowledged its exit. Loss, reordering, duplication and
    /// late packets are handled as for every other change; an item
    /// destroyed while in scope is removed as usual.
    ///
    /// Give the connection its scope before its first write: it then names
    /// items on the wire by small handles of its own instead of their ids
    /// (`WIRE.md`, "Handles"), so a client seeing 1 000 items of 100 000
    /// pays for ids among about 1 000. A connection scoped later keeps
    /// naming items by ids. The mirror's items and events carry ids either
    /// way. A new connection's first `scope` costs nothing that grows with
    /// the array: it starts empty, and its join costs what it includes.
    ///
    /// A connection's scope belongs to this array: a write of `state` on
    /// another array (or on a clone of this one) is refused with
    /// [`SendError::ScopedElsewhere`]. Dropping the connection state (and
    /// its clones) frees its place here at the next commit.
    ///
    /// # Errors
    /// [`SendError::NotAnAuthority`] on a mirror;
    /// [`SendError::ScopedElsewhere`] if `state` has a scope on another
    /// array.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { x: i32 }
    ///
    /// let mut server = FastArray::new();
    /// let near = server.push(Unit { x: 1 });
    /// let far = server.push(Unit { x: 900 });
    /// server.commit();
    ///
    /// let (mut state, mut client) = (SendState::new(), FastArray::<Unit>::mirror());
    /// server.scope(&mut state).unwrap().include(near);
    /// let mut packet = Vec::new();
    /// server.write_delta(&mut state, 1, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// state.on_ack(1);
    /// assert!(client.contains(near) && !client.contains(far));
    ///
    /// // The near unit walks away, the far one comes close.
    /// let mut scope = server.scope(&mut state).unwrap();
    /// scope.exclude(near);
    /// scope.include(far);
    /// packet.clear();
    /// server.write_delta(&mut state, 2, &mut packet).unwrap();
    /// let report = client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!((report.left_scope, report.added), (1, 1));
    /// assert!(!client.contains(near) && client.contains(far));
    /// ```
    pub fn scope<'a>(&'a mut self, state: &'a mut SendState) -> Result<ScopeMut<'a, T>, SendError> {
        self.scope_with(state, ScopeExit::Despawn)
    }

    /// [`scope`](Self::scope), a connection without one getting a scope
    /// whose exits are `exit` (what its client holds leaves that way).
    pub(crate) fn scope_with<'a>(
        &'a mut self,
        state: &'a mut SendState,
        exit: ScopeExit,
    ) -> Result<ScopeMut<'a, T>, SendError> {
        self.expect_client_writer()?;
        let sender = Sender::made(&mut self.sender);
        sender.check_scope(&self.store, state)?;
        // Scope changes apply after everything committed so far; a new
        // connection, which holds nothing, needs none of it (its join then
        // costs its scope, not the world).
        let fresh = state.scope().is_none() && state.skip_history(self.store.frame());
        if !fresh {
            sender.catch_up(&self.store, state);
        }
        if state.scope().is_none() {
            let masks = core::array::from_fn(|level| T::detail_mask(level as u8));
            let mut scope = sender.scopes.register(self.store.origin(), masks);
            scope.set_exit(exit);
            let slot = scope.slot;
            for id in state.set_scope(scope, self.store.frame()) {
                sender.scopes.watch(slot, id);
            }
        }
        Ok(ScopeMut {
            store: &self.store,
            sender,
            state,
        })
    }
}

impl<T> FastArray<T> {
    /// Connections with a [scope](Self::scope) on this array whose state
    /// is alive. A dropped connection state counts until the next commit,
    /// which frees its place.
    pub fn scoped_connections(&self) -> usize {
        self.sender
            .as_deref()
            .map_or(0, |sender| sender.scopes.connections())
    }
}

/// The scope of one connection on one array, from
/// [`FastArray::scope`]: include and exclude items by id.
pub struct ScopeMut<'a, T> {
    store: &'a Store<T>,
    sender: &'a mut Sender,
    state: &'a mut SendState,
}

impl<T> ScopeMut<'_, T> {
    /// Puts item `id` in scope: its next write sends it whole. Returns
    /// whether it was out of scope; an id the array does not hold is
    /// ignored (`false`).
    pub fn include(&mut self, id: ReplicationId) -> bool {
        // A frozen item is still watched (its changes are withheld).
        let watched = self.state.is_frozen(id);
        if self.store.position(id).is_none() || !self.state.include(id, self.store.frame()) {
            return false;
        }
        if !watched {
            let slot = self.slot();
            self.sender.scopes.watch(slot, id);
        }
        true
    }

    /// Includes the items that entered and excludes those that left, in
    /// order: what [`include`](Self::include) and
    /// [`exclude`](Self::exclude) one by one do (an item that enters and
    /// leaves in the same batch ends out of scope), faster. The lookups of
    /// a run of items (the array's, the connection's, and those of the
    /// connections that see them) are read ahead of the changes, so that
    /// their cache misses overlap; at hundreds of connections most of
    /// them miss. Returns how many changes changed the scope.
    ///
    /// Made for an [`InterestGrid`](crate::InterestGrid)'s events, grouped
    /// per viewer:
    ///
    /// ```
    /// use fastarray_core::{FastArray, InterestGrid, Relevance, ReplicationId, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Tank { pos: [f32; 2] }
    ///
    /// let mut tanks = FastArray::new();
    /// let mut grid = InterestGrid::new(25.0);
    /// for x in 0..100 {
    ///     let pos = [x as f32, 0.0];
    ///     grid.set_item(tanks.push(Tank { pos }), pos);
    /// }
    /// tanks.commit();
    /// let mut states = vec![SendState::new(), SendState::new()];
    /// grid.set_viewer(0, [0.0, 0.0], 49.5);
    /// grid.set_viewer(1, [99.0, 0.0], 9.5);
    /// let mut events: Vec<Vec<(ReplicationId, Relevance)>> = vec![Vec::new(); states.len()];
    /// grid.update(|viewer, id, relevance| events[viewer as usize].push((id, relevance)));
    /// for (state, events) in states.iter_mut().zip(&events) {
    ///     tanks.scope(state).unwrap().update(events.iter().copied());
    /// }
    /// assert_eq!(tanks.scope(&mut states[0]).unwrap().len(), 50);
    /// assert_eq!(tanks.scope(&mut states[1]).unwrap().len(), 10);
    /// ```
    pub fn update(
        &mut self,
        changes: impl IntoIterator<Item = (ReplicationId, Relevance)>,
    ) -> usize {
        let mut changes = changes.into_iter();
        let mut run = [(ReplicationId::from_raw(0), Relevance::Enter); LOOKAHEAD];
        let mut changed = 0;
        loop {
            let mut len = 0;
            // `zip` takes from `run` first: no change is taken and dropped.
            for (place, change) in run.iter_mut().zip(&mut changes) {
                *place = change;
                len += 1;
            }
            if len == 0 {
                return changed;
            }
            let ids = || run[..len].iter().map(|&(id, _)| id);
            for id in ids() {
                core::hint::black_box(self.store.position(id));
            }
            self.state.warm_views(ids());
            self.sender.scopes.warm(ids());
            for &(id, relevance) in &run[..len] {
                let done = match relevance {
                    Relevance::Enter => self.include(id),
                    Relevance::Leave => self.exclude(id),
                };
                changed += usize::from(done);
            }
        }
    }

    /// Takes item `id` out of scope: the client is told to drop it (if it
    /// may hold it) and hears no more of it. Returns whether it was in
    /// scope.
    pub fn exclude(&mut self, id: ReplicationId) -> bool {
        if !self.state.exclude(id, self.store.frame()) {
            return false;
        }
        // A frozen copy stays watched: its changes wait for its return,
        // and its destruction is sent.
        if !self.state.is_frozen(id) {
            let slot = self.slot();
            self.sender.scopes.unwatch(slot, id);
        }
        true
    }

    /// Sets what items leaving the scope from now on leave the client:
    /// [`ScopeExit::Despawn`] (the default) or [`ScopeExit::Persist`].
    ///
    /// ```
    /// use fastarray_core::{FastArray, ScopeExit, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Tree { height: u16, leaves: u32 }
    ///
    /// let mut server = FastArray::new();
    /// let tree = server.push(Tree { height: 10, leaves: 5_000 });
    /// server.commit();
    /// let (mut state, mut client) = (SendState::new(), FastArray::<Tree>::mirror());
    /// let mut scope = server.scope(&mut state).unwrap();
    /// scope.set_exit(ScopeExit::Persist);
    /// scope.include(tree);
    /// let mut packet = Vec::new();
    /// server.write_delta(&mut state, 1, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// state.on_ack(1);
    ///
    /// // Out of sight, the client keeps its copy; the tree grows meanwhile.
    /// server.scope(&mut state).unwrap().exclude(tree);
    /// server.get_mut(tree).unwrap().height = 11;
    /// server.commit();
    /// packet.clear();
    /// assert_eq!(server.write_delta(&mut state, 2, &mut packet).unwrap().bits, 1);
    /// assert_eq!(client.get(tree).unwrap().height, 10);
    ///
    /// // Back in sight: only the height goes.
    /// server.scope(&mut state).unwrap().include(tree);
    /// packet.clear();
    /// let stats = server.write_delta(&mut state, 3, &mut packet).unwrap();
    /// assert_eq!((stats.changed, stats.added), (1, 0));
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!(client.get(tree).unwrap().height, 11);
    /// ```
    pub fn set_exit(&mut self, exit: ScopeExit) {
        self.state.set_scope_exit(exit);
    }

    /// What items leaving the scope leave the client.
    pub fn exit(&self) -> ScopeExit {
        self.state.scope_exit()
    }

    /// Whether item `id` is out of scope with its copy kept by the client
    /// ([`ScopeExit::Persist`]).
    pub fn is_frozen(&self, id: ReplicationId) -> bool {
        self.state.is_frozen(id)
    }

    /// Sets the priority of item `id`, in scope, for this connection:
    /// within a bit budget
    /// ([`write_delta_with_budget`](FastArray::write_delta_with_budget)),
    /// after removals and scope exits, the items go by their priority
    /// times the frames their work has waited, so an item of priority `p`
    /// waits about `1 / p` times as long as one of priority 1, and never
    /// starves. Every item starts at 1; a priority from distance
    /// (`1 / (1 + d)`) is typical. Priorities are kept within `1e-6 ..=
    /// 1e6`, and NaN counts as 1. Returns whether `id` is in scope.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { x: u32 }
    ///
    /// let mut server = FastArray::new();
    /// let near = server.push(Unit { x: 1 });
    /// let far = server.push(Unit { x: 2 });
    /// server.commit();
    /// let mut state = SendState::new();
    /// let mut scope = server.scope(&mut state).unwrap();
    /// scope.include(near);
    /// scope.include(far);
    /// scope.set_priority(far, 0.1);
    ///
    /// // Room for one item a packet: the near one goes first.
    /// let mut packet = Vec::new();
    /// let stats = server.write_delta_with_budget(&mut state, 1, &mut packet, 60).unwrap();
    /// assert_eq!((stats.added, stats.deferred), (1, 1));
    /// let mut client = FastArray::<Unit>::mirror();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert!(client.contains(near));
    /// ```
    pub fn set_priority(&mut self, id: ReplicationId, priority: f32) -> bool {
        self.state.set_priority(id, priority)
    }

    /// The priority of item `id` for this connection (1 if never set, or
    /// if out of scope), as kept: to 8 significant bits (a bfloat16), so
    /// `0.1` reads back as `0.10009765625`. Priorities only order items,
    /// and an item's entry stays 8 bytes.
    pub fn priority(&self, id: ReplicationId) -> f32 {
        self.state.priority(id)
    }

    /// Sets the detail level this connection sees item `id` at, in scope:
    /// from 0 to [`MAX_DETAIL`](crate::MAX_DETAIL), where every item
    /// starts (levels above it count as it). A field with
    /// `#[replicate(detail = N)]` is sent only at level `N` or more; below
    /// it, its changes are withheld, and when the level rises, the withheld
    /// fields that changed are sent (only those). An item's add, and any
    /// whole value, carries only the fields of the connection's level (the
    /// client holds the others as their `Default`). Returns whether `id` is
    /// in scope.
    pub fn set_detail(&mut self, id: ReplicationId, level: u8) -> bool {
        self.state.set_detail(id, level)
    }

    /// The detail level this connection sees item `id` at
    /// ([`MAX_DETAIL`](crate::MAX_DETAIL) if never set, or out of scope).
    pub fn detail(&self, id: ReplicationId) -> u8 {
        self.state.detail(id)
    }

    /// Sets the fewest frames between two writes of the changed fields of
    /// the items this connection sees at detail level `level` (1, every
    /// frame, by default; 0 counts as 1): far items update less often, as
    /// UE5 Mass's LOD does. A change waits until it has been due that many
    /// frames, then goes with whatever else changed meanwhile. Adds,
    /// removals and exits never wait.
    pub fn set_interval(&mut self, level: u8, frames: u32) {
        self.state.set_interval(level, frames);
    }

    /// Whether item `id` is in scope.
    pub fn contains(&self, id: ReplicationId) -> bool {
        self.state.scope().is_some() && self.state.sees(id)
    }

    /// Items in scope.
    pub fn len(&self) -> usize {
        self.state.scope_len()
    }

    /// Whether no item is in scope.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids in scope, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = ReplicationId> + '_ {
        self.state.scope_ids()
    }

    fn slot(&self) -> u32 {
        self.state.scope().map_or(0, |scope| scope.slot)
    }
}
