//! The other ways of writing a tick's connections against `write_delta`
//! one connection after the other: the same bytes, the same stats and the
//! same records, tick after tick, for connections of every kind at once
//! (caught up and sharing the frame's message, joining late, scoped,
//! owning items, under budgets, losing packets).
//!
//! - `FastArray::write_deltas`: the test binary has the `parallel` feature
//!   (the workspace's dev-dependencies turn it on), so the connections
//!   with messages of their own are written on several threads.
//! - `FastArray::write_delta_bytes`: the frame's shared message handed to
//!   every caught-up connection as one allocation.
//! - `FastArray::write_delta_slice`: the frame's shared message lent to
//!   every caught-up connection, the others' messages in one buffer.

use fastarray::{
    DeltaBytes, DeltaWrite, FastArray, Replicate, ReplicationId, SendError, SendState,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Soldier {
    x: i32,
    hp: u8,
    #[replicate(owner_only)]
    ammo: u16,
    name: String,
}

/// Connections of each kind.
const CONNS: usize = 24;

/// One server and its connections, driven by a seeded generator.
struct World {
    server: FastArray<Soldier>,
    ids: Vec<ReplicationId>,
    states: Vec<SendState>,
    clients: Vec<FastArray<Soldier>>,
    rng: ChaCha8Rng,
    serial: u32,
}

impl World {
    fn new(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut server = FastArray::new();
        let ids = (0..300)
            .map(|n| server.push(soldier(&mut rng, n)))
            .collect::<Vec<_>>();
        for &id in ids.iter().step_by(7) {
            server.set_owner(id, Some(rng.random_range(0..6))).unwrap();
        }
        server.commit();
        let mut states: Vec<SendState> = (0..CONNS).map(|_| SendState::new()).collect();
        for (n, state) in states.iter_mut().enumerate() {
            // A third own items; a third see a scope of their own.
            if n % 3 == 0 {
                state.set_client((n / 3) as u64).unwrap();
            }
            if n % 3 == 1 {
                let mut scope = server.scope(state).unwrap();
                for &id in ids.iter().skip(n).step_by(5) {
                    scope.include(id);
                }
            }
        }
        Self {
            server,
            ids,
            states,
            clients: (0..CONNS).map(|_| FastArray::mirror()).collect(),
            rng,
            serial: 300,
        }
    }

    /// The game's tick: moves, hurts, deaths, births, owner moves, scope
    /// changes; then the commit.
    fn tick(&mut self) {
        let rng = &mut self.rng;
        for &id in &self.ids {
            match rng.random_range(0..100) {
                0..10 => self.server.get_mut(id).unwrap().x += rng.random_range(-3..=3),
                10..13 => self.server.get_mut(id).unwrap().hp -= 1,
                13..15 => self.server.get_mut(id).unwrap().ammo += 1,
                _ => {}
            }
        }
        for _ in 0..rng.random_range(0..4) {
            let at = rng.random_range(0..self.ids.len());
            self.server.remove(self.ids[at]);
            self.ids[at] = self.server.push(soldier(rng, self.serial));
            self.serial += 1;
        }
        let id = self.ids[rng.random_range(0..self.ids.len())];
        self.server
            .set_owner(id, Some(rng.random_range(0..6)))
            .unwrap();
        self.server.commit();
        for n in (1..CONNS).step_by(3) {
            // Half the ticks, a scoped connection's catch-up is left to
            // its write (the scope's own call does it otherwise).
            if rng.random_bool(0.5) {
                continue;
            }
            let mut scope = self.server.scope(&mut self.states[n]).unwrap();
            for _ in 0..rng.random_range(0..6) {
                let id = self.ids[rng.random_range(0..self.ids.len())];
                if rng.random_bool(0.5) {
                    scope.include(id);
                } else {
                    scope.exclude(id);
                }
            }
        }
    }

    /// The budget of connection `n`'s packets: a quarter of them are
    /// small.
    fn budget(n: usize) -> Option<u64> {
        (n % 4 == 3).then_some(1_500)
    }

    /// The packet of connection `n`'s write at `tick`: its number, but for
    /// scoped connection 4 at tick 21, which writes packet 20 again (still
    /// in flight: refused, and what its scope was handed in the meantime
    /// must wait for its next write).
    fn packet(n: usize, tick: u32) -> u32 {
        if n == 4 && tick == 21 { 20 } else { tick }
    }

    /// Tells connection `n` of both `worlds` the same fate of its packet
    /// of `tick`: 10% are lost; one is left in flight, its number written
    /// again next tick.
    fn fate<const N: usize>(worlds: [&mut World; N], n: usize, tick: u32, fates: &mut ChaCha8Rng) {
        if World::packet(n, tick + 1) == tick {
            return;
        }
        let lost = fates.random_bool(0.1);
        for world in worlds {
            let state = &mut world.states[n];
            if lost {
                state.on_loss(tick);
            } else {
                state.on_ack(tick);
            }
        }
    }

    /// Whether connection `n` writes at `tick`: the last two join late.
    fn writes(n: usize, tick: u32) -> bool {
        n < CONNS - 2 || tick >= 10
    }
}

fn soldier(rng: &mut ChaCha8Rng, serial: u32) -> Soldier {
    Soldier {
        x: rng.random_range(-500..500),
        hp: 200,
        ammo: 30,
        name: format!("s{serial}"),
    }
}

#[test]
fn write_deltas_writes_what_write_delta_one_by_one_writes() {
    for seed in 0..3 {
        let (mut one_by_one, mut at_once) = (World::new(seed), World::new(seed));
        let mut fates = ChaCha8Rng::seed_from_u64(seed + 100);
        // Writes that copied the frame's shared message, and those refused.
        let (mut shared, mut refused) = (0, 0);
        for tick in 1..=40u32 {
            let mut expected = Vec::new();
            for n in 0..CONNS {
                if !World::writes(n, tick) {
                    continue;
                }
                let (world, mut out) = (&mut one_by_one, Vec::new());
                let state = &mut world.states[n];
                let packet = World::packet(n, tick);
                let result = match World::budget(n) {
                    Some(bits) => world
                        .server
                        .write_delta_with_budget(state, packet, &mut out, bits),
                    None => world.server.write_delta(state, packet, &mut out),
                };
                expected.push((n, out, result));
            }
            let mut outs: Vec<Vec<u8>> = vec![Vec::new(); CONNS];
            let mut writes: Vec<DeltaWrite<'_>> = at_once
                .states
                .iter_mut()
                .zip(&mut outs)
                .enumerate()
                .filter(|&(n, _)| World::writes(n, tick))
                .map(|(n, (state, out))| DeltaWrite {
                    state,
                    packet: World::packet(n, tick),
                    out,
                    max_bits: World::budget(n),
                })
                .collect();
            let results = at_once.server.write_deltas(&mut writes);
            drop(writes);
            assert_eq!(results.len(), expected.len());
            for ((n, out, result), got) in expected.into_iter().zip(results) {
                assert_eq!(got, result, "seed {seed} tick {tick} conn {n}");
                assert_eq!(outs[n], out, "seed {seed} tick {tick} conn {n}: bytes");
                let Ok(stats) = result else {
                    refused += 1;
                    continue;
                };
                shared += usize::from(stats.shared);
                one_by_one.clients[n].apply_delta(&out, &mut ()).unwrap();
                World::fate([&mut one_by_one, &mut at_once], n, tick, &mut fates);
            }
            one_by_one.tick();
            at_once.tick();
        }
        assert!(shared > 100, "seed {seed}: {shared} shared messages");
        assert_eq!(refused, 1, "seed {seed}");
    }
}

#[test]
fn write_delta_bytes_and_slice_hand_out_what_write_delta_writes_sharing_the_frames_message() {
    // Budgeted connections compare with `write_delta_with_budget`.
    for seed in 0..3 {
        let [mut copied, mut handed, mut lent] = [0, 1, 2].map(|_| World::new(seed));
        let mut fates = ChaCha8Rng::seed_from_u64(seed + 100);
        let (mut shared, mut refused) = (0, 0);
        for tick in 1..=40u32 {
            // The frame's shared message, as first handed out and lent
            // this tick.
            let mut frame_message: Option<DeltaBytes> = None;
            let mut frame_lent: Option<*const u8> = None;
            for n in 0..CONNS {
                if !World::writes(n, tick) {
                    continue;
                }
                let packet = World::packet(n, tick);
                let mut out = Vec::new();
                let (state, server) = (&mut copied.states[n], &mut copied.server);
                let expected = match World::budget(n) {
                    Some(bits) => server.write_delta_with_budget(state, packet, &mut out, bits),
                    None => server.write_delta(state, packet, &mut out),
                };
                let (state, server) = (&mut handed.states[n], &mut handed.server);
                let got = match World::budget(n) {
                    Some(bits) => server.write_delta_bytes_with_budget(state, packet, bits),
                    None => server.write_delta_bytes(state, packet),
                };
                let context = format!("seed {seed} tick {tick} conn {n}");
                let (state, server) = (&mut lent.states[n], &mut lent.server);
                let got_lent = match World::budget(n) {
                    Some(bits) => server.write_delta_slice_with_budget(state, packet, bits),
                    None => server.write_delta_slice(state, packet),
                };
                let got_lent =
                    got_lent.map(|(bytes, stats)| (bytes.to_vec(), bytes.as_ptr(), stats));
                let (bytes, lent_bytes, stats) = match (got, got_lent, expected) {
                    (Ok((bytes, stats)), Ok((lent_bytes, lent_at, lent_stats)), Ok(expected)) => {
                        assert_eq!(stats, expected, "{context}");
                        assert_eq!(lent_stats, expected, "{context}: lent");
                        assert_eq!(lent_bytes, out, "{context}: lent bytes");
                        if stats.shared {
                            // Every caught-up connection is lent the same bytes.
                            assert_eq!(*frame_lent.get_or_insert(lent_at), lent_at, "{context}");
                        }
                        (bytes, lent_bytes, stats)
                    }
                    (Err(got), Err(got_lent), Err(expected)) => {
                        assert_eq!(got, expected, "{context}");
                        assert_eq!(got_lent, expected, "{context}: lent");
                        refused += 1;
                        continue;
                    }
                    (got, got_lent, expected) => {
                        panic!("{context}: {got:?} and {got_lent:?} against {expected:?}")
                    }
                };
                assert_eq!(*bytes, *out, "{context}: bytes");
                assert_eq!(bytes.is_shared(), stats.shared, "{context}");
                if bytes.is_shared() {
                    shared += 1;
                    // Every caught-up connection is handed the same bytes.
                    match &frame_message {
                        Some(first) => assert_eq!(first.as_ptr(), bytes.as_ptr(), "{context}"),
                        None => frame_message = Some(bytes.clone()),
                    }
                }
                handed.clients[n].apply_delta(&bytes, &mut ()).unwrap();
                lent.clients[n].apply_delta(&lent_bytes, &mut ()).unwrap();
                World::fate([&mut copied, &mut handed, &mut lent], n, tick, &mut fates);
            }
            copied.tick();
            handed.tick();
            lent.tick();
        }
        assert!(shared > 100, "seed {seed}: {shared} shared messages");
        assert_eq!(refused, 1, "seed {seed}");
    }
}

/// A write of packet `packet` for each of `states`, into `outs`.
fn every_write<'a>(
    states: &'a mut [SendState],
    outs: &'a mut [Vec<u8>],
    packet: u32,
) -> Vec<DeltaWrite<'a>> {
    (states.iter_mut().zip(outs))
        .map(|(state, out)| DeltaWrite {
            state,
            packet,
            out,
            max_bits: None,
        })
        .collect()
}

