//! The `bitstream-io` adapter: messages framed into a foreign bit stream.
//!
//! Properties checked:
//! * a delta, a joining snapshot and a replicated object's messages sit
//!   between fields of a packet built with bitstream-io, big- and
//!   little-endian: the fields around them read back exactly, and the
//!   mirror follows the server across ticks of changes, adds and removals;
//! * the frame is the one `WIRE.md` describes (`varint(bits)`, then the
//!   message's bits), and a budget bounds the prefix and message together;
//! * a truncated stream, an oversized or overlong length prefix, and bits
//!   left over inside the declared length are typed errors that change
//!   nothing on the mirror; a forged length allocates nothing beyond a
//!   small chunk; random input never panics.
#![cfg(feature = "bitstream-io")]

use std::io;

use bitstream_io::{
    BigEndian, BitRead, BitReader as IoReader, BitWrite, BitWriter as IoWriter, BitsWritten,
    Endianness, LittleEndian,
};
use fastarray_core::{
    BitReader, BitWriter, BitstreamError, DecodeError, FastArray, MAX_MESSAGE_BITS, Replicated,
    SendError, SendState,
};
use fastarray_derive::Replicate;
use proptest::prelude::*;

#[path = "support/largest_allocation.rs"]
mod largest_allocation;
use largest_allocation::largest_allocation;

// ---------------------------------------------------------------------------
// Types and helpers
// ---------------------------------------------------------------------------

#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Unit {
    hp: u16,
    name: String,
    x: i32,
    alive: bool,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
#[replicate(crate = "fastarray_core")]
struct Match {
    round: u8,
    #[replicate(array)]
    units: FastArray<Unit>,
    clock: u32,
}

fn unit(n: u32) -> Unit {
    Unit {
        hp: (n * 7 % 1000) as u16,
        name: format!("unit-{n}"),
        x: n as i32 * -13,
        alive: n % 2 == 0,
    }
}

/// The game's own fields around a message, as a packet would hold them.
#[derive(Clone, Debug, PartialEq)]
struct Fields {
    seq: u16,
    kind: u8,
    offset: i8,
    note: String,
}

impl Fields {
    fn of(tick: u32) -> Self {
        Self {
            seq: 60_000 + tick as u16,
            kind: (tick % 8) as u8,
            offset: -((tick % 14) as i8) - 50,
            note: format!("tick {tick}"),
        }
    }

    fn write_head(&self, w: &mut impl BitWrite) {
        w.write::<16, u16>(self.seq).unwrap();
        w.write::<3, u8>(self.kind).unwrap();
    }

    fn write_tail(&self, w: &mut impl BitWrite) {
        w.write::<7, i8>(self.offset).unwrap();
        w.write::<8, u8>(self.note.len() as u8).unwrap();
        w.write_bytes(self.note.as_bytes()).unwrap();
    }

    fn read_head(r: &mut impl BitRead) -> (u16, u8) {
        (r.read::<16, u16>().unwrap(), r.read::<3, u8>().unwrap())
    }

    fn read_tail(r: &mut impl BitRead) -> (i8, String) {
        let offset = r.read::<7, i8>().unwrap();
        let len = r.read::<8, u8>().unwrap();
        let bytes = r.read_to_vec(usize::from(len)).unwrap();
        (offset, String::from_utf8(bytes).unwrap())
    }

    /// Reads the fields around a message read by `message`, and checks
    /// them and that nothing but padding follows.
    fn read_around<E: Endianness, R>(
        &self,
        bytes: &[u8],
        endian: E,
        message: impl FnOnce(&mut IoReader<&[u8], E>) -> R,
    ) -> R {
        let mut r = IoReader::endian(bytes, endian);
        assert_eq!(Fields::read_head(&mut r), (self.seq, self.kind));
        let result = message(&mut r);
        assert_eq!(Fields::read_tail(&mut r), (self.offset, self.note.clone()));
        r.byte_align();
        assert!(
            r.read_bit().is_err(),
            "nothing but padding after the fields"
        );
        result
    }
}

