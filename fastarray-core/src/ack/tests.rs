use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Every event `acks` has at `now`.
fn drain(acks: &mut Acks, now: Instant) -> Vec<AckEvent> {
    std::iter::from_fn(|| acks.poll(now)).collect()
}

/// `from` sends a packet that `to` receives and applies at `now`;
/// returns the sender's packet number.
fn deliver(from: &mut Acks, to: &mut Acks, now: Instant) -> u32 {
    let (header, packet) = from.send(now, 100);
    let theirs = to.receive(&header, now, 100).unwrap();
    assert_eq!(theirs, packet, "the receiver numbers it as the sender does");
    to.applied(theirs);
    packet
}

fn header(sequence: u16, ack: u16, ack_bits: u32) -> AckHeader {
    AckHeader {
        sequence,
        ack,
        ack_bits,
    }
}

#[test]
fn header_round_trips_in_8_little_endian_bytes() {
    let h = header(0x0102, 0xfffe, 0x8000_0001);
    let mut out = vec![0xaa];
    h.write(&mut out);
    assert_eq!(out, [0xaa, 0x02, 0x01, 0xfe, 0xff, 0x01, 0x00, 0x00, 0x80]);
    out.extend_from_slice(b"xy");
    let (read, rest) = AckHeader::read(&out[1..]).unwrap();
    assert_eq!(read, h);
    assert_eq!(rest, b"xy");
    assert_eq!(AckHeader::from_bytes(h.to_bytes()), h);
}

#[test]
fn header_shorter_than_8_bytes_is_truncated() {
    for len in 0..AckHeader::BYTES {
        let bytes = vec![0; len];
        assert_eq!(AckHeader::read(&bytes), Err(AckError::Truncated { len }));
    }
    let (_, rest) = AckHeader::read(&[0; 8]).unwrap();
    assert!(rest.is_empty());
    let message = AckError::Truncated { len: 3 }.to_string();
    assert!(message.contains("3 byte"), "{message}");
}

#[test]
fn sequences_compare_and_extend_across_the_wrap() {
    assert!(sequence_greater_than(0, 65_535));
    assert!(sequence_greater_than(100, 65_500));
    assert!(!sequence_greater_than(65_500, 100));
    assert!(sequence_greater_than(32_767, 0));
    assert!(
        !sequence_greater_than(32_768, 0),
        "half way counts as behind"
    );
    assert_eq!(extend_sequence(0, 65_535), 65_536);
    assert_eq!(extend_sequence(65_535, 65_536), 65_535);
    assert_eq!(extend_sequence(5, 3 * 65_536 + 65_530), 4 * 65_536 + 5);
    assert_eq!(
        extend_sequence(65_535, 0),
        u32::MAX,
        "packet numbers wrap too"
    );
}

#[test]
fn endpoints_wrap_from_65535_to_0() {
    let config = AckConfig {
        first_packet: 65_530,
        ..AckConfig::default()
    };
    let (mut a, mut b) = (Acks::new(config), Acks::new(config));
    let t0 = Instant::now();
    for n in 0..20u64 {
        let now = t0 + ms(10 * n);
        let sent = deliver(&mut a, &mut b, now);
        assert_eq!(sent, 65_530 + n as u32);
        deliver(&mut b, &mut a, now);
    }
    let (header, packet) = a.send(t0 + ms(200), 0);
    assert_eq!(packet, 65_550);
    assert_eq!(header.sequence, 14, "65 550 mod 65 536");
    let mut acked: Vec<u32> = drain(&mut a, t0 + ms(200))
        .into_iter()
        .map(|event| match event {
            AckEvent::Acked(p) => p,
            AckEvent::Lost(p) => panic!("{p} lost on a perfect link"),
        })
        .collect();
    acked.sort();
    assert_eq!(acked, (65_530..65_550).collect::<Vec<_>>());
}

