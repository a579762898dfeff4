//! [`Replicated`]: one replicated object (game state, a match, a player's
//! inventory) with the life cycle and the whole replication surface of a
//! `FastArray`: deltas (budgeted or not, into bytes or a shared bit
//! stream), snapshots, events.
//!
//! Any `#[derive(Replicate)]` struct can be the object. Its plain fields
//! are replicated as the changed fields of a single item, `#0` (through
//! the same history ring, retirement list and per-field frames as any
//! `FastArray` item), and each `#[replicate(array)]` field as an array
//! inside that item (per-id deltas), all in one message per packet. Each
//! method delegates to that one-item array, so it has the array's
//! semantics.

use core::fmt;
use core::ops::{Deref, DerefMut};

use crate::array::{FastArray, FeedReport, read_whole};
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError, SendError};
use crate::id::{ReplicationId, ReplicationKey};
use crate::limits::MirrorLimits;
use crate::receive_state::events::{ApplyReport, Callbacks};
use crate::receive_state::follow::FeedStats;
use crate::receive_state::mirror_state::MirrorState;
use crate::replicate::Replicate;
use crate::send_state::SendState;
use crate::send_state::scope::ScopeExit;
use crate::send_state::stats::DeltaStats;
use crate::store::ItemMut;

mod forward;
use forward::forward_to_array;

/// The single item's id inside a [`Replicated`].
const ID: ReplicationId = ReplicationId::from_raw(0);

/// One replicated object (game state, a match, a player's inventory) with
/// the life cycle of a [`FastArray`]: mutate through
/// [`get_mut`](Self::get_mut), [`commit`](Self::commit),
/// [`write_delta`](Self::write_delta) per connection, report acks and
/// losses to the [`SendState`], and [`apply_delta`](Self::apply_delta) on
/// the client's mirror. A client that joins late can start from a
/// snapshot ([`write_snapshot_for`](Self::write_snapshot_for)).
///
/// The object is any `#[derive(Replicate)]` struct. Its plain fields send
/// only the fields that changed; its `#[replicate(array)]` fields send
/// per-id deltas of their items. Every method has the name, the arguments
/// and the meaning of the [`FastArray`] method of the same name, the
/// object being that array's one item, `#0`.
///
/// ```
/// use fastarray_core::{Replicated, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Rules { round: u8, time_left: u16 }
///
/// let mut server = Replicated::new(Rules { round: 1, time_left: 300 });
/// server.commit();
/// let (mut state, mut client) = (SendState::new(), Replicated::<Rules>::mirror());
/// let mut packet = Vec::new();
/// server.write_delta(&mut state, 1, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// state.on_ack(1);
///
/// server.get_mut().time_left -= 1;
/// server.commit();
/// let mut packet = Vec::new();
/// let stats = server.write_delta(&mut state, 2, &mut packet).unwrap();
/// assert_eq!(stats.changed, 1); // `time_left` only
/// client.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(client.get(), server.get());
/// ```
///
/// With array fields:
///
/// ```
/// use fastarray_core::{FastArray, Replicated, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")]
/// struct Unit { hp: u16 }
///
/// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
/// #[replicate(crate = "fastarray_core")]
/// struct Match {
///     round: u8,
///     #[replicate(array)]
///     red: FastArray<Unit>,
///     #[replicate(array)]
///     blue: FastArray<Unit>,
/// }
///
/// let mut server = Replicated::new(Match::default());
/// server.get_mut().red.push(Unit { hp: 100 });
/// server.commit();
///
/// let mut state = SendState::new();
/// let mut client = Replicated::<Match>::mirror();
/// let mut packet = Vec::new();
/// server.write_delta(&mut state, 1, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// state.on_ack(1);
/// assert_eq!(client.get(), server.get());
/// ```
pub struct Replicated<T> {
    /// The object as the single item `ID` of an array: its plain fields
    /// use the item machinery (history, retirement, per-field frames) and
    /// its array fields the inner-array machinery of any item.
    item: FastArray<T>,
}

/// A copy of the object and of its history, as [`FastArray`]'s `Clone`.
impl<T: Clone> Clone for Replicated<T> {
    fn clone(&self) -> Self {
        Self {
            item: self.item.clone(),
        }
    }
}

