//! `Connection` and `MirrorConnection`: one connection carrying several
//! arrays and objects in MTU-sized packets, acknowledged by the `Acks`
//! header alone (the links here report nothing: each side learns a packet's
//! fate from the other side's headers, as over UDP).
//!
//! The lossy sessions run every profile of the test kit (loss, bursts,
//! reordering, duplication, an outage longer than the history) with
//! several seeds: a scoped array whose scope flips, an unscoped array, and
//! an object with an array inside; clients joining late. After the links
//! heal, every mirror must equal the server's items in its scope.
//! `FASTARRAY_SEEDS=N` runs N seeds per profile (3 by default).
//!
//! The same sessions run on the transport's delivery reports
//! (`reports.rs`): the link numbers the payloads and reports each one.

use std::time::{Duration, Instant};

use fastarray::{
    AckConfig, AckError, AckEvent, Callbacks, Connection, ConnectionError, DecodeError, Delivery,
    FastArray, MAX_PACKET, MAX_VERDICTS, MirrorConnection, Replicate, Replicated, ReplicationId,
    SendError, WithCallbacks,
};
use fastarray_testkit::channel::{Channel, Extra};
use fastarray_testkit::link::{LinkProfile, Report};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[path = "connection/reports.rs"]
mod reports;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    x: i32,
    y: i32,
    hp: u8,
    name: String,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Flag {
    team: u8,
    held: bool,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Match {
    round: u32,
    score: [u16; 2],
    #[replicate(array)]
    flags: FastArray<Flag>,
}

const TICK: Duration = Duration::from_millis(16);

/// The sessions' acknowledgement settings: a loss timeout of at most 400
/// ms (25 ticks), so that a packet the links lose is declared lost by the
/// headers well before a send state's own 64-frame limit, even over the
/// slowest profile.
fn acks() -> AckConfig {
    AckConfig {
        max_timeout: Duration::from_millis(400),
        ..AckConfig::default()
    }
}
const MTU: usize = 600;

fn unit(rng: &mut ChaCha8Rng, n: u32) -> Unit {
    Unit {
        x: rng.random_range(-1000..1000),
        y: rng.random_range(-1000..1000),
        hp: 100,
        name: format!("unit {n} {}", "x".repeat(rng.random_range(0..20))),
    }
}

/// The server's world: channel 0 the scoped units, channel 1 the
/// unscoped units, channel 2 the match.
struct World {
    scoped: FastArray<Unit>,
    plain: FastArray<Unit>,
    game: Replicated<Match>,
    rng: ChaCha8Rng,
    serial: u32,
}

impl World {
    fn new(seed: u64, units: u32) -> Self {
        let mut world = World {
            scoped: FastArray::new(),
            plain: FastArray::new(),
            game: Replicated::new(Match::default()),
            rng: ChaCha8Rng::seed_from_u64(seed),
            serial: 0,
        };
        for _ in 0..units {
            world.spawn();
        }
        for team in 0..3 {
            world.game.get_mut().flags.push(Flag { team, held: false });
        }
        world.commit();
        world
    }

    fn spawn(&mut self) {
        self.serial += 1;
        let (a, b) = (
            unit(&mut self.rng, self.serial),
            unit(&mut self.rng, self.serial),
        );
        self.scoped.push(a);
        self.plain.push(b);
    }

    /// One tick of changes in all three channels.
    fn mutate(&mut self) {
        for array in [&mut self.scoped, &mut self.plain] {
            let ids: Vec<ReplicationId> = array.ids().collect();
            for id in ids {
                match self.rng.random_range(0..100) {
                    0..10 => {
                        let mut unit = array.get_mut(id).unwrap();
                        unit.x += 1;
                        unit.y -= 1;
                    }
                    10..12 => array.get_mut(id).unwrap().hp = self.rng.random(),
                    12 => {
                        array.remove(id);
                    }
                    _ => {}
                }
            }
        }
        for _ in 0..self.rng.random_range(0..3) {
            self.spawn();
        }
        let mut game = self.game.get_mut();
        game.round += 1;
        if self.rng.random_bool(0.2) {
            let team = self.rng.random_range(0..3);
            game.flags.push(Flag { team, held: false });
        }
        let flags: Vec<ReplicationId> = game.flags.ids().collect();
        for id in flags {
            if self.rng.random_bool(0.1) {
                let mut flag = game.flags.get_mut(id).unwrap();
                flag.held = !flag.held;
            } else if self.rng.random_bool(0.02) {
                game.flags.remove(id);
            }
        }
        self.commit();
    }

    fn commit(&mut self) {
        self.scoped.commit();
        self.plain.commit();
        self.game.commit();
    }
}

/// One client: the server's connection to it, its own, its mirrors, and
/// the link both ways.
struct Client {
    conn: Connection,
    mirror: MirrorConnection,
    scoped: FastArray<Unit>,
    plain: FastArray<Unit>,
    game: Replicated<Match>,
    down: Channel<Vec<u8>>,
    up: Channel<Vec<u8>>,
    joins: u32,
    /// Whether channel 0 has a scope.
    has_scope: bool,
    packets: u32,
    largest: usize,
    /// The sizes of the packets written on the client's first tick.
    join: Vec<usize>,
}

impl Client {
    fn new(profile: &LinkProfile, seed: u64, joins: u32, delivery: Delivery) -> Self {
        let (conn, mirror) = match delivery {
            Delivery::Header => (
                Connection::with_config(3, acks()),
                MirrorConnection::with_config(3, acks()),
            ),
            Delivery::Reports => (
                Connection::with_delivery_reports(3),
                MirrorConnection::with_delivery_reports(3),
            ),
        };
        Client {
            conn,
            mirror,
            scoped: FastArray::mirror(),
            plain: FastArray::mirror(),
            game: Replicated::mirror(),
            down: Channel::new(profile.clone(), Extra::NONE, seed),
            up: Channel::new(profile.clone(), Extra::NONE, seed ^ 0x9e37_79b9),
            joins,
            has_scope: false,
            // The transport's numbers wrap during the session.
            packets: match delivery {
                Delivery::Header => 0,
                Delivery::Reports => u32::MAX - 100,
            },
            largest: 0,
            join: Vec::new(),
        }
    }

    /// Whether the client holds everything: every packet that carried a
    /// change acknowledged (the links are never idle: both sides send a
    /// packet every tick, if only for its header).
    fn settled(&self, world: &World) -> bool {
        world.scoped.is_settled(self.conn.state(0))
            && world.plain.is_settled(self.conn.state(1))
            && world.game.is_settled(self.conn.state(2))
    }

    /// Whether every mirror equals the server: the scoped one its scope
    /// (all of its array if it never had one).
    fn matches(&mut self, world: &mut World) -> bool {
        let scope: Vec<ReplicationId> = if self.has_scope {
            world
                .scoped
                .scope(self.conn.state_mut(0))
                .unwrap()
                .ids()
                .collect()
        } else {
            world.scoped.ids().collect()
        };
        scope.len() == self.scoped.len()
            && scope
                .iter()
                .all(|&id| world.scoped.get(id) == self.scoped.get(id))
            && self.plain == world.plain
            && self.game.get() == world.game.get()
    }

    /// One tick of the connection at `tick`: the server's packets (as many
    /// as the work needs, up to 3), what arrives each way.
    fn exchange(&mut self, world: &mut World, tick: u32, t0: Instant) {
        if self.conn.delivery() == Delivery::Reports {
            return self.exchange_reports(world, tick);
        }
        let now = t0 + TICK * tick;
        for _ in 0..3 {
            let mut packet = Vec::new();
            let stats = self
                .conn
                .write_packet(
                    now,
                    MTU,
                    &mut [&mut world.scoped, &mut world.plain, &mut world.game],
                    &mut packet,
                )
                .unwrap();
            assert_eq!(stats.bytes, packet.len());
            self.largest = self.largest.max(packet.len());
            if tick == self.joins {
                self.join.push(packet.len());
            }
            self.down.send(tick, self.packets, packet);
            self.packets += 1;
            if stats.totals.deferred == 0 {
                break;
            }
        }
        for arrival in self.down.deliver(tick) {
            let result = self.mirror.apply(
                now,
                &arrival.payload,
                &mut [&mut self.scoped, &mut self.plain, &mut self.game],
            );
            match result {
                Ok(_)
                | Err(ConnectionError::Ack(AckError::Duplicate { .. } | AckError::TooOld { .. })) =>
                    {}
                Err(error) => panic!("tick {tick}: a client refused a packet: {error}"),
            }
        }
        let mut reply = Vec::new();
        let number = self.mirror.write_header(now, &mut reply).unwrap();
        reply.extend_from_slice(b"input");
        self.up.send(tick, number, reply);
        // The links' own reports are not used: each side learns its
        // packets' fate from the other's headers.
        self.down.reports(tick);
        self.up.reports(tick);
        for arrival in self.up.deliver(tick) {
            match self.conn.receive(now, &arrival.payload) {
                Ok((_, payload)) => assert_eq!(payload, b"input"),
                Err(ConnectionError::Ack(AckError::Duplicate { .. } | AckError::TooOld { .. })) => {
                }
                Err(error) => panic!("tick {tick}: the server refused a packet: {error}"),
            }
        }
    }
}

/// Runs a session: `ticks` live ticks over `profile`, three clients (one
/// joining at tick 40, one at 90), the scope of channel 0 flipping; then
/// the links heal and every client must settle within `drain` ticks and
/// match.
fn session(profile: &LinkProfile, seed: u64, ticks: u32, drain: u32, delivery: Delivery) {
    let t0 = Instant::now();
    let mut world = World::new(seed, 120);
    let mut clients: Vec<Client> = [0, 40, 90]
        .into_iter()
        .enumerate()
        .map(|(n, joins)| Client::new(profile, seed * 10 + n as u64, joins, delivery))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5c09e);
    for tick in 0..ticks + drain {
        let live = tick < ticks;
        if tick == ticks {
            for client in &mut clients {
                client.down.heal();
                client.up.heal();
            }
        }
        if live {
            world.mutate();
        } else {
            // A game commits every tick, changed or not: an item that
            // comes back into a scope goes in a frame after its exit.
            world.commit();
        }
        for client in clients.iter_mut().filter(|c| c.joins <= tick) {
            if live {
                // Scope flips: a third of the units, redrawn every tick
                // for a few, including ids just destroyed.
                let ids: Vec<ReplicationId> = world.scoped.ids().collect();
                client.has_scope = true;
                let mut scope = world.scoped.scope(client.conn.state_mut(0)).unwrap();
                for id in ids {
                    if rng.random_bool(0.05) {
                        if rng.random_bool(0.33) {
                            scope.include(id);
                        } else {
                            scope.exclude(id);
                        }
                    }
                }
            }
            client.exchange(&mut world, tick, t0);
        }
        if !live && clients.iter().all(|c| c.settled(&world)) {
            for (n, client) in clients.iter_mut().enumerate() {
                assert!(
                    client.matches(&mut world),
                    "{} seed {seed}: client {n} differs after settling",
                    profile.name
                );
                assert!(
                    client.largest <= MTU,
                    "a packet of {} bytes",
                    client.largest
                );
                // The world a client joins does not fit in one packet: it
                // comes in several, none over the MTU.
                assert!(
                    client.join.len() > 1 && client.join.iter().all(|&bytes| bytes <= MTU),
                    "{} seed {seed}: client {n} joined with packets of {:?} bytes",
                    profile.name,
                    client.join
                );
            }
            return;
        }
    }
    let states: Vec<String> = clients
        .iter()
        .map(|c| {
            format!(
                "settled {} {} {}, in flight {:?}, pending {:?}, acks in flight {}",
                world.scoped.is_settled(c.conn.state(0)),
                world.plain.is_settled(c.conn.state(1)),
                world.game.is_settled(c.conn.state(2)),
                (0..3)
                    .map(|n| c.conn.state(n).packets_in_flight())
                    .collect::<Vec<_>>(),
                (0..3)
                    .map(|n| c.conn.state(n).pending_items())
                    .collect::<Vec<_>>(),
                c.conn.acks().in_flight() + c.conn.awaiting_reports(),
            )
        })
        .collect();
    panic!(
        "{} seed {seed}: the clients did not settle within {drain} ticks of healing: {states:#?}",
        profile.name
    );
}

