//! `Connection` on the transport's delivery reports: no header, the link
//! numbers the payloads and reports each one delivered or lost. The same
//! sessions, the same packing: one set of rules for both modes.

use super::*;
use fastarray::AckHeader;

impl Client {
    /// One tick on the transport's delivery reports: the server's payloads
    /// (as many as the work needs, up to 3) numbered by the transport, what
    /// arrives, and the transport's reports. Nothing goes up: the client
    /// writes no header.
    pub(super) fn exchange_reports(&mut self, world: &mut World, tick: u32) {
        for _ in 0..3 {
            let mut payload = Vec::new();
            let number = self.packets;
            self.packets = self.packets.wrapping_add(1);
            let stats = self
                .conn
                .write_payload(
                    number,
                    MTU,
                    &mut [&mut world.scoped, &mut world.plain, &mut world.game],
                    &mut payload,
                )
                .unwrap();
            assert_eq!(stats.bytes, payload.len());
            assert_eq!(stats.packet, number);
            if stats.sections == 0 {
                // Nothing to say: nothing is sent, nothing awaits a report.
                assert_eq!(payload.len(), 1);
                break;
            }
            self.largest = self.largest.max(payload.len());
            if tick == self.joins {
                self.join.push(payload.len());
            }
            self.down.send(tick, number, payload);
            if stats.totals.deferred == 0 {
                break;
            }
        }
        for arrival in self.down.deliver(tick) {
            // Duplicates and late copies are read past by the mirrors.
            if let Err(error) = self.mirror.apply_payload(
                &arrival.payload,
                &mut [&mut self.scoped, &mut self.plain, &mut self.game],
            ) {
                panic!("tick {tick}: a client refused a payload: {error}");
            }
        }
        for report in self.down.reports(tick) {
            let known = match report {
                Report::Acked(packet) => self.conn.delivered(packet),
                Report::Lost(packet) => self.conn.lost(packet),
            };
            assert_eq!(known, Ok(true), "tick {tick}: {report:?}");
            assert_eq!(
                self.conn.poll_verdict(),
                Some(match report {
                    Report::Acked(packet) => AckEvent::Acked(packet),
                    Report::Lost(packet) => AckEvent::Lost(packet),
                })
            );
        }
    }
}

/// Every profile, every seed: the mirrors converge with the transport
/// numbering the payloads (across the wrap of `u32`) and reporting them;
/// no payload exceeds the MTU, and a joining client gets the world in
/// several.
#[test]
fn every_mirror_converges_on_the_transports_reports() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 1..=seeds() {
            session(&profile, seed, 160, 300, Delivery::Reports);
        }
    }
}

/// Two identical worlds, one sent with the header and one on the
/// transport's reports, every packet delivered: every payload is the
/// header packet's bytes after its header, tick after tick (the join over
/// several packets, channels taking turns, changes).
#[test]
fn both_modes_write_the_same_sections() {
    let now = Instant::now();
    let (mut one, mut two) = (World::new(3, 300), World::new(3, 300));
    let mut header = Connection::new(3);
    let mut header_client = MirrorConnection::new(3);
    let mut reports = Connection::with_delivery_reports(3);
    let mut reports_client = MirrorConnection::with_delivery_reports(3);
    let mut mirrors = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let (mut scoped, mut plain, mut game) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let mut compared = 0;
    for tick in 0..40 {
        if tick > 0 {
            one.mutate();
            two.mutate();
        }
        for _ in 0..4 {
            let (mut packet, mut payload, mut reply) = (Vec::new(), Vec::new(), Vec::new());
            let with_header = header
                .write_packet(
                    now,
                    MTU + AckHeader::BYTES,
                    &mut [&mut one.scoped, &mut one.plain, &mut one.game],
                    &mut packet,
                )
                .unwrap();
            let without = reports
                .write_payload(
                    with_header.packet,
                    MTU,
                    &mut [&mut two.scoped, &mut two.plain, &mut two.game],
                    &mut payload,
                )
                .unwrap();
            assert_eq!(
                &packet[AckHeader::BYTES..],
                &payload[..],
                "tick {tick}, packet {}",
                with_header.packet
            );
            assert_eq!(with_header.totals, without.totals);
            assert_eq!(with_header.sections, without.sections);
            assert_eq!(with_header.bytes, without.bytes + AckHeader::BYTES);
            compared += usize::from(without.sections > 0);
            header_client
                .apply(
                    now,
                    &packet,
                    &mut [&mut mirrors.0, &mut mirrors.1, &mut mirrors.2],
                )
                .unwrap();
            header_client.write_header(now, &mut reply).unwrap();
            header.receive(now, &reply).unwrap();
            // The payload is a whole packet's sections: a mirror reads it.
            if without.sections > 0 {
                reports_client
                    .apply_payload(&payload, &mut [&mut scoped, &mut plain, &mut game])
                    .unwrap();
                assert_eq!(reports.delivered(without.packet), Ok(true));
            }
            if with_header.totals.deferred == 0 {
                break;
            }
        }
    }
    assert!(compared > 40, "only {compared} payloads compared");
    assert_eq!(mirrors.0, one.scoped);
    assert_eq!(mirrors.1, one.plain);
    assert_eq!(mirrors.2.get(), one.game.get());
    assert_eq!((scoped, plain), (mirrors.0, mirrors.1));
    assert_eq!(game.get(), one.game.get());
    assert!(one.plain.is_settled(header.state(1)));
    assert!(two.plain.is_settled(reports.state(1)));
}

