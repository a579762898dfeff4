//! `fastarray_core::ack` over a simulated link: two endpoints exchange a
//! few thousand packets across the 16-bit wrap through a seeded network
//! that loses, duplicates, delays and reorders them, and a receiver that
//! sometimes fails to decode. Checked: every packet sent gets exactly one
//! event; a packet reported acknowledged was applied by the peer (no false
//! acknowledgement, ever); a genuine header is never refused but as a
//! duplicate or too old; a perfect link loses nothing; the loss rate
//! reported follows the link's. Then hostile headers: random and corrupted
//! ones never panic, and a refused one changes nothing.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::time::{Duration, Instant};

use fastarray_core::{AckConfig, AckError, AckEvent, AckHeader, Acks};
use proptest::prelude::*;

/// SplitMix64: the simulation's only randomness, seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// What the network and the receiving application do.
#[derive(Clone, Copy, Debug)]
struct Link {
    loss: f64,
    duplicate: f64,
    /// One-way delay: `delay_ms` plus up to `jitter_ms` (reorders packets).
    delay_ms: u64,
    jitter_ms: u64,
    /// A delivered packet fails to decode: received, never applied.
    decode_failure: f64,
    /// Each side sends a packet every this many milliseconds.
    interval_ms: [u64; 2],
    /// Packets each side sends before the tail.
    packets: u32,
    first_packet: u32,
}

/// One side of the simulation.
struct Side {
    acks: Acks,
    /// Events per own packet number.
    events: BTreeMap<u32, Vec<AckEvent>>,
    /// Own packets sent, and when (ms).
    sent: BTreeMap<u32, u64>,
    /// The peer's packets (their true numbers) this side applied.
    applied: BTreeSet<u32>,
    /// The peer's packets this side received (their true numbers).
    received: BTreeSet<u32>,
}

impl Side {
    fn new(first_packet: u32) -> Self {
        Side {
            acks: Acks::new(AckConfig {
                first_packet,
                ..AckConfig::default()
            }),
            events: BTreeMap::new(),
            sent: BTreeMap::new(),
            applied: BTreeSet::new(),
            received: BTreeSet::new(),
        }
    }
}

/// A packet on its way: (arrival ms, tiebreak, destination side, bytes),
/// earliest first.
type InTransit = Reverse<(u64, u64, usize, Vec<u8>)>;

struct Outcome {
    sides: [Side; 2],
    /// Own packets sent before the tail (whose acknowledgements had time to come).
    before_tail: [u32; 2],
    /// `stats().loss` of each side at the end of the main phase.
    window_loss: [f32; 2],
}