/// Equal when the objects are equal.
impl<T: PartialEq> PartialEq for Replicated<T> {
    fn eq(&self, other: &Self) -> bool {
        self.item == other.item
    }
}

/// The object.
impl<T: fmt::Debug> fmt::Debug for Replicated<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.item.get(ID) {
            Some(value) => f.debug_tuple("Replicated").field(value).finish(),
            None => unreachable!("a Replicated always holds its object"),
        }
    }
}

/// The object's life cycle on the server, and reading it anywhere.
impl<T: Replicate> Replicated<T> {
    /// A server-side object. Its first [`commit`](Self::commit) announces it.
    pub fn new(value: T) -> Self {
        Self {
            item: FastArray::for_object(value, false),
        }
    }

    /// A client-side mirror, to [`apply_delta`](Self::apply_delta) to: a
    /// default value until the server's first message arrives. (A client
    /// that starts from a snapshot uses
    /// [`from_snapshot`](Self::from_snapshot) instead, which needs no
    /// `Default`.) A mirror refuses local changes, which the next delta
    /// would overwrite ([`get_mut`](Self::get_mut) and
    /// [`commit`](Self::commit) panic, writes return
    /// [`SendError::NotAnAuthority`]); an object made with
    /// [`new`](Self::new) refuses deltas ([`DecodeError::NotAMirror`]).
    pub fn mirror() -> Self
    where
        T: Default,
    {
        Self {
            item: FastArray::for_object(T::default(), true),
        }
    }

    /// A client-side mirror, as [`mirror`](Self::mirror), that refuses any
    /// message that would take it past `limits`
    /// ([`DecodeError::LimitExceeded`], changing nothing). The object's
    /// `#[replicate(array)]` fields are the game's arrays: they are held to
    /// [`MirrorLimits::items`], and the arrays inside their items to
    /// [`MirrorLimits::inner_items`].
    pub fn mirror_with_limits(limits: MirrorLimits) -> Self
    where
        T: Default,
    {
        let mut object = Self::mirror();
        object.item.set_limits(limits);
        object
    }

    /// Checks every message applied from now on against `limits` (see
    /// [`mirror_with_limits`](Self::mirror_with_limits)).
    ///
    /// # Panics
    /// On a server's object (from [`new`](Self::new)), which applies no
    /// messages.
    #[track_caller]
    pub fn set_limits(&mut self, limits: MirrorLimits) {
        if !self.is_mirror() {
            panic!(
                "Replicated::set_limits on a server's object of `{}`: limits are a mirror's",
                core::any::type_name::<T>()
            );
        }
        self.item.set_limits(limits);
    }

    /// Whether both objects are equal *as the wire sees them*: their plain
    /// fields encode to the same bits and their arrays hold the same ids
    /// with items equal in the same sense ([`Replicate::wire_eq`]). Compare
    /// a mirror with its server with this: quantized fields make `==` fail.
    pub fn wire_eq(&self, other: &Self) -> bool {
        self.get().wire_eq(other.get())
    }

    /// The object.
    pub fn get(&self) -> &T {
        match self.item.get(ID) {
            Some(value) => value,
            None => unreachable!("a Replicated always holds its object"),
        }
    }

    /// The object, behind a guard that records its pre-image the first
    /// time it is written in a frame, as [`FastArray::get_mut`] does for an
    /// item: a clone of a plain object; only the plain fields of an object
    /// with `#[replicate(array)]` fields (the arrays track their own
    /// changes, and are not cloned).
    ///
    /// # Panics
    /// On a [mirror](Self::mirror): the next delta would overwrite the
    /// change.
    #[track_caller]
    pub fn get_mut(&mut self) -> ObjectMut<'_, T>
    where
        T: Clone,
    {
        self.item.expect_authority("Replicated::get_mut");
        match self.item.get_mut(ID) {
            Some(item) => ObjectMut { item },
            None => unreachable!("a Replicated always holds its object"),
        }
    }

    /// Ends the frame: works out which plain fields changed since the last
    /// commit, and commits every array field. Returns whether the object
    /// changed (a plain field, or an array's item).
    ///
    /// # Panics
    /// As [`FastArray::commit`]: if an array field was replaced by another
    /// `FastArray` rather than edited. On a [mirror](Self::mirror), which
    /// has no changes of its own.
    #[track_caller]
    pub fn commit(&mut self) -> bool {
        self.item.expect_authority("Replicated::commit");
        !self.item.commit().is_empty()
    }