/// An item larger than the MTU goes alone on the transport's reports too,
/// in a payload of up to `MAX_PACKET` bytes, after the rest.
#[test]
fn an_oversized_item_goes_alone_on_the_transports_reports() {
    let mut blobs = FastArray::new();
    blobs.push(Blob { bytes: vec![1; 50] });
    blobs.push(Blob {
        bytes: vec![7; 5_000],
    });
    blobs.commit();
    let mut conn = Connection::with_delivery_reports(1);
    let mut client = MirrorConnection::with_delivery_reports(1);
    let mut mirror = FastArray::<Blob>::mirror();
    let mut sizes = Vec::new();
    for number in 0..3 {
        let mut payload = Vec::new();
        conn.write_payload(number, MTU, &mut [&mut blobs], &mut payload)
            .unwrap();
        sizes.push(payload.len());
        client.apply_payload(&payload, &mut [&mut mirror]).unwrap();
        conn.delivered(number).unwrap();
    }
    assert!(sizes[0] <= MTU, "the small item first, within the MTU");
    assert!(
        sizes[1] > 5_000 && sizes[1] <= MAX_PACKET,
        "then the large one alone"
    );
    assert_eq!(sizes[2], 1, "then nothing");
    assert_eq!(mirror, blobs);
}

/// A lost payload's work comes again in the next one.
#[test]
fn a_lost_payload_is_written_again() {
    let mut world = World::new(2, 5);
    let mut conn = Connection::with_delivery_reports(3);
    let mut first = Vec::new();
    conn.write_payload(
        7,
        1_400,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut first,
    )
    .unwrap();
    assert_eq!(conn.awaiting_reports(), 1);
    assert_eq!(conn.lost(7), Ok(true));
    assert_eq!(conn.poll_verdict(), Some(AckEvent::Lost(7)));
    assert_eq!(conn.awaiting_reports(), 0);
    let mut again = Vec::new();
    let stats = conn
        .write_payload(
            8,
            1_400,
            &mut [&mut world.scoped, &mut world.plain, &mut world.game],
            &mut again,
        )
        .unwrap();
    assert_eq!(stats.sections, 3);
    // The first never arrived: the second alone brings the world.
    let mut client = MirrorConnection::with_delivery_reports(3);
    let (mut scoped, mut plain, mut game) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    client
        .apply_payload(&again, &mut [&mut scoped, &mut plain, &mut game])
        .unwrap();
    assert_eq!((scoped, plain), (world.scoped, world.plain));
    assert_eq!(game.get(), world.game.get());
    assert!(first.len() > 1);
}

/// The error a call of the other mode than `delivery` gets.
fn wrong<T>(delivery: Delivery) -> Result<T, ConnectionError> {
    Err(ConnectionError::WrongDelivery { delivery })
}

