//! Tests of the lossy-link simulator itself: `fastarray_testkit::link`, and
//! the channel beneath it with the wide suite's extras
//! (`fastarray_testkit::channel`, `fastarray_testkit::wide_link`).

use std::collections::BTreeMap;

use fastarray_testkit::channel::{Channel, ChannelStats, Extra, Fate, HOLD};
use fastarray_testkit::link::{Link, LinkProfile, LinkStats, Report};
use fastarray_testkit::wide_link::WideProfile;

/// Something observed at one tick.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Delivered(u32),
    Report(Report),
}

/// A whole run: what happened, and the link's counters at the end.
#[derive(Debug, PartialEq, Eq)]
struct Trace {
    events: Vec<(u32, Event)>,
    /// Send tick of every packet, by packet id.
    sent_at: BTreeMap<u32, u32>,
    stats: LinkStats,
}

/// The id carried in a payload (first four bytes, little endian).
fn id_of(payload: &[u8]) -> u32 {
    u32::from_le_bytes(payload[..4].try_into().unwrap())
}

/// The packet id of the `i`th packet: wraps as a `u16` sequence number
/// partway through any run of more than 36 packets.
fn packet_id(i: u32) -> u32 {
    u32::from(65_500u16.wrapping_add(i as u16))
}

/// Sends one packet per tick for `count` ticks (healing the link before
/// tick `heal_at`, if given), then drains the link. Each tick: send, then
/// deliver, then reports.
fn run(profile: &LinkProfile, seed: u64, count: u32, heal_at: Option<u32>) -> Trace {
    assert!(count <= 65_536, "ids must be unique within a run");
    let mut link = Link::new(profile.clone(), seed);
    let mut events = Vec::new();
    let mut sent_at = BTreeMap::new();
    let mut now = 0;
    loop {
        if heal_at == Some(now) {
            link.heal();
        }
        if now < count {
            let id = packet_id(now);
            let mut payload = id.to_le_bytes().to_vec();
            payload.resize(4 + (now % 7) as usize, 0xee);
            sent_at.insert(id, now);
            link.send(now, id, payload);
        }
        for payload in link.deliver(now) {
            events.push((now, Event::Delivered(id_of(&payload))));
        }
        for report in link.reports(now) {
            events.push((now, Event::Report(report)));
        }
        if now >= count && link.idle() {
            break;
        }
        now += 1;
        assert!(now < count + 10_000, "the link never drains");
    }
    assert_eq!(link.next_due(), None);
    Trace {
        events,
        sent_at,
        stats: link.stats(),
    }
}

/// Checks the model's guarantees on one trace and returns, per id, the
/// ticks of its deliveries and its report.
fn check(profile: &LinkProfile, seed: u64, trace: &Trace) -> BTreeMap<u32, (Vec<u32>, Report)> {
    let ctx = format!("{} seed {seed}", profile.name);
    let mut deliveries: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut reports: BTreeMap<u32, (u32, Report)> = BTreeMap::new();
    let mut late = 0;
    for &(tick, ref event) in &trace.events {
        match *event {
            Event::Delivered(id) => {
                let sent = trace.sent_at[&id];
                assert!(tick >= sent, "{ctx}: {id} delivered before it was sent");
                match reports.get(&id) {
                    Some((_, Report::Lost(_))) => {
                        assert!(
                            !deliveries.contains_key(&id),
                            "{ctx}: {id} delivered both before and after its loss report"
                        );
                        late += 1;
                    }
                    Some((_, Report::Acked(_))) => assert!(
                        deliveries.get(&id).is_some_and(|d| d.len() == 1),
                        "{ctx}: only a duplicate may arrive after the ack of {id}"
                    ),
                    None => {}
                }
                deliveries.entry(id).or_default().push(tick);
            }
            Event::Report(report) => {
                let id = report.id();
                assert!(
                    trace.sent_at.contains_key(&id),
                    "{ctx}: report of unsent {id}"
                );
                assert!(
                    reports.insert(id, (tick, report)).is_none(),
                    "{ctx}: second report of {id}"
                );
                let delivered = deliveries.get(&id).map(|d| d[0]);
                match report {
                    Report::Acked(_) => {
                        let first =
                            delivered.unwrap_or_else(|| panic!("{ctx}: ack of undelivered {id}"));
                        assert!(first <= tick, "{ctx}: ack of {id} before its delivery");
                    }
                    Report::Lost(_) => {
                        assert_eq!(delivered, None, "{ctx}: loss report of delivered {id}")
                    }
                }
            }
        }
    }
    assert_eq!(
        reports.len(),
        trace.sent_at.len(),
        "{ctx}: every packet gets exactly one report"
    );
    let stats = trace.stats;
    let acks = reports
        .values()
        .filter(|(_, r)| matches!(r, Report::Acked(_)))
        .count() as u64;
    assert_eq!(stats.sent, trace.sent_at.len() as u64, "{ctx}");
    assert_eq!(stats.acked, acks, "{ctx}");
    assert_eq!(stats.lost, stats.sent - acks, "{ctx}");
    assert_eq!(stats.late_after_loss, late, "{ctx}");
    assert_eq!(stats.delivered, acks + stats.duplicated + late, "{ctx}");
    let copies: usize = deliveries.values().map(Vec::len).sum();
    assert_eq!(copies as u64, stats.delivered, "{ctx}");
    if profile.late_after_loss == 0.0 {
        assert_eq!(late, 0, "{ctx}");
    }
    if profile.duplicate == 0.0 {
        assert_eq!(stats.duplicated, 0, "{ctx}");
    }
    reports
        .into_iter()
        .map(|(id, (_, r))| (id, (deliveries.remove(&id).unwrap_or_default(), r)))
        .collect()
}