/// Runs the link for `link.packets` packets each, then 500 ms more of
/// packets (the tail), then 3 s of silence so that every packet resolves.
fn simulate(seed: u64, link: Link) -> Outcome {
    let mut rng = Rng(seed);
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut sides = [Side::new(link.first_packet), Side::new(link.first_packet)];
    let mut transit: BinaryHeap<InTransit> = BinaryHeap::new();
    let mut tiebreak = 0;
    let main_end = u64::from(link.packets) * link.interval_ms[0].max(link.interval_ms[1]);
    let tail_end = main_end + 500;
    let mut before_tail = [0; 2];
    let mut window_loss = [0.0; 2];
    let mut newest_received: [Option<u32>; 2] = [None, None];
    for now in 0..tail_end + 3000 {
        if now == main_end {
            for (i, side) in sides.iter().enumerate() {
                before_tail[i] = side.sent.len() as u32;
                window_loss[i] = side.acks.stats().loss;
            }
        }
        // Sends.
        for (from, side) in sides.iter_mut().enumerate() {
            if now < tail_end && now % link.interval_ms[from] == 0 {
                let (header, packet) = side.acks.send(at(now), 12);
                side.sent.insert(packet, now);
                let mut bytes = Vec::new();
                header.write(&mut bytes);
                bytes.extend_from_slice(&packet.to_le_bytes());
                let copies = if rng.chance(link.loss) {
                    0
                } else if rng.chance(link.duplicate) {
                    2
                } else {
                    1
                };
                for _ in 0..copies {
                    let arrive = now + link.delay_ms + rng.below(link.jitter_ms + 1);
                    tiebreak += 1;
                    transit.push(Reverse((arrive, tiebreak, 1 - from, bytes.clone())));
                }
            }
        }
        // Deliveries.
        while transit
            .peek()
            .is_some_and(|Reverse((arrive, ..))| *arrive <= now)
        {
            let Reverse((_, _, to, bytes)) = transit.pop().unwrap();
            let (header, payload) = AckHeader::read(&bytes).unwrap();
            let truth = u32::from_le_bytes(payload.try_into().unwrap());
            let side = &mut sides[to];
            match side.acks.receive(&header, at(now), bytes.len()) {
                Ok(packet) => {
                    assert_eq!(
                        packet, truth,
                        "the receiver numbers packets as the sender does"
                    );
                    assert!(side.received.insert(truth), "{truth} accepted twice");
                    if newest_received[to].is_none_or(|n| truth > n) {
                        newest_received[to] = Some(truth);
                    }
                    if !rng.chance(link.decode_failure) {
                        side.acks.applied(packet);
                        side.applied.insert(truth);
                    }
                }
                Err(AckError::Duplicate { packet }) => {
                    assert_eq!(packet, truth);
                    assert!(side.received.contains(&truth), "{truth} is no duplicate");
                }
                Err(AckError::TooOld { sequence }) => {
                    assert_eq!(sequence, truth as u16);
                    let newest = newest_received[to].unwrap();
                    assert!(newest - truth > 32, "{truth} refused, newest {newest}");
                }
                Err(error) => panic!("a genuine header refused: {error}"),
            }
        }
        // Events. No false acknowledgement: an `Acked` packet was applied
        // by the peer before the event came out.
        for index in 0..2 {
            let [a, b] = &mut sides;
            let (own, peer) = if index == 0 { (a, &*b) } else { (b, &*a) };
            while let Some(event) = own.acks.poll(at(now)) {
                let (AckEvent::Acked(packet) | AckEvent::Lost(packet)) = event;
                assert!(own.sent.contains_key(&packet), "{event:?}: never sent");
                if let AckEvent::Acked(packet) = event {
                    assert!(
                        peer.applied.contains(&packet),
                        "packet {packet} reported acknowledged, never applied"
                    );
                }
                own.events.entry(packet).or_default().push(event);
            }
        }
    }
    Outcome {
        sides,
        before_tail,
        window_loss,
    }
}

/// Every packet sent got exactly one event, and the counters agree.
fn check_one_event_each(outcome: &Outcome) {
    for side in &outcome.sides {
        assert_eq!(side.acks.in_flight(), 0);
        assert_eq!(
            side.events.len(),
            side.sent.len(),
            "packets without an event"
        );
        for (packet, events) in &side.events {
            assert_eq!(events.len(), 1, "packet {packet}: {events:?}");
        }
        let stats = side.acks.stats();
        assert_eq!(stats.packets_sent, side.sent.len() as u64);
        assert_eq!(stats.packets_acked + stats.packets_lost, stats.packets_sent);
    }
}

