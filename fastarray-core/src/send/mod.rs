//! Writing deltas, above storage: per array, what writing keeps from
//! write to write ([`Sender`](sender::Sender): the history ring every
//! connection reads, this frame's encodings, the shared message of
//! caught-up connections), and the writer, which asks a connection's
//! [`SendState`](crate::SendState) what is due, plans a message within its
//! budget (`plan`) and writes it (`sender`, in the layout of `message`).
//! The shared message's entries are `frame_entries`; where they allow,
//! the commit writes them as it diffs (`frame_body`), and for scoped
//! connections it encodes the changed fields they follow
//! (`changed_spans`). What a connection keeps
//! between messages, which knows nothing of the items' type, is
//! `send_state`'s, below `Replicate`.

pub(crate) mod changed_spans;
pub(crate) mod delta_bytes;
pub(crate) mod encode_cache;
pub(crate) mod frame_body;
pub(crate) mod frame_entries;
pub(crate) mod message;
pub(crate) mod plan;
pub(crate) mod sender;
pub(crate) mod shared_message;
