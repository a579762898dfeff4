//! Which refusals of a packet are the network's doing and change nothing,
//! so the adapter counts them instead of returning them.

use fastarray_core::{AckError, ConnectionError};

/// A packet refused for a reason the network causes and fastarray already
/// handles: nothing changed, nothing is owed, there is nothing to do.
/// [`harmless`] tells them apart from real errors, which the adapter
/// returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Harmless {
    /// The packet arrived before: the network duplicated it
    /// ([`AckError::Duplicate`]). Its content was applied the first time.
    Duplicate,
    /// The packet arrived more than 32 packets after newer ones
    /// ([`AckError::TooOld`]): its sender has declared it lost and sends
    /// what it carried again if it is still current.
    TooOld,
}

/// Which [`Harmless`] refusal `error`, from [`MirrorConnection::apply`]
/// or [`Connection::receive`], is, if it is one
/// ([`ConnectionError::is_harmless`]: a duplicate, or a packet too old to
/// acknowledge). Every other error is real; with renet's netcode
/// transport, which authenticates every datagram, those come only from a
/// peer running other code (another version of the game's types, a bug):
/// disconnect it.
///
/// ```
/// use fastarray_core::{AckError, ConnectionError};
/// use fastarray_renet::{Harmless, harmless};
///
/// let duplicate = ConnectionError::Ack(AckError::Duplicate { packet: 7 });
/// assert_eq!(harmless(&duplicate), Some(Harmless::Duplicate));
/// let truncated = ConnectionError::Ack(AckError::Truncated { len: 3 });
/// assert_eq!(harmless(&truncated), None);
/// ```
///
/// [`MirrorConnection::apply`]: fastarray_core::MirrorConnection::apply
/// [`Connection::receive`]: fastarray_core::Connection::receive
pub fn harmless(error: &ConnectionError) -> Option<Harmless> {
    // Which errors are harmless is the core's rule; this names which one.
    let duplicate = matches!(error, ConnectionError::Ack(AckError::Duplicate { .. }));
    error.is_harmless().then_some(if duplicate {
        Harmless::Duplicate
    } else {
        Harmless::TooOld
    })
}