fn seeds() -> u64 {
    fastarray_testkit::drive::seeds_or(3)
}

#[test]
fn every_mirror_converges_over_every_link_profile() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 1..=seeds() {
            // Generous: where the links reorder by several ticks (chaos),
            // packets overtaken by three later ones are declared lost and
            // sent again even after healing, until one copy's
            // acknowledgement wins the race.
            session(&profile, seed, 160, 1_000, Delivery::Header);
        }
    }
}

/// Over links that lose packets without reordering much, every loss is
/// repaired from the headers' verdicts: the clients settle well inside the
/// 64 frames after which a send state gives up on a packet by itself (the
/// loss timeout is at most 25 ticks here). Without the verdicts they would
/// not.
#[test]
fn lost_packets_are_repaired_from_the_headers_verdicts() {
    let profiles = LinkProfile::all_for_tests()
        .into_iter()
        .filter(|profile| profile.name.starts_with("lossy") || profile.name == "bursty");
    for profile in profiles {
        for seed in 1..=seeds() {
            session(&profile, seed, 160, 50, Delivery::Header);
        }
    }
}

#[test]
fn a_perfect_link_loses_nothing_and_fills_packets_up_to_the_mtu() {
    let t0 = Instant::now();
    let mut world = World::new(7, 400);
    let mut client = Client::new(&LinkProfile::perfect(), 7, 0, Delivery::Header);
    // The join: 400 units twice, far more than one packet holds.
    for tick in 0..60 {
        client.exchange(&mut world, tick, t0);
    }
    assert!(client.settled(&world));
    assert!(client.matches(&mut world));
    let stats = client.conn.stats();
    assert_eq!(stats.packets_lost, 0);
    assert!(stats.packets_acked > 10);
    assert!(client.largest <= MTU && client.largest > MTU * 9 / 10);
}

