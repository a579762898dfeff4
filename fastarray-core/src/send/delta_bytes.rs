//! [`DeltaBytes`]: a delta message handed out whole, by
//! [`FastArray::write_delta_bytes`](crate::FastArray::write_delta_bytes).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The bytes of one connection's delta message, as
/// [`FastArray::write_delta_bytes`](crate::FastArray::write_delta_bytes)
/// hands them out: the frame's shared message, the same allocation for
/// every caught-up connection (handing it to one more connection copies
/// nothing), or a message of the connection's own.
///
/// It reads as a `[u8]` and is `Send + Sync + 'static`, so a transport
/// that takes owned buffers can take it without a copy; with the `bytes`
/// crate (quinn's datagrams, tokio's codecs), `Bytes::from_owner(delta)`.
/// Cloning shares the bytes.
///
/// ```
/// use fastarray_core::{FastArray, SendState};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { hp: u8 }
///
/// let mut server = FastArray::new();
/// let id = server.push(Unit { hp: 10 });
/// server.commit();
/// let mut states = [SendState::new(), SendState::new()];
/// for state in &mut states {
///     let (bytes, _) = server.write_delta_bytes(state, 1)?;
///     assert!(!bytes.is_shared()); // each client's first message is its own
///     state.on_ack(1);
/// }
/// server.get_mut(id).unwrap().hp = 9;
/// server.commit();
/// let (a, stats) = server.write_delta_bytes(&mut states[0], 2)?;
/// let (b, _) = server.write_delta_bytes(&mut states[1], 2)?;
/// assert!(a.is_shared() && stats.shared);
/// assert_eq!(a.as_ptr(), b.as_ptr()); // one message, not copied
/// # Ok::<(), fastarray_core::SendError>(())
/// ```
#[derive(Clone)]
pub struct DeltaBytes(Repr);

#[derive(Clone)]
enum Repr {
    Shared(Arc<[u8]>),
    Own(Vec<u8>),
}

impl DeltaBytes {
    /// The frame's shared message.
    pub(crate) fn shared(bytes: Arc<[u8]>) -> Self {
        Self(Repr::Shared(bytes))
    }

    /// A message of the connection's own.
    pub(crate) fn own(bytes: Vec<u8>) -> Self {
        Self(Repr::Own(bytes))
    }

    /// Whether these are the frame's shared message's bytes (the same
    /// allocation for every caught-up connection), not a message of the
    /// connection's own.
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(_))
    }

    /// The bytes in a `Vec` of their own (copied if they are shared).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Shared(bytes) => bytes.to_vec(),
            Repr::Own(bytes) => bytes,
        }
    }
}

impl Deref for DeltaBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Shared(bytes) => bytes,
            Repr::Own(bytes) => bytes,
        }
    }
}

impl AsRef<[u8]> for DeltaBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for DeltaBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for DeltaBytes {}

impl fmt::Debug for DeltaBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaBytes")
            .field("shared", &self.is_shared())
            .field("len", &self.len())
            .finish()
    }
}