#[test]
fn duplicate_packet_is_refused_and_changes_nothing() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    let (h0, _) = a.send(t0, 10);
    let (h1, _) = a.send(t0, 10);
    assert_eq!(b.receive(&h0, t0, 10), Ok(0));
    assert_eq!(b.receive(&h1, t0, 10), Ok(1));
    let before = format!("{b:?}");
    assert_eq!(
        b.receive(&h0, t0 + ms(5), 10),
        Err(AckError::Duplicate { packet: 0 })
    );
    assert_eq!(
        b.receive(&h1, t0 + ms(5), 10),
        Err(AckError::Duplicate { packet: 1 })
    );
    assert_eq!(format!("{b:?}"), before);
}

#[test]
fn reordered_packets_are_accepted_and_all_acknowledged() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    let headers: Vec<AckHeader> = (0..5).map(|_| a.send(t0, 10).0).collect();
    for index in [0, 3, 1, 4, 2] {
        let packet = b.receive(&headers[index], t0, 10).unwrap();
        assert_eq!(packet, index as u32);
        b.applied(packet);
    }
    let (reply, _) = b.send(t0 + ms(30), 10);
    assert_eq!((reply.ack, reply.ack_bits), (4, 0b1111));
    a.receive(&reply, t0 + ms(30), 10).unwrap();
    assert_eq!(
        drain(&mut a, t0 + ms(30)),
        (0..5).map(AckEvent::Acked).collect::<Vec<_>>()
    );
}

#[test]
fn ack_bits_name_the_packets_before_ack() {
    // Packets alone count here: the burst is not spread in time.
    let mut a = Acks::new(AckConfig {
        reorder_window: 0.0,
        ..AckConfig::default()
    });
    let t0 = Instant::now();
    for _ in 0..40 {
        a.send(t0, 10);
    }
    // ack 39; bits 0 and 4 are packets 38 and 34; bit 31 is packet 7.
    a.receive(&header(0, 39, 1 | 1 << 4 | 1 << 31), t0 + ms(10), 8)
        .unwrap();
    let events = drain(&mut a, t0 + ms(10));
    let acked: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            AckEvent::Acked(p) => Some(*p),
            AckEvent::Lost(_) => None,
        })
        .collect();
    assert_eq!(acked, [7, 34, 38, 39]);
    // Everything before 7 fell out of the header's reach; 8..34 were
    // overtaken by at least 3 acknowledged packets; 35..38 by only 2.
    let lost = events.len() - acked.len();
    assert_eq!(lost, 7 + 26);
    assert_eq!(a.in_flight(), 3);
}

#[test]
fn unapplied_packets_are_not_acknowledged() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    let (h0, _) = a.send(t0, 10);
    let (h1, _) = a.send(t0, 10);
    let p0 = b.receive(&h0, t0, 10).unwrap();
    b.receive(&h1, t0, 10).unwrap(); // fails to decode: never applied
    b.applied(p0);
    b.applied(7); // never received: ignored
    let (reply, _) = b.send(t0 + ms(10), 10);
    assert_eq!((reply.ack, reply.ack_bits), (0, 0));
    a.receive(&reply, t0 + ms(10), 10).unwrap();
    assert_eq!(drain(&mut a, t0 + ms(10)), [AckEvent::Acked(0)]);
    assert_eq!(a.in_flight(), 1);
}

#[test]
fn a_header_before_anything_applied_acknowledges_nothing() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    let (first, _) = a.send(t0, 10);
    assert_eq!((first.ack, first.ack_bits), (u16::MAX, 0));
    // b has sent nothing, yet the header is accepted: it acknowledges nothing.
    assert_eq!(b.receive(&first, t0, 10), Ok(0));
    // Its own packets are not acknowledged by it either.
    let (_, packet) = b.send(t0, 10);
    let (second, _) = a.send(t0, 10);
    assert_eq!(b.receive(&second, t0, 10), Ok(1));
    assert_eq!(b.in_flight(), 1);
    assert_eq!(drain(&mut b, t0), []);
    assert_eq!(packet, 0);
}