    /// The object's version: bumped by each commit that found it changed.
    pub fn key(&self) -> ReplicationKey {
        match self.item.key(ID) {
            Some(key) => key,
            None => unreachable!("a Replicated always holds its object"),
        }
    }
}

/// The one-item array the object is, for what writes or applies through
/// it (connections, the `bitstream-io` adapter).
impl<T> Replicated<T> {
    /// The one-item array the object is.
    pub(crate) fn as_array(&self) -> &FastArray<T> {
        &self.item
    }

    /// The object a one-item array (its item `#0`) is.
    #[cfg(feature = "serde")]
    pub(crate) fn from_array(item: FastArray<T>) -> Self {
        Self { item }
    }

    /// The one-item array the object is, to write or apply through.
    pub(crate) fn as_array_mut(&mut self) -> &mut FastArray<T> {
        &mut self.item
    }
}

/// Relays of an object: a server's object writes its feed, and a relay
/// object follows it and serves its own connections as the server would
/// (see "Relays" in [`FastArray`]'s documentation). A relay object holds
/// its type's default until it joins; a feed of an array, or one that
/// names another item than the object, is refused
/// ([`DecodeError::NotAnObjectChange`], [`DecodeError::MissingObject`]).
///
/// ```
/// use fastarray_core::{Replicated, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Match { round: u8, score: [u16; 2] }
///
/// let mut server = Replicated::new(Match::default());
/// server.commit();
/// let mut relay = Replicated::<Match>::relay();
/// let mut bus = Vec::new();
/// server.write_feed_snapshot(&mut bus).unwrap();
/// relay.apply_feed(&bus).unwrap();
/// server.get_mut().score[1] = 3;
/// server.commit();
/// bus.clear();
/// server.write_feed(&mut bus).unwrap();
/// relay.apply_feed(&bus).unwrap();
/// assert_eq!(relay.get(), server.get());
///
/// let (mut state, mut client) = (SendState::new(), Replicated::<Match>::mirror());
/// let mut packet = Vec::new();
/// relay.write_delta(&mut state, 0, &mut packet).unwrap();
/// client.apply_delta(&packet, &mut ()).unwrap();
/// assert_eq!(client.get(), server.get());
/// ```
impl<T: Replicate + Clone> Replicated<T> {
    /// A relay of an object: its type's default until it joins from a
    /// feed snapshot (see [`FastArray::relay`]).
    pub fn relay() -> Self
    where
        T: Default,
    {
        Self {
            item: FastArray::relay_object(T::default()),
        }
    }

    forward_to_array! {
        fn is_relay(&self) -> bool;
        fn write_feed(&self, out: &mut Vec<u8>) -> Result<u64, SendError>;
        fn write_feed_snapshot(&mut self, out: &mut Vec<u8>) -> Result<u64, SendError>;
        fn apply_feed(&mut self, bytes: &[u8]) -> Result<FeedReport, DecodeError>;
        fn needs_feed_snapshot(&self) -> bool;
        fn has_feed_gap(&self) -> bool;
        fn feed_frame(&self) -> Option<u64>;
        fn feed_stats(&self) -> FeedStats;
    }
}

