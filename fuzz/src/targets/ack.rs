//! Target `ack`: a byte script drives one `Acks` endpoint with sends,
//! headers from arbitrary bytes or aimed at its packets, `applied` calls
//! and polls at advancing times.
//!
//! Promises checked: nothing panics; every event names a packet sent, and
//! no packet gets two; the counters add up (`acked + lost + in flight =
//! sent`); a refused header changes nothing; after the longest timeout
//! every packet sent has exactly one event.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use fastarray::{AckConfig, AckEvent, AckHeader, Acks, LinkStats};

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
    Some(match tag % 6 {
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
        _ => AckOp::Poll { step: take(1)[0] },
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

/// The `ack` target.
pub fn ack(data: &[u8]) {
    let Some((setup, mut data)) = AckSetup::read(data) else {
        return;
    };
    let mut acks = Acks::new(setup.config());
    let t0 = Instant::now();
    let mut now = t0;
    let mut sent: BTreeSet<u32> = BTreeSet::new();
    let mut events: BTreeMap<u32, AckEvent> = BTreeMap::new();
    let mut newest_sent: Option<u16> = None;
    let mut newest_received: Option<u32> = None;
    let record = |event: AckEvent, sent: &BTreeSet<u32>, events: &mut BTreeMap<u32, AckEvent>| {
        let (AckEvent::Acked(packet) | AckEvent::Lost(packet)) = event;
        assert!(sent.contains(&packet), "{event:?}: packet never sent");
        if let Some(first) = events.insert(packet, event) {
            panic!("packet {packet} has two events: {first:?}, then {event:?}");
        }
    };
    while let Some(op) = next_op(&mut data) {
        let header = match op {
            AckOp::Send { size } => {
                let (header, packet) = acks.send(now, usize::from(size));
                assert_eq!(header.sequence, packet as u16);
                assert!(sent.insert(packet), "packet number {packet} given twice");
                newest_sent = Some(header.sequence);
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
                if let Some(newest) = newest_received {
                    acks.applied(newest.wrapping_sub(u32::from(back)));
                }
                None
            }
            AckOp::AppliedRaw { packet } => {
                acks.applied(packet);
                None
            }
            AckOp::Poll { step } => {
                now += Duration::from_millis(8 * u64::from(step));
                None
            }
        };
        if let Some((header, apply)) = header {
            let before = fingerprint(&acks, now);
            match acks.receive(&header, now, AckHeader::BYTES) {
                Ok(packet) => {
                    assert_eq!(packet as u16, header.sequence);
                    newest_received = Some(packet);
                    if apply {
                        acks.applied(packet);
                    }
                }
                Err(error) => {
                    assert!(!error.to_string().is_empty());
                    assert_eq!(fingerprint(&acks, now), before, "{error} changed the state");
                }
            }
        }
        while let Some(event) = acks.poll(now) {
            record(event, &sent, &mut events);
        }
        let stats = acks.stats();
        assert_eq!(stats.packets_sent, sent.len() as u64);
        assert_eq!(
            stats.packets_acked + stats.packets_lost + acks.in_flight() as u64,
            stats.packets_sent
        );
        assert!((0.0..=1.0).contains(&stats.loss), "{stats:?}");
        assert!(acks.in_flight() <= acks.config().max_in_flight.max(1));
    }
    // Past the longest timeout (2 s) every packet is resolved.
    while let Some(event) = acks.poll(now + Duration::from_secs(3)) {
        record(event, &sent, &mut events);
    }
    assert_eq!(acks.in_flight(), 0);
    assert_eq!(events.len(), sent.len(), "packets without an event");
}
