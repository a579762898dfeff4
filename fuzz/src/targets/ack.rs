//! Target `ack`: a byte script drives one `Acks` endpoint (`a`) with
//! sends, headers from arbitrary bytes or aimed at its packets, `applied`
//! calls and polls at advancing times; and a genuine peer (`b`, another
//! `Acks`) whose packets and `a`'s travel through a network the script
//! controls (which packet arrives next, duplicates, whether it applies).
//!
//! Promises checked: nothing panics; every event names a packet sent, and
//! no packet gets two; the counters add up (`acked + lost + in flight =
//! sent`); a refused header changes nothing; after the longest timeout
//! every packet sent has exactly one event. While `a` has accepted only
//! genuine headers: no packet of either side is reported acknowledged
//! that its receiver did not apply, and no genuine header is refused but
//! as a duplicate or too old.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use fastarray::{AckConfig, AckError, AckEvent, AckHeader, Acks, LinkStats};

/// How an `ack` script begins: the endpoint's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckSetup {
    /// `max_in_flight`: 1 to 64, or the default 1 024 (`None`).
    pub max_in_flight: Option<u8>,
    /// `reorder_threshold`, 0 to 5.
    pub reorder_threshold: u8,
    /// `first_packet`: 0, 65 530, `u32::MAX - 20` or 2^31.
    pub first_packet: u8,
}

const FIRST_PACKETS: [u32; 4] = [0, 65_530, u32::MAX - 20, 1 << 31];

impl AckSetup {
    fn read(data: &[u8]) -> Option<(AckSetup, &[u8])> {
        let (&[a, b], rest) = data.split_first_chunk::<2>()?;
        let setup = AckSetup {
            max_in_flight: (a < 128).then_some(a % 64),
            reorder_threshold: b % 6,
            first_packet: (b / 6) % 4,
        };
        Some((setup, rest))
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(self.max_in_flight.map_or(128, |n| n % 64));
        out.push(self.reorder_threshold % 6 + 6 * (self.first_packet % 4));
    }

    fn config(&self) -> AckConfig {
        AckConfig {
            max_in_flight: self.max_in_flight.map_or(1024, |n| usize::from(n) + 1),
            reorder_threshold: u16::from(self.reorder_threshold),
            first_packet: FIRST_PACKETS[usize::from(self.first_packet % 4)],
            ..AckConfig::default()
        }
    }
}

/// One step of an `ack` script. `apply`: the packet a header brought is
/// then applied (if the header was accepted).
#[derive(Clone, Debug, PartialEq)]
pub enum AckOp {
    /// `send` a packet of `size` bytes.
    Send { size: u8 },
    /// A header from these bytes (fewer than 8 at the script's end: a
    /// truncated header).
    Receive { bytes: Vec<u8>, apply: bool },
    /// A header whose `ack` is `back` sequences behind the newest sent.
    Ack {
        sequence: u16,
        back: u8,
        ack_bits: u32,
        apply: bool,
    },
    /// `applied` with a packet `back` before the newest the endpoint returned.
    Applied { back: u8 },
    /// `applied` with any number.
    AppliedRaw { packet: u32 },
    /// Time goes on by `step` × 8 ms.
    Poll { step: u8 },
    /// The peer sends a genuine packet towards `a`.
    PeerSend,
    /// The network delivers packet `pick` (modulo those in transit) of one
    /// direction. `flags`: bit 0, towards the peer (else towards `a`); bit
    /// 1, the receiver applies it; bit 2, it stays in transit (a duplicate).
    Deliver { pick: u8, flags: u8 },
}

/// Reads the next op: `None` at the end of the script.
fn next_op(data: &mut &[u8]) -> Option<AckOp> {
    let (&tag, rest) = data.split_first()?;
    *data = rest;
    let apply = tag >= 128;
    let remaining = data.len();
    let mut take = |n: usize| -> Vec<u8> {
        let (head, tail) = data.split_at(n.min(data.len()));
        *data = tail;
        let mut bytes = head.to_vec();
        bytes.resize(n, 0);
        bytes
    };
    Some(match tag % 8 {
        0 => AckOp::Send { size: take(1)[0] },
        1 => {
            let bytes = take(remaining.min(AckHeader::BYTES));
            AckOp::Receive { bytes, apply }
        }
        2 => {
            let b = take(7);
            AckOp::Ack {
                sequence: u16::from_le_bytes([b[0], b[1]]),
                back: b[2],
                ack_bits: u32::from_le_bytes([b[3], b[4], b[5], b[6]]),
                apply,
            }
        }
        3 => AckOp::Applied { back: take(1)[0] },
        4 => {
            let b = take(4);
            AckOp::AppliedRaw {
                packet: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            }
        }
        5 => AckOp::Poll { step: take(1)[0] },
        6 => AckOp::PeerSend,
        _ => {
            let b = take(2);
            AckOp::Deliver {
                pick: b[0],
                flags: b[1],
            }
        }
    })
}