fn lost(side: &Side, below: u32) -> usize {
    side.events
        .iter()
        .take(below as usize)
        .filter(|(_, events)| matches!(events[0], AckEvent::Lost(_)))
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn a_bad_link_never_yields_a_false_ack(
        seed: u64,
        loss in 0.0f64..0.5,
        duplicate in 0.0f64..0.3,
        delay_ms in 0u64..80,
        jitter_ms in prop_oneof![Just(0u64), 0u64..100],
        decode_failure in 0.0f64..0.3,
        interval_ms in [5u64..40, 5u64..40],
        first_packet in prop_oneof![Just(0u32), 63_000u32..65_536],
    ) {
        let link = Link {
            loss, duplicate, delay_ms, jitter_ms, decode_failure, interval_ms,
            packets: 3000, first_packet,
        };
        let outcome = simulate(seed, link);
        check_one_event_each(&outcome);
        for side in &outcome.sides {
            prop_assert!(side.sent.keys().next_back().unwrap() - first_packet >= 2999);
        }
    }

    #[test]
    fn a_perfect_link_loses_nothing(
        seed: u64,
        delay_ms in 0u64..100,
        interval_ms in [5u64..40, 5u64..40],
        first_packet in prop_oneof![Just(0u32), 63_000u32..65_536],
    ) {
        let link = Link {
            loss: 0.0, duplicate: 0.0, delay_ms, jitter_ms: 0, decode_failure: 0.0,
            interval_ms, packets: 3000, first_packet,
        };
        let outcome = simulate(seed, link);
        check_one_event_each(&outcome);
        for (side, before_tail) in outcome.sides.iter().zip(outcome.before_tail) {
            prop_assert_eq!(lost(side, before_tail), 0);
            prop_assert_eq!(side.acks.stats().rtt_variance < Duration::from_millis(50), true);
        }
    }

    #[test]
    fn the_loss_rate_follows_the_link(
        seed: u64,
        loss in 0.1f64..0.4,
        first_packet in prop_oneof![Just(0u32), 63_000u32..65_536],
    ) {
        let link = Link {
            loss, duplicate: 0.0, delay_ms: 20, jitter_ms: 0, decode_failure: 0.0,
            interval_ms: [10, 10], packets: 3000, first_packet,
        };
        let outcome = simulate(seed, link);
        check_one_event_each(&outcome);
        for (index, side) in outcome.sides.iter().enumerate() {
            let before_tail = outcome.before_tail[index];
            let rate = lost(side, before_tail) as f64 / f64::from(before_tail);
            // A little above the link's: an acknowledgement whose ~5
            // carrying headers are all lost turns into a (false) loss.
            prop_assert!(rate > loss - 0.04 && rate < loss + 0.06, "lost {} of packets, link {}", rate, loss);
            let window = f64::from(outcome.window_loss[index]);
            prop_assert!((window - loss).abs() < 0.15, "window loss {}, link {}", window, loss);
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Send,
    /// A header from arbitrary bytes (shorter than 8: truncated).
    Receive(Vec<u8>),
    /// One of this side's own genuine headers with bits flipped, as a
    /// header from the peer.
    Corrupt(u64),
    Applied(u32),
    Poll(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Send),
        3 => proptest::collection::vec(any::<u8>(), 0..12).prop_map(Op::Receive),
        2 => any::<u64>().prop_map(Op::Corrupt),
        1 => any::<u32>().prop_map(Op::Applied),
        2 => any::<u16>().prop_map(Op::Poll),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn hostile_headers_never_panic_and_refused_ones_change_nothing(
        ops in proptest::collection::vec(op(), 0..200),
        first_packet in prop_oneof![Just(0u32), 65_000u32..65_536, Just(u32::MAX - 50)],
        max_in_flight in prop_oneof![Just(1024usize), 1usize..40],
    ) {
        let mut acks = Acks::new(AckConfig { first_packet, max_in_flight, ..AckConfig::default() });
        let t0 = Instant::now();
        let mut now = t0;
        let mut sent = Vec::new();
        let mut events: BTreeMap<u32, usize> = BTreeMap::new();
        let mut last_header = AckHeader { sequence: 0, ack: 0, ack_bits: 0 };
        for op in ops {
            let received = match op {
                Op::Send => {
                    let (header, packet) = acks.send(now, 20);
                    sent.push(packet);
                    last_header = header;
                    None
                }
                Op::Receive(bytes) => match AckHeader::read(&bytes) {
                    Ok((header, _)) => Some(header),
                    Err(error) => {
                        prop_assert_eq!(error, AckError::Truncated { len: bytes.len() });
                        None
                    }
                },
                Op::Corrupt(flips) => {
                    let bits = u64::from_le_bytes(last_header.to_bytes()) ^ flips;
                    Some(AckHeader::from_bytes(bits.to_le_bytes()))
                }
                Op::Applied(packet) => {
                    acks.applied(packet);
                    None
                }
                Op::Poll(step) => {
                    now += Duration::from_millis(u64::from(step) % 3000);
                    None
                }
            };
            if let Some(header) = received {
                let before = format!("{acks:?}");
                match acks.receive(&header, now, 8) {
                    Ok(packet) => acks.applied(packet),
                    Err(error) => {
                        prop_assert!(!error.to_string().is_empty());
                        prop_assert_eq!(format!("{acks:?}"), before, "{} changed the state", error);
                    }
                }
            }
            while let Some(event) = acks.poll(now) {
                let (AckEvent::Acked(packet) | AckEvent::Lost(packet)) = event;
                prop_assert!(sent.contains(&packet), "{:?}: never sent", event);
                *events.entry(packet).or_default() += 1;
            }
        }
        // Past the longest timeout every packet is resolved, once.
        while let Some(event) = acks.poll(now + Duration::from_secs(3)) {
            let (AckEvent::Acked(packet) | AckEvent::Lost(packet)) = event;
            *events.entry(packet).or_default() += 1;
        }
        prop_assert_eq!(acks.in_flight(), 0);
        prop_assert_eq!(events.len(), sent.len());
        prop_assert!(events.values().all(|n| *n == 1), "{:?}", events);
    }
}