#[test]
fn write_deltas_refuses_as_write_delta_does() {
    let mut world = World::new(9);
    let mut outs: Vec<Vec<u8>> = vec![Vec::new(); CONNS];
    // Uncommitted: every write is refused, nothing written.
    world.server.get_mut(world.ids[0]).unwrap().hp = 1;
    let mut writes = every_write(&mut world.states, &mut outs, 1);
    let results = world.server.write_deltas(&mut writes);
    assert!(results.iter().all(|r| r == &Err(SendError::Uncommitted)));
    assert!(outs.iter().all(Vec::is_empty));
    world.server.commit();
    // A packet in flight on one connection: it alone is refused.
    let mut out = Vec::new();
    world
        .server
        .write_delta(&mut world.states[5], 1, &mut out)
        .unwrap();
    let mut writes = every_write(&mut world.states, &mut outs, 1);
    let results = world.server.write_deltas(&mut writes);
    for (n, result) in results.iter().enumerate() {
        if n == 5 {
            assert_eq!(result, &Err(SendError::PacketInFlight { packet: 1 }));
            assert!(outs[n].is_empty());
        } else {
            assert!(result.as_ref().unwrap().added > 0, "conn {n}");
            assert!(!outs[n].is_empty());
        }
    }
    // A mirror writes nothing.
    let mut mirror = FastArray::<Soldier>::mirror();
    let mut state = SendState::new();
    let mut out = Vec::new();
    let mut writes = [DeltaWrite {
        state: &mut state,
        packet: 1,
        out: &mut out,
        max_bits: None,
    }];
    assert!(matches!(
        mirror.write_deltas(&mut writes)[..],
        [Err(SendError::NotAnAuthority { .. })]
    ));
}