/// The script's bytes: what [`ack`] reads back as `setup` and `ops`.
pub fn encode_ack_script(setup: AckSetup, ops: &[AckOp]) -> Vec<u8> {
    let mut out = Vec::new();
    setup.write(&mut out);
    for op in ops {
        match op {
            AckOp::Send { size } => out.extend([0, *size]),
            AckOp::Receive { bytes, apply } => {
                out.push(1 + 128 * u8::from(*apply));
                out.extend(bytes.iter().take(AckHeader::BYTES));
            }
            AckOp::Ack {
                sequence,
                back,
                ack_bits,
                apply,
            } => {
                out.push(2 + 128 * u8::from(*apply));
                out.extend(sequence.to_le_bytes());
                out.push(*back);
                out.extend(ack_bits.to_le_bytes());
            }
            AckOp::Applied { back } => out.extend([3, *back]),
            AckOp::AppliedRaw { packet } => {
                out.push(4);
                out.extend(packet.to_le_bytes());
            }
            AckOp::Poll { step } => out.extend([5, *step]),
            AckOp::PeerSend => out.push(6),
            AckOp::Deliver { pick, flags } => out.extend([7, *pick, *flags]),
        }
    }
    out
}

/// What a refused header must leave as it was.
fn fingerprint(acks: &Acks, now: Instant) -> (LinkStats, usize, Option<Instant>, AckHeader) {
    let (next_header, _) = acks.clone().send(now, 0);
    (
        acks.stats(),
        acks.in_flight(),
        acks.poll_timeout(),
        next_header,
    )
}

/// Packets in transit one way, at most this many (the oldest is dropped).
const MAX_TRANSIT: usize = 64;

/// One side's record of the packets it sent and their events.
#[derive(Default)]
struct Ledger {
    sent: BTreeSet<u32>,
    events: BTreeMap<u32, AckEvent>,
}

impl Ledger {
    fn send(&mut self, packet: u32, header: &AckHeader) {
        assert_eq!(header.sequence, packet as u16);
        assert!(
            self.sent.insert(packet),
            "packet number {packet} given twice"
        );
    }

    /// Takes every event `acks` has at `now`; `applied`: the packets the
    /// peer applied (or may have), if that is known.
    fn poll(&mut self, acks: &mut Acks, now: Instant, applied: Option<&BTreeSet<u32>>) {
        while let Some(event) = acks.poll(now) {
            let (AckEvent::Acked(packet) | AckEvent::Lost(packet)) = event;
            assert!(self.sent.contains(&packet), "{event:?}: packet never sent");
            if let (AckEvent::Acked(_), Some(applied)) = (event, applied) {
                assert!(
                    applied.contains(&packet),
                    "packet {packet} reported acknowledged, never applied"
                );
            }
            if let Some(first) = self.events.insert(packet, event) {
                panic!("packet {packet} has two events: {first:?}, then {event:?}");
            }
        }
        let stats = acks.stats();
        assert_eq!(stats.packets_sent, self.sent.len() as u64);
        assert_eq!(
            stats.packets_acked + stats.packets_lost + acks.in_flight() as u64,
            stats.packets_sent
        );
        assert!((0.0..=1.0).contains(&stats.loss), "{stats:?}");
        assert!(acks.in_flight() <= acks.config().max_in_flight.max(1));
    }

    /// Past the longest timeout (2 s) every packet is resolved, once.
    fn finish(&mut self, acks: &mut Acks, now: Instant) {
        self.poll(acks, now + Duration::from_secs(3), None);
        assert_eq!(acks.in_flight(), 0);
        assert_eq!(
            self.events.len(),
            self.sent.len(),
            "packets without an event"
        );
    }
}

/// A genuine packet: its header and its sender's number for it.
fn packet(header: AckHeader, number: u32) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(AckHeader::BYTES + 4);
    header.write(&mut bytes);
    bytes.extend_from_slice(&number.to_le_bytes());
    bytes
}

fn push(transit: &mut Vec<Vec<u8>>, packet: Vec<u8>) {
    if transit.len() == MAX_TRANSIT {
        transit.remove(0);
    }
    transit.push(packet);
}