#[test]
fn ack_of_a_packet_never_sent_is_refused_and_changes_nothing() {
    let mut a = Acks::default();
    let t0 = Instant::now();
    assert_eq!(
        a.receive(&header(0, 0, 0), t0, 8),
        Err(AckError::AckFromFuture {
            ack: 0,
            newest_sent: None
        })
    );
    for _ in 0..3 {
        a.send(t0, 10);
    }
    let before = format!("{a:?}");
    for ack in [3, 100, 32_769] {
        assert_eq!(
            a.receive(&header(0, ack, 0), t0, 8),
            Err(AckError::AckFromFuture {
                ack,
                newest_sent: Some(2)
            }),
            "ack {ack}"
        );
    }
    // Behind the first packet sent: never sent either.
    assert!(matches!(
        a.receive(&header(0, 65_000, 1), t0, 8),
        Err(AckError::AckFromFuture { .. })
    ));
    assert_eq!(format!("{a:?}"), before);
    assert!(a.receive(&header(0, 2, 0), t0, 8).is_ok());
}

#[test]
fn bits_naming_packets_never_sent_or_resolved_are_ignored() {
    let mut a = Acks::default();
    let t0 = Instant::now();
    a.send(t0, 10);
    a.send(t0, 10);
    // ack 1, every bit: packet 0 and 31 packets "before" it that do not exist.
    a.receive(&header(0, 1, u32::MAX), t0, 8).unwrap();
    assert_eq!(drain(&mut a, t0), [AckEvent::Acked(0), AckEvent::Acked(1)]);
    a.receive(&header(1, 1, u32::MAX), t0, 8).unwrap();
    assert_eq!(drain(&mut a, t0), []);
    assert_eq!(a.stats().packets_acked, 2);
}

#[test]
fn too_old_peer_packet_is_refused() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    let headers: Vec<AckHeader> = (0..40).map(|_| a.send(t0, 10).0).collect();
    b.receive(&headers[39], t0, 10).unwrap();
    assert_eq!(
        b.receive(&headers[7], t0, 10),
        Ok(7),
        "32 behind: in the window"
    );
    assert_eq!(
        b.receive(&headers[6], t0, 10),
        Err(AckError::TooOld { sequence: 6 })
    );
}

#[test]
fn overtaken_by_reorder_threshold_acknowledged_packets_is_lost() {
    let mut a = Acks::default();
    let t0 = Instant::now();
    for n in 0..5 {
        a.send(t0 + ms(40 * n), 10);
    }
    // Packet 0 missing; 1 and 2 acknowledged: not yet lost.
    a.receive(&header(0, 2, 0b1), t0 + ms(200), 8).unwrap();
    assert_eq!(
        drain(&mut a, t0 + ms(200)),
        [AckEvent::Acked(1), AckEvent::Acked(2)]
    );
    // A third later packet: lost.
    a.receive(&header(1, 3, 0b11), t0 + ms(210), 8).unwrap();
    assert_eq!(
        drain(&mut a, t0 + ms(210)),
        [AckEvent::Acked(3), AckEvent::Lost(0)]
    );
    // Its late acknowledgement changes nothing.
    a.receive(&header(2, 4, u32::MAX), t0 + ms(220), 8).unwrap();
    assert_eq!(drain(&mut a, t0 + ms(220)), [AckEvent::Acked(4)]);
    assert_eq!(a.stats().packets_lost, 1);
}

#[test]
fn reorder_threshold_is_configurable() {
    let mut a = Acks::new(AckConfig {
        reorder_threshold: 1,
        ..AckConfig::default()
    });
    let t0 = Instant::now();
    a.send(t0, 10);
    a.send(t0 + ms(50), 10);
    a.receive(&header(0, 1, 0), t0 + ms(60), 8).unwrap();
    assert_eq!(
        drain(&mut a, t0 + ms(60)),
        [AckEvent::Acked(1), AckEvent::Lost(0)]
    );
}

