//! Relays: an array that follows a server's through the server's feed
//! (`FastArray::write_feed`, `write_feed_snapshot`, `apply_feed`) and
//! serves its own clients as the server would, with the same ids. A client
//! cannot tell a relay from the server: after the links heal, each client
//! of the relay holds what the same client of the server holds.

use fastarray::{
    DecodeError, FastArray, FeedReport, FieldMask, Replicate, ReplicationId, SendError, SendState,
};

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Agent {
    x: i32,
    #[replicate(owner_only)]
    secret: u32,
    #[replicate(skip_owner)]
    guess: u32,
    #[replicate(detail = 2)]
    far: u16,
    #[replicate(initial_only)]
    badge: u32,
}

fn agent(x: i32) -> Agent {
    Agent {
        x,
        secret: x as u32 + 1,
        guess: x as u32 + 2,
        far: x as u16 + 3,
        badge: x as u32 + 4,
    }
}

/// The server's feed of its last commit.
fn feed(server: &FastArray<Agent>) -> Vec<u8> {
    let mut bytes = Vec::new();
    server.write_feed(&mut bytes).unwrap();
    bytes
}

fn feed_snapshot(server: &mut FastArray<Agent>) -> Vec<u8> {
    let mut bytes = Vec::new();
    server.write_feed_snapshot(&mut bytes).unwrap();
    bytes
}

/// Writes, applies and acknowledges one delta from `from` to `mirror`.
fn sync(from: &mut FastArray<Agent>, state: &mut SendState, mirror: &mut FastArray<Agent>) {
    let packet = state.packets_in_flight() as u32 + 1_000;
    let mut bytes = Vec::new();
    from.write_delta(state, packet, &mut bytes).unwrap();
    mirror.apply_delta(&bytes, &mut ()).unwrap();
    state.on_ack(packet);
}

/// The relay holds what the server holds: ids, every field, owners.
fn assert_follows(relay: &FastArray<Agent>, server: &FastArray<Agent>, label: &str) {
    assert_eq!(relay, server, "{label}: items");
    for id in server.ids() {
        assert_eq!(relay.owner(id), server.owner(id), "{label}: owner of {id}");
    }
}

#[test]
fn a_relay_joins_from_a_snapshot_and_follows_each_frame() {
    let mut server = FastArray::new();
    let a = server.push(agent(1));
    let b = server.push(agent(2));
    server.set_owner(a, Some(7)).unwrap();
    server.commit();

    let mut relay = FastArray::<Agent>::relay();
    assert!(relay.is_relay() && !relay.is_mirror() && !server.is_relay());
    assert!(relay.needs_feed_snapshot());
    // Frames before the join are of no use.
    assert_eq!(relay.apply_feed(&feed(&server)).unwrap().frames, 0);
    let report = relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
    assert!(report.snapshot && !report.needs_snapshot);
    assert_eq!(relay.feed_frame(), Some(server.frame()));
    assert_follows(&relay, &server, "joined");

    // Adds, changes, removals, owner moves and initial-only changes.
    let c = server.push(agent(3));
    server.set_owner(c, Some(8)).unwrap();
    server.get_mut(a).unwrap().secret = 99;
    server.get_mut(b).unwrap().badge = 77;
    server.set_owner(b, Some(7)).unwrap();
    server.commit();
    let report = relay.apply_feed(&feed(&server)).unwrap();
    assert_eq!(
        (report.frames, report.snapshot, report.needs_snapshot),
        (1, false, false)
    );
    assert_follows(&relay, &server, "frame 2");
    server.remove(a);
    server.set_owner(c, None).unwrap();
    server.commit();
    relay.apply_feed(&feed(&server)).unwrap();
    assert_follows(&relay, &server, "frame 3");
    let stats = relay.feed_stats();
    assert_eq!((stats.frames, stats.snapshots, stats.stale), (2, 1, 0));
}