#[test]
fn calls_of_the_other_mode_are_refused_and_change_nothing() {
    let now = Instant::now();
    let mut world = World::new(4, 10);

    // The header's calls on the transport's reports.
    let mut reports = Connection::with_delivery_reports(3);
    let mut out = vec![0xaa];
    let result = reports.write_packet(
        now,
        MTU,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut out,
    );
    assert_eq!(result, wrong(Delivery::Reports));
    assert_eq!(out, [0xaa]);
    let reply = {
        let mut client = MirrorConnection::new(3);
        let mut reply = Vec::new();
        client.write_header(now, &mut reply).unwrap();
        reply
    };
    assert_eq!(
        reports.receive(now, &reply).map(|(n, _)| n),
        wrong(Delivery::Reports)
    );
    assert_eq!(reports.state(0).packets_in_flight(), 0);

    // The reports' calls on the header.
    let mut header = Connection::new(3);
    let result = header.write_payload(
        0,
        MTU,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut out,
    );
    assert_eq!(result, wrong(Delivery::Header));
    assert_eq!(out, [0xaa]);
    let packet = header
        .write_packet(
            now,
            MTU,
            &mut [&mut world.scoped, &mut world.plain, &mut world.game],
            &mut out,
        )
        .unwrap()
        .packet;
    assert_eq!(header.delivered(packet), wrong(Delivery::Header));
    assert_eq!(header.lost(packet), wrong(Delivery::Header));
    assert_eq!(header.state(0).packets_in_flight(), 1);
    assert_eq!(header.poll_verdict(), None);

    // And on the client.
    let mut mirrors = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let mut client = MirrorConnection::with_delivery_reports(3);
    let result = client.apply(
        now,
        &out[1..],
        &mut [&mut mirrors.0, &mut mirrors.1, &mut mirrors.2],
    );
    assert_eq!(result, wrong(Delivery::Reports));
    assert!(mirrors.0.is_empty() && mirrors.1.is_empty());
    let mut reply = Vec::new();
    assert_eq!(
        client.write_header(now, &mut reply),
        wrong(Delivery::Reports)
    );
    assert!(reply.is_empty());
    let mut client = MirrorConnection::new(3);
    let result = client.apply_payload(
        &out[1 + AckHeader::BYTES..],
        &mut [&mut mirrors.0, &mut mirrors.1, &mut mirrors.2],
    );
    assert_eq!(result, wrong(Delivery::Header));
    assert!(mirrors.0.is_empty() && mirrors.1.is_empty());
}

#[test]
fn reports_on_unknown_packets_are_ignored_and_numbers_in_flight_refused() {
    let mut world = World::new(6, 10);
    let mut conn = Connection::with_delivery_reports(3);
    let mut out = Vec::new();
    conn.write_payload(
        41,
        MTU,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut out,
    )
    .unwrap();
    let before = format!("{conn:?}");
    // Numbers never written: ignored.
    assert_eq!(conn.delivered(40), Ok(false));
    assert_eq!(conn.lost(42), Ok(false));
    assert_eq!(conn.lost(u32::MAX), Ok(false));
    // A number still awaiting its report is refused, and `out` kept.
    let mut again = vec![1, 2];
    let error = conn
        .write_payload(
            41,
            MTU,
            &mut [&mut world.scoped, &mut world.plain, &mut world.game],
            &mut again,
        )
        .unwrap_err();
    assert_eq!(error, ConnectionError::PacketInFlight { packet: 41 });
    assert_eq!(again, [1, 2]);
    // The channels are checked as on the header path.
    let error = conn
        .write_payload(
            43,
            MTU,
            &mut [&mut world.scoped, &mut world.plain],
            &mut again,
        )
        .unwrap_err();
    assert_eq!(
        error,
        ConnectionError::ChannelCount {
            expected: 3,
            given: 2
        }
    );
    let error = conn
        .write_payload(
            43,
            MTU,
            &mut [&mut world.plain, &mut world.scoped, &mut world.game],
            &mut again,
        )
        .unwrap_err();
    assert_eq!(error, ConnectionError::WrongSource { channel: 0 });
    assert_eq!(again, [1, 2]);
    assert_eq!(format!("{conn:?}"), before, "nothing changed");
    assert_eq!(conn.poll_verdict(), None);
    // Reported once: a second report is ignored.
    assert_eq!(conn.delivered(41), Ok(true));
    assert_eq!(conn.poll_verdict(), Some(AckEvent::Acked(41)));
    let after = format!("{conn:?}");
    assert_eq!(conn.lost(41), Ok(false));
    assert_eq!(conn.delivered(41), Ok(false));
    assert_eq!(format!("{conn:?}"), after);
    assert_eq!(conn.poll_verdict(), None);
    assert!(world.scoped.is_settled(conn.state(0)));
}

/// A payload with nothing to say is one byte that need not be sent: no
/// report awaits it, and a report on it is ignored.
#[test]
fn a_payload_with_no_section_awaits_no_report() {
    let mut world = World::new(8, 3);
    let mut conn = Connection::with_delivery_reports(3);
    let mut out = Vec::new();
    conn.write_payload(
        1,
        MTU,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut out,
    )
    .unwrap();
    conn.delivered(1).unwrap();
    let mut quiet = Vec::new();
    let stats = conn
        .write_payload(
            2,
            MTU,
            &mut [&mut world.scoped, &mut world.plain, &mut world.game],
            &mut quiet,
        )
        .unwrap();
    assert_eq!((stats.sections, quiet.len()), (0, 1));
    assert_eq!(conn.awaiting_reports(), 0);
    assert_eq!(conn.delivered(2), Ok(false));
    // The client reads it as nothing.
    let mut client = MirrorConnection::with_delivery_reports(3);
    let (mut a, mut b, mut c) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let report = client
        .apply_payload(&quiet, &mut [&mut a, &mut b, &mut c])
        .unwrap();
    assert!(report.sections.is_empty());
}

