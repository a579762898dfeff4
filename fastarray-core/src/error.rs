//! Typed errors for encoding and decoding.

use core::fmt;

/// Why a message or value could not be decoded.
///
/// Every variant says where the problem was found as a bit offset from the
/// start of the reader's input. A decoder that returns one of these has
/// changed nothing in the value or array it was decoding into.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before the value did.
    UnexpectedEnd {
        /// Bit offset at which more input was needed.
        bit_offset: u64,
        /// How many more bits the read asked for.
        wanted: u32,
    },
    /// A variable-length integer had a longer prefix than any valid value.
    VarintOverlong {
        /// Bit offset of the start of the varint.
        bit_offset: u64,
    },
    /// A varint decoded to a value that does not fit the target type.
    VarintOutOfRange {
        /// Bit offset of the start of the varint.
        bit_offset: u64,
        /// The type it had to fit.
        target: &'static str,
    },
    /// A length prefix claims more elements than the remaining input could hold.
    LengthTooLarge {
        /// Bit offset just after the length prefix.
        bit_offset: u64,
        /// The length the input claims.
        claimed: u64,
        /// Bits left in the input when the length was read.
        remaining_bits: u64,
    },
    /// A 21-bit code point that is not a Unicode scalar value.
    InvalidChar {
        /// Bit offset of the code point.
        bit_offset: u64,
        /// The value read.
        value: u32,
    },
    /// String bytes that are not valid UTF-8.
    InvalidUtf8 {
        /// Bit offset of the first byte of the string.
        bit_offset: u64,
    },
    /// A set or map whose encoding holds the same key twice: no sender
    /// writes one.
    DuplicateKey {
        /// Bit offset of the second occurrence of the key.
        bit_offset: u64,
    },
    /// The message header names a kind this decoder does not take here.
    UnexpectedMessageKind {
        /// Bit offset of the kind bits.
        bit_offset: u64,
        /// The kind that was expected.
        expected: &'static str,
        /// The kind that was found.
        found: &'static str,
    },
    /// The sender was built with a different definition of the item type.
    SchemaMismatch {
        /// Name of the local type.
        type_name: &'static str,
        /// Schema of the local type: its `SCHEMA_HASH`, with the bits of
        /// the defaults its whole values are written against
        /// (`#[replicate(default_baseline)]`) folded in.
        expected: u64,
        /// Schema written by the sender.
        found: u64,
    },
    /// A replication id went past the largest id while delta-decoding.
    IdOverflow {
        /// Bit offset of the id gap.
        bit_offset: u64,
    },
    /// A delta gave its frame relative to frames this mirror has never seen:
    /// the mirror was replaced or reset while its sender kept its state.
    FrameWithoutReference {
        /// Bit offset of the frame header.
        bit_offset: u64,
    },
    /// An enum variant tag past the type's last variant.
    InvalidVariant {
        /// Bit offset of the tag.
        bit_offset: u64,
        /// The tag read.
        tag: u64,
        /// The type's number of variants.
        variants: u32,
    },
    /// A changed-field set that is empty, names a field the type does not
    /// have, or is not written in its canonical (cheaper) form.
    InvalidFieldSet {
        /// Bit offset of the field set.
        bit_offset: u64,
        /// The type's replicated field count.
        field_count: u32,
    },
    /// A delta of the kind whose removals include scope exits names none
    /// (or has no removals): such a delta is written as a plain one.
    InvalidExits {
        /// Bit offset of the flags.
        bit_offset: u64,
    },
    /// A partial change for an item this mirror has never held: the sender
    /// only sends changed fields after the client acknowledged the whole
    /// item, but in a frame's shared message (a shared delta, whose changes
    /// of items not held yet wait for their adds).
    UnknownItem {
        /// The item's id.
        id: crate::ReplicationId,
    },
    /// A partial change naming a handle this mirror was never given (see
    /// `WIRE.md`, "Handles"): the sender names an item by a handle only
    /// after the client acknowledged the whole item that carried it.
    UnknownHandle {
        /// The handle.
        handle: u64,
    },
    /// The same id appears twice in one message.
    DuplicateId {
        /// The repeated id.
        id: crate::ReplicationId,
    },
    /// A message for a replicated object ([`Replicated`](crate::Replicated))
    /// that removes the object or names another item (a delta), or holds
    /// another item (a snapshot): an object is item `#0` alone, and is
    /// never removed.
    NotAnObjectChange {
        /// The id the message named.
        id: crate::ReplicationId,
    },
    /// A snapshot read as a replicated object's
    /// ([`Replicated::from_snapshot`](crate::Replicated::from_snapshot))
    /// that holds no item: it is an empty array's.
    MissingObject,
    /// A delta or snapshot applied to an authority: an array that has held
    /// items or committed on its own (a server's), whose items the message
    /// would silently overwrite. Clients apply messages to a mirror
    /// ([`FastArray::mirror`](crate::FastArray::mirror),
    /// [`Replicated::mirror`](crate::Replicated::mirror), a snapshot, or a
    /// new array that never held an item). Nothing was read or changed.
    NotAMirror {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A feed message applied to an array that is not a relay
    /// ([`FastArray::relay`](crate::FastArray::relay)). Nothing was read or
    /// changed.
    NotARelay {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A ghost kept ([`FastArray::keep_ghost`](crate::FastArray::keep_ghost))
    /// in an array that is not a ghost array
    /// ([`FastArray::ghost`](crate::FastArray::ghost)). Nothing was read or
    /// changed.
    NotAGhost {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A delta or snapshot for clients applied to a ghost array
    /// ([`FastArray::ghost`](crate::FastArray::ghost)), which follows a
    /// neighbour's ghost feed only. Nothing was read or changed.
    Ghost {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A handoff adopted ([`FastArray::adopt`](crate::FastArray::adopt))
    /// by a shard that held the item at that tenure and handed it on since:
    /// a late copy of the handoff (sent again for want of a reply), already
    /// adopted. Nothing was changed.
    StaleHandoff {
        /// The item.
        id: crate::ReplicationId,
    },
    /// A handoff adopted ([`FastArray::adopt`](crate::FastArray::adopt))
    /// by an array not made as a shard
    /// ([`FastArray::shard`](crate::FastArray::shard)): a mirror, a relay,
    /// the server of a world on one process. Nothing was read or changed.
    NotAShard {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A message that would take a mirror past one of the
    /// [`MirrorLimits`](crate::MirrorLimits) its game set: refused while
    /// it was decoded, before the memory it would take was allocated.
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// The limit's value.
        max: u64,
        /// What the message would make it: the items the array would hold
        /// (or the changes it would keep waiting for their items' adds),
        /// the ids it removes, or its size in bytes (for a message read
        /// from a shared bit stream that did not end within the limit, the
        /// bytes the stream held from the message's start).
        would_be: u64,
    },
    /// Bits left over after the message that are not zero padding.
    TrailingData {
        /// Bit offset where the message ended.
        bit_offset: u64,
        /// Bits left in the input.
        remaining_bits: u64,
    },
    /// A user decoder (`#[replicate(with = …)]`) rejected its input.
    Custom {
        /// Bit offset where the user decoder started.
        bit_offset: u64,
        /// What the user decoder said.
        message: &'static str,
    },
    /// A value nests more derived (`#[derive(Replicate)]`) values inside
    /// one another than [`MAX_DEPTH`](crate::MAX_DEPTH) allows: a recursive
    /// type several levels too deep, refused before it could exhaust the
    /// stack.
    TooDeep {
        /// Bit offset of the first value past the limit.
        bit_offset: u64,
        /// The limit, [`MAX_DEPTH`](crate::MAX_DEPTH).
        limit: u32,
    },
    /// `serde_decode` (feature `serde`) could not decode a value: its
    /// `Deserialize` impl raised an error, needs a self-describing format
    /// (`deserialize_any`), or the input nests too deeply.
    Serde {
        /// Bit offset of the start of the value that was rejected.
        bit_offset: u64,
        /// What went wrong.
        message: String,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnexpectedEnd { bit_offset, wanted } => write!(
                f,
                "input ended at bit {bit_offset} while reading {wanted} more bit(s)"
            ),
            Self::VarintOverlong { bit_offset } => {
                write!(f, "overlong varint prefix at bit {bit_offset}")
            }
            Self::VarintOutOfRange { bit_offset, target } => {
                write!(f, "varint at bit {bit_offset} does not fit in {target}")
            }
            Self::LengthTooLarge {
                bit_offset,
                claimed,
                remaining_bits,
            } => write!(
                f,
                "length {claimed} at bit {bit_offset} cannot fit in the {remaining_bits} bit(s) left"
            ),
            Self::InvalidChar { bit_offset, value } => {
                write!(f, "invalid char code point {value:#x} at bit {bit_offset}")
            }
            Self::InvalidUtf8 { bit_offset } => {
                write!(f, "string at bit {bit_offset} is not valid UTF-8")
            }
            Self::DuplicateKey { bit_offset } => {
                write!(
                    f,
                    "the key at bit {bit_offset} is already in the set or map"
                )
            }
            Self::UnexpectedMessageKind {
                bit_offset,
                expected,
                found,
            } => write!(
                f,
                "expected a {expected} message at bit {bit_offset}, found a {found} message"
            ),
            Self::SchemaMismatch {
                type_name,
                expected,
                found,
            } => write!(
                f,
                "schema mismatch for `{type_name}`: this build has {expected:#018x}, the sender has {found:#018x}"
            ),
            Self::IdOverflow { bit_offset } => {
                write!(f, "replication id overflows at bit {bit_offset}")
            }
            Self::FrameWithoutReference { bit_offset } => write!(
                f,
                "the delta at bit {bit_offset} gives its frame relative to frames this mirror never received (was the mirror reset?)"
            ),
            Self::InvalidVariant {
                bit_offset,
                tag,
                variants,
            } => write!(
                f,
                "variant tag {tag} at bit {bit_offset} is not one of the type's {variants} variant(s)"
            ),
            Self::InvalidFieldSet {
                bit_offset,
                field_count,
            } => write!(
                f,
                "invalid changed-field set at bit {bit_offset} for a type with {field_count} replicated field(s)"
            ),
            Self::InvalidExits { bit_offset } => write!(
                f,
                "invalid scope-exit flags at bit {bit_offset}: they name no exit"
            ),
            Self::UnknownItem { id } => write!(
                f,
                "a partial change for item {id}, which this mirror never held"
            ),
            Self::UnknownHandle { handle } => write!(
                f,
                "a partial change for handle {handle}, which this mirror was never given"
            ),
            Self::DuplicateId { id } => write!(f, "item {id} appears twice in one message"),
            Self::NotAnObjectChange { id } => write!(
                f,
                "a replicated object's message names item {id}: it may only change the object (#0), never remove it or add another item"
            ),
            Self::MissingObject => write!(
                f,
                "a replicated object's snapshot holds no object (it is an empty array's snapshot)"
            ),
            Self::NotARelay { type_name } => write!(
                f,
                "a feed message applied to an array of `{type_name}` that is not a relay: \
                 make it with FastArray::relay()"
            ),
            Self::NotAGhost { type_name } => write!(
                f,
                "a ghost kept in an array of `{type_name}` that is not a ghost array: \
                 make it with FastArray::ghost()"
            ),
            Self::StaleHandoff { id } => write!(
                f,
                "a late copy of the handoff of item {id}: this shard adopted it and handed it on since"
            ),
            Self::Ghost { type_name } => write!(
                f,
                "a client's message applied to a ghost array of `{type_name}`, which follows a \
                 neighbour's ghost feed (apply_feed) only"
            ),
            Self::NotAShard { type_name } => write!(
                f,
                "a handoff adopted by an array of `{type_name}` that is not a shard: make the \
                 shards' arrays with FastArray::shard(ShardId)"
            ),
            Self::NotAMirror { type_name } => write!(
                f,
                "a message applied to an authority (an array of `{type_name}` that has held items or \
                 committed on its own), whose items it would overwrite: apply messages to a mirror \
                 (`mirror()`, a snapshot, or a new array that never held an item)"
            ),
            Self::LimitExceeded {
                limit,
                max,
                would_be,
            } => write!(
                f,
                "the message would make `{}` {would_be}, over the mirror's limit of {max}",
                limit.name()
            ),
            Self::TrailingData {
                bit_offset,
                remaining_bits,
            } => write!(
                f,
                "{remaining_bits} bit(s) of non-padding data after the message end at bit {bit_offset}"
            ),
            Self::Custom {
                bit_offset,
                message,
            } => write!(f, "at bit {bit_offset}: {message}"),
            Self::TooDeep { bit_offset, limit } => write!(
                f,
                "the value at bit {bit_offset} nests more than {limit} derived values deep"
            ),
            Self::Serde {
                bit_offset,
                message,
            } => write!(f, "at bit {bit_offset}: {message}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Which of a mirror's [`MirrorLimits`](crate::MirrorLimits) a message
/// would break (in [`DecodeError::LimitExceeded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// [`MirrorLimits::items`](crate::MirrorLimits::items): the items the
    /// array would hold.
    Items,
    /// [`MirrorLimits::message_bytes`](crate::MirrorLimits::message_bytes):
    /// the message's size in bytes.
    MessageBytes,
    /// [`MirrorLimits::inner_items`](crate::MirrorLimits::inner_items): the
    /// items an array inside an item would hold.
    InnerItems,
    /// [`MirrorLimits::removals`](crate::MirrorLimits::removals): the ids
    /// one message removes or takes out of scope.
    Removals,
}

impl Limit {
    /// The limit's name, as [`MirrorLimits`](crate::MirrorLimits) spells
    /// its field.
    pub fn name(self) -> &'static str {
        match self {
            Self::Items => "items",
            Self::MessageBytes => "message_bytes",
            Self::InnerItems => "inner_items",
            Self::Removals => "removals",
        }
    }
}

/// Why a value could not be encoded.
///
/// Encoding never truncates silently: a value that does not fit its declared
/// encoding is reported, and the caller decides what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// An integer does not fit in the number of bits it was declared with.
    ValueOutOfRange {
        /// The value, widened.
        value: i128,
        /// The declared width in bits.
        bits: u32,
    },
    /// A user encoder (`#[replicate(with = …)]`) refused its value.
    Custom {
        /// What the user encoder said.
        message: &'static str,
    },
    /// A serde `Serialize` impl failed or used something the bit format
    /// cannot encode (`serde_encode`, feature `serde`).
    Serde(String),
    /// The value nests more derived (`#[derive(Replicate)]`) values inside
    /// one another than [`MAX_DEPTH`](crate::MAX_DEPTH) allows, so a
    /// receiver would refuse it ([`DecodeError::TooDeep`]).
    TooDeep {
        /// The limit, [`MAX_DEPTH`](crate::MAX_DEPTH).
        limit: u32,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ValueOutOfRange { value, bits } => {
                write!(f, "value {value} does not fit in {bits} bit(s)")
            }
            Self::Custom { message } => f.write_str(message),
            Self::Serde(message) => f.write_str(message),
            Self::TooDeep { limit } => write!(
                f,
                "the value nests more than {limit} derived values deep, which no receiver accepts"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Why a delta could not be written. Nothing was written and the
/// connection's state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError {
    /// The array has mutations since its last `commit`. Deltas describe
    /// committed frames; commit first.
    Uncommitted,
    /// This packet id names a packet still in flight on this connection
    /// (report its ack or loss before reusing the id).
    PacketInFlight {
        /// The packet id.
        packet: u32,
    },
    /// A budget of zero bits cannot hold even an empty message (1 bit).
    BudgetTooSmall {
        /// The budget given.
        budget: u64,
    },
    /// A write asked of a mirror ([`FastArray::is_mirror`](crate::FastArray::is_mirror)),
    /// which follows a server's array and has no changes of its own to send.
    NotAnAuthority {
        /// The array's item type.
        type_name: &'static str,
    },
    /// The connection's scope belongs to another array (or to the array
    /// this one was cloned from): a connection's scope is set up with
    /// [`FastArray::scope`](crate::FastArray::scope) on the array it
    /// receives.
    ScopedElsewhere,
    /// A snapshot was asked for a connection with a scope: a snapshot holds
    /// every item with every field, which such a connection may not be
    /// sent. Its client joins by delta: the first deltas carry the items
    /// in its scope, whole, with the fields their detail levels send.
    ScopedSnapshot,
    /// [`SendState::set_client`](crate::SendState::set_client) after the
    /// connection wrote something (or joined by snapshot) under another
    /// client: which owner-only fields its client holds was chosen for
    /// that one. Name the client before the first write.
    ClientAfterWrite,
    /// A change of owners asked of a relay
    /// ([`FastArray::relay`](crate::FastArray::relay)), whose items and
    /// owners follow its server's feed: change the server's.
    Relay {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A handoff asked of an array not made as a shard
    /// ([`FastArray::shard`](crate::FastArray::shard)).
    NotAShard {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A delta, snapshot or scope asked of a shard: a shard's items leave
    /// and come back with handoffs, which its clients' mirrors could not
    /// follow; relays serve a sharded world's clients (see
    /// [`FastArray::shard`](crate::FastArray::shard)).
    ShardClients {
        /// The shard.
        shard: crate::ShardId,
    },
    /// A handoff of an item the array does not hold.
    UnknownItem {
        /// The item.
        id: crate::ReplicationId,
    },
    /// A handoff to the shard the array is: an item is handed off to
    /// another shard.
    HandoffToSelf {
        /// The array's shard.
        shard: crate::ShardId,
    },
    /// A write asked of a ghost array
    /// ([`FastArray::ghost`](crate::FastArray::ghost)), which follows a
    /// neighbour shard's ghost feed and has nothing of its own to send.
    Ghost {
        /// The array's item type.
        type_name: &'static str,
    },
    /// A ghost snapshot asked of a [`GhostFeed`](crate::GhostFeed) that
    /// has not written the array's last commit (or that writes another
    /// array's ghosts): its neighbour could not go on from the snapshot
    /// with the frames that follow. Write the commit's
    /// [`write_ghost_feed`](crate::FastArray::write_ghost_feed) first.
    GhostFeedBehind,
    /// An item could not be encoded.
    Encode {
        /// The item.
        id: crate::ReplicationId,
        /// What its encoder said.
        error: EncodeError,
    },
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uncommitted => f.write_str(
                "the array has uncommitted changes: call commit() before writing deltas",
            ),
            Self::PacketInFlight { packet } => write!(
                f,
                "packet id {packet} is still in flight on this connection; report its ack or loss before reusing it"
            ),
            Self::BudgetTooSmall { budget } => {
                write!(f, "a budget of {budget} bits cannot hold any message")
            }
            Self::NotAnAuthority { type_name } => write!(
                f,
                "this array of `{type_name}` is a mirror: it applies its server's deltas and has \
                 nothing of its own to send"
            ),
            Self::ScopedElsewhere => f.write_str(
                "this connection's scope was set up on another array: a connection state serves \
                 one array",
            ),
            Self::ScopedSnapshot => f.write_str(
                "this connection has a scope, and a snapshot holds every item and every field: \
                 join a scoped connection by delta (its first deltas carry its scope's items whole)",
            ),
            Self::Relay { type_name } => write!(
                f,
                "a relay of `{type_name}` follows its server's feed: change owners on the server"
            ),
            Self::Ghost { type_name } => write!(
                f,
                "this array of `{type_name}` is a ghost array: it follows a neighbour's ghost feed \
                 and has nothing of its own to send"
            ),
            Self::GhostFeedBehind => f.write_str(
                "this ghost feed has not written the array's last commit: call write_ghost_feed \
                 after each commit, before answering for a snapshot",
            ),
            Self::ClientAfterWrite => f.write_str(
                "this connection already wrote under another client: name its client (set_client) \
                 before its first write",
            ),
            Self::NotAShard { type_name } => write!(
                f,
                "a handoff asked of an array of `{type_name}` that is not a shard: make the \
                 shards' arrays with FastArray::shard(ShardId)"
            ),
            Self::ShardClients { shard } => write!(
                f,
                "{shard} writes its feed for relays, which serve its clients: a client of a shard \
                 could not follow items that leave and come back"
            ),
            Self::UnknownItem { id } => write!(f, "item {id} is not in the array"),
            Self::HandoffToSelf { shard } => write!(
                f,
                "a handoff to {shard}, the array's own shard: hand items off to another shard"
            ),
            Self::Encode { id, error } => write!(f, "item {id}: {error}"),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Encode { error, .. } => Some(error),
            _ => None,
        }
    }
}