#[test]
fn clients_of_a_relay_are_sent_what_clients_of_the_server_are() {
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..6).map(|n| server.push(agent(n))).collect();
    server.set_owner(ids[0], Some(1)).unwrap();
    server.set_owner(ids[1], Some(2)).unwrap();
    server.commit();
    let mut relay = FastArray::<Agent>::relay();
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();

    // One owner, one client owning nothing, one scoped at a low detail.
    let new_states = || {
        let mut states: Vec<SendState> = (0..3).map(|_| SendState::new()).collect();
        states[0].set_client(1).unwrap();
        states
    };
    let (mut direct, mut relayed) = (new_states(), new_states());
    let mut mirrors: Vec<Vec<FastArray<Agent>>> = (0..2)
        .map(|_| (0..3).map(|_| FastArray::mirror()).collect())
        .collect();
    for (array, states) in [(&mut server, &mut direct), (&mut relay, &mut relayed)] {
        let mut scope = array.scope(&mut states[2]).unwrap();
        for &id in &ids[..4] {
            scope.include(id);
            scope.set_detail(id, 1);
        }
    }
    for tick in 0..6 {
        let id = ids[tick % ids.len()];
        let mut item = server.get_mut(id).unwrap();
        item.x += 10;
        item.secret += 10;
        item.guess += 10;
        item.far += 10;
        if tick == 3 {
            server.set_owner(ids[0], Some(2)).unwrap();
        }
        server.commit();
        relay.apply_feed(&feed(&server)).unwrap();
        for (n, (direct, relayed)) in direct.iter_mut().zip(&mut relayed).enumerate() {
            let (left, right) = mirrors.split_at_mut(1);
            sync(&mut server, direct, &mut left[0][n]);
            sync(&mut relay, relayed, &mut right[0][n]);
            assert_eq!(left[0][n], right[0][n], "tick {tick}: client {n}");
        }
    }
    // The owner saw its secret and not the guess; the others the reverse;
    // the scoped client no far field.
    let of = |n: usize| mirrors[1][n].get(ids[1]).unwrap().clone();
    assert_eq!(of(0).secret, 0);
    assert_ne!(of(1).guess, 0);
    assert_eq!(of(2).far, 0);
    assert_eq!(mirrors[1][2].len(), 4);
}

#[test]
fn late_and_twice_sent_frames_are_dropped_and_early_ones_wait_for_the_gap() {
    let mut server = FastArray::new();
    let a = server.push(agent(1));
    server.commit();
    let mut relay = FastArray::<Agent>::relay();
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
    let mut frames = Vec::new();
    for n in 0..4 {
        server.get_mut(a).unwrap().x = 100 + n;
        if n == 1 {
            server.push(agent(50));
        }
        server.commit();
        frames.push(feed(&server));
    }
    // 3 and 4 come before 1 and 2; 1 comes twice.
    let report = relay.apply_feed(&frames[2]).unwrap();
    assert_eq!((report.frames, report.needs_snapshot), (0, false));
    relay.apply_feed(&frames[3]).unwrap();
    relay.apply_feed(&frames[0]).unwrap();
    assert_eq!(relay.get(a).unwrap().x, 100);
    let report = relay.apply_feed(&frames[1]).unwrap();
    assert_eq!(report.frames, 3, "frame 2 and the two that waited for it");
    assert_follows(&relay, &server, "after the gap");
    assert_eq!(relay.apply_feed(&frames[0]).unwrap(), FeedReport::default());
    let stats = relay.feed_stats();
    assert_eq!(
        (stats.frames, stats.early, stats.stale, stats.resyncs),
        (4, 2, 1, 0)
    );
}