/// The [`FastArray`] methods an object shares, on its one-item array:
/// its state, sending deltas, applying them on a mirror, and writing
/// snapshots. An object's messages are that array's: the object as item
/// `#0`, its plain fields as the item's changed fields, each
/// `#[replicate(array)]` field as a per-id delta inside it.
impl<T: Replicate> Replicated<T> {
    forward_to_array! {
        fn limits(&self) -> MirrorLimits;
        fn mirror_state(&self) -> MirrorState;
        fn is_mirror(&self) -> bool;
        fn has_uncommitted_work(&self) -> bool;
        fn frame(&self) -> u64;
        fn is_settled(&self, state: &SendState) -> bool;
        fn write_delta(
            &mut self,
            state: &mut SendState,
            packet: u32,
            out: &mut Vec<u8>,
        ) -> Result<DeltaStats, SendError>;
        ///
        /// The plain fields and the arrays' items that fit go now, the
        /// rest stays due for the next packets, so a large object arrives
        /// over several packets:
        ///
        /// ```
        /// use fastarray_core::{FastArray, Replicated, SendState};
        /// use fastarray_derive::Replicate;
        ///
        /// #[derive(Replicate, Clone, Debug, PartialEq)]
        /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
        /// struct Tile { kind: u32 }
        ///
        /// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
        /// #[replicate(crate = "fastarray_core")]
        /// struct Map {
        ///     #[replicate(array)]
        ///     tiles: FastArray<Tile>,
        /// }
        ///
        /// let mut server = Replicated::new(Map::default());
        /// for kind in 0..1_000 {
        ///     server.get_mut().tiles.push(Tile { kind });
        /// }
        /// server.commit();
        /// let (mut state, mut client) = (SendState::new(), Replicated::<Map>::mirror());
        /// let mut packets = 0;
        /// loop {
        ///     let mut packet = Vec::new();
        ///     server.write_delta_with_budget(&mut state, packets, &mut packet, 8_000).unwrap();
        ///     assert!(packet.len() <= 1_000);
        ///     client.apply_delta(&packet, &mut ()).unwrap();
        ///     state.on_ack(packets);
        ///     packets += 1;
        ///     if server.is_settled(&state) {
        ///         break; // everything written is acknowledged, nothing is due
        ///     }
        /// }
        /// assert!(packets > 4);
        /// assert_eq!(client.get(), server.get());
        /// ```
        fn write_delta_with_budget(
            &mut self,
            state: &mut SendState,
            packet: u32,
            out: &mut Vec<u8>,
            max_bits: u64,
        ) -> Result<DeltaStats, SendError>;
        fn write_delta_bits(
            &mut self,
            state: &mut SendState,
            packet: u32,
            writer: &mut BitWriter<'_>,
            max_bits: Option<u64>,
        ) -> Result<DeltaStats, SendError>;
        ///
        /// `callbacks` hear about the object as item `#0`: `post_change`
        /// with the plain fields that changed (an empty mask means only
        /// its arrays did), after an [`inner_event`](Callbacks::inner_event)
        /// for each item added to, changed in or removed from its
        /// `#[replicate(array)]` fields (owned by `#0`).
        fn apply_delta(
            &mut self,
            bytes: &[u8],
            callbacks: &mut impl Callbacks<T>,
        ) -> Result<ApplyReport, DecodeError>;
        ///
        /// The message may sit between other data:
        ///
        /// ```
        /// use fastarray_core::{BitReader, BitWriter, Replicated, SendState};
        /// use fastarray_derive::Replicate;
        ///
        /// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
        /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
        /// struct Rules { round: u8 }
        ///
        /// let mut server = Replicated::new(Rules { round: 3 });
        /// server.commit();
        /// let mut state = SendState::new();
        /// let mut packet = Vec::new();
        /// let mut writer = BitWriter::new(&mut packet);
        /// writer.write_bits(0b101, 3); // the transport's own header
        /// server.write_delta_bits(&mut state, 1, &mut writer, None).unwrap();
        /// writer.write_bits(0xbeef, 16); // whatever follows
        /// writer.finish();
        ///
        /// let mut client = Replicated::<Rules>::mirror();
        /// let mut reader = BitReader::new(&packet);
        /// assert_eq!(reader.read_bits(3).unwrap(), 0b101);
        /// client.apply_delta_bits(&mut reader, &mut ()).unwrap();
        /// assert_eq!(reader.read_bits(16).unwrap(), 0xbeef);
        /// assert_eq!(client.get().round, 3);
        /// ```
        fn apply_delta_bits(
            &mut self,
            reader: &mut BitReader<'_>,
            callbacks: &mut impl Callbacks<T>,
        ) -> Result<ApplyReport, DecodeError>;
        fn write_snapshot(&self, out: &mut Vec<u8>) -> Result<u64, EncodeError>;
        fn write_snapshot_bits(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError>;
        ///
        /// ```
        /// use fastarray_core::{FastArray, Replicated, SendState};
        /// use fastarray_derive::Replicate;
        ///
        /// #[derive(Replicate, Clone, Debug, PartialEq)]
        /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
        /// struct Player { score: u32 }
        ///
        /// #[derive(Replicate, Clone, Debug, PartialEq, Default)]
        /// #[replicate(crate = "fastarray_core")]
        /// struct Lobby {
        ///     countdown: u8,
        ///     #[replicate(array)]
        ///     players: FastArray<Player>,
        /// }
        ///
        /// let mut server = Replicated::new(Lobby::default());
        /// let ann = server.get_mut().players.push(Player { score: 0 });
        /// server.get_mut().countdown = 10;
        /// server.commit();
        ///
        /// // A client joins: one snapshot, and a connection that knows it.
        /// let mut state = SendState::new();
        /// let mut packet = Vec::new();
        /// server.write_snapshot_for(&mut state, &mut packet).unwrap();
        /// let mut client = Replicated::<Lobby>::from_snapshot(&packet).unwrap();
        /// assert_eq!(client.get(), server.get());
        ///
        /// server.get_mut().players.get_mut(ann).unwrap().score = 5;
        /// server.commit();
        /// let mut packet = Vec::new();
        /// let stats = server.write_delta(&mut state, 1, &mut packet).unwrap();
        /// assert_eq!(stats.added, 0); // the client holds the object already
        /// client.apply_delta(&packet, &mut ()).unwrap();
        /// state.on_ack(1);
        /// assert_eq!(client.get(), server.get());
        /// ```
        fn write_snapshot_for(
            &self,
            state: &mut SendState,
            out: &mut Vec<u8>,
        ) -> Result<u64, SendError>;
        fn write_snapshot_for_bits(
            &self,
            state: &mut SendState,
            writer: &mut BitWriter<'_>,
        ) -> Result<(), SendError>;
    }
}

/// Showing the object to a connection or hiding it.
impl<T: Replicate> Replicated<T> {
    /// Shows the object to `state`'s client, or hides it (interest
    /// management, as [`FastArray::scope`] for an array). A hidden object
    /// costs the connection nothing while hidden: the client keeps its
    /// copy, frozen (a replicated object always has a value; see
    /// [`ScopeExit::Persist`](crate::ScopeExit::Persist)), and showing it
    /// again sends the fields that changed meanwhile (and its arrays'
    /// changes). Every connection sees the object until it is first
    /// hidden; one hidden before its first write gets the object's first
    /// value only when shown.
    ///
    /// # Errors
    /// As [`FastArray::scope`]: [`SendError::NotAnAuthority`] on a mirror,
    /// [`SendError::ScopedElsewhere`] for a connection of another array
    /// or object.
    ///
    /// ```
    /// use fastarray_core::{Replicated, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, Default, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Vault { gold: u32 }
    ///
    /// let mut vault = Replicated::new(Vault { gold: 10 });
    /// vault.commit();
    /// let (mut state, mut client) = (SendState::new(), Replicated::<Vault>::mirror());
    /// let mut packet = Vec::new();
    /// vault.write_delta(&mut state, 1, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// state.on_ack(1);
    ///
    /// vault.set_visible(&mut state, false).unwrap(); // out of sight
    /// vault.get_mut().gold = 99;
    /// vault.commit();
    /// packet.clear();
    /// assert_eq!(vault.write_delta(&mut state, 2, &mut packet).unwrap().bits, 1);
    /// assert_eq!(client.get().gold, 10);
    ///
    /// vault.set_visible(&mut state, true).unwrap();
    /// packet.clear();
    /// vault.write_delta(&mut state, 3, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!(client.get().gold, 99);
    /// ```
    pub fn set_visible(&mut self, state: &mut SendState, visible: bool) -> Result<(), SendError> {
        let mut scope = self.item.scope_with(state, ScopeExit::Persist)?;
        if visible {
            scope.include(ID);
        } else {
            scope.exclude(ID);
        }
        Ok(())
    }

