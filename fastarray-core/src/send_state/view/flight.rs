//! [`Flight`]: what the records in flight say of an item, kept only while
//! two or more of them are.

use crate::mask::FieldMask;

/// What the records in flight say of an item, kept while two or more are
/// (and until the last of them lands): which lost record needs repair
/// depends on the records written after it. With one record in flight
/// (every earlier one resolved) the answers need none of it: nothing was
/// written after that record, and a fresh flight's values say so. An
/// entry made by a record while records of the id's earlier stay may be
/// in flight also keeps one until none can be ([`born`](Self::born)).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Flight {
    /// For an entry made by a record on a connection with a scope (an
    /// add, or an item back in scope) for an id that left while older
    /// records were in flight (see `Views::departed`), or by a whole value
    /// of a new shape: that record. Records older than it that are still
    /// in flight carried an earlier stay of the id (before its removal or
    /// exit was acknowledged): their fate is not this entry's. 0 once no
    /// such record can be in flight. (Until the id comes back, the guard
    /// is kept with no entry pointing at it, born of the acknowledged
    /// removal or exit.)
    pub(crate) born: u64,
    /// The newest record that carried this id (0: none since the item was
    /// last at rest).
    pub(crate) last_seq: u64,
    /// The newest acknowledged record that carried this id (0: none).
    pub(crate) acked_seq: u64,
    /// The newest record that carried a structural whole value (the add,
    /// or a change of an enum's variant): the client's copy is `Known`
    /// again only once a whole value at least that new is acknowledged.
    pub(crate) structural_seq: u64,
    /// The fields the newest record carried for this id: a lost older
    /// record's fields among these need no resend, since that newer
    /// record's own ack or loss takes care of them.
    pub(crate) last_fields: FieldMask,
}
