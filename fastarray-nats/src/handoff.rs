//! Handoffs between shards over the bus, by request and reply
//! ([`HandoffPort`]): a shard hands an item that crossed its border to the
//! shard named for that region, which adopts it and replies; the item is
//! sent again until a reply comes, and taken back by the shard that let it
//! go if the other refuses it or does not answer for
//! [`HandoffConfig::give_up`].
//!
//! For a shard named `name`, requests come on `name.handoff`. A request is
//! an 8-byte serial (little-endian), a byte that says what it asks, then:
//! - 0, a handoff: the handoff ([`FastArray::hand_off`]). The reply is
//!   the serial, then one byte: 1 the item was adopted, 2 an earlier copy
//!   of the request was (the shard holds the item, or held it and handed
//!   it on: [`FastArray::adopt`] refuses a late copy, so an item is never
//!   adopted twice), 0 it was refused.
//! - 1, a release: the item's id (8 bytes) and the tenure the shard holds
//!   it at (4 bytes, little-endian). A shard that gives up on a handoff
//!   takes the item back ([`FastArray::take_back`], one tenure higher,
//!   which every relay follows) and asks the other shard to release it
//!   ([`FastArray::release`]): to drop the item if it adopted it after all
//!   (its replies lost or late, or it died before it replied and restarted
//!   from a save that holds the item), and to refuse the handoff if it
//!   comes yet. So one shard alone is the item's authority again. The
//!   reply is the serial, then 3 if the item was dropped, 4 if it was not
//!   held; the request is sent again every [`HandoffConfig::retry`] until
//!   a reply comes, for a minute.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use fastarray_core::{
    Callbacks, DecodeError, FastArray, Replicate, ReplicationId, SendError, ShardId, WithCallbacks,
};

use crate::bus::{Bus, BusError, Subscription};

/// The subject a shard takes handoffs on.
pub fn handoff_subject(name: &str) -> String {
    format!("{name}.handoff")
}

const REFUSED: u8 = 0;
const ADOPTED: u8 = 1;
const HELD: u8 = 2;
const RELEASED: u8 = 3;
const NOT_HELD: u8 = 4;

const HANDOFF: u8 = 0;
const RELEASE: u8 = 1;

/// How long a port asks the other shard to release a handoff it gave up
/// on, for want of an answer.
const REMEMBER_GIVEN_UP: Duration = Duration::from_secs(60);

/// Why a handoff operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandoffError {
    /// The bus refused.
    Bus(BusError),
    /// The array could not hand the item off (not a shard, no such item…).
    Send(SendError),
    /// The array could not take back an item it handed off (it holds an
    /// item of that id again).
    TakeBack(DecodeError),
    /// The ghost array could not keep a ghost of the item handed off (it
    /// is not a ghost array; the item has left all the same).
    KeepGhost(DecodeError),
}

impl fmt::Display for HandoffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bus(error) => write!(f, "{error}"),
            Self::Send(error) => write!(f, "cannot hand off: {error}"),
            Self::TakeBack(error) => write!(f, "cannot take back a handoff: {error}"),
            Self::KeepGhost(error) => write!(f, "cannot keep a ghost of a handoff: {error}"),
        }
    }
}

impl std::error::Error for HandoffError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Bus(error) => Some(error),
            Self::Send(error) => Some(error),
            Self::TakeBack(error) | Self::KeepGhost(error) => Some(error),
        }
    }
}

impl From<BusError> for HandoffError {
    fn from(error: BusError) -> Self {
        Self::Bus(error)
    }
}

impl From<SendError> for HandoffError {
    fn from(error: SendError) -> Self {
        Self::Send(error)
    }
}

/// When a [`HandoffPort`] sends a handoff again, and gives up on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandoffConfig {
    /// How long a handoff waits for its reply before it is sent again.
    /// Default 200 ms.
    pub retry: Duration,
    /// How long a handoff waits for any reply before the shard takes the
    /// item back ([`FastArray::take_back`]). Default 2 s. A shard that
    /// adopted the item and whose every reply was lost or late then holds
    /// it too; the relays follow the copy taken back, and the port asks the
    /// other shard to release its own, every [`retry`](Self::retry) until
    /// it answers (for a minute).
    pub give_up: Duration,
}

impl Default for HandoffConfig {
    fn default() -> Self {
        Self {
            retry: Duration::from_millis(200),
            give_up: Duration::from_secs(2),
        }
    }
}