fn delivered_order(trace: &Trace) -> Vec<u32> {
    trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Delivered(id) => Some(*id),
            Event::Report(_) => None,
        })
        .collect()
}

#[test]
fn every_profile_keeps_its_guarantees() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..10 {
            let trace = run(&profile, seed, 1_000, None);
            check(&profile, seed, &trace);
        }
    }
}

#[test]
fn all_for_tests_has_a_long_outage() {
    let profiles = LinkProfile::all_for_tests();
    assert!(
        profiles
            .iter()
            .any(|p| p.outage.is_some_and(|(_, len)| len > 64))
    );
    assert!(profiles.iter().any(|p| p.late_after_loss > 0.0));
    assert!(profiles.iter().any(|p| p.duplicate > 0.0));
    assert!(profiles.iter().any(|p| p.burst.is_some()));
}

#[test]
fn lossy_loses_at_the_configured_rate() {
    let profile = LinkProfile::lossy(0.2);
    let trace = run(&profile, 7, 10_000, None);
    check(&profile, 7, &trace);
    let rate = trace.stats.lost as f64 / 10_000.0;
    assert!((0.18..=0.22).contains(&rate), "loss rate {rate}");
}

#[test]
fn perfect_delivers_everything_in_order_once() {
    let profile = LinkProfile::perfect();
    for seed in 0..5 {
        let trace = run(&profile, seed, 2_000, None);
        let reports = check(&profile, seed, &trace);
        let expected: Vec<u32> = (0..2_000).map(packet_id).collect();
        assert_eq!(delivered_order(&trace), expected);
        assert!(
            reports
                .values()
                .all(|(d, r)| d.len() == 1 && matches!(r, Report::Acked(_)))
        );
        assert_eq!(trace.stats.duplicated, 0);
        assert_eq!(trace.stats.lost, 0);
        assert_eq!(
            trace.stats.bytes_sent,
            (0..2_000u64).map(|i| 4 + i % 7).sum()
        );
    }
}

#[test]
fn reordering_reorders_without_loss() {
    let profile = LinkProfile::reordering();
    let trace = run(&profile, 3, 1_000, None);
    check(&profile, 3, &trace);
    let order = delivered_order(&trace);
    assert_eq!(order.len(), 1_000);
    let by_send = |id: &u32| trace.sent_at[id];
    let inversions = order
        .windows(2)
        .filter(|w| by_send(&w[0]) > by_send(&w[1]))
        .count();
    assert!(inversions > 100, "only {inversions} inversions");
    assert_eq!(trace.stats.lost, 0);
}

