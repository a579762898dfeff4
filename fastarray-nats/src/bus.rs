//! [`Bus`]: what fastarray needs of a message bus between servers and
//! relays, small enough for any publish-subscribe system to provide.
//! [`NatsBus`](crate::NatsBus) is the shipped one; a wrapper around a bus
//! (one that loses or repeats messages, say, for a test of faults) is
//! another.

use std::fmt;

/// A message taken from a [`Subscription`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusMessage {
    /// The subject it was published on.
    pub subject: String,
    /// Where a reply goes, if the publisher asked for one.
    pub reply: Option<String>,
    /// What was published.
    pub payload: Vec<u8>,
}

/// Why the bus refused an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BusError {
    /// The connection to the bus could not be made (at start; once made,
    /// the bus reconnects by itself and messages published meanwhile are
    /// held or lost, as the bus does).
    Connect(String),
    /// A publish was refused: the connection is closed, or the message
    /// is larger than the bus carries ([`Bus::max_payload`]).
    Publish(String),
    /// A subscription could not be made.
    Subscribe(String),
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(why) => write!(f, "cannot connect to the bus: {why}"),
            Self::Publish(why) => write!(f, "cannot publish: {why}"),
            Self::Subscribe(why) => write!(f, "cannot subscribe: {why}"),
        }
    }
}

impl std::error::Error for BusError {}

/// A publish-subscribe bus. Publishing never waits for a peer: messages
/// are queued and sent in the order published (subscribers of one
/// publisher see them in that order, if at all: a bus may lose messages,
/// as NATS does when a subscriber falls behind or a node fails).
pub trait Bus {
    /// What [`subscribe`](Self::subscribe) gives.
    type Subscription: Subscription;

    /// Publishes `payload` on `subject`, with `reply` as the subject a
    /// reply should go to, if given.
    fn publish(&self, subject: &str, reply: Option<&str>, payload: Vec<u8>)
    -> Result<(), BusError>;

    /// Subscribes to `subject`: every message published on it from now on
    /// can be taken from the subscription.
    fn subscribe(&self, subject: &str) -> Result<Self::Subscription, BusError>;

    /// A subject no one else uses, for replies to this connection.
    fn new_inbox(&self) -> String;

    /// The largest payload the bus carries, in bytes.
    fn max_payload(&self) -> usize;
}

/// Messages on a subscribed subject, taken without waiting.
pub trait Subscription {
    /// The next message that arrived, if any.
    fn try_next(&mut self) -> Option<BusMessage>;
}