#[test]
fn a_gap_that_does_not_fill_is_repaired_by_a_snapshot_as_changes() {
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..4).map(|n| server.push(agent(n))).collect();
    server.commit();
    let mut relay = FastArray::<Agent>::relay();
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
    let mut state = SendState::new();
    let mut client = FastArray::mirror();
    sync(&mut relay, &mut state, &mut client);

    // Frame 2 is lost: it removes one item, adds one and changes one.
    server.remove(ids[0]);
    let added = server.push(agent(9));
    server.get_mut(ids[1]).unwrap().x = -1;
    server.commit();
    let mut needed = false;
    for n in 0..70 {
        server.get_mut(ids[2]).unwrap().x = n;
        server.commit();
        needed |= relay.apply_feed(&feed(&server)).unwrap().needs_snapshot;
    }
    assert!(needed && relay.needs_feed_snapshot(), "64 frames waited");
    assert_eq!(relay.feed_stats().resyncs, 1);

    let report = relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
    assert!(report.snapshot && !report.needs_snapshot);
    assert_follows(&relay, &server, "resynced");

    // The client is sent the differences, by id: items it holds stay.
    let mut events = Events::default();
    let packet = 7;
    let mut bytes = Vec::new();
    relay.write_delta(&mut state, packet, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut events).unwrap();
    let seen = |array: &FastArray<Agent>| -> Vec<(ReplicationId, i32)> {
        let mut seen: Vec<_> = array.iter().map(|(id, agent)| (id, agent.x)).collect();
        seen.sort();
        seen
    };
    assert_eq!(seen(&client), seen(&server));
    assert_eq!(events.added, [added]);
    assert_eq!(events.removed, [ids[0]]);
    assert_eq!(
        events.changed,
        [
            (ids[1], FieldMask::single(0)),
            (ids[2], FieldMask::single(0))
        ]
    );

    // Frames after the snapshot follow on.
    server.get_mut(ids[3]).unwrap().x = 5;
    server.commit();
    assert_eq!(relay.apply_feed(&feed(&server)).unwrap().frames, 1);
    assert_follows(&relay, &server, "after the resync");
}

#[derive(Default)]
struct Events {
    added: Vec<ReplicationId>,
    removed: Vec<ReplicationId>,
    changed: Vec<(ReplicationId, FieldMask)>,
}

impl fastarray::Callbacks<Agent> for Events {
    fn post_add(&mut self, id: ReplicationId, _: &Agent) {
        self.added.push(id);
    }
    fn pre_remove(&mut self, id: ReplicationId, _: &Agent) {
        self.removed.push(id);
    }
    fn post_change(&mut self, id: ReplicationId, _: &Agent, changed: FieldMask) {
        self.changed.push((id, changed));
    }
}

#[test]
fn a_restarted_server_is_a_new_stream_and_its_relays_resync() {
    let mut server = FastArray::new();
    let a = server.push(agent(1));
    server.commit();
    let mut relay = FastArray::<Agent>::relay();
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();

    // Another array (a restarted server, here a copy) has a stream of its
    // own, even at the same frames.
    let mut restarted = server.clone();
    restarted.get_mut(a).unwrap().x = 42;
    restarted.commit();
    let report = relay.apply_feed(&feed(&restarted)).unwrap();
    assert!(report.needs_snapshot && report.frames == 0);
    assert_eq!(relay.get(a).unwrap().x, 1);
    relay.apply_feed(&feed_snapshot(&mut restarted)).unwrap();
    assert_follows(&relay, &restarted, "restarted");
    // The old stream's frames are of no use any more.
    server.get_mut(a).unwrap().x = 3;
    server.commit();
    assert!(relay.apply_feed(&feed(&server)).unwrap().needs_snapshot);
    assert_eq!(relay.get(a).unwrap().x, 42);
}

#[test]
fn a_relay_refuses_changes_of_its_own_and_messages_not_for_it() {
    let mut server = FastArray::new();
    let a = server.push(agent(1));
    server.commit();
    let mut relay = FastArray::<Agent>::relay();
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();

    assert_eq!(
        relay.set_owner(a, Some(1)),
        Err(SendError::Relay {
            type_name: Agent::TYPE_NAME
        })
    );
    let mut delta = Vec::new();
    server
        .write_delta(&mut SendState::new(), 0, &mut delta)
        .unwrap();
    assert!(matches!(
        relay.apply_delta(&delta, &mut ()),
        Err(DecodeError::NotAMirror { .. })
    ));
    let mut mirror = FastArray::<Agent>::mirror();
    assert!(matches!(
        mirror.apply_feed(&feed(&server)),
        Err(DecodeError::NotARelay { .. })
    ));
    assert!(mirror.apply_delta(&feed(&server), &mut ()).is_err());
    assert!(matches!(
        mirror.write_feed(&mut Vec::new()),
        Err(SendError::NotAnAuthority { .. })
    ));

    for change in [
        (|relay: &mut FastArray<Agent>| {
            relay.push(agent(0));
        }) as fn(&mut FastArray<Agent>),
        |relay| {
            relay.commit();
        },
        |relay| {
            let id = relay.ids().next().unwrap();
            relay.get_mut(id);
        },
        |relay| {
            relay.clear();
        },
    ] {
        let mut copy = FastArray::relay();
        copy.apply_feed(&feed_snapshot(&mut server.clone()))
            .unwrap();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| change(&mut copy)))
            .expect_err("a relay's own change panics");
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(message.contains("on a relay of"), "{message}");
    }
    server.get_mut(a).unwrap().x = 2;
    assert_eq!(server.write_feed(&mut delta), Err(SendError::Uncommitted));
}

