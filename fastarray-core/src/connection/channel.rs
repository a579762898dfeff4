//! The channels of a connection: what a packet's sections come from on the
//! server ([`Outgoing`]: a [`FastArray`] or a [`Replicated`] object) and go
//! to on the client ([`Incoming`]: its mirror, with or without
//! [`Callbacks`]), and how a section sits in a packet.
//!
//! A packet's sections (see `WIRE.md`, "Connections"): for each, a `1` bit,
//! the channel's index as `gamma(index)`, and the channel's delta message;
//! then a `0` bit, and zero padding to the byte.

use std::any::Any;

use crate::array::FastArray;
use crate::bits::{BitReader, BitWriter, gamma_bits};
use crate::error::{DecodeError, SendError};
use crate::receive_state::{ApplyReport, Callbacks};
use crate::replicate::Replicate;
use crate::replicated::Replicated;
use crate::send_state::SendState;
use crate::send_state::stats::{Budget, DeltaStats};

/// What a [`Connection`](crate::Connection) writes deltas of: a
/// [`FastArray`] or a [`Replicated`] object on the server. Implemented by
/// this crate only.
pub trait Outgoing: sealed::Sealed {
    #[doc(hidden)]
    fn __origin(&self) -> u64;
    #[doc(hidden)]
    fn __has_uncommitted_work(&self) -> bool;
    #[doc(hidden)]
    fn __write(
        &mut self,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Budget,
    ) -> Result<DeltaStats, SendError>;
}

/// What a [`MirrorConnection`](crate::MirrorConnection) applies a packet's
/// sections to: a mirror [`FastArray`] or [`Replicated`] object (its
/// events unheard), or one of them [`WithCallbacks`]. Implemented by this
/// crate only.
pub trait Incoming: sealed::Sealed {
    #[doc(hidden)]
    fn __decode(&self, reader: &mut BitReader<'_>) -> Result<Box<dyn Any>, DecodeError>;
    #[doc(hidden)]
    fn __apply(&mut self, decoded: Box<dyn Any>) -> ApplyReport;
}

/// A mirror whose events go to `callbacks` when a
/// [`MirrorConnection`](crate::MirrorConnection) applies a packet to it;
/// or a relay or a ghost array whose events go to `callbacks` when a feed
/// follower applies its feed to it
/// ([`FastArray::apply_feed_with`](crate::FastArray::apply_feed_with)).
///
/// ```
/// use fastarray_core::{Callbacks, FastArray, ReplicationId, WithCallbacks};
/// use fastarray_derive::Replicate;
///
/// #[derive(Replicate, Clone, Debug, PartialEq)]
/// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
/// struct Unit { hp: u8 }
///
/// struct Spawns(Vec<ReplicationId>);
/// impl Callbacks<Unit> for Spawns {
///     fn post_add(&mut self, id: ReplicationId, _: &Unit) {
///         self.0.push(id);
///     }
/// }
///
/// let mut units = FastArray::<Unit>::mirror();
/// let mut spawns = Spawns(Vec::new());
/// let heard = WithCallbacks::new(&mut units, &mut spawns);
/// # let _ = heard;
/// ```
pub struct WithCallbacks<'a, M, C> {
    mirror: &'a mut M,
    callbacks: &'a mut C,
}

impl<'a, M, C> WithCallbacks<'a, M, C> {
    /// `mirror`, whose events go to `callbacks`.
    pub fn new(mirror: &'a mut M, callbacks: &'a mut C) -> Self {
        Self { mirror, callbacks }
    }

    /// The mirror (or follower: a relay, a ghost array) and its callbacks,
    /// for an integration that applies messages to it (`fastarray-nats`'
    /// feed followers).
    pub fn parts(&mut self) -> (&mut M, &mut C) {
        (self.mirror, self.callbacks)
    }

    /// The mirror (or follower).
    pub fn mirror(&self) -> &M {
        self.mirror
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T> Sealed for crate::FastArray<T> {}
    impl<T> Sealed for crate::Replicated<T> {}
    impl<M, C> Sealed for super::WithCallbacks<'_, M, C> {}
}

impl<T: Replicate + Clone + 'static> Outgoing for FastArray<T> {
    fn __origin(&self) -> u64 {
        self.store().origin()
    }

