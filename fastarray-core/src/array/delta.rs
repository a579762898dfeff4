//! Deltas: writing for a connection what brings its client up to date
//! (through the array's [`Sender`](crate::send::sender::Sender)), and
//! decoding, checking and applying one on a mirror (through its
//! [`Mirror`]).

use super::FastArray;
use super::limits::{read_whole, within_message_bytes};
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, SendError};
use crate::limits::ArrayLimits;
use crate::receive::decode::Decoded;
use crate::receive_state::events::{ApplyReport, ArrayPath, Callbacks};
use crate::receive_state::mirror::Mirror;
use crate::replicate::Replicate;
use crate::send::delta_bytes::DeltaBytes;
use crate::send::sender::Sender;
use crate::send_state::SendState;
use crate::send_state::stats::{Budget, DeltaStats};

impl<T: Replicate> FastArray<T> {
    /// Appends to `out` the delta that brings `state`'s client up to date,
    /// and records that packet `packet` carries it. A message with nothing
    /// to send is one byte (one bit, padded).
    ///
    /// Call it after [`commit`](Self::commit), once per connection per tick;
    /// then report the packet's fate with [`SendState::on_ack`] or
    /// [`SendState::on_loss`]. On error nothing is written and nothing changes.
    ///
    /// Connections that are caught up (everything up to the last frame
    /// written, nothing to repair) get the same bits: the second of them in
    /// a frame writes the message and keeps it, and the others copy it and
    /// record the packet without visiting each changed item, so many
    /// clients cost little more than one ([`DeltaStats::shared`] says which
    /// writes took it). One whose adds are still in flight gets it as a
    /// shared delta, 3 bits longer: its client keeps a change of an item
    /// it does not hold yet until the add arrives (`WIRE.md`).
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16, team: u8 }
    ///
    /// let mut server = FastArray::new();
    /// let id = server.push(Unit { hp: 100, team: 1 });
    /// server.commit();
    /// let mut state = SendState::new();
    /// let mut client = FastArray::mirror();
    ///
    /// let mut packet = Vec::new();
    /// server.write_delta(&mut state, 1, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// state.on_ack(1);
    ///
    /// server.get_mut(id).unwrap().hp = 75;
    /// server.commit();
    /// packet.clear();
    /// let stats = server.write_delta(&mut state, 2, &mut packet).unwrap();
    /// assert_eq!((stats.changed, stats.added), (1, 0)); // only `hp` is sent
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// assert_eq!(client, server);
    /// ```
    pub fn write_delta(
        &mut self,
        state: &mut SendState,
        packet: u32,
        out: &mut Vec<u8>,
    ) -> Result<DeltaStats, SendError> {
        self.write_delta_bits(state, packet, &mut BitWriter::new(out), None)
    }

    /// Like [`write_delta`](Self::write_delta), but hands the message out
    /// whole instead of appending it to a buffer: for a caught-up
    /// connection, the frame's shared message, the same bytes for every
    /// such connection, copied for none of them (the first hand-out of a
    /// frame makes them); else a message of the connection's own. The
    /// bytes and stats are those `write_delta` would write and return.
    ///
    /// For a server that sends each client its message as it is (a
    /// datagram or a stream frame per message, no packet of its own
    /// around it): a tick with many caught-up clients then copies the
    /// shared message once, not once per client, and a transport that
    /// takes owned buffers takes it as is (see [`DeltaBytes`]). A
    /// [`Connection`](crate::Connection), which packs a message into a
    /// packet with its header, copies it anyway and writes with
    /// [`write_delta_bits`](Self::write_delta_bits).
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
    /// let mut clients: Vec<(SendState, FastArray<Unit>)> =
    ///     (0..3).map(|_| (SendState::new(), FastArray::mirror())).collect();
    /// for packet in 1..=2 {
    ///     for (state, client) in &mut clients {
    ///         let (bytes, stats) = server.write_delta_bytes(state, packet)?;
    ///         // Packet 1 is each client's first message, packet 2 the
    ///         // frame's shared one.
    ///         assert_eq!(stats.shared, packet == 2);
    ///         client.apply_delta(&bytes, &mut ()).unwrap(); // or: transport.send(bytes)
    ///         state.on_ack(packet);
    ///     }
    ///     server.get_mut(id).unwrap().hp -= 1;
    ///     server.commit();
    /// }
    /// assert!(clients.iter().all(|(_, client)| client.get(id) == Some(&Unit { hp: 9 })));
    /// # Ok::<(), fastarray_core::SendError>(())
    /// ```
    pub fn write_delta_bytes(
        &mut self,
        state: &mut SendState,
        packet: u32,
    ) -> Result<(DeltaBytes, DeltaStats), SendError> {
        self.write_bytes_budgeted(state, packet, None)
    }

    /// [`write_delta_bytes`](Self::write_delta_bytes) within `max_bits`,
    /// as [`write_delta_with_budget`](Self::write_delta_with_budget)
    /// writes: for datagrams, the message then fits the path's MTU. The
    /// frame's shared message is handed out when it fits; else the
    /// connection writes a message of its own within the budget.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Note { text: String }
    ///
    /// let mut server = FastArray::new();
    /// for n in 0..200 {
    ///     server.push(Note { text: format!("note {n}") });
    /// }
    /// server.commit();
    /// let (mut state, mut client) = (SendState::new(), FastArray::<Note>::mirror());
    /// let mut packet = 0;
    /// while client.len() < 200 {
    ///     packet += 1;
    ///     let (datagram, _) = server.write_delta_bytes_with_budget(&mut state, packet, 1_200 * 8)?;
    ///     assert!(datagram.len() <= 1_200);
    ///     client.apply_delta(&datagram, &mut ()).unwrap();
    ///     state.on_ack(packet);
    /// }
    /// assert!(packet > 1);
    /// # Ok::<(), fastarray_core::SendError>(())
    /// ```
    pub fn write_delta_bytes_with_budget(
        &mut self,
        state: &mut SendState,
        packet: u32,
        max_bits: u64,
    ) -> Result<(DeltaBytes, DeltaStats), SendError> {
        self.write_bytes_budgeted(state, packet, Some(Budget::of(max_bits)))
    }

    /// [`write_delta_bytes`](Self::write_delta_bytes) within `budget`, if
    /// given.
    fn write_bytes_budgeted(
        &mut self,
        state: &mut SendState,
        packet: u32,
        budget: Option<Budget>,
    ) -> Result<(DeltaBytes, DeltaStats), SendError> {
        self.expect_client_writer()?;
        let sender = Sender::made(&mut self.sender);
        sender.write_bytes(&mut self.store, state, packet, budget)
    }

    /// Like [`write_delta_bytes`](Self::write_delta_bytes), but lends the
    /// message instead of handing it out: for a caught-up connection, the
    /// frame's shared message itself; else the connection's own message, in
    /// a buffer the array keeps for the next. The borrow lasts until the
    /// array's next call, so the bytes go out before the next connection's
    /// write: for a transport that copies what it sends (a UDP socket's
    /// `send_to`, a channel's send buffer). Nothing is copied, allocated or
    /// reference-counted per caught-up connection; `write_delta_bytes`
    /// shares its bytes by an atomic reference count, which a transport
    /// that keeps buffers needs and costs two atomic operations a
    /// connection. The bytes and stats are those `write_delta` would write
    /// and return.
    ///
    /// ```
    /// use std::net::UdpSocket;
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u8 }
    ///
    /// let socket = UdpSocket::bind("127.0.0.1:0")?;
    /// let clients: Vec<UdpSocket> =
    ///     (0..3).map(|_| UdpSocket::bind("127.0.0.1:0")).collect::<Result<_, _>>()?;
    /// let mut states: Vec<SendState> = clients.iter().map(|_| SendState::new()).collect();
    /// let mut server = FastArray::new();
    /// let id = server.push(Unit { hp: 10 });
    /// let mut mirrors: Vec<FastArray<Unit>> = clients.iter().map(|_| FastArray::mirror()).collect();
    /// let mut datagram = [0; 1_500];
    /// for packet in 1..=2 {
    ///     server.commit();
    ///     for ((state, client), mirror) in states.iter_mut().zip(&clients).zip(&mut mirrors) {
    ///         let (message, stats) = server.write_delta_slice(state, packet)?;
    ///         assert_eq!(stats.shared, packet == 2); // the first is each client's own
    ///         socket.send_to(message, client.local_addr()?)?;
    ///         let len = client.recv(&mut datagram)?;
    ///         mirror.apply_delta(&datagram[..len], &mut ()).unwrap();
    ///         state.on_ack(packet);
    ///     }
    ///     server.get_mut(id).unwrap().hp -= 1;
    /// }
    /// assert!(mirrors.iter().all(|mirror| mirror.get(id) == Some(&Unit { hp: 9 })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_delta_slice(
        &mut self,
        state: &mut SendState,
        packet: u32,
    ) -> Result<(&[u8], DeltaStats), SendError> {
        self.write_slice_budgeted(state, packet, None)
    }

    /// [`write_delta_slice`](Self::write_delta_slice) within `max_bits`,
    /// as [`write_delta_bytes_with_budget`](Self::write_delta_bytes_with_budget)
    /// writes.
    pub fn write_delta_slice_with_budget(
        &mut self,
        state: &mut SendState,
        packet: u32,
        max_bits: u64,
    ) -> Result<(&[u8], DeltaStats), SendError> {
        self.write_slice_budgeted(state, packet, Some(Budget::of(max_bits)))
    }

    /// [`write_delta_slice`](Self::write_delta_slice) within `budget`, if
    /// given.
    fn write_slice_budgeted(
        &mut self,
        state: &mut SendState,
        packet: u32,
        budget: Option<Budget>,
    ) -> Result<(&[u8], DeltaStats), SendError> {
        self.expect_client_writer()?;
        let sender = Sender::made(&mut self.sender);
        sender.write_lent(&mut self.store, state, packet, budget)
    }

    /// Like [`write_delta`](Self::write_delta), but the message takes at
    /// most `max_bits` bits: removals first, then the items whose work has
    /// waited longest (a lost packet's work keeps the place it had), as
    /// many as fit. An item that does not fit waits, and smaller ones
    /// behind it may still go, so every packet whose budget holds an item
    /// carries one. The rest stays due for the next packet
    /// ([`DeltaStats::deferred`]).
    ///
    /// An item with `#[replicate(array)]` fields shares what is left with
    /// its arrays' deltas, which may take several packets; an entry whose
    /// only purpose is to carry those deltas is written only if they carry
    /// something. An item too large for the budget even alone stays due
    /// and is reported in [`DeltaStats::oversized`] while the rest flows:
    /// send it with a larger budget, or without one.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Player { name: String, hp: u8 }
    ///
    /// let mut server = FastArray::new();
    /// for n in 0..10 {
    ///     server.push(Player { name: format!("p{n}"), hp: 100 });
    /// }
    /// let big = server.push(Player { name: "x".repeat(2_000), hp: 1 });
    /// server.commit();
    /// let (mut state, mut client) = (SendState::new(), FastArray::<Player>::mirror());
    ///
    /// let mut packet = Vec::new();
    /// let stats = server.write_delta_with_budget(&mut state, 1, &mut packet, 1_200 * 8).unwrap();
    /// assert_eq!((stats.added, stats.deferred), (10, 1));
    /// let oversized = stats.oversized.unwrap();
    /// assert_eq!(oversized.id, big);
    /// assert!(oversized.bits > 16_000);
    /// client.apply_delta(&packet, &mut ()).unwrap();
    /// state.on_ack(1);
    /// assert_eq!(client.len(), 10);
    /// ```
    pub fn write_delta_with_budget(
        &mut self,
        state: &mut SendState,
        packet: u32,
        out: &mut Vec<u8>,
        max_bits: u64,
    ) -> Result<DeltaStats, SendError> {
        let mut writer = BitWriter::new(out);
        self.write_delta_bits(state, packet, &mut writer, Some(max_bits))
    }

    /// [`write_delta`](Self::write_delta) into a shared bit stream (several
    /// arrays can share one packet, unaligned), within `max_bits` if given
    /// (as [`write_delta_with_budget`](Self::write_delta_with_budget)).
    pub fn write_delta_bits(
        &mut self,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        max_bits: Option<u64>,
    ) -> Result<DeltaStats, SendError> {
        self.write_budgeted(state, packet, writer, max_bits.map(Budget::of))
    }

    /// [`write_delta_bits`](Self::write_delta_bits) with a [`Budget`].
    pub(crate) fn write_budgeted(
        &mut self,
        state: &mut SendState,
        packet: u32,
        writer: &mut BitWriter<'_>,
        budget: Option<Budget>,
    ) -> Result<DeltaStats, SendError> {
        self.expect_client_writer()?;
        let sender = Sender::made(&mut self.sender);
        sender.write(&mut self.store, state, packet, writer, budget)
    }

    /// Applies a delta that fills all of `bytes` (up to zero padding) to
    /// this mirror, calling `callbacks` for what changed. The whole message
    /// is decoded and checked first: on error the mirror is unchanged.
    ///
    /// A mirror only receives: ids come from the server, and local changes
    /// are refused (see [Authority or mirror](Self#authority-or-mirror)). A
    /// [new](Self::new) array becomes a mirror here; an authority (an array
    /// that has held items or committed) returns
    /// [`DecodeError::NotAMirror`] and is left as it was, since the delta
    /// would overwrite its own items.
    pub fn apply_delta(
        &mut self,
        bytes: &[u8],
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        self.expect_receiver()?;
        let decoded = read_whole(bytes, &self.limits(), |reader| self.decode_delta(reader))?;
        Ok(self.apply_decoded(decoded, callbacks, None))
    }

    /// [`apply_delta`](Self::apply_delta) of one delta read from a shared
    /// bit stream (several arrays can share one packet). On error the
    /// mirror is unchanged.
    pub fn apply_delta_bits(
        &mut self,
        reader: &mut BitReader<'_>,
        callbacks: &mut impl Callbacks<T>,
    ) -> Result<ApplyReport, DecodeError> {
        let decoded = self.decode_delta(reader)?;
        Ok(self.apply_decoded(decoded, callbacks, None))
    }

    /// Decodes one delta and validates it against this mirror and its
    /// [limits](Self::limits), the message no longer than their
    /// `message_bytes`.
    pub(crate) fn decode_delta(
        &self,
        reader: &mut BitReader<'_>,
    ) -> Result<Decoded<T>, DecodeError> {
        self.expect_receiver()?;
        let limits = self.limits();
        within_message_bytes(reader, &limits, |reader| {
            self.decode_delta_under(reader, ArrayLimits::top(limits))
        })
    }

    /// Decodes one delta and validates it against this mirror and `limits`
    /// (its own, or its owner's for an array inside an item).
    pub(crate) fn decode_delta_under(
        &self,
        reader: &mut BitReader<'_>,
        limits: ArrayLimits,
    ) -> Result<Decoded<T>, DecodeError> {
        self.expect_receiver()?;
        match &self.mirror {
            Some(mirror) => mirror.decode(&self.store, reader, limits),
            None => Mirror::default().decode(&self.store, reader, limits),
        }
    }

    /// Applies what [`decode_delta`](Self::decode_delta) returned. `at` is
    /// this array, if it is inside an item (the path its inner events name).
    pub(crate) fn apply_decoded(
        &mut self,
        decoded: Decoded<T>,
        callbacks: &mut impl Callbacks<T>,
        at: Option<&ArrayPath<'_>>,
    ) -> ApplyReport {
        let mirror = self.mirror.get_or_insert_with(Box::default);
        mirror.apply(&mut self.store, decoded, callbacks, at)
    }
}