#[test]
fn duplicating_duplicates_later() {
    let profile = LinkProfile::duplicating();
    let trace = run(&profile, 11, 2_000, None);
    let reports = check(&profile, 11, &trace);
    let dups = reports.values().filter(|(d, _)| d.len() == 2).count();
    assert_eq!(dups as u64, trace.stats.duplicated);
    assert!((500..=700).contains(&dups), "{dups} duplicates of 2000");
    assert!(reports.values().all(|(d, _)| d.len() <= 2));
    // The second copy arrives strictly later than the first.
    assert!(
        reports
            .values()
            .all(|(d, _)| d.windows(2).all(|w| w[0] < w[1]))
    );
    assert_eq!(trace.stats.lost, 0);
}

#[test]
fn bursty_losses_come_in_bursts() {
    let profile = LinkProfile::bursty();
    let trace = run(&profile, 5, 10_000, None);
    let reports = check(&profile, 5, &trace);
    let lost: Vec<bool> = (0..10_000)
        .map(|i| matches!(reports[&packet_id(i)].1, Report::Lost(_)))
        .collect();
    let losses = lost.iter().filter(|&&l| l).count();
    let runs = lost.windows(2).filter(|w| w[1] && !w[0]).count() + usize::from(lost[0]);
    let mean_run = losses as f64 / runs as f64;
    // Independent loss at the same rate would give runs barely above 1.
    assert!(mean_run > 1.8, "mean loss run {mean_run}");
    assert!(losses > 500, "{losses} losses");
}

#[test]
fn chaos_delivers_some_packets_after_their_loss_report() {
    let profile = LinkProfile::chaos();
    let trace = run(&profile, 1, 5_000, None);
    let reports = check(&profile, 1, &trace);
    let late = reports
        .values()
        .filter(|(d, r)| !d.is_empty() && matches!(r, Report::Lost(_)))
        .count();
    assert!(late > 50, "{late} late deliveries");
    assert!(trace.stats.duplicated > 100);
}

#[test]
fn outage_loses_everything_in_its_window() {
    let profile = LinkProfile::outage(50, 100);
    for seed in 0..10 {
        let trace = run(&profile, seed, 400, None);
        let reports = check(&profile, seed, &trace);
        for (id, &sent) in &trace.sent_at {
            let (delivered, report) = &reports[id];
            if (50..150).contains(&sent) {
                assert_eq!(*report, Report::Lost(*id));
                assert!(delivered.is_empty(), "{id} sent at {sent} got through");
            }
        }
        let outside_lost = trace.stats.lost - 100;
        assert!(outside_lost < 30, "{outside_lost} lost outside the outage");
    }
}

#[test]
fn same_seed_same_trace_different_seed_different_trace() {
    for profile in LinkProfile::all_for_tests() {
        let a = run(&profile, 42, 500, None);
        let b = run(&profile, 42, 500, None);
        assert_eq!(a, b, "{}", profile.name);
        if profile != LinkProfile::perfect() {
            let c = run(&profile, 43, 500, None);
            assert_ne!(a.events, c.events, "{}", profile.name);
        }
    }
}

#[test]
fn nothing_is_lost_after_heal() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..10 {
            // Heal in the middle of the outage window for the outage profile.
            let trace = run(&profile, seed, 600, Some(60));
            let reports = check(&profile, seed, &trace);
            for (id, &sent) in &trace.sent_at {
                if sent >= 60 {
                    let (delivered, report) = &reports[id];
                    assert_eq!(*report, Report::Acked(*id), "{} seed {seed}", profile.name);
                    assert_eq!(delivered.len(), 1, "{} seed {seed}", profile.name);
                }
            }
        }
    }
}

#[test]
fn empty_payload_is_still_a_packet() {
    let mut link = Link::new(LinkProfile::perfect(), 0);
    link.send(0, 9, Vec::new());
    assert!(!link.idle());
    let mut got = Vec::new();
    let mut reports = Vec::new();
    for now in 0..10 {
        got.extend(link.deliver(now));
        reports.extend(link.reports(now));
    }
    assert_eq!(got, vec![Vec::<u8>::new()]);
    assert_eq!(reports, vec![Report::Acked(9)]);
    assert!(link.idle());
    assert_eq!(link.stats().bytes_sent, 0);
}