#[test]
fn a_relay_of_a_relay_follows_too() {
    let mut server = FastArray::new();
    let a = server.push(agent(1));
    server.set_owner(a, Some(4)).unwrap();
    server.commit();
    let mut relay = FastArray::<Agent>::relay();
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
    let mut second = FastArray::relay();
    second.apply_feed(&feed_snapshot(&mut relay)).unwrap();
    for n in 0..5 {
        server.get_mut(a).unwrap().badge = n;
        server.push(agent(n as i32));
        server.commit();
        relay.apply_feed(&feed(&server)).unwrap();
        second.apply_feed(&feed(&relay)).unwrap();
    }
    assert_follows(&second, &server, "second relay");
}

#[test]
fn corrupted_feed_messages_are_refused_and_change_nothing() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..8).map(|n| server.push(agent(n))).collect();
    server.commit();
    let snapshot = feed_snapshot(&mut server);
    let mut relay = FastArray::<Agent>::relay();
    relay.apply_feed(&snapshot).unwrap();
    let mut refused = 0;
    for round in 0..3_000 {
        server.get_mut(ids[round % 8]).unwrap().x += 1;
        if round % 5 == 0 {
            let id = server.push(agent(round as i32));
            server.set_owner(id, Some(round as u64)).unwrap();
        }
        server.commit();
        let good = if round % 2 == 0 {
            feed(&server)
        } else {
            feed_snapshot(&mut server)
        };
        let mut bad = good.clone();
        match rng.random_range(0..3) {
            0 => {
                let bit = rng.random_range(0..bad.len() * 8);
                bad[bit / 8] ^= 1 << (bit % 8);
            }
            1 => bad.truncate(rng.random_range(0..bad.len())),
            _ => bad.push(rng.random()),
        }
        // On a copy: a flipped bit can make a valid message (another value,
        // frame or stream), which no decoder can tell; the bus (NATS, over
        // TCP) does not flip bits, and who may publish is its permissions'.
        let mut copy = relay.clone();
        if copy.apply_feed(&bad).is_err() {
            refused += 1;
            assert_eq!(copy, relay, "round {round}: refused yet changed");
            assert_eq!(copy.feed_frame(), relay.feed_frame());
            assert_eq!(copy.feed_stats(), relay.feed_stats());
        }
        relay.apply_feed(&good).unwrap();
        if relay.needs_feed_snapshot() {
            relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
        }
    }
    assert!(refused > 1_500, "only {refused} refused");
    assert_follows(&relay, &server, "after the corrupted messages");
}

mod lossy {
    //! Over lossy links everywhere: the feed on a bus link that loses,
    //! repeats and reorders (snapshots asked for while the relay needs
    //! one, and lost too), and each client on a link of its own. Every
    //! client has a twin served by the server directly; once the links
    //! heal, each client of the relay holds what its twin holds.

    use std::collections::BTreeMap;

    use fastarray::{FastArray, MAX_DETAIL, ReplicationId, SendState};
    use fastarray_testkit::link::{Link, LinkProfile};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::{Agent, agent};

    const HEAL_AT: u32 = 150;

    /// A client: one owning items, one owning nothing, one with a scope
    /// at random detail levels, under random bit budgets.
    struct Client {
        state: SendState,
        mirror: FastArray<Agent>,
        link: Link,
    }

    /// A server or a relay with its clients.
    struct Side {
        array: FastArray<Agent>,
        clients: Vec<Client>,
    }