    /// Whether `state`'s client sees the object (see
    /// [`set_visible`](Self::set_visible)).
    pub fn is_visible(&self, state: &SendState) -> bool {
        state.sees(ID)
    }

    /// Makes the object owned by the client numbered `owner` (`None`: by
    /// nobody), from the next [`commit`](Self::commit): the connection
    /// serving that client ([`SendState::set_client`]) is sent its
    /// `#[replicate(owner_only)]` fields and not its
    /// `#[replicate(skip_owner)]` ones, every other connection the reverse.
    /// As [`FastArray::set_owner`], which says what a move sends.
    ///
    /// # Errors
    /// [`SendError::NotAnAuthority`] on a mirror.
    ///
    /// ```
    /// use fastarray_core::{Replicated, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, Default, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Quest { stage: u8, #[replicate(owner_only)] secret: u32 }
    ///
    /// let mut quest = Replicated::new(Quest { stage: 2, secret: 77 });
    /// quest.set_owner(Some(5)).unwrap();
    /// quest.commit();
    /// let (mut state, mut client) = (SendState::new(), Replicated::<Quest>::mirror());
    /// state.set_client(6).unwrap(); // not the owner
    /// let mut packet = Vec::new();
    /// quest.write_delta(&mut state, 1, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!(*client.get(), Quest { stage: 2, secret: 0 });
    /// ```
    pub fn set_owner(&mut self, owner: Option<u64>) -> Result<(), SendError> {
        self.item.set_owner(ID, owner).map(drop)
    }