/// Acks wait for the delivery and late copies wait for their loss report,
/// even when the caller polls only one side or skips ticks.
#[test]
fn guarantees_hold_with_skipped_ticks_and_one_sided_polling() {
    let profile = LinkProfile::chaos();
    for seed in 0..20 {
        let mut link = Link::new(profile.clone(), seed);
        for i in 0..200 {
            link.send(i, i, i.to_le_bytes().to_vec());
        }
        // Reports first, far in the future: only losses can come out, since
        // nothing has been delivered.
        let early = link.reports(10_000);
        assert!(early.iter().all(|r| matches!(r, Report::Lost(_))));
        let lost: Vec<u32> = early.iter().map(|r| r.id()).collect();
        assert_eq!(lost.len() as u64, link.stats().lost);
        // Now everything is delivered at once, late copies included.
        let delivered = link.deliver(10_000);
        let acks = link.reports(10_000);
        assert!(link.idle());
        assert_eq!(early.len() + acks.len(), 200);
        for r in &acks {
            assert!(matches!(r, Report::Acked(_)));
            assert!(delivered.iter().any(|p| id_of(p) == r.id()));
        }
        let late = delivered
            .iter()
            .filter(|p| lost.contains(&id_of(p)))
            .count() as u64;
        assert_eq!(late, link.stats().late_after_loss);
    }
    // Delivering first instead: late copies stay held until the loss report.
    let mut link = Link::new(profile, 1);
    for i in 0..200 {
        link.send(i, i, i.to_le_bytes().to_vec());
    }
    let first = link.deliver(10_000);
    assert_eq!(
        first.len() as u64,
        link.stats().acked + link.stats().duplicated
    );
    assert!(!link.idle());
    link.reports(10_000);
    assert_eq!(
        link.deliver(10_000).len() as u64,
        link.stats().late_after_loss
    );
    assert!(link.idle());
}

/// One copy seen by [`run_with_extras`]: the order in which it was
/// handed out among all copies and reports, the tick, its fate, and whether
/// the channel said its loss report had been returned.
type Copy = (u64, u32, Fate, bool);

/// What [`run_with_extras`] saw of one packet.
#[derive(Debug, Default)]
struct Seen {
    sent: u32,
    copies: Vec<Copy>,
    /// Each report, with the order in which it was handed out.
    reports: Vec<(u64, Report)>,
}

/// Sends one packet per tick over a channel with `profile`'s extras for
/// `count` ticks, healing it at `heal_at`, then drains it. The caller
/// skips some ticks on one side (deliveries every fifth tick, reports
/// every seventh) and alternates which side it polls first, so that acks
/// and late copies fall due before what they wait for is handed out.
fn run_with_extras(
    profile: &WideProfile,
    seed: u64,
    count: u32,
    heal_at: u32,
) -> (BTreeMap<u32, Seen>, ChannelStats) {
    let mut channel: Channel<Vec<u8>> = profile.channel(seed);
    let mut seen: BTreeMap<u32, Seen> = BTreeMap::new();
    let mut order = 0;
    let mut now = 0;
    loop {
        if now == heal_at {
            channel.heal();
        }
        if now < count {
            seen.entry(now).or_default().sent = now;
            channel.send(now, now, now.to_le_bytes().to_vec());
        }
        let draining = now >= count;
        for side in [now % 2, 1 - now % 2] {
            if side == 0 && (draining || now % 5 != 1) {
                for arrival in channel.deliver(now) {
                    assert_eq!(id_of(&arrival.payload), arrival.packet);
                    assert_eq!(arrival.sent_at, arrival.packet);
                    order += 1;
                    let copy = (order, now, arrival.fate, arrival.reported_lost);
                    seen.get_mut(&arrival.packet).unwrap().copies.push(copy);
                }
            }
            if side == 1 && (draining || now % 7 != 3) {
                for report in channel.reports(now) {
                    order += 1;
                    let packet = seen.get_mut(&report.id()).unwrap();
                    packet.reports.push((order, report));
                }
            }
        }
        if draining && channel.idle() {
            break;
        }
        now += 1;
        assert!(now < count + 10_000, "the channel never drains");
    }
    assert_eq!(channel.next_due(), None);
    (seen, channel.stats())
}