    impl Side {
        fn new(array: FastArray<Agent>, profile: &LinkProfile, seed: u64) -> Self {
            let clients = [Some(1), None, Some(2)]
                .into_iter()
                .enumerate()
                .map(|(n, number)| {
                    let mut state = SendState::new();
                    if let Some(number) = number {
                        state.set_client(number).unwrap();
                    }
                    Client {
                        state,
                        mirror: FastArray::mirror(),
                        link: Link::new(profile.clone(), seed * 16 + n as u64),
                    }
                })
                .collect();
            Self { array, clients }
        }

        /// Makes client 2's scope what `wanted` says, for the items held.
        fn scope(&mut self, wanted: &BTreeMap<ReplicationId, u8>) {
            let held: Vec<ReplicationId> = self.array.ids().collect();
            let mut scope = self.array.scope(&mut self.clients[2].state).unwrap();
            for id in held {
                match wanted.get(&id) {
                    Some(&level) => {
                        scope.include(id);
                        scope.set_detail(id, level);
                    }
                    None => {
                        scope.exclude(id);
                    }
                }
            }
        }

        fn tick(&mut self, now: u32, rng: &mut ChaCha8Rng, writing: bool, label: &str) {
            let packet = u32::from((65_400 + now) as u16);
            for (n, client) in self.clients.iter_mut().enumerate() {
                if writing {
                    let mut bytes = Vec::new();
                    let budget = rng.random_bool(0.3).then(|| rng.random_range(80..600));
                    match budget {
                        Some(bits) => self.array.write_delta_with_budget(
                            &mut client.state,
                            packet,
                            &mut bytes,
                            bits,
                        ),
                        None => self
                            .array
                            .write_delta(&mut client.state, packet, &mut bytes),
                    }
                    .unwrap_or_else(|e| panic!("{label}: client {n}: {e}"));
                    client.link.send(now, packet, bytes);
                }
                for bytes in client.link.deliver(now) {
                    client
                        .mirror
                        .apply_delta(&bytes, &mut ())
                        .unwrap_or_else(|e| panic!("{label}: client {n}: {e}"));
                }
                for report in client.link.reports(now) {
                    report.tell(&mut client.state);
                }
            }
        }

        fn settled(&self) -> bool {
            self.clients
                .iter()
                .all(|client| self.array.is_settled(&client.state))
        }

        fn idle(&self) -> bool {
            self.clients.iter().all(|client| client.link.idle())
        }

        fn heal(&mut self) {
            for client in &mut self.clients {
                client.link.heal();
            }
        }
    }

    /// A client's item as the other side's twin must hold it: equal in
    /// the fields its client may see now (`owns` it or not). Not the
    /// others: `initial_only` ones go when the client first sees the item
    /// (a relay that joined later sends newer ones), and an audience field
    /// a client held before an ownership move stays as it was, which
    /// depends on when each side's writes went.
    fn same_item(a: Option<&Agent>, b: Option<&Agent>, owns: bool) -> bool {
        match (a, b) {
            (Some(x), Some(y)) => {
                (x.x, x.far) == (y.x, y.far)
                    && if owns {
                        x.secret == y.secret
                    } else {
                        x.guess == y.guess
                    }
            }
            (a, b) => a.is_none() && b.is_none(),
        }
    }