/// A packet of `fields` around a message written by `message`.
fn packet<E: Endianness, R>(
    fields: &Fields,
    endian: E,
    message: impl FnOnce(&mut IoWriter<Vec<u8>, E>) -> R,
) -> (Vec<u8>, R) {
    let mut w = IoWriter::endian(Vec::new(), endian);
    fields.write_head(&mut w);
    let result = message(&mut w);
    fields.write_tail(&mut w);
    w.byte_align().unwrap();
    (w.into_writer(), result)
}

/// One tick of server work: changes, adds and removals that depend on
/// the tick.
fn tick(server: &mut FastArray<Unit>, t: u32) {
    let ids: Vec<_> = server.ids().collect();
    for (n, id) in ids.iter().enumerate() {
        if (n as u32 + t) % 3 == 0 {
            let mut u = server.get_mut(*id).unwrap();
            u.hp = u.hp.wrapping_add(t as u16 + 1);
            if t % 2 == 0 {
                u.name.push('!');
            }
        }
    }
    if t % 2 == 1 && ids.len() > 2 {
        server.remove(ids[(t as usize * 5) % ids.len()]);
    }
    for n in 0..(t % 4) {
        server.push(unit(100 * t + n));
    }
    server.commit();
}

/// Writes `varint(value)` (the Elias-delta code of `WIRE.md`) with the
/// stream's calls, as `WIRE.md` says a length prefix is written.
fn write_prefix(w: &mut impl BitWrite, value: u64) {
    let x = u128::from(value) + 1;
    let n = 128 - x.leading_zeros();
    let l = 32 - n.leading_zeros();
    for _ in 1..l {
        w.write_bit(false).unwrap();
    }
    w.write_bit(true).unwrap();
    w.write_var::<u32>(l - 1, n & ((1 << (l - 1)) - 1)).unwrap();
    if n > 1 {
        w.write_var::<u64>(n - 1, (x as u64) & (u64::MAX >> (65 - n)))
            .unwrap();
    }
}

/// Frames the first `bits` bits of `bytes` as a message of `len` bits
/// (`bits` ≤ `len`; the bits between are `fill`), as `WIRE.md` says: the
/// prefix, the whole bytes, then the last `len mod 8` bits as one value.
fn framed<E: Endianness>(endian: E, bytes: &[u8], bits: u64, len: u64, fill: bool) -> Vec<u8> {
    let mut message = Vec::new();
    let mut writer = BitWriter::new(&mut message);
    let mut reader = BitReader::new(bytes);
    for _ in 0..bits {
        writer.write_bool(reader.read_bool().unwrap());
    }
    for _ in bits..len {
        writer.write_bool(fill);
    }
    writer.finish();
    let mut w = IoWriter::endian(Vec::new(), endian);
    write_prefix(&mut w, len);
    let whole = (len / 8) as usize;
    w.write_bytes(&message[..whole]).unwrap();
    let rest = (len % 8) as u32;
    if rest > 0 {
        w.write_var::<u8>(rest, message[whole]).unwrap();
    }
    w.byte_align().unwrap();
    w.into_writer()
}

/// A server of a few ticks, a client that follows it through deltas, and
/// the connection between them.
fn session() -> (FastArray<Unit>, FastArray<Unit>, SendState, u32) {
    let mut server = FastArray::new();
    for n in 0..6 {
        server.push(unit(n));
    }
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    let mut packet = 0;
    for t in 0..3 {
        tick(&mut server, t);
        let mut bytes = Vec::new();
        server.write_delta(&mut conn, packet, &mut bytes).unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        packet += 1;
    }
    (server, client, conn, packet)
}

/// The next delta of a session, as a bare message (bytes, bits) of our
/// own writer.
fn next_delta(server: &mut FastArray<Unit>, conn: &mut SendState, packet: u32) -> (Vec<u8>, u64) {
    tick(server, packet);
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    server
        .write_delta_bits(conn, packet, &mut writer, None)
        .unwrap();
    let bits = writer.finish();
    (bytes, bits)
}

// ---------------------------------------------------------------------------
// Messages among other fields
// ---------------------------------------------------------------------------