/// Packets sent together are reordered freely by a jittery path: however
/// many of them overtake one, only its timeout declares it lost.
#[test]
fn a_burst_overtaken_within_the_reorder_window_waits_for_the_timeout() {
    let mut a = Acks::default();
    let t0 = Instant::now();
    for _ in 0..6 {
        a.send(t0, 10);
    }
    // All but packet 0 acknowledged, 30 ms later.
    a.receive(&header(0, 5, 0b1111), t0 + ms(30), 8).unwrap();
    let events = drain(&mut a, t0 + ms(30));
    assert_eq!(events.len(), 5);
    assert!(!events.contains(&AckEvent::Lost(0)));
    // Its acknowledgement, late: still in time.
    a.receive(&header(1, 5, 0b11111), t0 + ms(40), 8).unwrap();
    assert_eq!(drain(&mut a, t0 + ms(40)), [AckEvent::Acked(0)]);
    assert_eq!(a.stats().packets_lost, 0);
    // Without the window, packets alone count.
    let mut b = Acks::new(AckConfig {
        reorder_window: 0.0,
        ..AckConfig::default()
    });
    for _ in 0..6 {
        b.send(t0, 10);
    }
    b.receive(&header(0, 5, 0b1111), t0 + ms(30), 8).unwrap();
    assert!(drain(&mut b, t0 + ms(30)).contains(&AckEvent::Lost(0)));
}

#[test]
fn unacknowledged_past_the_timeout_is_lost() {
    let mut a = Acks::new(AckConfig {
        initial_rtt: ms(100),
        rtt_factor: 1.5,
        ..AckConfig::default()
    });
    let t0 = Instant::now();
    // No sample yet: max(100 + 4 * 50, 1.5 * 100) = 300 ms.
    assert_eq!(a.timeout(), ms(300));
    a.send(t0, 10);
    a.send(t0 + ms(100), 10);
    assert_eq!(a.poll_timeout(), Some(t0 + ms(300)));
    assert_eq!(a.poll(t0 + ms(299)), None);
    assert_eq!(drain(&mut a, t0 + ms(300)), [AckEvent::Lost(0)]);
    assert_eq!(a.poll_timeout(), Some(t0 + ms(400)));
    assert_eq!(drain(&mut a, t0 + ms(400)), [AckEvent::Lost(1)]);
    assert_eq!(a.poll_timeout(), None);
    // A late acknowledgement is ignored.
    a.receive(&header(0, 1, 1), t0 + ms(500), 8).unwrap();
    assert_eq!(drain(&mut a, t0 + ms(500)), []);
}

#[test]
fn timeout_is_clamped() {
    let config = AckConfig {
        initial_rtt: ms(1),
        min_timeout: ms(100),
        max_timeout: ms(2000),
        ..AckConfig::default()
    };
    assert_eq!(Acks::new(config).timeout(), ms(100));
    let slow = AckConfig {
        initial_rtt: ms(5000),
        ..config
    };
    assert_eq!(Acks::new(slow).timeout(), ms(2000));
    let absurd = AckConfig {
        rtt_factor: f32::NAN,
        min_timeout: ms(500),
        max_timeout: ms(200),
        initial_rtt: Duration::MAX,
        ..config
    };
    assert_eq!(Acks::new(absurd).timeout(), ms(200));
}

#[test]
fn full_window_declares_the_oldest_lost() {
    let mut a = Acks::new(AckConfig {
        max_in_flight: 4,
        ..AckConfig::default()
    });
    let t0 = Instant::now();
    for _ in 0..4 {
        a.send(t0, 10);
    }
    assert_eq!(a.poll(t0), None);
    a.send(t0, 10);
    assert_eq!(drain(&mut a, t0), [AckEvent::Lost(0)]);
    assert_eq!(a.in_flight(), 4);
}