/// A broken payload is refused whole: no mirror changes.
#[test]
fn a_broken_payload_changes_no_mirror() {
    let (packet, _world) = one_packet();
    let payload = &packet[AckHeader::BYTES..];
    let mut client = MirrorConnection::with_delivery_reports(3);
    let (mut scoped, mut plain, mut game) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    for cut in [
        1,
        payload.len() / 3,
        payload.len() * 2 / 3,
        payload.len() - 1,
    ] {
        let result =
            client.apply_payload(&payload[..cut], &mut [&mut scoped, &mut plain, &mut game]);
        assert!(result.is_err(), "cut at {cut}");
        assert!(scoped.is_empty() && plain.is_empty());
        assert_eq!(game.get(), &Match::default());
    }
    let report = client
        .apply_payload(payload, &mut [&mut scoped, &mut plain, &mut game])
        .unwrap();
    assert_eq!(report.sections.len(), 3);
    assert_eq!(scoped.len(), 12);
}

/// Over a perfect link, the join comes in payloads filled up to the MTU,
/// every one reported delivered.
#[test]
fn a_perfect_link_fills_payloads_up_to_the_mtu() {
    let t0 = Instant::now();
    let mut world = World::new(7, 400);
    let mut client = Client::new(&LinkProfile::perfect(), 7, 0, Delivery::Reports);
    for tick in 0..60 {
        client.exchange(&mut world, tick, t0);
    }
    assert!(client.settled(&world));
    assert!(client.matches(&mut world));
    assert_eq!(client.conn.awaiting_reports(), 0);
    assert!(client.largest <= MTU && client.largest > MTU * 9 / 10);
    assert_eq!(client.join.len(), 3, "the first tick's three payloads");
    assert!(client.join.iter().all(|&bytes| bytes > MTU * 9 / 10));
}

/// Applies `payload` to fresh mirrors on the transport's reports: the
/// result, and whether any mirror changed.
fn apply_payload_fresh(payload: &[u8]) -> (Result<usize, ConnectionError>, bool) {
    let mut client = MirrorConnection::with_delivery_reports(3);
    let (mut scoped, mut plain, mut game) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let result = client.apply_payload(payload, &mut [&mut scoped, &mut plain, &mut game]);
    let changed = !scoped.is_empty() || !plain.is_empty() || game.get() != &Match::default();
    (result.map(|report| report.sections.len()), changed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_payloads_never_panic_and_change_nothing_when_refused(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let (result, changed) = apply_payload_fresh(&bytes);
        if result.is_err() {
            prop_assert!(!changed);
        }
    }

    #[test]
    fn a_payload_with_a_flipped_bit_never_panics_and_changes_nothing_when_refused(
        bit in 0usize..8 * 64,
    ) {
        let (packet, _) = one_packet();
        let mut payload = packet[AckHeader::BYTES..].to_vec();
        let bit = bit % (payload.len() * 8);
        payload[bit / 8] ^= 1 << (bit % 8);
        let (result, changed) = apply_payload_fresh(&payload);
        if result.is_err() {
            prop_assert!(!changed);
        }
    }
}

/// A transport that never reports a payload does not make the connection
/// keep it for ever: once every channel counted it lost (a window of
/// frames later), it is forgotten. Without that, 3 000 unreported
/// payloads would all stay awaited.
#[test]
fn payloads_never_reported_are_forgotten_a_window_later() {
    let mut units = FastArray::new();
    let id = units.push(Unit {
        x: 0,
        y: 0,
        hp: 1,
        name: "lone".into(),
    });
    units.commit();
    let mut conn = Connection::with_delivery_reports(1);
    let mut most = 0;
    for packet in 0..3_000u32 {
        units.get_mut(id).unwrap().x += 1;
        units.commit();
        let mut payload = Vec::new();
        let stats = conn
            .write_payload(packet, 1_200, &mut [&mut units], &mut payload)
            .unwrap();
        assert_eq!(stats.sections, 1);
        most = most.max(conn.awaiting_reports());
    }
    // One payload per frame: a window of them at most.
    let window = fastarray::HISTORY_LEN + 1;
    assert!(most <= window, "{most} payloads awaited at once");
    assert!(conn.awaiting_reports() <= window);
    // A report that comes after the packet was forgotten is ignored.
    assert_eq!(conn.delivered(0), Ok(false));
}