/// Both channels have more than a packet's worth each tick: neither
/// starves, whichever writes first.
#[test]
fn channels_take_turns_when_packets_are_full() {
    let now = Instant::now();
    let mut a = FastArray::new();
    let mut b = FastArray::new();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for n in 0..300 {
        a.push(unit(&mut rng, n));
        b.push(unit(&mut rng, n));
    }
    a.commit();
    b.commit();
    let mut conn = Connection::new(2);
    let (mut mirror_a, mut mirror_b) = (FastArray::<Unit>::mirror(), FastArray::<Unit>::mirror());
    let mut client = MirrorConnection::new(2);
    let mut seen = Vec::new();
    for _ in 0..6 {
        let mut packet = Vec::new();
        let stats = conn
            .write_packet(now, MTU, &mut [&mut a, &mut b], &mut packet)
            .unwrap();
        let report = client
            .apply(now, &packet, &mut [&mut mirror_a, &mut mirror_b])
            .unwrap();
        assert_eq!(report.packet, stats.packet);
        seen.push(report.sections[0].0);
    }
    assert_eq!(
        seen,
        [0, 1, 0, 1, 0, 1],
        "the channel written first alternates"
    );
    assert!(mirror_a.len() > 20 && mirror_b.len() > 20);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Blob {
    bytes: Vec<u8>,
}

#[test]
fn an_item_larger_than_the_mtu_goes_alone_in_a_larger_packet() {
    let now = Instant::now();
    let mut blobs = FastArray::new();
    blobs.push(Blob { bytes: vec![1; 50] });
    let big = blobs.push(Blob {
        bytes: vec![7; 5_000],
    });
    blobs.commit();
    let mut conn = Connection::new(1);
    let mut client = MirrorConnection::new(1);
    let mut mirror = FastArray::<Blob>::mirror();
    let mut sizes = Vec::new();
    for _ in 0..3 {
        let mut packet = Vec::new();
        conn.write_packet(now, MTU, &mut [&mut blobs], &mut packet)
            .unwrap();
        sizes.push(packet.len());
        client.apply(now, &packet, &mut [&mut mirror]).unwrap();
    }
    assert!(sizes[0] <= MTU, "the small item goes first, within the MTU");
    assert!(
        sizes[1] > 5_000 && sizes[1] <= MAX_PACKET,
        "then the large one alone"
    );
    assert_eq!(mirror.get(big), blobs.get(big));
    assert_eq!(mirror, blobs);
}

#[test]
fn bad_calls_are_refused_and_write_nothing() {
    let now = Instant::now();
    let mut world = World::new(1, 10);
    let mut conn = Connection::new(3);
    let mut out = vec![0xaa];
    let error = conn
        .write_packet(
            now,
            MTU,
            &mut [&mut world.scoped, &mut world.plain],
            &mut out,
        )
        .unwrap_err();
    assert_eq!(
        error,
        ConnectionError::ChannelCount {
            expected: 3,
            given: 2
        }
    );
    assert_eq!(out, [0xaa]);
    conn.write_packet(
        now,
        MTU,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut out,
    )
    .unwrap();
    // The channels' order is fixed once they wrote.
    out.truncate(1);
    let error = conn
        .write_packet(
            now,
            MTU,
            &mut [&mut world.plain, &mut world.scoped, &mut world.game],
            &mut out,
        )
        .unwrap_err();
    assert_eq!(error, ConnectionError::WrongSource { channel: 0 });
    world.plain.push(unit(&mut ChaCha8Rng::seed_from_u64(1), 0));
    let error = conn
        .write_packet(
            now,
            MTU,
            &mut [&mut world.scoped, &mut world.plain, &mut world.game],
            &mut out,
        )
        .unwrap_err();
    assert_eq!(
        error,
        ConnectionError::Send {
            channel: 1,
            error: SendError::Uncommitted
        }
    );
    assert_eq!(out, [0xaa]);
}

/// A server packet and the mirrors before it, for the corruption tests.
fn one_packet() -> (Vec<u8>, World) {
    let mut world = World::new(5, 12);
    let mut conn = Connection::new(3);
    let mut packet = Vec::new();
    conn.write_packet(
        Instant::now(),
        1_400,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut packet,
    )
    .unwrap();
    (packet, world)
}

/// Applies `packet` to fresh mirrors: the result, and whether any mirror
/// changed.
fn apply_fresh(packet: &[u8]) -> (Result<usize, ConnectionError>, bool) {
    let mut client = MirrorConnection::new(3);
    let (mut scoped, mut plain, mut game) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let result = client.apply(
        Instant::now(),
        packet,
        &mut [&mut scoped, &mut plain, &mut game],
    );
    let changed = !scoped.is_empty() || !plain.is_empty() || game.get() != &Match::default();
    (result.map(|report| report.sections.len()), changed)
}

#[test]
fn a_broken_packet_changes_no_mirror() {
    let (packet, _world) = one_packet();
    assert_eq!(apply_fresh(&packet), (Ok(3), true));
    // Every truncation is refused (the end of the sections is in the last
    // byte), and changes nothing.
    for len in 0..packet.len() {
        let (result, changed) = apply_fresh(&packet[..len]);
        assert!(result.is_err(), "a truncation to {len} bytes was applied");
        assert!(!changed, "a truncation to {len} bytes changed a mirror");
    }
    // Every flip of a bit past the header: refused without a change, or
    // applied whole.
    let mut refused = 0;
    for bit in 64..packet.len() * 8 {
        let mut flipped = packet.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let (result, changed) = apply_fresh(&flipped);
        if result.is_err() {
            refused += 1;
            assert!(!changed, "flipping bit {bit} changed a mirror");
        }
    }
    assert!(refused > 0, "no flip was refused");
    // A section for a channel the client does not have.
    let mut client = MirrorConnection::new(2);
    let (mut a, mut b) = (FastArray::<Unit>::mirror(), FastArray::<Unit>::mirror());
    let error = client
        .apply(Instant::now(), &packet, &mut [&mut a, &mut b])
        .unwrap_err();
    assert_eq!(
        error,
        ConnectionError::UnknownChannel {
            channel: 2,
            channels: 2
        }
    );
    assert!(a.is_empty() && b.is_empty());
}

#[test]
fn a_packet_that_fails_is_not_acknowledged_and_its_work_comes_again() {
    let now = Instant::now();
    let mut world = World::new(9, 30);
    let mut conn = Connection::new(3);
    let mut client = MirrorConnection::new(3);
    let (mut scoped, mut plain, mut game) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let mut first = Vec::new();
    conn.write_packet(
        now,
        1_400,
        &mut [&mut world.scoped, &mut world.plain, &mut world.game],
        &mut first,
    )
    .unwrap();
    // The body is damaged on the way: the client refuses it.
    let mut broken = first.clone();
    broken.truncate(broken.len() / 2);
    assert!(
        client
            .apply(now, &broken, &mut [&mut scoped, &mut plain, &mut game])
            .is_err()
    );
    // Its answers never acknowledge it; the server's timeout declares it
    // lost and the work comes again.
    let mut later = now;
    for _ in 0..40 {
        later += TICK * 4;
        let mut reply = Vec::new();
        client.write_header(later, &mut reply).unwrap();
        conn.receive(later, &reply).unwrap();
        let mut packet = Vec::new();
        conn.write_packet(
            later,
            1_400,
            &mut [&mut world.scoped, &mut world.plain, &mut world.game],
            &mut packet,
        )
        .unwrap();
        client
            .apply(later, &packet, &mut [&mut scoped, &mut plain, &mut game])
            .unwrap();
    }
    assert_eq!(conn.stats().packets_lost, 1);
    assert_eq!(scoped, world.scoped);
    assert_eq!(plain, world.plain);
    assert_eq!(game.get(), world.game.get());
}

/// An operator sees every packet's fate: `poll_verdict` gives each packet
/// number `write_packet` wrote exactly one verdict, the same the channels
/// heard (lost: the packets the network dropped).
#[test]
fn every_packet_gets_one_verdict_to_poll() {
    let t0 = Instant::now();
    let mut world = World::new(4, 30);
    let mut conn = Connection::new(3);
    let mut client = MirrorConnection::new(3);
    let (mut scoped, mut plain, mut game) = (
        FastArray::<Unit>::mirror(),
        FastArray::<Unit>::mirror(),
        Replicated::<Match>::mirror(),
    );
    let (mut written, mut dropped) = (Vec::new(), Vec::new());
    let mut verdicts = Vec::new();
    for tick in 0..60u32 {
        let now = t0 + TICK * tick;
        world.mutate();
        let mut packet = Vec::new();
        let stats = conn
            .write_packet(
                now,
                MTU,
                &mut [&mut world.scoped, &mut world.plain, &mut world.game],
                &mut packet,
            )
            .unwrap();
        written.push(stats.packet);
        if tick % 5 == 2 {
            dropped.push(stats.packet); // the network loses it
        } else {
            client
                .apply(now, &packet, &mut [&mut scoped, &mut plain, &mut game])
                .unwrap();
        }
        let mut reply = Vec::new();
        client.write_header(now, &mut reply).unwrap();
        conn.receive(now, &reply).unwrap();
        verdicts.extend(std::iter::from_fn(|| conn.poll_verdict()));
    }
    // Long after: whatever was in flight is acknowledged or timed out.
    let late = t0 + Duration::from_secs(5);
    let mut reply = Vec::new();
    client.write_header(late, &mut reply).unwrap();
    conn.receive(late, &reply).unwrap();
    conn.update(late + Duration::from_secs(5));
    verdicts.extend(std::iter::from_fn(|| conn.poll_verdict()));

    let mut named: Vec<u32> = verdicts
        .iter()
        .map(|verdict| match *verdict {
            AckEvent::Acked(packet) | AckEvent::Lost(packet) => packet,
        })
        .collect();
    named.sort_unstable();
    assert_eq!(named, written, "one verdict per packet");
    let lost: Vec<u32> = verdicts
        .iter()
        .filter_map(|verdict| match *verdict {
            AckEvent::Lost(packet) => Some(packet),
            AckEvent::Acked(_) => None,
        })
        .collect();
    assert_eq!(lost, dropped);
    assert_eq!(conn.stats().packets_lost, dropped.len() as u64);
    assert_eq!(conn.verdicts_dropped(), 0);
}

/// Verdicts nobody polls are bounded: past `MAX_VERDICTS`, the oldest go,
/// counted.
#[test]
fn unpolled_verdicts_are_bounded() {
    let t0 = Instant::now();
    let mut units = FastArray::new();
    units.push(unit(&mut ChaCha8Rng::seed_from_u64(1), 0));
    units.commit();
    let mut conn = Connection::new(1);
    let mut client = MirrorConnection::new(1);
    let mut mirror = FastArray::<Unit>::mirror();
    let packets = MAX_VERDICTS as u32 + 100;
    for tick in 0..packets {
        let now = t0 + TICK * tick;
        let mut packet = Vec::new();
        conn.write_packet(now, MTU, &mut [&mut units], &mut packet)
            .unwrap();
        client.apply(now, &packet, &mut [&mut mirror]).unwrap();
        let mut reply = Vec::new();
        client.write_header(now, &mut reply).unwrap();
        conn.receive(now, &reply).unwrap();
    }
    let kept: Vec<AckEvent> = std::iter::from_fn(|| conn.poll_verdict()).collect();
    assert_eq!(kept.len(), MAX_VERDICTS);
    assert_eq!(conn.verdicts_dropped(), 100);
    assert_eq!(kept[0], AckEvent::Acked(100));
    assert_eq!(kept[MAX_VERDICTS - 1], AckEvent::Acked(packets - 1));
}

#[derive(Default)]
struct Heard {
    added: Vec<ReplicationId>,
}

impl Callbacks<Unit> for Heard {
    fn post_add(&mut self, id: ReplicationId, _: &Unit) {
        self.added.push(id);
    }
}

#[test]
fn callbacks_hear_what_a_packet_applies() {
    let now = Instant::now();
    let mut units = FastArray::new();
    let ids: Vec<ReplicationId> = (0..5)
        .map(|n| units.push(unit(&mut ChaCha8Rng::seed_from_u64(n), n as u32)))
        .collect();
    units.commit();
    let mut conn = Connection::new(1);
    let mut client = MirrorConnection::new(1);
    let mut mirror = FastArray::<Unit>::mirror();
    let mut heard = Heard::default();
    let mut packet = Vec::new();
    conn.write_packet(now, MTU, &mut [&mut units], &mut packet)
        .unwrap();
    client
        .apply(
            now,
            &packet,
            &mut [&mut WithCallbacks::new(&mut mirror, &mut heard)],
        )
        .unwrap();
    heard.added.sort();
    assert_eq!(heard.added, ids);
}

#[test]
fn a_section_naming_an_unknown_or_repeated_channel_is_refused() {
    let (packet, _) = one_packet();
    // Rewrite the first section's tag (right after the header): `1` and
    // gamma(0) = `1`; make it gamma(3) = `0 0 1 0 0` (unknown channel 3).
    let mut unknown = packet[..8].to_vec();
    let mut bits = Vec::new();
    for byte in &packet[8..] {
        for bit in 0..8 {
            bits.push(byte >> bit & 1);
        }
    }
    let mut rewritten = vec![1, 0, 0, 1, 0, 0];
    rewritten.extend_from_slice(&bits[2..]);
    for chunk in rewritten.chunks(8) {
        unknown.push(chunk.iter().enumerate().fold(0, |acc, (i, b)| acc | b << i));
    }
    let (result, changed) = apply_fresh(&unknown);
    assert!(!changed);
    assert!(
        matches!(
            result,
            Err(ConnectionError::UnknownChannel {
                channel: 3,
                channels: 3
            })
        ),
        "{result:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic_and_change_nothing_when_refused(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let (result, changed) = apply_fresh(&bytes);
        if result.is_err() {
            prop_assert!(!changed);
        }
    }

    #[test]
    fn random_bodies_behind_a_valid_header_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let (packet, _) = one_packet();
        let mut bytes = packet[..8].to_vec();
        bytes.extend_from_slice(&body);
        let (result, changed) = apply_fresh(&bytes);
        if let Err(error) = &result {
            prop_assert!(!changed);
            prop_assert!(!matches!(error, ConnectionError::Ack(_)), "{error}");
        }
    }
}

#[test]
fn decode_errors_name_their_channel() {
    let (packet, _) = one_packet();
    // Cut inside the last section: the error names a channel.
    let (result, _) = apply_fresh(&packet[..packet.len() - 4]);
    match result {
        Err(ConnectionError::Decode { channel, error }) => {
            assert!(channel < 3, "{error}");
            assert!(
                matches!(
                    error,
                    DecodeError::UnexpectedEnd { .. } | DecodeError::LengthTooLarge { .. }
                ),
                "{error}"
            );
        }
        other => panic!("{other:?}"),
    }
}