/// The wide suite's extras on the same channel: acks still follow arrival,
/// late copies still wait for their loss report, whatever the caller skips;
/// a ghost arrives and is reported lost (half of them acknowledged too); a
/// held copy arrives 65-300 ticks after it was sent; every copy says truly
/// whether its loss report was out; nothing misbehaves after healing; and
/// the counters agree with what was seen.
#[test]
fn extras_keep_the_channel_consistent() {
    let mut total = ChannelStats::default();
    for profile in WideProfile::all() {
        for seed in 0..5 {
            let ctx = format!("{} seed {seed}", profile.link.name);
            let (seen, stats) = run_with_extras(&profile, seed, 2_000, 1_500);
            let mut counted = ChannelStats::default();
            for (id, packet) in &seen {
                let report = |lost: bool| {
                    let mut of_kind = packet.reports.iter();
                    of_kind
                        .find_map(|&(at, r)| (matches!(r, Report::Lost(_)) == lost).then_some(at))
                };
                let (lost_at, acked_at) = (report(true), report(false));
                let ghost = packet.copies.iter().any(|c| c.2 == Fate::Ghost);
                let reports = if ghost && acked_at.is_some() { 2 } else { 1 };
                assert_eq!(packet.reports.len(), reports, "{ctx}: reports of {id}");
                if let Some(acked) = acked_at {
                    let first = packet.copies.first().map(|c| c.0);
                    assert!(
                        first.is_some_and(|at| at < acked),
                        "{ctx}: ack of {id} before its arrival"
                    );
                }
                for &(at, tick, fate, reported_lost) in &packet.copies {
                    let lost_before = lost_at.is_some_and(|lost| lost < at);
                    assert_eq!(reported_lost, lost_before, "{ctx}: {id} at {tick}");
                    match fate {
                        Fate::LateAfterLoss => assert!(reported_lost, "{ctx}: {id} came early"),
                        Fate::Ghost => assert!(lost_at.is_some(), "{ctx}: ghost {id} not lost"),
                        Fate::Held => {
                            let held = tick - packet.sent;
                            assert!(
                                (HOLD.0..=HOLD.1 + 1).contains(&held),
                                "{ctx}: {id} held {held}"
                            );
                        }
                        Fate::First | Fate::Duplicate => {}
                    }
                    counted.link.delivered += 1;
                    counted.link.late_after_loss += u64::from(fate == Fate::LateAfterLoss);
                    counted.ghosts += u64::from(fate == Fate::Ghost);
                    counted.held += u64::from(fate == Fate::Held);
                }
                if packet.sent >= 1_500 {
                    assert_eq!(packet.copies.len(), 1, "{ctx}: {id} after healing");
                    assert_eq!(packet.copies[0].2, Fate::First, "{ctx}: {id} after healing");
                    assert_eq!(packet.reports.len(), 1, "{ctx}: {id} after healing");
                    assert_eq!(packet.reports[0].1, Report::Acked(*id), "{ctx}");
                }
                counted.link.acked += u64::from(acked_at.is_some());
                counted.link.lost += u64::from(lost_at.is_some());
            }
            assert_eq!(stats.link.sent, 2_000, "{ctx}");
            assert_eq!(stats.link.bytes_sent, 8_000, "{ctx}");
            assert_eq!(stats.link.delivered, counted.link.delivered, "{ctx}");
            assert_eq!(stats.link.acked, counted.link.acked, "{ctx}");
            assert_eq!(stats.link.lost, counted.link.lost, "{ctx}");
            let late = counted.link.late_after_loss;
            assert_eq!(stats.link.late_after_loss, late, "{ctx}");
            assert_eq!(stats.ghosts, counted.ghosts, "{ctx}");
            assert_eq!(stats.held, counted.held, "{ctx}");
            if profile.extra == Extra::NONE {
                assert_eq!((stats.ghosts, stats.held), (0, 0), "{ctx}");
            }
            total.ghosts += stats.ghosts;
            total.held += stats.held;
            total.link.late_after_loss += stats.link.late_after_loss;
            total.link.duplicated += stats.link.duplicated;
        }
    }
    // Every misbehaviour happened often enough for the checks to mean
    // something (measured: over 2 000 of each but late copies, near 600).
    assert!(total.ghosts > 1_000, "{total:?}");
    assert!(total.held > 1_000, "{total:?}");
    assert!(total.link.late_after_loss > 300, "{total:?}");
    assert!(total.link.duplicated > 1_000, "{total:?}");
}
