//! What an operator watches (issue 28): a connection's per-channel
//! counters ([`ChannelStats`]), its `tracing` spans and events (feature
//! `tracing`) and its `metrics` counters and gauges (feature `metrics`).
//! The crate's dev-dependency on itself turns both features on, so plain
//! `cargo test --workspace` runs every test here.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Held by every test here for its length: tracing caches per callsite
/// whether any subscriber wants it, globally, and a connection written on
/// another test's thread with no subscriber around can cache "no" while
/// a tracing test's scoped subscriber waits for its spans. One test at a
/// time, each tracing test rebuilding the cache under its subscriber
/// (`traced`), and the spans reach it whatever ran before.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

use fastarray_core::{ChannelStats, Connection, FastArray, MirrorConnection, Replicated};
use fastarray_derive::Replicate;

#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Unit {
    hp: u8,
    name: String,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
#[replicate(crate = "fastarray_core")]
struct Match {
    round: u16,
}

fn units(count: u8) -> FastArray<Unit> {
    let mut units = FastArray::new();
    for hp in 0..count {
        units.push(Unit {
            hp,
            name: format!("unit {hp}"),
        });
    }
    units.commit();
    units
}

/// The bits of a payload's sections, from the channels' counters: every
/// bit but the end bit and the padding.
fn section_bits(conn: &Connection) -> u64 {
    (0..conn.channels())
        .map(|c| conn.channel_stats(c).bits)
        .sum()
}

#[test]
fn channel_stats_count_sections_items_and_verdicts_per_channel() {
    let _serial = serial();
    let (mut units, mut game) = (units(50), Replicated::new(Match::default()));
    game.commit();
    let mut conn = Connection::with_delivery_reports(2);
    assert_eq!(conn.channel_stats(0), ChannelStats::default());

    // Packet 1: both channels, everything fits.
    let mut payload = Vec::new();
    let stats = conn
        .write_payload(1, 1_200, &mut [&mut units, &mut game], &mut payload)
        .unwrap();
    assert_eq!(stats.sections, 2);
    let bits = section_bits(&conn);
    // The sections, the end bit, then padding to the byte.
    assert_eq!((bits + 1).div_ceil(8), payload.len() as u64);
    assert_eq!(
        stats.totals.bits,
        bits - 2 - 4,
        "the tags: 1 + gamma(0), 1 + gamma(1)"
    );
    let (u, g) = (conn.channel_stats(0), conn.channel_stats(1));
    assert_eq!((u.sections, u.added, u.changed, u.deferred), (1, 50, 0, 0));
    assert_eq!((g.sections, g.added), (1, 1));
    assert_eq!((u.in_flight, u.client_items, u.in_scope), (1, 50, None));
    assert_eq!(u.bytes(), u.bits.div_ceil(8));
    conn.delivered(1).unwrap();

    // Packet 2: three units change, the match does not: only channel 0
    // carries it, and only channel 0 counts its loss.
    for id in units.ids().take(3).collect::<Vec<_>>() {
        units.get_mut(id).unwrap().hp += 1;
    }
    units.commit();
    game.commit();
    payload.clear();
    let stats = conn
        .write_payload(2, 1_200, &mut [&mut units, &mut game], &mut payload)
        .unwrap();
    assert_eq!(stats.sections, 1);
    conn.lost(2).unwrap();
    let (u, g) = (conn.channel_stats(0), conn.channel_stats(1));
    assert_eq!(
        (u.sections, u.changed, u.packets_acked, u.packets_lost),
        (2, 3, 1, 1)
    );
    assert_eq!((g.sections, g.packets_acked, g.packets_lost), (1, 1, 0));
    assert_eq!(u.pending, 3, "the lost changes are due again");

    // A reply that changes nothing counts nothing.
    let before = conn.channel_stats(1);
    assert!(!conn.delivered(2).unwrap());
    assert_eq!(conn.channel_stats(1), before);
}