/// The `ack` target.
pub fn ack(data: &[u8]) {
    let Some((setup, mut data)) = AckSetup::read(data) else {
        return;
    };
    let (mut a, mut b) = (Acks::new(setup.config()), Acks::new(setup.config()));
    let (mut a_ledger, mut b_ledger) = (Ledger::default(), Ledger::default());
    let t0 = Instant::now();
    let mut now = t0;
    // a's newest sequence sent, and newest number received (genuine or not).
    let mut newest_sent: Option<u16> = None;
    let mut newest_received: Option<u32> = None;
    // Packets on their way to b (from a) and to a (from b).
    let (mut to_b, mut to_a): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    // a's packets b applied; b's packets a may have applied (`applied`
    // called with a number a gave one of b's packets), by sender's number.
    let (mut b_applied, mut a_applied) = (BTreeSet::new(), BTreeSet::new());
    // a's numbers for b's packets it accepted.
    let mut a_numbers: BTreeMap<u32, u32> = BTreeMap::new();
    // Whether a accepted only genuine headers so far.
    let mut genuine = true;
    while let Some(op) = next_op(&mut data) {
        let mut a_applies = None;
        let header = match op {
            AckOp::Send { size } => {
                let (header, number) = a.send(now, usize::from(size));
                a_ledger.send(number, &header);
                newest_sent = Some(header.sequence);
                push(&mut to_b, packet(header, number));
                None
            }
            AckOp::Receive { bytes, apply } => match AckHeader::read(&bytes) {
                Ok((header, rest)) => {
                    assert!(rest.is_empty());
                    Some((header, apply))
                }
                Err(error) => {
                    assert!(bytes.len() < AckHeader::BYTES, "{error}");
                    None
                }
            },
            AckOp::Ack {
                sequence,
                back,
                ack_bits,
                apply,
            } => {
                let ack = newest_sent.unwrap_or(0).wrapping_sub(u16::from(back));
                Some((
                    AckHeader {
                        sequence,
                        ack,
                        ack_bits,
                    },
                    apply,
                ))
            }
            AckOp::Applied { back } => {
                a_applies = newest_received.map(|newest| newest.wrapping_sub(u32::from(back)));
                None
            }
            AckOp::AppliedRaw { packet } => {
                a_applies = Some(packet);
                None
            }
            AckOp::Poll { step } => {
                now += Duration::from_millis(8 * u64::from(step));
                None
            }
            AckOp::PeerSend => {
                let (header, number) = b.send(now, 12);
                b_ledger.send(number, &header);
                push(&mut to_a, packet(header, number));
                None
            }
            AckOp::Deliver { pick, flags } => {
                let (towards_b, apply, keep) = (flags & 1 == 1, flags & 2 == 2, flags & 4 == 4);
                let transit = if towards_b { &mut to_b } else { &mut to_a };
                if !transit.is_empty() {
                    let index = usize::from(pick) % transit.len();
                    let bytes = if keep {
                        transit[index].clone()
                    } else {
                        transit.remove(index)
                    };
                    let (header, payload) = AckHeader::read(&bytes).unwrap();
                    let truth = u32::from_le_bytes(payload.try_into().unwrap());
                    let receiver = if towards_b { &mut b } else { &mut a };
                    match receiver.receive(&header, now, bytes.len()) {
                        Ok(number) => {
                            assert_eq!(number as u16, header.sequence);
                            if towards_b {
                                if apply {
                                    b.applied(number);
                                    b_applied.insert(truth);
                                }
                            } else {
                                newest_received = Some(number);
                                a_numbers.insert(number, truth);
                                if apply {
                                    a_applies = Some(number);
                                }
                            }
                        }
                        Err(AckError::Duplicate { .. } | AckError::TooOld { .. }) => {}
                        // Once a accepted a forged header, its own headers may
                        // acknowledge packets b never sent, and b's may read
                        // to it as acknowledging what it never sent.
                        Err(error) => assert!(!genuine, "a genuine header refused: {error}"),
                    }
                }
                None
            }
        };
        if let Some((header, apply)) = header {
            let before = fingerprint(&a, now);
            match a.receive(&header, now, AckHeader::BYTES) {
                Ok(number) => {
                    assert_eq!(number as u16, header.sequence);
                    genuine = false;
                    newest_received = Some(number);
                    if apply {
                        a_applies = Some(number);
                    }
                }
                Err(error) => {
                    assert!(!error.to_string().is_empty());
                    assert_eq!(fingerprint(&a, now), before, "{error} changed the state");
                }
            }
        }
        if let Some(number) = a_applies {
            a.applied(number);
            if let Some(truth) = a_numbers.get(&number) {
                a_applied.insert(*truth);
            }
        }
        a_ledger.poll(&mut a, now, genuine.then_some(&b_applied));
        b_ledger.poll(&mut b, now, genuine.then_some(&a_applied));
    }
    a_ledger.finish(&mut a, now);
    b_ledger.finish(&mut b, now);
}