#[test]
fn each_packet_gets_exactly_one_event() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    let mut events: BTreeMap<u32, Vec<AckEvent>> = BTreeMap::new();
    let mut applied = Vec::new();
    let mut sent = 0u32;
    for n in 0..500u64 {
        let now = t0 + ms(10 * n);
        let (h, packet) = a.send(now, 50);
        sent += 1;
        // Every 3rd packet lost, every 7th delivered but not applied.
        if n % 3 != 0 {
            let theirs = b.receive(&h, now + ms(15), 50).unwrap();
            if n % 7 != 0 {
                b.applied(theirs);
                applied.push(packet);
            }
        }
        if n % 2 == 0 {
            let (reply, _) = b.send(now + ms(15), 20);
            a.receive(&reply, now + ms(30), 20).unwrap();
        }
        while let Some(event) = a.poll(now + ms(30)) {
            let (AckEvent::Acked(p) | AckEvent::Lost(p)) = event;
            events.entry(p).or_default().push(event);
        }
    }
    for event in drain(&mut a, t0 + ms(10_000)) {
        let (AckEvent::Acked(p) | AckEvent::Lost(p)) = event;
        events.entry(p).or_default().push(event);
    }
    assert_eq!(events.len(), sent as usize);
    for (packet, list) in &events {
        assert_eq!(list.len(), 1, "packet {packet}: {list:?}");
        if let AckEvent::Acked(p) = list[0] {
            assert!(applied.contains(&p), "{p} acknowledged but never applied");
        }
    }
    let stats = a.stats();
    assert_eq!(stats.packets_sent, u64::from(sent));
    assert_eq!(stats.packets_acked + stats.packets_lost, u64::from(sent));
    assert!(stats.packets_acked > 250, "{stats:?}");
}

#[test]
fn rtt_converges_to_a_constant_delay() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    // 30 ms each way, both sides sending every 10 ms: each ack waits for
    // b's next packet, so the round trip is 60 to 70 ms; make it exact by
    // replying at once.
    for n in 0..200u64 {
        let now = t0 + ms(10 * n);
        let (h, _) = a.send(now, 10);
        let theirs = b.receive(&h, now + ms(30), 10).unwrap();
        b.applied(theirs);
        let (reply, _) = b.send(now + ms(30), 10);
        a.receive(&reply, now + ms(60), 10).unwrap();
        while a.poll(now + ms(60)).is_some() {}
    }
    let stats = a.stats();
    assert_eq!(stats.rtt, ms(60));
    assert!(stats.rtt_variance < ms(1), "{stats:?}");
    assert_eq!(stats.loss, 0.0);
    // The timeout follows: max(60 + 4 * ~0, 1.5 * 60) = 90, clamped to 100 ms.
    assert_eq!(a.timeout(), ms(100));
}

#[test]
fn rtt_starts_from_the_first_sample_and_ignores_lost_packets() {
    let mut a = Acks::default();
    let t0 = Instant::now();
    a.send(t0, 10);
    a.receive(&header(0, 0, 0), t0 + ms(40), 8).unwrap();
    assert_eq!((a.stats().rtt, a.stats().rtt_variance), (ms(40), ms(20)));
    // A packet lost by timeout, acknowledged late: no sample.
    a.send(t0 + ms(100), 10);
    assert_eq!(
        drain(&mut a, t0 + ms(2100)),
        [AckEvent::Acked(0), AckEvent::Lost(1)]
    );
    a.receive(&header(1, 1, 0), t0 + ms(2200), 8).unwrap();
    assert_eq!(a.stats().rtt, ms(40));
}

#[test]
fn loss_and_byte_rates() {
    let (mut a, mut b) = (Acks::default(), Acks::default());
    let t0 = Instant::now();
    // 100 bytes every 10 ms for 2 s: 10 000 bytes a second; a quarter lost.
    for n in 0..200u64 {
        let now = t0 + ms(10 * n);
        let (h, _) = a.send(now, 100);
        if n % 4 != 0 {
            let theirs = b.receive(&h, now + ms(5), 100).unwrap();
            b.applied(theirs);
        }
        let (reply, _) = b.send(now + ms(5), 40);
        a.receive(&reply, now + ms(10), 40).unwrap();
        while a.poll(now + ms(10)).is_some() {}
    }
    let stats = a.stats();
    assert!(
        (stats.sent_bytes_per_second - 10_000.0).abs() < 1_000.0,
        "{stats:?}"
    );
    assert!(
        (stats.received_bytes_per_second - 4_000.0).abs() < 400.0,
        "{stats:?}"
    );
    assert!((stats.loss - 0.25).abs() < 0.02, "{stats:?}");
    // A second of silence empties the byte windows.
    a.poll(t0 + ms(4000));
    assert_eq!(a.stats().sent_bytes_per_second, 0.0);
}