#[test]
fn channel_stats_say_what_a_small_packet_deferred_and_the_header_path_counts_alike() {
    let _serial = serial();
    let mut units = units(200);
    let mut conn = Connection::new(1);
    let mut client = MirrorConnection::new(1);
    let mut mirror = FastArray::<Unit>::mirror();
    let now = Instant::now();
    let (mut packet, mut reply) = (Vec::new(), Vec::new());
    let mut bits = 0;
    let mut packets = 0;
    for _ in 0..40 {
        packet.clear();
        let stats = conn
            .write_packet(now, 300, &mut [&mut units], &mut packet)
            .unwrap();
        if packets == 0 {
            assert!(
                conn.channel_stats(0).deferred > 0,
                "200 units do not fit in 300 bytes"
            );
        }
        if stats.sections == 1 {
            bits += stats.totals.bits + 2; // the tag of channel 0
            packets += 1;
        }
        client.apply(now, &packet, &mut [&mut mirror]).unwrap();
        reply.clear();
        client.write_header(now, &mut reply).unwrap();
        conn.receive(now, &reply).unwrap();
    }
    assert_eq!(mirror, units);
    let stats = conn.channel_stats(0);
    assert_eq!((stats.bits, stats.sections), (bits, packets));
    assert_eq!((stats.added, stats.deferred, stats.pending), (200, 0, 0));
    assert_eq!(
        stats.packets_acked, packets,
        "every packet with a section acknowledged"
    );
    assert_eq!((stats.packets_lost, stats.in_flight), (0, 0));
}

#[cfg(feature = "tracing")]
mod tracing_events {
    use super::*;
    use std::sync::Arc;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    /// Runs `f` with `collect` as this thread's subscriber. A callsite
    /// first reached by another test's thread while no subscriber was
    /// registered anywhere is cached as uninteresting (tracing's interest
    /// cache is global): rebuilt here, with this one registered, the
    /// spans and events of `f` reach it whatever ran before.
    fn traced<R>(collect: &Collect, f: impl FnOnce() -> R) -> R {
        tracing::subscriber::with_default(collect.clone(), || {
            tracing::callsite::rebuild_interest_cache();
            f()
        })
    }

    /// A span or an event, with its fields as text.
    #[derive(Debug, Clone, PartialEq)]
    struct Seen {
        name: String,
        fields: Vec<(String, String)>,
    }

    impl Seen {
        fn field(&self, name: &str) -> Option<&str> {
            self.fields
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }
    }

    impl Visit for Seen {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.fields
                .push((field.name().to_owned(), format!("{value:?}")));
        }