    fn run(profile: &LinkProfile, seed: u64) {
        let label = format!("{} seed {seed}", profile.name);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut server = FastArray::new();
        for n in 0..12 {
            let id = server.push(agent(n));
            server.set_owner(id, owner(&mut rng)).unwrap();
        }
        server.commit();
        let mut direct = Side::new(server, profile, seed);
        let mut relayed = Side::new(FastArray::relay(), profile, seed + 1_000);
        let mut bus = Link::new(profile.clone(), seed * 16 + 9);
        let mut wanted: BTreeMap<ReplicationId, u8> = BTreeMap::new();
        let (mut next, mut bus_packet) = (100, 0u32);
        let (mut asked_at, mut gap_since) = (None::<u32>, None::<u32>);
        for now in 0.. {
            let writing = now < HEAL_AT || !direct.settled() || !relayed.settled();
            if now < HEAL_AT {
                mutate(
                    &mut direct.array,
                    &mut wanted,
                    &mut rng,
                    &mut next,
                    now + 10 >= HEAL_AT,
                );
            }
            if now == HEAL_AT {
                direct.heal();
                relayed.heal();
                bus.heal();
            }
            // The bus: each frame's feed (the server commits every tick, as
            // games do: an item that left a scope and came back is sent
            // after a frame past its exit), and a snapshot while the relay
            // asks.
            let mut send = |bus: &mut Link, bytes: Vec<u8>| {
                bus_packet += 1;
                bus.send(now, bus_packet, bytes);
            };
            direct.array.commit();
            let mut bytes = Vec::new();
            direct.array.write_feed(&mut bytes).unwrap();
            send(&mut bus, bytes);
            // Ask for a snapshot when the relay needs one, or when a gap
            // has not filled for a few ticks (the links here reorder).
            gap_since = match (relayed.array.has_feed_gap(), gap_since) {
                (true, None) => Some(now),
                (true, since) => since,
                (false, _) => None,
            };
            let stuck = gap_since.is_some_and(|since| now >= since + 4);
            if (relayed.array.needs_feed_snapshot() || stuck)
                && asked_at.is_none_or(|at| now >= at + 8)
            {
                let mut bytes = Vec::new();
                direct.array.write_feed_snapshot(&mut bytes).unwrap();
                send(&mut bus, bytes);
                asked_at = Some(now);
            }
            for bytes in bus.deliver(now) {
                relayed
                    .array
                    .apply_feed(&bytes)
                    .unwrap_or_else(|e| panic!("{label}: relay: {e}"));
            }
            let _ = bus.reports(now);
            direct.scope(&wanted);
            relayed.scope(&wanted);
            direct.tick(now, &mut rng, writing, &label);
            relayed.tick(now, &mut rng, writing, &label);
            if now > HEAL_AT
                && direct.settled()
                && relayed.settled()
                && direct.idle()
                && relayed.idle()
                && follows(&relayed.array, &direct.array)
            {
                break;
            }
            assert!(
                now < HEAL_AT + 400,
                "{label}: not settled: direct {} relayed {} relay at {:?} server at {} needs {} stats {:?}",
                direct.settled(),
                relayed.settled(),
                relayed.array.feed_frame(),
                direct.array.frame(),
                relayed.array.needs_feed_snapshot(),
                relayed.array.feed_stats()
            );
        }
        super::assert_follows(&relayed.array, &direct.array, &label);
        for n in 0..3 {
            let (ours, theirs) = (&direct.clients[n].mirror, &relayed.clients[n].mirror);
            let differ: Vec<_> = ours
                .ids()
                .chain(theirs.ids())
                .filter(|&id| {
                    let owns = direct.array.owner(id) == direct.clients[n].state.client();
                    !same_item(ours.get(id), theirs.get(id), owns)
                })
                .map(|id| (id, ours.get(id), theirs.get(id), direct.array.owner(id)))
                .collect();
            assert!(
                differ.is_empty(),
                "{label}: client {n} (direct, relayed, owner): {differ:?}"
            );
        }
        assert_eq!(direct.clients[2].mirror.len(), wanted.len(), "{label}");
    }

    /// Whether the relay holds what the server holds, owners included.
    fn follows(relay: &FastArray<Agent>, server: &FastArray<Agent>) -> bool {
        relay == server && server.ids().all(|id| relay.owner(id) == server.owner(id))
    }

    fn owner(rng: &mut ChaCha8Rng) -> Option<u64> {
        match rng.random_range(0..4) {
            0 => None,
            n => Some(n as u64),
        }
    }