/// What one [`HandoffPort::poll`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Handled {
    /// Items handed to this shard and adopted.
    pub adopted: u32,
    /// Requests refused (a message that does not decode, of another type).
    pub refused: u32,
    /// This shard's handoffs that the other shard confirmed.
    pub confirmed: u32,
    /// This shard's handoffs taken back: refused, or never answered.
    pub taken_back: u32,
    /// Handoffs sent again for want of a reply.
    pub resent: u32,
    /// This shard's handoffs that a late reply said were adopted after
    /// this shard took them back (it asks the other shard to release every
    /// handoff it takes back for want of a reply, adopted or not).
    pub overruled: u32,
    /// Release requests this shard's handoffs taken back had answered:
    /// the other shard dropped the item, or never held it and now refuses
    /// the handoff.
    pub release_answered: u32,
    /// Items this shard released: it adopted them after the shard that
    /// handed them off took them back.
    pub released: u32,
}

struct Pending {
    to: String,
    id: ReplicationId,
    /// The tenure the other shard holds the item at once it adopts it.
    tenure: u32,
    bytes: Vec<u8>,
    first: Instant,
    last: Instant,
}

/// A handoff given up on and taken back, whose release is asked for
/// until the other shard answers.
struct GivenUp {
    to: String,
    id: ReplicationId,
    tenure: u32,
    at: Instant,
    /// When the release was last asked for.
    last: Instant,
    /// Whether a late reply said the item was adopted.
    overruled: bool,
}

/// A shard's side of handoffs: sends the items it hands off to the shards
/// that take them, adopts the items handed to it, and takes back what no
/// one adopted.
pub struct HandoffPort<B: Bus> {
    bus: B,
    requests: B::Subscription,
    inbox: String,
    replies: B::Subscription,
    config: HandoffConfig,
    next_serial: u64,
    pending: BTreeMap<u64, Pending>,
    given_up: BTreeMap<u64, GivenUp>,
    /// The items the last poll took back.
    taken_back: Vec<ReplicationId>,
    bytes_sent: std::cell::Cell<u64>,
}