        fn record_str(&mut self, field: &Field, value: &str) {
            self.fields
                .push((field.name().to_owned(), value.to_owned()));
        }
    }

    /// Keeps every span (by id) and event.
    #[derive(Clone, Default)]
    struct Collect {
        spans: Arc<Mutex<Vec<Seen>>>,
        events: Arc<Mutex<Vec<Seen>>>,
    }

    impl Subscriber for Collect {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }

        fn new_span(&self, span: &Attributes<'_>) -> Id {
            let mut seen = Seen {
                name: span.metadata().name().to_owned(),
                fields: Vec::new(),
            };
            span.record(&mut seen);
            let mut spans = self.spans.lock().unwrap();
            spans.push(seen);
            Id::from_u64(spans.len() as u64)
        }

        fn record(&self, span: &Id, values: &Record<'_>) {
            let mut spans = self.spans.lock().unwrap();
            values.record(&mut spans[span.into_u64() as usize - 1]);
        }

        fn record_follows_from(&self, _: &Id, _: &Id) {}

        fn event(&self, event: &Event<'_>) {
            let mut seen = Seen {
                name: event.metadata().name().to_owned(),
                fields: Vec::new(),
            };
            event.record(&mut seen);
            self.events.lock().unwrap().push(seen);
        }

        fn enter(&self, _: &Id) {}

        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn verdicts_are_events_with_their_packet_numbers_and_writes_are_spans() {
        let _serial = serial();
        let collect = Collect::default();
        let mut units = units(200);
        let mut conn = Connection::with_delivery_reports(1);
        let mut client = MirrorConnection::with_delivery_reports(1);
        let mut mirror = FastArray::<Unit>::mirror();
        let mut written = Vec::new();
        traced(&collect, || {
            let mut payload = Vec::new();
            for packet in [40u32, 41, 42] {
                payload.clear();
                let stats = conn
                    .write_payload(packet, 300, &mut [&mut units], &mut payload)
                    .unwrap();
                written.push((packet, stats.bytes));
                client.apply_payload(&payload, &mut [&mut mirror]).unwrap();
            }
            conn.delivered(40).unwrap();
            conn.lost(41).unwrap();
            conn.delivered(42).unwrap();
        });

        let events = collect.events.lock().unwrap();
        let verdicts: Vec<(&str, &str)> = events
            .iter()
            .filter_map(|e| Some((e.field("verdict")?, e.field("packet")?)))
            .collect();
        assert_eq!(verdicts, [("acked", "40"), ("lost", "41"), ("acked", "42")]);
        // Every write found more than fits: the units are deferred, not
        // oversized (a unit fits in any packet).
        assert!(
            events
                .iter()
                .all(|e| e.field("message") != Some("oversized"))
        );

        let spans = collect.spans.lock().unwrap();
        let writes: Vec<(String, String)> = spans
            .iter()
            .filter(|s| s.name == "write_payload")
            .map(|s| {
                (
                    s.field("packet").unwrap().to_owned(),
                    s.field("bytes").unwrap().to_owned(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = written
            .iter()
            .map(|(p, b)| (p.to_string(), b.to_string()))
            .collect();
        assert_eq!(writes, expected);
        let applies = spans.iter().filter(|s| s.name == "apply_payload").count();
        assert_eq!(applies, 3);
    }

    #[test]
    fn an_item_too_large_for_the_packet_is_an_event() {
        let _serial = serial();
        let collect = Collect::default();
        let mut units = FastArray::new();
        let id = units.push(Unit {
            hp: 1,
            name: "x".repeat(500),
        });
        units.commit();
        let mut conn = Connection::with_delivery_reports(1);
        traced(&collect, || {
            let mut payload = Vec::new();
            let stats = conn
                .write_payload(0, 100, &mut [&mut units], &mut payload)
                .unwrap();
            assert_eq!(stats.sections, 1, "sent alone");
        });
        let events = collect.events.lock().unwrap();
        let oversized: Vec<&Seen> = events
            .iter()
            .filter(|e| e.field("message") == Some("oversized"))
            .collect();
        assert!(!oversized.is_empty());
        assert_eq!(
            oversized[0].field("id"),
            Some(id.to_raw().to_string().as_str())
        );
        assert_eq!(oversized[0].field("channel"), Some("0"));
    }

    #[test]
    fn the_header_path_spans_carry_the_packet_numbers() {
        let _serial = serial();
        let collect = Collect::default();
        let mut units = units(20);
        let mut conn = Connection::new(1);
        let mut client = MirrorConnection::new(1);
        let mut mirror = FastArray::<Unit>::mirror();
        let now = Instant::now();
        let mut numbers = Vec::new();
        traced(&collect, || {
            let (mut packet, mut reply) = (Vec::new(), Vec::new());
            for tick in 0..3 {
                packet.clear();
                let later = now + Duration::from_millis(tick * 50);
                let stats = conn
                    .write_packet(later, 1_200, &mut [&mut units], &mut packet)
                    .unwrap();
                numbers.push(stats.packet.to_string());
                client.apply(later, &packet, &mut [&mut mirror]).unwrap();
                reply.clear();
                client.write_header(later, &mut reply).unwrap();
                conn.receive(later, &reply).unwrap();
            }
        });
        let spans = collect.spans.lock().unwrap();
        let of = |name: &str| -> Vec<String> {
            spans
                .iter()
                .filter(|s| s.name == name)
                .map(|s| s.field("packet").unwrap().to_owned())
                .collect()
        };
        assert_eq!(of("write_packet"), numbers);
        assert_eq!(of("apply"), numbers);
        assert_eq!(of("receive").len(), 3);
        let events = collect.events.lock().unwrap();
        let acked: Vec<&str> = events
            .iter()
            .filter(|e| e.field("verdict") == Some("acked"))
            .filter_map(|e| e.field("packet"))
            .collect();
        assert_eq!(
            acked,
            numbers.iter().map(String::as_str).collect::<Vec<_>>()
        );
    }
}

#[cfg(feature = "metrics")]
mod metrics_values {
    use super::*;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    /// A recorded value.
    #[derive(Debug, PartialEq)]
    enum Value {
        Counter(u64),
        Gauge(f64),
        Histogram,
    }

    /// The value of metric `name` with labels `labels`, if recorded.
    fn value(
        snapshot: &[(metrics_util::CompositeKey, DebugValue)],
        name: &str,
        labels: &[(&str, &str)],
    ) -> Option<Value> {
        snapshot.iter().find_map(|(key, value)| {
            let key = key.key();
            let mut theirs: Vec<(&str, &str)> =
                key.labels().map(|l| (l.key(), l.value())).collect();
            theirs.sort_unstable();
            let mut ours = labels.to_vec();
            ours.sort_unstable();
            (key.name() == name && theirs == ours).then(|| match value {
                DebugValue::Counter(value) => Value::Counter(*value),
                DebugValue::Gauge(value) => Value::Gauge(value.into_inner()),
                DebugValue::Histogram(_) => Value::Histogram,
            })
        })
    }

    #[test]
    fn counters_and_gauges_follow_the_channels() {
        let _serial = serial();
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let (mut stats0, mut bytes) = (ChannelStats::default(), 0);
        metrics::with_local_recorder(&recorder, || {
            let mut units = units(200);
            let mut conn = Connection::with_delivery_reports(1);
            let mut payload = Vec::new();
            for packet in 0..4u32 {
                payload.clear();
                let stats = conn
                    .write_payload(packet, 300, &mut [&mut units], &mut payload)
                    .unwrap();
                bytes += stats.bytes as u64;
                if packet == 2 {
                    conn.lost(packet).unwrap();
                } else {
                    conn.delivered(packet).unwrap();
                }
            }
            stats0 = conn.channel_stats(0);
            let snapshot: Vec<_> = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| (key, value))
                .collect();
            let counter = |name, labels| value(&snapshot, name, labels);
            assert_eq!(
                counter("fastarray_bytes_sent_total", &[("channel", "0")]),
                Some(Value::Counter(stats0.bits / 8))
            );
            assert_eq!(
                counter(
                    "fastarray_items_sent_total",
                    &[("channel", "0"), ("kind", "added")]
                ),
                Some(Value::Counter(stats0.added))
            );
            assert_eq!(
                counter("fastarray_packets_sent_total", &[]),
                Some(Value::Counter(4))
            );
            assert_eq!(
                counter("fastarray_packet_bytes_sent_total", &[]),
                Some(Value::Counter(bytes))
            );
            assert_eq!(
                counter("fastarray_packets_acked_total", &[]),
                Some(Value::Counter(3))
            );
            assert_eq!(
                counter("fastarray_packets_lost_total", &[]),
                Some(Value::Counter(1))
            );
            let gauge = |name| match counter(name, &[("channel", "0")]) {
                Some(Value::Gauge(value)) => value,
                other => panic!("{name}: {other:?}"),
            };
            assert_eq!(gauge("fastarray_deferred_items"), stats0.deferred as f64);
            assert!(stats0.deferred > 0);
            assert_eq!(
                gauge("fastarray_items_in_scope"),
                stats0.client_items as f64
            );
            drop(conn);
            // Gone, the connection no longer counts in the gauges (the
            // debugging recorder's snapshot drains: this is the move since
            // the last one).
            let snapshot: Vec<_> = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| (key, value))
                .collect();
            let gauge = |name| value(&snapshot, name, &[("channel", "0")]);
            assert_eq!(
                gauge("fastarray_deferred_items"),
                Some(Value::Gauge(-(stats0.deferred as f64)))
            );
        });
        assert_eq!(stats0.packets_lost, 1);
    }

    #[test]
    fn the_header_path_reports_the_round_trip_time() {
        let _serial = serial();
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let mut units = units(20);
            let mut conn = Connection::new(1);
            let mut client = MirrorConnection::new(1);
            let mut mirror = FastArray::<Unit>::mirror();
            let now = Instant::now();
            let (mut packet, mut reply) = (Vec::new(), Vec::new());
            conn.write_packet(now, 1_200, &mut [&mut units], &mut packet)
                .unwrap();
            let later = now + Duration::from_millis(80);
            client.apply(later, &packet, &mut [&mut mirror]).unwrap();
            client.write_header(later, &mut reply).unwrap();
            conn.receive(later, &reply).unwrap();
            let rtt = conn.stats().rtt.as_secs_f64();
            let snapshot: Vec<_> = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| (key, value))
                .collect();
            assert_eq!(
                value(&snapshot, "fastarray_rtt_seconds", &[]),
                Some(Value::Gauge(rtt))
            );
        });
    }
}