    fn mutate(
        server: &mut FastArray<Agent>,
        wanted: &mut BTreeMap<ReplicationId, u8>,
        rng: &mut ChaCha8Rng,
        next: &mut i32,
        settling: bool,
    ) {
        let ids: Vec<ReplicationId> = server.ids().collect();
        if rng.random_bool(0.3) {
            *next += 1;
            let id = server.push(agent(*next));
            server.set_owner(id, owner(rng)).unwrap();
        }
        if rng.random_bool(0.15) && ids.len() > 6 {
            let id = ids[rng.random_range(0..ids.len())];
            server.remove(id);
            wanted.remove(&id);
        }
        for _ in 0..6 {
            let id = ids[rng.random_range(0..ids.len())];
            *next += 1;
            let value = *next;
            if let Some(mut agent) = server.get_mut(id) {
                match rng.random_range(0..5) {
                    0 => agent.x = value,
                    1 => agent.secret = value as u32,
                    2 => agent.guess = value as u32,
                    3 => agent.far = value as u16,
                    _ => agent.badge = value as u32,
                }
            }
        }
        if rng.random_bool(0.2) {
            let id = ids[rng.random_range(0..ids.len())];
            server.set_owner(id, owner(rng)).unwrap();
        }
        for _ in 0..2 {
            let id = ids[rng.random_range(0..ids.len())];
            if server.contains(id) && rng.random_bool(0.6) {
                wanted.insert(id, rng.random_range(0..=MAX_DETAIL));
            } else {
                wanted.remove(&id);
            }
        }
        if settling {
            for level in wanted.values_mut() {
                *level = MAX_DETAIL;
            }
        }
    }

    #[test]
    fn clients_of_a_relay_converge_to_what_clients_of_the_server_hold() {
        for profile in LinkProfile::all_for_tests() {
            for seed in 0..fastarray_testkit::drive::seeds_or(4) {
                run(&profile, seed);
            }
        }
    }
}

mod objects {
    //! A replicated object's relay: the object as item `#0`, nothing else.

    use fastarray::{DecodeError, FastArray, Replicate, Replicated, SendState};

    #[derive(Replicate, Clone, Debug, PartialEq, Default)]
    struct Match {
        round: u8,
        #[replicate(owner_only)]
        plan: u32,
    }

    #[test]
    fn an_object_relay_follows_its_server_and_serves_its_clients() {
        let mut server = Replicated::new(Match { round: 1, plan: 9 });
        server.set_owner(Some(4)).unwrap();
        server.commit();
        let mut relay = Replicated::<Match>::relay();
        assert!(relay.is_relay() && relay.needs_feed_snapshot());
        assert_eq!(*relay.get(), Match::default());
        let mut bus = Vec::new();
        server.write_feed_snapshot(&mut bus).unwrap();
        assert!(relay.apply_feed(&bus).unwrap().snapshot);
        for round in 2..6 {
            server.get_mut().round = round;
            if round == 4 {
                server.set_owner(Some(5)).unwrap();
            }
            server.commit();
            bus.clear();
            server.write_feed(&mut bus).unwrap();
            assert_eq!(relay.apply_feed(&bus).unwrap().frames, 1);
        }
        assert_eq!(relay.get(), server.get());
        assert_eq!(relay.owner(), Some(5));
        let mut seen = Vec::new();
        for client in [4, 5] {
            let mut state = SendState::new();
            state.set_client(client).unwrap();
            let mut mirror = Replicated::<Match>::mirror();
            let mut packet = Vec::new();
            relay.write_delta(&mut state, 0, &mut packet).unwrap();
            mirror.apply_delta(&packet, &mut ()).unwrap();
            seen.push(mirror.get().clone());
        }
        assert_eq!(
            seen,
            [Match { round: 5, plan: 0 }, Match { round: 5, plan: 9 }]
        );
    }

    #[test]
    fn an_object_relay_refuses_an_arrays_feed() {
        let mut relay = Replicated::<Match>::relay();
        let mut array = FastArray::new();
        array.push(Match::default());
        array.push(Match::default());
        array.commit();
        let mut bus = Vec::new();
        array.write_feed_snapshot(&mut bus).unwrap();
        assert_eq!(
            relay.apply_feed(&bus),
            Err(DecodeError::NotAnObjectChange {
                id: fastarray::ReplicationId::from_raw(1)
            })
        );
        let mut empty = FastArray::<Match>::new();
        empty.commit();
        bus.clear();
        empty.write_feed_snapshot(&mut bus).unwrap();
        assert_eq!(relay.apply_feed(&bus), Err(DecodeError::MissingObject));
        assert!(relay.needs_feed_snapshot());
    }
}