fn deltas_between_fields<E: Endianness + Copy>(endian: E) {
    let mut server = FastArray::new();
    for n in 0..5 {
        server.push(unit(n));
    }
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Unit>::mirror());
    let (mut adds, mut removals, mut changes) = (0, 0, 0);
    for t in 0..12 {
        if t > 0 {
            tick(&mut server, t);
        }
        let fields = Fields::of(t);
        let (bytes, stats) = packet(&fields, endian, |w| {
            server.write_delta_to(&mut conn, t, w, None).unwrap()
        });
        fields.read_around(&bytes, endian, |r| {
            client.apply_delta_from(r, &mut ()).unwrap()
        });
        assert_eq!(client, server, "tick {t}");
        adds += stats.added;
        removals += stats.removed;
        changes += stats.changed;
        if t % 4 != 3 {
            conn.on_ack(t);
        } else {
            conn.on_loss(t);
        }
    }
    assert!(adds > 5 && removals > 0 && changes > 0);
}

#[test]
fn deltas_sit_between_fields_big_endian() {
    deltas_between_fields(BigEndian);
}

#[test]
fn deltas_sit_between_fields_little_endian() {
    deltas_between_fields(LittleEndian);
}

fn snapshot_join_between_fields<E: Endianness + Copy>(endian: E) {
    let (mut server, _, _, _) = session();
    let mut conn = SendState::new();
    let fields = Fields::of(1);
    let (bytes, bits) = packet(&fields, endian, |w| {
        server.write_snapshot_for_to(&mut conn, w).unwrap()
    });
    let mut client = fields.read_around(&bytes, endian, |r| {
        FastArray::<Unit>::read_snapshot_from(r).unwrap()
    });
    assert_eq!(client, server);
    let mut plain = Vec::new();
    assert_eq!(server.write_snapshot(&mut plain).unwrap(), bits);

    // A mirror reset by a snapshot, and one built from it, follow the
    // connection the snapshot started.
    let mut reset = FastArray::<Unit>::mirror();
    let (bytes, _) = packet(&fields, endian, |w| server.write_snapshot_to(w).unwrap());
    fields.read_around(&bytes, endian, |r| reset.apply_snapshot_from(r).unwrap());
    assert_eq!(reset, server);
    for t in 10..16 {
        tick(&mut server, t);
        let fields = Fields::of(t);
        let (bytes, _) = packet(&fields, endian, |w| {
            server.write_delta_to(&mut conn, t, w, None).unwrap()
        });
        fields.read_around(&bytes, endian, |r| {
            client.apply_delta_from(r, &mut ()).unwrap()
        });
        assert_eq!(client, server, "tick {t}");
        conn.on_ack(t);
    }
}

#[test]
fn a_snapshot_join_sits_between_fields_big_endian() {
    snapshot_join_between_fields(BigEndian);
}

#[test]
fn a_snapshot_join_sits_between_fields_little_endian() {
    snapshot_join_between_fields(LittleEndian);
}

fn object_between_fields<E: Endianness + Copy>(endian: E) {
    let mut server = Replicated::new(Match::default());
    {
        let mut m = server.get_mut();
        m.round = 1;
        for n in 0..4 {
            m.units.push(unit(n));
        }
    }
    server.commit();
    let mut conn = SendState::new();
    let fields = Fields::of(0);
    let (bytes, _) = packet(&fields, endian, |w| {
        server.write_snapshot_for_to(&mut conn, w).unwrap()
    });
    let mut client = fields.read_around(&bytes, endian, |r| {
        Replicated::<Match>::read_snapshot_from(r).unwrap()
    });
    assert_eq!(client, server);

    let mut fresh = Replicated::<Match>::mirror();
    for t in 1..10 {
        {
            let mut m = server.get_mut();
            m.clock += t * 33;
            if t % 3 == 0 {
                m.round += 1;
            }
            tick(&mut m.units, t);
        }
        server.commit();
        let fields = Fields::of(t);
        let (bytes, _) = packet(&fields, endian, |w| {
            server.write_delta_to(&mut conn, t, w, None).unwrap()
        });
        fields.read_around(&bytes, endian, |r| {
            client.apply_delta_from(r, &mut ()).unwrap()
        });
        assert_eq!(client, server, "tick {t}");
        conn.on_ack(t);
    }
    let (bytes, _) = packet(&fields_after(), endian, |w| {
        server.write_snapshot_to(w).unwrap()
    });
    fields_after().read_around(&bytes, endian, |r| fresh.apply_snapshot_from(r).unwrap());
    assert_eq!(fresh, server);
}