    fn __has_uncommitted_work(&self) -> bool {
        self.has_uncommitted_work()
    }

    fn __write(
        &mut self,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Budget,
    ) -> Result<DeltaStats, SendError> {
        self.write_budgeted(state, packet, writer, Some(budget))
    }
}

impl<T: Replicate + Clone + 'static> Outgoing for Replicated<T> {
    fn __origin(&self) -> u64 {
        self.as_array().__origin()
    }

    fn __has_uncommitted_work(&self) -> bool {
        self.has_uncommitted_work()
    }

    fn __write(
        &mut self,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Budget,
    ) -> Result<DeltaStats, SendError> {
        self.as_array_mut().__write(state, packet, writer, budget)
    }
}

impl<T: Replicate + 'static> Incoming for FastArray<T> {
    fn __decode(&self, reader: &mut BitReader<'_>) -> Result<Box<dyn Any>, DecodeError> {
        Ok(Box::new(self.decode_delta(reader)?))
    }

    fn __apply(&mut self, decoded: Box<dyn Any>) -> ApplyReport {
        apply_section(self, decoded, &mut ())
    }
}

impl<T: Replicate + 'static> Incoming for Replicated<T> {
    fn __decode(&self, reader: &mut BitReader<'_>) -> Result<Box<dyn Any>, DecodeError> {
        self.as_array().__decode(reader)
    }

    fn __apply(&mut self, decoded: Box<dyn Any>) -> ApplyReport {
        self.as_array_mut().__apply(decoded)
    }
}

impl<T: Replicate + 'static, C: Callbacks<T>> Incoming for WithCallbacks<'_, FastArray<T>, C> {
    fn __decode(&self, reader: &mut BitReader<'_>) -> Result<Box<dyn Any>, DecodeError> {
        self.mirror.__decode(reader)
    }

    fn __apply(&mut self, decoded: Box<dyn Any>) -> ApplyReport {
        apply_section(self.mirror, decoded, self.callbacks)
    }
}

impl<T: Replicate + 'static, C: Callbacks<T>> Incoming for WithCallbacks<'_, Replicated<T>, C> {
    fn __decode(&self, reader: &mut BitReader<'_>) -> Result<Box<dyn Any>, DecodeError> {
        self.mirror.__decode(reader)
    }

    fn __apply(&mut self, decoded: Box<dyn Any>) -> ApplyReport {
        apply_section(self.mirror.as_array_mut(), decoded, self.callbacks)
    }
}

/// Applies to `mirror` a section decoded from it (by `__decode`), telling
/// `callbacks` what changed (`&mut ()` for a mirror whose events go
/// unheard).
fn apply_section<T: Replicate + 'static>(
    mirror: &mut FastArray<T>,
    decoded: Box<dyn Any>,
    callbacks: &mut impl Callbacks<T>,
) -> ApplyReport {
    match decoded.downcast() {
        Ok(decoded) => mirror.apply_decoded(*decoded, callbacks, None),
        Err(_) => unreachable!("a section is applied to the mirror that decoded it"),
    }
}

/// Bits a section's tag takes: its `1` bit and `gamma(channel)`.
pub(crate) fn tag_bits(channel: usize) -> u64 {
    1 + gamma_bits(channel as u64)
}

/// Writes a section's tag.
pub(crate) fn write_tag(writer: &mut BitWriter<'_>, channel: usize) {
    writer.write_bool(true);
    writer.write_gamma(channel as u64);
}

/// Writes the end of the sections.
pub(crate) fn write_end(writer: &mut BitWriter<'_>) {
    writer.write_bool(false);
}

/// Reads the next section's channel, or `None` at the end of the sections.
pub(crate) fn read_tag(reader: &mut BitReader<'_>) -> Result<Option<u64>, DecodeError> {
    if !reader.read_bool()? {
        return Ok(None);
    }
    reader.read_gamma().map(Some)
}