/// Which field costs what: names from the derive, bits measured exactly.
mod field_costs {
    use super::serial;
    use fastarray_core::{FastArray, FieldCosts, Replicate, SendState};
    use fastarray_derive::Replicate;

    #[derive(Replicate, Clone, Debug, PartialEq)]
    #[replicate(crate = "fastarray_core")]
    struct Body {
        #[replicate(quantize(min = -10.0, max = 10.0, bits = 12))]
        position: [f32; 3],
        moving: bool,
    }

    #[derive(Replicate, Clone, Debug, PartialEq)]
    #[replicate(crate = "fastarray_core")]
    struct Probe {
        #[replicate(bits = 5)]
        level: u8,
        ammo: u16,
        #[replicate(skip)]
        cache: u64,
        #[replicate(flatten)]
        body: Body,
        pet: Option<u8>,
    }

    #[derive(Replicate, Clone, Debug, PartialEq)]
    #[replicate(crate = "fastarray_core")]
    struct Pair(u8, #[replicate(skip)] u32, bool);

    #[derive(Replicate, Clone, Debug, PartialEq)]
    #[replicate(crate = "fastarray_core")]
    enum Mode {
        Idle,
        Busy { until: u32 },
    }

    fn path<T: Replicate>(index: u32) -> Option<String> {
        let mut path = Vec::new();
        T::field_path(index, &mut path).then(|| path.join("."))
    }

    #[test]
    fn the_derive_names_every_mask_bit_down_flattened_fields() {
        let _serial = serial();
        let names: Vec<_> = (0..6).map(path::<Probe>).collect();
        let expected = ["level", "ammo", "body.position", "body.moving", "pet"];
        let expected: Vec<_> = expected.iter().map(|n| Some(n.to_string())).collect();
        assert_eq!(names[..5], expected[..]);
        assert_eq!(names[5], None, "past the fields");
        assert_eq!(Probe::FIELD_COUNT, 5);
        // A tuple struct's fields by position, the skipped one left out.
        assert_eq!(path::<Pair>(0).as_deref(), Some("0"));
        assert_eq!(path::<Pair>(1).as_deref(), Some("2"));
        assert_eq!(path::<Pair>(2), None);
        // A type that names nothing (the derive names a struct's fields
        // only) leaves the path as it was.
        let mut kept = vec!["outer"];
        assert!(!Mode::field_path(0, &mut kept));
        assert_eq!(kept, ["outer"]);
    }

    fn probe(n: u16) -> Probe {
        Probe {
            level: 3,
            ammo: n,
            cache: 0,
            body: Body {
                position: [0.0; 3],
                moving: false,
            },
            pet: None,
        }
    }

    #[test]
    fn field_costs_count_each_changed_field_in_its_exact_bits() {
        let _serial = serial();
        let mut probes = FastArray::new();
        let ids: Vec<_> = (0..10).map(|n| probes.push(probe(n))).collect();
        probes.commit();
        let mut costs = FieldCosts::<Probe>::new();
        costs.record(&probes);
        assert_eq!(costs.added().0, 10);
        // A whole probe: 5 + 16 + 36 + 1 + 1 (no pet).
        assert_eq!(costs.added().1, 10 * 59);
        let mut conn = SendState::new();
        let mut bytes = Vec::new();
        probes.write_delta(&mut conn, 0, &mut bytes).unwrap();
        conn.on_ack(0);

        let mut costs = FieldCosts::<Probe>::new();
        let mut message_bits = 0;
        // Tick 1: four probes move (36 bits each); two get a pet (9 bits:
        // the `Some` bit and the byte); one changes ammo, and a cache no
        // one sees (not replicated: nothing).
        for id in &ids[..4] {
            probes.get_mut(*id).unwrap().body.position[0] = 1.0;
        }
        for id in &ids[4..6] {
            probes.get_mut(*id).unwrap().pet = Some(7);
        }
        {
            let mut probe = probes.get_mut(ids[9]).unwrap();
            probe.ammo = 500;
            probe.cache = 9;
        }
        for packet in 1..=2u32 {
            if packet == 2 {
                // Tick 2: one probe's level (5 bits) and moving flag (1 bit).
                let mut probe = probes.get_mut(ids[0]).unwrap();
                probe.level = 30;
                probe.body.moving = true;
            }
            probes.commit();
            costs.record(&probes);
            bytes.clear();
            let stats = probes.write_delta(&mut conn, packet, &mut bytes).unwrap();
            conn.on_ack(packet);
            costs.record_message(&stats);
            message_bits += stats.bits;
        }

        let got: Vec<(&str, u64, u64)> = costs
            .fields()
            .iter()
            .map(|f| (f.name.as_str(), f.changes, f.bits))
            .collect();
        assert_eq!(
            got,
            [
                ("level", 1, 5),
                ("ammo", 1, 16),
                ("body.position", 4, 4 * 36),
                ("body.moving", 1, 1),
                ("pet", 2, 2 * 9),
            ]
        );
        assert_eq!(costs.field_bits(), 5 + 16 + 144 + 1 + 18);
        assert_eq!(costs.added(), (0, 0));
        assert_eq!(costs.messages(), (2, message_bits));

        let table = costs.to_string();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("field"));
        assert!(
            lines[1].starts_with("body.position"),
            "most expensive first:\n{table}"
        );
        assert!(lines[1].contains(" 144 "), "{table}");
        assert!(table.contains("(ids, keys, masks, frames)"));
        assert!(lines.last().unwrap().starts_with("total"));
    }
}