impl<B: Bus> fmt::Debug for HandoffPort<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffPort")
            .field("inbox", &self.inbox)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl<B: Bus> HandoffPort<B> {
    /// The handoffs of the shard named `name` (its array's name, as its
    /// [`FeedPublisher`](crate::FeedPublisher) has it) on `bus`.
    ///
    /// # Errors
    /// [`BusError::Subscribe`] if the bus refuses a subscription.
    pub fn new(bus: B, name: &str, config: HandoffConfig) -> Result<Self, BusError> {
        let requests = bus.subscribe(&handoff_subject(name))?;
        let inbox = bus.new_inbox();
        let replies = bus.subscribe(&inbox)?;
        Ok(Self {
            bus,
            requests,
            inbox,
            replies,
            config,
            // Replies come to this port's own inbox: a serial need only
            // be unique here.
            next_serial: 0,
            pending: BTreeMap::new(),
            given_up: BTreeMap::new(),
            taken_back: Vec::new(),
            bytes_sent: std::cell::Cell::new(0),
        })
    }

    /// Hands item `id` of `array` off to shard `to`, named `to_name` on the
    /// bus ([`FastArray::hand_off`]): the item leaves `array` now, and the
    /// handoff is sent until `to` answers.
    ///
    /// # Errors
    /// [`HandoffError::Send`] if `array` cannot hand the item off (nothing
    /// changed then); [`HandoffError::Bus`] if the bus refuses the request
    /// (the item has left: the port sends it again at its next
    /// [`poll`](Self::poll), or takes it back).
    pub fn hand_off<T: Replicate>(
        &mut self,
        array: &mut FastArray<T>,
        id: ReplicationId,
        to: ShardId,
        to_name: &str,
        now: Instant,
    ) -> Result<(), HandoffError> {
        let pending = self.prepare(array, id, to, to_name, now)?;
        self.start(pending)
    }

    /// [`hand_off`](Self::hand_off), keeping a ghost of the item in
    /// `ghosts`, the ghost array (and its callbacks) that follows the
    /// ghost feed of the shard `to` ([`FastArray::keep_ghost`]): this
    /// shard's game sees the item all along, until that shard's feed says
    /// where it went. A ghost of that id held already stays as it is.
    /// Drop the kept ghosts of the items a [`poll`](Self::poll) takes back
    /// ([`taken_back`](Self::taken_back), [`FastArray::drop_kept`]).
    ///
    /// # Errors
    /// As [`hand_off`](Self::hand_off), and [`HandoffError::KeepGhost`]
    /// if `ghosts` is not a ghost array (the handoff is sent all the same).
    pub fn hand_off_keeping_ghost<T: Replicate + Clone, C: Callbacks<T>>(
        &mut self,
        array: &mut FastArray<T>,
        ghosts: &mut WithCallbacks<'_, FastArray<T>, C>,
        id: ReplicationId,
        to: ShardId,
        to_name: &str,
        now: Instant,
    ) -> Result<(), HandoffError> {
        let pending = self.prepare(array, id, to, to_name, now)?;
        let (ghosts, callbacks) = ghosts.parts();
        let kept = match ghosts.keep_ghost(&pending.bytes, callbacks) {
            Ok(_) | Err(DecodeError::DuplicateId { .. }) => Ok(()),
            Err(error) => Err(HandoffError::KeepGhost(error)),
        };
        self.start(pending)?;
        kept
    }

    /// Hands item `id` off in `array` to shard `to`: the request to send.
    fn prepare<T: Replicate>(
        &mut self,
        array: &mut FastArray<T>,
        id: ReplicationId,
        to: ShardId,
        to_name: &str,
        now: Instant,
    ) -> Result<Pending, HandoffError> {
        let mut bytes = Vec::new();
        let tenure = array.tenure(id) + 1;
        array.hand_off(id, to, &mut bytes)?;
        Ok(Pending {
            to: handoff_subject(to_name),
            id,
            tenure,
            bytes,
            first: now,
            last: now,
        })
    }

    /// Sends a handoff and waits for its reply.
    fn start(&mut self, pending: Pending) -> Result<(), HandoffError> {
        let serial = self.next_serial;
        self.next_serial += 1;
        let sent = self.send(serial, &pending);
        self.pending.insert(serial, pending);
        Ok(sent?)
    }

    /// The items the last [`poll`](Self::poll) took back (refused, or
    /// never answered): real on this shard again, so drop the ghosts kept
    /// of them ([`hand_off_keeping_ghost`](Self::hand_off_keeping_ghost)).
    pub fn taken_back(&self) -> &[ReplicationId] {
        &self.taken_back
    }

    fn send(&self, serial: u64, pending: &Pending) -> Result<(), BusError> {
        let mut payload = Vec::with_capacity(9 + pending.bytes.len());
        payload.extend_from_slice(&serial.to_le_bytes());
        payload.push(HANDOFF);
        payload.extend_from_slice(&pending.bytes);
        self.bytes_sent
            .set(self.bytes_sent.get() + payload.len() as u64);
        self.bus.publish(&pending.to, Some(&self.inbox), payload)
    }

    /// Asks the shard a handoff taken back went to to release the item.
    fn release(&self, serial: u64, given_up: &GivenUp) -> Result<(), BusError> {
        let mut payload = Vec::with_capacity(21);
        payload.extend_from_slice(&serial.to_le_bytes());
        payload.push(RELEASE);
        payload.extend_from_slice(&given_up.id.to_raw().to_le_bytes());
        payload.extend_from_slice(&given_up.tenure.to_le_bytes());
        self.bytes_sent
            .set(self.bytes_sent.get() + payload.len() as u64);
        self.bus.publish(&given_up.to, Some(&self.inbox), payload)
    }

    /// Bytes of handoffs this port sent (requests, resent ones included).
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent.get()
    }

    /// Call each tick, before the commit: adopts into `array` the items
    /// handed to this shard (and answers), settles this shard's handoffs
    /// with the answers that came, sends again those unanswered for
    /// [`HandoffConfig::retry`], and takes back those refused or
    /// unanswered for [`HandoffConfig::give_up`]. `now` is the game's clock.
    ///
    /// # Errors
    /// [`HandoffError::Bus`] if a reply or a request cannot be sent;
    /// [`HandoffError::TakeBack`] if an item cannot be taken back.
    pub fn poll<T: Replicate + Clone>(
        &mut self,
        array: &mut FastArray<T>,
        now: Instant,
    ) -> Result<Handled, HandoffError> {
        let mut handled = Handled::default();
        self.taken_back.clear();
        while let Some(request) = self.requests.try_next() {
            let (serial, bytes) = match split(&request.payload) {
                Some((serial, [HANDOFF, bytes @ ..])) => (serial, bytes),
                Some((serial, [RELEASE, release @ ..])) => {
                    let code = match read_release(release) {
                        Some((id, tenure)) if array.release(id, tenure) => {
                            handled.released += 1;
                            RELEASED
                        }
                        Some(_) => NOT_HELD,
                        None => {
                            handled.refused += 1;
                            continue;
                        }
                    };
                    if let Some(reply) = request.reply {
                        let mut payload = serial.to_le_bytes().to_vec();
                        payload.push(code);
                        self.bus.publish(&reply, None, payload)?;
                    }
                    continue;
                }
                _ => {
                    handled.refused += 1;
                    continue;
                }
            };
            let code = match array.adopt(bytes) {
                Ok(_) => {
                    handled.adopted += 1;
                    ADOPTED
                }
                // Adopted before: this is a copy sent again.
                Err(DecodeError::DuplicateId { .. } | DecodeError::StaleHandoff { .. }) => HELD,
                Err(_) => {
                    handled.refused += 1;
                    REFUSED
                }
            };
            if let Some(reply) = request.reply {
                let mut payload = serial.to_le_bytes().to_vec();
                payload.push(code);
                self.bus.publish(&reply, None, payload)?;
            }
        }
        while let Some(reply) = self.replies.try_next() {
            let Some((serial, &[code])) = split(&reply.payload) else {
                continue;
            };
            let Some(pending) = self.pending.remove(&serial) else {
                // A reply about a handoff taken back: a late one to the
                // handoff (if the item was adopted, the release is asked
                // for again at once), or one to the release, which ends it.
                match (code, self.given_up.get_mut(&serial)) {
                    (RELEASED | NOT_HELD, Some(_)) => {
                        self.given_up.remove(&serial);
                        handled.release_answered += 1;
                    }
                    (ADOPTED | HELD, Some(given_up)) => {
                        if !given_up.overruled {
                            given_up.overruled = true;
                            handled.overruled += 1;
                        }
                        given_up.last = now;
                        self.release(serial, &self.given_up[&serial])?;
                    }
                    _ => {}
                }
                continue;
            };
            if code == REFUSED {
                take_back(array, &pending)?;
                handled.taken_back += 1;
                self.taken_back.push(pending.id);
            } else {
                handled.confirmed += 1;
            }
        }
        let (mut given_up, mut resend, mut ask_again) = (Vec::new(), Vec::new(), Vec::new());
        for (&serial, pending) in &mut self.pending {
            if now.duration_since(pending.first) >= self.config.give_up {
                given_up.push(serial);
            } else if now.duration_since(pending.last) >= self.config.retry {
                pending.last = now;
                resend.push(serial);
            }
        }
        for serial in resend {
            self.send(serial, &self.pending[&serial])?;
            handled.resent += 1;
        }
        for (&serial, given_up) in &mut self.given_up {
            if now.duration_since(given_up.last) >= self.config.retry {
                given_up.last = now;
                ask_again.push(serial);
            }
        }
        for serial in ask_again {
            self.release(serial, &self.given_up[&serial])?;
        }
        for serial in given_up {
            if let Some(pending) = self.pending.remove(&serial) {
                take_back(array, &pending)?;
                handled.taken_back += 1;
                self.taken_back.push(pending.id);
                let given_up = GivenUp {
                    to: pending.to,
                    id: pending.id,
                    tenure: pending.tenure,
                    at: now,
                    last: now,
                    overruled: false,
                };
                // Whether the other shard adopted it or not, it lets go.
                self.release(serial, &given_up)?;
                self.given_up.insert(serial, given_up);
            }
        }
        self.given_up
            .retain(|_, given_up| now.duration_since(given_up.at) < REMEMBER_GIVEN_UP);
        Ok(handled)
    }

    /// Handoffs sent and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// The bus.
    pub fn bus(&self) -> &B {
        &self.bus
    }
}

/// A message's serial and the rest.
fn split(payload: &[u8]) -> Option<(u64, &[u8])> {
    let (serial, rest) = payload.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*serial), rest))
}

/// Takes back a handoff refused or unanswered. An item held again
/// already (handed back here by the other shard since) stays as it is.
fn take_back<T: Replicate + Clone>(
    array: &mut FastArray<T>,
    pending: &Pending,
) -> Result<(), HandoffError> {
    match array.take_back(&pending.bytes) {
        Ok(_) | Err(DecodeError::DuplicateId { .. }) => Ok(()),
        Err(error) => Err(HandoffError::TakeBack(error)),
    }
}

/// Reads a release request's id and tenure.
fn read_release(bytes: &[u8]) -> Option<(ReplicationId, u32)> {
    let (id, tenure) = bytes.split_first_chunk::<8>()?;
    let tenure: [u8; 4] = tenure.try_into().ok()?;
    Some((
        ReplicationId::from_raw(u64::from_le_bytes(*id)),
        u32::from_le_bytes(tenure),
    ))
}