fn fields_after() -> Fields {
    Fields::of(99)
}

#[test]
fn an_object_sits_between_fields_big_endian() {
    object_between_fields(BigEndian);
}

#[test]
fn an_object_sits_between_fields_little_endian() {
    object_between_fields(LittleEndian);
}

// ---------------------------------------------------------------------------
// The frame
// ---------------------------------------------------------------------------

/// In a little-endian stream the frame is `varint(bits)` then the
/// message's bits, in fastarray's own bit order (`WIRE.md`).
#[test]
fn the_frame_is_a_varint_length_then_the_message() {
    let (mut server, _, mut conn, packet) = session();
    let (expected, expected_bits) = {
        let mut copy = server.clone();
        let mut conn = conn.clone();
        next_delta(&mut copy, &mut conn, packet)
    };
    tick(&mut server, packet);
    let mut w = IoWriter::endian(Vec::new(), LittleEndian);
    w.write::<5, u8>(0b10110).unwrap(); // unaligned start
    let stats = server
        .write_delta_to(&mut conn, packet, &mut w, None)
        .unwrap();
    w.byte_align().unwrap();
    let bytes = w.into_writer();
    assert_eq!(stats.bits, expected_bits);

    let mut r = BitReader::new(&bytes);
    assert_eq!(r.read_bits(5), Ok(0b10110));
    assert_eq!(r.read_varint(), Ok(expected_bits));
    let mut expected_reader = BitReader::new(&expected);
    for bit in 0..expected_bits {
        assert_eq!(r.read_bool(), expected_reader.read_bool(), "bit {bit}");
    }
    assert!(r.remaining_bits() < 8);
}

/// A big-endian stream holds the same frame, each value in its own order:
/// the prefix's parts as numbers, the message's bytes as bytes.
#[test]
fn a_big_endian_frame_holds_the_same_bytes() {
    let (mut server, _, mut conn, packet) = session();
    let (expected, bits) = {
        let mut copy = server.clone();
        let mut conn = conn.clone();
        next_delta(&mut copy, &mut conn, packet)
    };
    tick(&mut server, packet);
    let mut w = IoWriter::endian(Vec::new(), BigEndian);
    server
        .write_delta_to(&mut conn, packet, &mut w, None)
        .unwrap();
    w.byte_align().unwrap();
    let mut reference = IoWriter::endian(Vec::new(), BigEndian);
    write_prefix(&mut reference, bits);
    reference
        .write_bytes(&expected[..(bits / 8) as usize])
        .unwrap();
    let rest = (bits % 8) as u32;
    if rest > 0 {
        let last = expected[(bits / 8) as usize] & ((1 << rest) - 1);
        reference.write_var::<u8>(rest, last).unwrap();
    }
    reference.byte_align().unwrap();
    assert_eq!(w.into_writer(), reference.into_writer());
}