    /// The client that owns the object, as last set with
    /// [`set_owner`](Self::set_owner).
    pub fn owner(&self) -> Option<u64> {
        self.item.owner(ID)
    }
}

/// A mirror from a snapshot, or reset by one: see the [`FastArray`]
/// methods of the same names. An object's snapshot is its one-item
/// array's: the object as item `#0`, its arrays with it.
impl<T: Replicate> Replicated<T> {
    /// Decodes a snapshot that fills all of `bytes` (up to zero padding): a
    /// mirror holding the object, that ignores every delta no newer than
    /// the snapshot. A snapshot of another type is refused
    /// ([`DecodeError::SchemaMismatch`]), and so is an array's snapshot
    /// that does not hold exactly the object, item `#0`
    /// ([`DecodeError::NotAnObjectChange`], [`DecodeError::MissingObject`]).
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_snapshot_with_limits(bytes, MirrorLimits::DEFAULT)
    }

    /// [`from_snapshot`](Self::from_snapshot) of a mirror held to `limits`
    /// (as [`FastArray::from_snapshot_with_limits`]; the object's arrays
    /// are held to [`MirrorLimits::items`], the arrays inside their items
    /// to [`MirrorLimits::inner_items`]).
    pub fn from_snapshot_with_limits(
        bytes: &[u8],
        limits: MirrorLimits,
    ) -> Result<Self, DecodeError> {
        read_whole(bytes, &limits, |reader| {
            Self::from_snapshot_bits_with_limits(reader, limits)
        })
    }

    /// [`from_snapshot`](Self::from_snapshot) of one snapshot read from a
    /// shared bit stream.
    pub fn from_snapshot_bits(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        Self::from_snapshot_bits_with_limits(reader, MirrorLimits::DEFAULT)
    }

    /// [`from_snapshot_with_limits`](Self::from_snapshot_with_limits) of
    /// one snapshot read from a shared bit stream.
    pub fn from_snapshot_bits_with_limits(
        reader: &mut BitReader<'_>,
        limits: MirrorLimits,
    ) -> Result<Self, DecodeError> {
        Ok(Self {
            item: FastArray::object_from_snapshot_bits(reader, limits)?,
        })
    }

    /// Replaces this mirror's object with a snapshot that fills all of
    /// `bytes`, keeping its [limits](Self::limits), which the snapshot is
    /// checked against. On error the mirror is unchanged; a server's
    /// object (from [`new`](Self::new)) returns
    /// [`DecodeError::NotAMirror`].
    pub fn apply_snapshot(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        self.apply_snapshot_with(bytes, &mut ()).map(|_| ())
    }

    /// [`apply_snapshot`](Self::apply_snapshot), telling `callbacks` what
    /// it changed as a delta would (see
    /// [`FastArray::apply_snapshot_with`]): the object's `post_add` if the
    /// mirror did not hold it yet, else `post_change_whole` if it differs.
    pub fn apply_snapshot_with(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        self.item.expect_receiver()?;
        let mut new = Self::from_snapshot_with_limits(bytes, self.limits())?;
        let report = self.item.report_snapshot(&new.item, callbacks);
        core::mem::swap(self, &mut new);
        Ok(report)
    }
}

/// Write access to a [`Replicated`] object, from [`Replicated::get_mut`].
pub struct ObjectMut<'a, T> {
    item: ItemMut<'a, T>,
}

impl<T> Deref for ObjectMut<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T: Replicate + Clone> DerefMut for ObjectMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.item
    }
}