#[test]
fn errors_say_what_was_wrong() {
    let errors = [
        AckError::AckFromFuture {
            ack: 9,
            newest_sent: Some(4),
        },
        AckError::AckFromFuture {
            ack: 9,
            newest_sent: None,
        },
        AckError::Duplicate { packet: 12 },
        AckError::TooOld { sequence: 3 },
    ];
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(messages[0].contains('9') && messages[0].contains('4'));
    assert!(messages[1].contains("no packet"));
    assert!(messages[2].contains("12"));
    assert!(messages[3].contains("sequence 3"));
}

#[test]
fn the_nothing_value_is_a_real_ack_after_the_peer_acknowledged_something() {
    let mut a = Acks::new(AckConfig {
        first_packet: 65_530,
        ..AckConfig::default()
    });
    let t0 = Instant::now();
    for _ in 0..10 {
        a.send(t0, 10); // 65 530 to 65 539
    }
    // The peer's packet 5 acknowledges 65 533: it has applied something.
    a.receive(&header(5, 65_533, 0), t0, 8).unwrap();
    assert_eq!(drain(&mut a, t0), [AckEvent::Acked(65_533)]);
    // Its packet 3, older, may have been written before it applied
    // anything: read as acknowledging nothing.
    a.receive(&header(3, u16::MAX, 0), t0, 8).unwrap();
    assert_eq!(drain(&mut a, t0), []);
    // Its packet 6, newer: a genuine acknowledgement of 65 535.
    a.receive(&header(6, u16::MAX, 0), t0, 8).unwrap();
    assert_eq!(drain(&mut a, t0), [AckEvent::Acked(65_535)]);
}

/// A packet declared lost by reordering that is acknowledged after all
/// widens the window: the next such overtaking is tolerated.
#[test]
fn a_spurious_loss_by_reordering_widens_the_window() {
    let t0 = Instant::now();
    // Packets 40 ms apart; the peer applies 1, 2, 3 before 0 (an RTT of
    // 80 ms: a 20 ms window), so 0 is declared lost.
    let overtaken = |a: &mut Acks| {
        for n in 0..4 {
            a.send(t0 + ms(40 * n), 10);
        }
        a.receive(&header(0, 3, 0b111 >> 1), t0 + ms(200), 8)
            .unwrap();
        assert!(drain(a, t0 + ms(200)).contains(&AckEvent::Lost(0)));
    };
    // Then packets 12 ms apart, 4 overtaken by 5 to 9 (sent 12 to 60 ms
    // after it): within a 20 ms window four of them count, within 40 ms
    // two.
    let again = |a: &mut Acks| {
        for n in 4..10 {
            a.send(t0 + ms(300 + 12 * (n - 4)), 10);
        }
        a.receive(&header(2, 9, 0b1111), t0 + ms(390), 8).unwrap();
        drain(a, t0 + ms(390)).contains(&AckEvent::Lost(4))
    };
    let mut plain = Acks::default();
    overtaken(&mut plain);
    assert!(again(&mut plain), "a 20 ms window");
    let mut surprised = Acks::default();
    overtaken(&mut surprised);
    // Packet 0 was only overtaken: its acknowledgement comes after all.
    surprised
        .receive(&header(1, 3, 0b111), t0 + ms(210), 8)
        .unwrap();
    assert_eq!(drain(&mut surprised, t0 + ms(210)), []);
    assert!(!again(&mut surprised), "the window doubled to 40 ms");
}