/// With a budget, prefix and message together take at most `max_bits`;
/// the rest of the work waits for the next packets.
#[test]
fn a_budget_bounds_the_prefix_and_the_message() {
    let mut server = FastArray::new();
    for n in 0..40 {
        server.push(unit(n));
    }
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Unit>::mirror());
    for packet in 0..20 {
        let mut counter = BitsWritten::<u64>::new();
        let mut probe = conn.clone();
        let stats = server
            .clone()
            .write_delta_to(&mut probe, packet, &mut counter, Some(300))
            .unwrap();
        assert!(counter.written() <= 300, "{} bits", counter.written());
        assert!(stats.bits < 300);

        let mut w = IoWriter::endian(Vec::new(), BigEndian);
        server
            .write_delta_to(&mut conn, packet, &mut w, Some(300))
            .unwrap();
        w.byte_align().unwrap();
        let bytes = w.into_writer();
        client
            .apply_delta_from(&mut IoReader::endian(bytes.as_slice(), BigEndian), &mut ())
            .unwrap();
        conn.on_ack(packet);
    }
    assert_eq!(client, server);

    let mut counter = BitsWritten::<u64>::new();
    let error = server
        .write_delta_to(&mut conn, 99, &mut counter, Some(3))
        .unwrap_err();
    assert!(matches!(
        error,
        BitstreamError::Send(SendError::BudgetTooSmall { budget: 3 })
    ));
    assert_eq!(counter.written(), 0);
}

/// A refused write puts nothing into the stream and leaves the connection
/// as it was.
#[test]
fn a_refused_write_writes_nothing() {
    let (mut server, _, mut conn, packet) = session();
    server.push(unit(77)); // uncommitted
    let mut counter = BitsWritten::<u64>::new();
    let error = server
        .write_delta_to(&mut conn, packet, &mut counter, None)
        .unwrap_err();
    assert!(matches!(
        error,
        BitstreamError::Send(SendError::Uncommitted)
    ));
    let before = conn.packets_in_flight();
    let error = server
        .write_snapshot_for_to(&mut conn, &mut counter)
        .unwrap_err();
    assert!(matches!(
        error,
        BitstreamError::Send(SendError::Uncommitted)
    ));
    assert_eq!(counter.written(), 0);
    assert_eq!(conn.packets_in_flight(), before);
}

/// A message longer than a reader takes is not written: a snapshot
/// writes nothing, a delta without a budget reports its packet lost (its
/// work stays due), and a budget sends the rest around it.
#[test]
fn a_message_past_the_limit_is_not_written() {
    let mut server = FastArray::new();
    server.push(unit(1));
    let mut huge = unit(2);
    huge.name = "x".repeat((MAX_MESSAGE_BITS / 8) as usize + 1);
    let huge = server.push(huge);
    server.commit();

    let mut counter = BitsWritten::<u64>::new();
    let error = server.write_snapshot_to(&mut counter).unwrap_err();
    assert!(matches!(
        error,
        BitstreamError::TooLong { bits, limit: MAX_MESSAGE_BITS } if bits > MAX_MESSAGE_BITS
    ));
    let mut conn = SendState::new();
    let error = server
        .write_snapshot_for_to(&mut conn, &mut counter)
        .unwrap_err();
    assert!(matches!(error, BitstreamError::TooLong { .. }));
    assert_eq!(conn.client_items(), 0, "the connection is unchanged");

    let error = server
        .write_delta_to(&mut conn, 0, &mut counter, None)
        .unwrap_err();
    assert!(matches!(error, BitstreamError::TooLong { .. }));
    assert_eq!(counter.written(), 0);
    assert_eq!(conn.packets_in_flight(), 0, "the packet is reported lost");

    let mut client = FastArray::<Unit>::mirror();
    let mut w = IoWriter::endian(Vec::new(), LittleEndian);
    let stats = server
        .write_delta_to(&mut conn, 1, &mut w, Some(4096))
        .unwrap();
    assert_eq!(stats.oversized.map(|o| o.id), Some(huge));
    w.byte_align().unwrap();
    let bytes = w.into_writer();
    client
        .apply_delta_from(
            &mut IoReader::endian(bytes.as_slice(), LittleEndian),
            &mut (),
        )
        .unwrap();
    assert_eq!(client.len(), 1);
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

/// Every cut of a packet is a typed error, and the mirror stays as it was.
fn truncated<E: Endianness + Copy>(endian: E) {
    let (mut server, client, mut conn, packet) = session();
    tick(&mut server, packet);
    let mut w = IoWriter::endian(Vec::new(), endian);
    let stats = server
        .write_delta_to(&mut conn, packet, &mut w, None)
        .unwrap();
    w.byte_align().unwrap();
    let bytes = w.into_writer();
    assert!(stats.bits > 64, "a message worth cutting");
    let mut inside = 0;
    for cut in 0..bytes.len() {
        let mut mirror = client.clone();
        let mut r = IoReader::endian(&bytes[..cut], endian);
        match mirror.apply_delta_from(&mut r, &mut ()).unwrap_err() {
            BitstreamError::Truncated { bits } => {
                assert_eq!(bits, stats.bits);
                inside += 1;
            }
            // Cut inside the length prefix.
            BitstreamError::Io(e) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
            other => panic!("cut at {cut}: {other}"),
        }
        assert_eq!(mirror, client, "cut at {cut}");
        assert!(mirror.wire_eq(&client), "cut at {cut}");
    }
    assert!(inside > 0);
    let mut mirror = client.clone();
    mirror
        .apply_delta_from(&mut IoReader::endian(bytes.as_slice(), endian), &mut ())
        .unwrap();
    assert_eq!(mirror, server);
}

#[test]
fn a_truncated_stream_leaves_the_mirror_unchanged_big_endian() {
    truncated(BigEndian);
}

#[test]
fn a_truncated_stream_leaves_the_mirror_unchanged_little_endian() {
    truncated(LittleEndian);
}

/// A length prefix past `MAX_MESSAGE_BITS` is refused as soon as it is
/// read, and a length within it allocates only as bits arrive.
#[test]
fn a_huge_length_prefix_is_refused_without_allocating() {
    let (_, client, _, _) = session();
    for claimed in [MAX_MESSAGE_BITS + 1, 1 << 40, u64::MAX - 1, u64::MAX] {
        let mut w = IoWriter::endian(Vec::new(), LittleEndian);
        write_prefix(&mut w, claimed);
        w.write_bytes(&[0xff; 64]).unwrap();
        let bytes = w.into_writer();
        let mut mirror = client.clone();
        let (result, largest) = largest_allocation(|| {
            mirror.apply_delta_from(
                &mut IoReader::endian(bytes.as_slice(), LittleEndian),
                &mut (),
            )
        });
        match result.unwrap_err() {
            BitstreamError::TooLong { bits, limit } => {
                assert_eq!((bits, limit), (claimed, MAX_MESSAGE_BITS));
            }
            other => panic!("{claimed}: {other}"),
        }
        assert!(largest < 256, "{claimed}: allocated {largest} bytes");
        assert_eq!(mirror, client);
    }

    // A length within the limit whose bits never come.
    let mut w = IoWriter::endian(Vec::new(), BigEndian);
    write_prefix(&mut w, MAX_MESSAGE_BITS);
    w.write_bytes(&[0x55; 1000]).unwrap();
    let bytes = w.into_writer();
    let mut mirror = client.clone();
    let (result, largest) = largest_allocation(|| {
        mirror.apply_delta_from(&mut IoReader::endian(bytes.as_slice(), BigEndian), &mut ())
    });
    assert!(matches!(
        result.unwrap_err(),
        BitstreamError::Truncated { bits } if bits == MAX_MESSAGE_BITS
    ));
    assert!(largest <= 8 * 1024, "allocated {largest} bytes");
    assert_eq!(mirror, client);

    // Seven zeros: longer than any u64 length needs.
    let mut mirror = client.clone();
    let error = mirror
        .apply_delta_from(&mut IoReader::endian(&[0u8, 0xff][..], BigEndian), &mut ())
        .unwrap_err();
    assert!(matches!(error, BitstreamError::LengthOverlong));
    let error = FastArray::<Unit>::read_snapshot_from(&mut IoReader::endian(
        &[0x80u8, 0xff][..],
        LittleEndian,
    ))
    .unwrap_err();
    assert!(matches!(error, BitstreamError::LengthOverlong), "{error}");
}

/// A declared length longer than the message: the bits left inside it are
/// an error, zeros or not; the stream is still past the message.
#[test]
fn trailing_bits_inside_the_length_are_an_error() {
    let (mut server, client, mut conn, packet) = session();
    let (bytes, bits) = next_delta(&mut server, &mut conn, packet);
    for (extra, fill) in [(1, false), (3, true), (8, false), (20, true)] {
        let mut stream = framed(BigEndian, &bytes, bits, bits + extra, fill);
        stream.extend_from_slice(&[0xab, 0xcd]);
        let mut mirror = client.clone();
        let mut r = IoReader::endian(stream.as_slice(), BigEndian);
        match mirror.apply_delta_from(&mut r, &mut ()).unwrap_err() {
            BitstreamError::Decode(DecodeError::TrailingData {
                bit_offset,
                remaining_bits,
            }) => assert_eq!((bit_offset, remaining_bits), (bits, extra)),
            other => panic!("{extra} extra bits: {other}"),
        }
        assert_eq!(mirror, client);
        r.byte_align();
        assert_eq!(r.read::<16, u16>().unwrap(), 0xabcd, "past the message");
    }

    // A declared length shorter than the message: it ends early.
    let stream = framed(LittleEndian, &bytes, bits - 1, bits - 1, false);
    let mut mirror = client.clone();
    let error = mirror
        .apply_delta_from(
            &mut IoReader::endian(stream.as_slice(), LittleEndian),
            &mut (),
        )
        .unwrap_err();
    assert!(
        matches!(
            error,
            BitstreamError::Decode(DecodeError::UnexpectedEnd { .. })
        ),
        "{error}"
    );
    assert_eq!(mirror, client);

    // The exact length applies.
    let stream = framed(LittleEndian, &bytes, bits, bits, false);
    let mut mirror = client.clone();
    mirror
        .apply_delta_from(
            &mut IoReader::endian(stream.as_slice(), LittleEndian),
            &mut (),
        )
        .unwrap();
    assert_eq!(mirror, server);
}

/// An authority refuses a snapshot, after reading past it.
#[test]
fn an_authority_refuses_a_snapshot_and_skips_it() {
    let (server, _, _, _) = session();
    let mut w = IoWriter::endian(Vec::new(), BigEndian);
    server.write_snapshot_to(&mut w).unwrap();
    w.write::<8, u8>(0x5a).unwrap();
    w.byte_align().unwrap();
    let bytes = w.into_writer();
    let mut authority = server.clone();
    let mut r = IoReader::endian(bytes.as_slice(), BigEndian);
    let error = authority.apply_snapshot_from(&mut r).unwrap_err();
    assert!(matches!(
        error,
        BitstreamError::Decode(DecodeError::NotAMirror { .. })
    ));
    assert_eq!(r.read::<8, u8>().unwrap(), 0x5a);
    assert!(!authority.is_mirror());
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(512)
    })]

    /// Random bytes never panic, whether they are the whole stream or a
    /// well-framed message, and a message that fails changes nothing.
    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        cut in 0u64..8,
        big in any::<bool>(),
    ) {
        let (_, client, _, _) = session();
        let bits = (8 * bytes.len() as u64).saturating_sub(cut);
        let streams = if big {
            [bytes.clone(), framed(BigEndian, &bytes, bits, bits, false)]
        } else {
            [bytes.clone(), framed(LittleEndian, &bytes, bits, bits, false)]
        };
        for stream in &streams {
            macro_rules! run {
                ($endian:expr) => {{
                    let mut mirror = client.clone();
                    let reader = || IoReader::endian(stream.as_slice(), $endian);
                    if mirror.apply_delta_from(&mut reader(), &mut ()).is_err() {
                        prop_assert_eq!(&mirror, &client);
                    }
                    let mut fresh = FastArray::<Unit>::mirror();
                    if fresh.apply_snapshot_from(&mut reader()).is_err() {
                        prop_assert!(fresh.is_empty());
                    }
                    let mut object = Replicated::<Match>::mirror();
                    let before = object.clone();
                    if object.apply_delta_from(&mut reader(), &mut ()).is_err() {
                        prop_assert_eq!(&object, &before);
                    }
                    let _ = Replicated::<Match>::read_snapshot_from(&mut reader());
                }};
            }
            if big {
                run!(BigEndian);
            } else {
                run!(LittleEndian);
            }
        }
    }
}
