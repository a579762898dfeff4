//! Relays over a real NATS cluster: `nats-server` processes on free ports
//! of 127.0.0.1, started and stopped by each test (`dev::LocalCluster`).
//! Ignored in the plain `cargo test --workspace`, which must not need
//! `nats-server`; `.ci/run` installs it and runs them with
//! `cargo test -p fastarray-nats -- --ignored`.
//!
//! Each test runs a server whose agents walk, change and come and go, with
//! owners, publishing its feed each tick; relays following it through the
//! bus, each serving clients over lossy links; and a twin of each client
//! served by the server directly. At the end every relay holds what the
//! server holds, and every client of a relay what its twin holds.

use std::time::{Duration, Instant};

use fastarray::{FastArray, Replicate, ReplicationId, SendState};

mod common;
use common::Net;
use fastarray_nats::{
    Bus, BusError, BusMessage, FeedFollower, FeedPublisher, FollowConfig, Subscription,
};
use fastarray_testkit::link::{Link, LinkProfile};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Agent {
    pos: [i32; 2],
    hp: u8,
    #[replicate(owner_only)]
    ammo: u16,
}

const TICK: Duration = Duration::from_millis(5);

/// A client: its connection state on one side, its mirror, its link.
struct Client {
    state: SendState,
    mirror: FastArray<Agent>,
    link: Link,
    packet: u32,
}

impl Client {
    fn new(number: u64, profile: &LinkProfile, seed: u64) -> Self {
        let mut state = SendState::new();
        state.set_client(number).unwrap();
        Self {
            state,
            mirror: FastArray::mirror(),
            link: Link::new(profile.clone(), seed),
            packet: 0,
        }
    }

    /// Writes from `array` over the link, applies what arrives, and tells
    /// the state what was delivered.
    fn tick(&mut self, array: &mut FastArray<Agent>, now: u32, moving: bool) {
        // Once the world stands still, a settled client is sent nothing,
        // so its link empties.
        if moving || !array.is_settled(&self.state) {
            self.packet += 1;
            let mut bytes = Vec::new();
            array
                .write_delta(&mut self.state, self.packet, &mut bytes)
                .unwrap();
            self.link.send(now, self.packet, bytes);
        }
        for bytes in self.link.deliver(now) {
            self.mirror.apply_delta(&bytes, &mut ()).unwrap();
        }
        for report in self.link.reports(now) {
            report.tell(&mut self.state);
        }
    }
}

/// The server's world: agents that walk, get hurt, come and go, and
/// change owners.
struct World {
    array: FastArray<Agent>,
    rng: ChaCha8Rng,
}

impl World {
    fn new(seed: u64, agents: usize) -> Self {
        let mut world = Self {
            array: FastArray::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
        };
        for _ in 0..agents {
            world.spawn();
        }
        world.array.commit();
        world
    }

    fn spawn(&mut self) {
        let agent = Agent {
            pos: [self.rng.random_range(0..100), self.rng.random_range(0..100)],
            hp: 100,
            ammo: self.rng.random_range(0..500),
        };
        let id = self.array.push(agent);
        let owner = self.rng.random_range(0..4);
        self.array
            .set_owner(id, (owner > 0).then_some(owner))
            .unwrap();
    }

    fn step(&mut self) {
        let ids: Vec<ReplicationId> = self.array.ids().collect();
        for &id in &ids {
            if self.rng.random_bool(0.2) {
                let step = [self.rng.random_range(-1..=1), self.rng.random_range(-1..=1)];
                let mut agent = self.array.get_mut(id).unwrap();
                agent.pos[0] += step[0];
                agent.pos[1] += step[1];
            }
        }
        let id = ids[self.rng.random_range(0..ids.len())];
        let mut agent = self.array.get_mut(id).unwrap();
        agent.hp = agent.hp.saturating_sub(1);
        agent.ammo = agent.ammo.wrapping_add(1);
        if self.rng.random_bool(0.05) {
            self.array.remove(ids[self.rng.random_range(0..ids.len())]);
            self.spawn();
        }
        if self.rng.random_bool(0.05) {
            let owner = self.rng.random_range(0..4);
            let id = ids[self.rng.random_range(0..ids.len())];
            self.array.set_owner(id, (owner > 0).then_some(owner)).ok();
        }
    }
}

/// A relay: its array, its follower on the bus, its clients.
struct Relay<B: Bus> {
    array: FastArray<Agent>,
    follower: FeedFollower<B>,
    clients: Vec<Client>,
}

impl<B: Bus> Relay<B> {
    fn new(bus: B, clients: Vec<Client>) -> Self {
        let config = FollowConfig {
            gap_wait: Duration::from_millis(30),
            retry: Duration::from_millis(150),
        };
        Self {
            array: FastArray::relay(),
            follower: FeedFollower::new(bus, "test.agents", config).unwrap(),
            clients,
        }
    }

    fn tick(&mut self, now: u32, moving: bool) {
        self.follower.poll(&mut self.array, Instant::now()).unwrap();
        if self.array.feed_frame().is_none() {
            return;
        }
        for client in &mut self.clients {
            client.tick(&mut self.array, now, moving);
        }
    }

    fn follows(&self, server: &FastArray<Agent>) -> bool {
        self.array == *server
            && server
                .ids()
                .all(|id| self.array.owner(id) == server.owner(id))
    }
}

/// Whether `ours` (a client of the server) and `theirs` (its twin on a
/// relay) hold the same agents, with the fields the client may see now.
fn same_view(
    ours: &FastArray<Agent>,
    theirs: &FastArray<Agent>,
    server: &FastArray<Agent>,
    client: u64,
) -> bool {
    ours.len() == theirs.len()
        && ours.iter().all(|(id, a)| {
            theirs.get(id).is_some_and(|b| {
                let owns = server.owner(id) == Some(client);
                (a.pos, a.hp) == (b.pos, b.hp) && (!owns || a.ammo == b.ammo)
            })
        })
}

/// Runs `ticks` ticks of `world` published on `publisher`, followed by
/// `relays`, each relay's clients twinned by `direct`; `event` is called
/// before each tick (to kill nodes, relays…). Then lets everything settle
/// (links healed, the server still committing) and checks convergence.
fn run<B: Bus, P: Bus>(
    world: &mut World,
    publisher: &mut FeedPublisher<P>,
    relays: &mut [Relay<B>],
    direct: &mut [Vec<Client>],
    ticks: u32,
    mut event: impl FnMut(u32, &mut [Relay<B>]),
    label: &str,
) {
    let deadline = ticks + 2_000;
    for now in 0.. {
        event(now, relays);
        let moving = now < ticks;
        if moving {
            world.step();
        }
        if now == ticks {
            for client in relays
                .iter_mut()
                .flat_map(|r| &mut r.clients)
                .chain(direct.iter_mut().flatten())
            {
                client.link.heal();
            }
        }
        world.array.commit();
        publisher.publish(&mut world.array).unwrap();
        let settled = |array: &FastArray<Agent>, clients: &[Client]| {
            clients
                .iter()
                .all(|c| array.is_settled(&c.state) && c.link.idle())
        };
        let done = !moving
            && relays.iter().all(|relay| relay.follows(&world.array))
            && relays
                .iter()
                .all(|relay| settled(&relay.array, &relay.clients))
            && direct.iter().all(|clients| settled(&world.array, clients));
        if done {
            break;
        }
        for relay in relays.iter_mut() {
            relay.tick(now, moving);
        }
        for clients in direct.iter_mut() {
            for client in clients {
                client.tick(&mut world.array, now, moving);
            }
        }
        assert!(
            now < deadline,
            "{label}: did not converge; relays at {:?} (follow {:?}, settled {:?}), server at {} (direct settled {:?}), stats {:?}",
            relays
                .iter()
                .map(|r| r.array.feed_frame())
                .collect::<Vec<_>>(),
            relays
                .iter()
                .map(|r| r.follows(&world.array))
                .collect::<Vec<_>>(),
            relays
                .iter()
                .map(|r| r
                    .clients
                    .iter()
                    .map(|c| (r.array.is_settled(&c.state), c.link.idle()))
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            world.array.frame(),
            direct
                .iter()
                .map(|cs| cs
                    .iter()
                    .map(|c| (world.array.is_settled(&c.state), c.link.idle()))
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            relays
                .iter()
                .map(|r| r.array.feed_stats())
                .collect::<Vec<_>>()
        );
        std::thread::sleep(TICK);
    }
    for (r, relay) in relays.iter().enumerate() {
        for (c, client) in relay.clients.iter().enumerate() {
            let twin = &direct[r][c];
            let number = client.state.client().unwrap();
            assert!(
                same_view(&twin.mirror, &client.mirror, &world.array, number),
                "{label}: relay {r} client {c} differs from its twin"
            );
        }
    }
}

fn clients(profile: &LinkProfile, seed: u64, numbers: &[u64]) -> Vec<Client> {
    numbers
        .iter()
        .enumerate()
        .map(|(n, &number)| Client::new(number, profile, seed * 64 + n as u64))
        .collect()
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn the_crate_example_runs() {
    let net = Net::start(1);
    let bus = net.connect(0, "example");
    let mut agents = FastArray::new();
    let a = agents.push(Agent::default());
    let mut publisher = FeedPublisher::new(bus.clone(), "world.agents").unwrap();
    let mut relay = FastArray::<Agent>::relay();
    let mut follower =
        FeedFollower::new(bus.clone(), "world.agents", FollowConfig::default()).unwrap();
    for tick in 0..100 {
        agents.get_mut(a).unwrap().pos[0] = tick;
        agents.commit();
        publisher.publish(&mut agents).unwrap();
        follower.poll(&mut relay, Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..50 {
        follower.poll(&mut relay, Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(relay, agents);
    let mut packet = Vec::new();
    relay
        .write_delta(&mut SendState::new(), 0, &mut packet)
        .unwrap();
    let mut client = FastArray::mirror();
    client.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(client, agents);
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn relays_on_a_three_node_cluster_serve_their_clients_as_the_server_would() {
    let net = Net::start(3);
    let connect = |node: usize, name: &str| net.connect(node, name);
    let mut world = World::new(1, 200);
    let mut publisher = FeedPublisher::new(connect(0, "server"), "test.agents").unwrap();
    let profile = LinkProfile::lossy(0.2);
    let mut relays = vec![
        Relay::new(connect(1, "relay-1"), clients(&profile, 1, &[1, 2])),
        Relay::new(connect(2, "relay-2"), clients(&profile, 2, &[3, 4])),
    ];
    let mut direct = vec![clients(&profile, 3, &[1, 2]), clients(&profile, 4, &[3, 4])];
    run(
        &mut world,
        &mut publisher,
        &mut relays,
        &mut direct,
        200,
        |_, _| {},
        "cluster",
    );
    for relay in &relays {
        let stats = relay.array.feed_stats();
        // Joined by snapshot, then followed by frames.
        assert!(stats.snapshots >= 1 && stats.frames > 0, "{stats:?}");
    }
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn a_killed_node_does_not_stop_the_relays() {
    let mut net = Net::start(3);
    let connect = |node: usize, name: &str| net.connect(node, name);
    let mut world = World::new(2, 100);
    let mut publisher = FeedPublisher::new(connect(0, "server"), "test.agents").unwrap();
    let profile = LinkProfile::lossy(0.1);
    let mut relays = vec![
        Relay::new(connect(1, "relay-1"), clients(&profile, 5, &[1, 2])),
        Relay::new(connect(2, "relay-2"), clients(&profile, 6, &[3])),
    ];
    let mut direct = vec![clients(&profile, 7, &[1, 2]), clients(&profile, 8, &[3])];
    let mut at_kill = None;
    run(
        &mut world,
        &mut publisher,
        &mut relays,
        &mut direct,
        300,
        |now, relays| {
            if now == 100 {
                // Relay 1's node dies: its client moves to another node.
                net.cluster.kill(1);
                at_kill = Some(relays[0].array.feed_stats());
            }
        },
        "node killed",
    );
    let before = at_kill.unwrap();
    let after = relays[0].array.feed_stats();
    assert!(
        after.frames > before.frames + 100,
        "relay 1 followed on after its node died: {before:?} then {after:?}"
    );
}

/// A bus that loses, repeats and holds back messages: the faults a real
/// bus has under load or failure, at rates no healthy one reaches.
struct Faulty<B> {
    inner: B,
    rng: std::cell::RefCell<ChaCha8Rng>,
    loss: f64,
}

struct FaultySubscription<S> {
    inner: S,
    rng: ChaCha8Rng,
    held: Vec<BusMessage>,
    loss: f64,
}

impl<B: Bus> Bus for Faulty<B> {
    type Subscription = FaultySubscription<B::Subscription>;

    fn publish(
        &self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), BusError> {
        if self.rng.borrow_mut().random_bool(self.loss) {
            return Ok(());
        }
        self.inner.publish(subject, reply, payload)
    }

    fn subscribe(&self, subject: &str) -> Result<Self::Subscription, BusError> {
        let seed = self.rng.borrow_mut().random();
        Ok(FaultySubscription {
            inner: self.inner.subscribe(subject)?,
            rng: ChaCha8Rng::seed_from_u64(seed),
            held: Vec::new(),
            loss: self.loss,
        })
    }

    fn new_inbox(&self) -> String {
        self.inner.new_inbox()
    }

    fn max_payload(&self) -> usize {
        self.inner.max_payload()
    }
}

impl<S: Subscription> Subscription for FaultySubscription<S> {
    fn try_next(&mut self) -> Option<BusMessage> {
        // A held message comes back late, now and then.
        if !self.held.is_empty() && self.rng.random_bool(0.3) {
            let at = self.rng.random_range(0..self.held.len());
            return Some(self.held.swap_remove(at));
        }
        loop {
            let message = self.inner.try_next()?;
            let roll: f64 = self.rng.random();
            if roll < self.loss {
                continue;
            }
            if roll < self.loss + 0.1 {
                self.held.push(message.clone());
            }
            if roll < self.loss + 0.2 {
                self.held.push(message);
                continue;
            }
            return Some(message);
        }
    }
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn relays_converge_over_a_bus_that_loses_repeats_and_reorders() {
    let net = Net::start(3);
    let connect = |node: usize, name: &str| net.connect(node, name);
    let mut world = World::new(3, 150);
    let mut publisher = FeedPublisher::new(connect(0, "server"), "test.agents").unwrap();
    let profile = LinkProfile::lossy(0.1);
    let faulty = |node: usize, seed: u64| Faulty {
        inner: connect(node, "faulty relay"),
        rng: std::cell::RefCell::new(ChaCha8Rng::seed_from_u64(seed)),
        loss: 0.1,
    };
    let mut relays = vec![
        Relay::new(faulty(1, 1), clients(&profile, 9, &[1, 2])),
        Relay::new(faulty(2, 2), clients(&profile, 10, &[3])),
    ];
    let mut direct = vec![clients(&profile, 11, &[1, 2]), clients(&profile, 12, &[3])];
    run(
        &mut world,
        &mut publisher,
        &mut relays,
        &mut direct,
        250,
        |_, _| {},
        "faulty bus",
    );
    for relay in &relays {
        let stats = relay.array.feed_stats();
        // The stats say what happened: late copies dropped, frames that
        // waited for a gap, snapshots to repair it.
        assert!(
            stats.stale > 0 && stats.early > 0 && stats.snapshots > 1,
            "{stats:?}"
        );
    }
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn clients_of_a_killed_relay_move_to_another_and_converge() {
    let net = Net::start(3);
    let connect = |node: usize, name: &str| net.connect(node, name);
    let mut world = World::new(4, 120);
    let mut publisher = FeedPublisher::new(connect(0, "server"), "test.agents").unwrap();
    let profile = LinkProfile::lossy(0.1);
    let mut relays = vec![
        Relay::new(connect(1, "relay-1"), clients(&profile, 13, &[1, 2])),
        Relay::new(connect(2, "relay-2"), clients(&profile, 14, &[3])),
    ];
    let mut direct = vec![Vec::new(), clients(&profile, 15, &[3, 1, 2])];
    let mut moved = false;
    run(
        &mut world,
        &mut publisher,
        &mut relays,
        &mut direct,
        250,
        |now, relays| {
            if now == 120 && !moved {
                // Relay 1 dies: its clients keep their mirrors, connect to
                // relay 2 and join it by snapshot, which their mirrors
                // apply as changes.
                moved = true;
                let gone = std::mem::take(&mut relays[0].clients);
                relays[0].array = FastArray::relay();
                for mut client in gone {
                    let number = client.state.client().unwrap();
                    let mut state = SendState::new();
                    state.set_client(number).unwrap();
                    let mut bytes = Vec::new();
                    relays[1]
                        .array
                        .write_snapshot_for(&mut state, &mut bytes)
                        .unwrap();
                    client.mirror.apply_snapshot(&bytes).unwrap();
                    client.state = state;
                    client.link = Link::new(LinkProfile::lossy(0.1), number + 99);
                    relays[1].clients.push(client);
                }
            }
        },
        "relay killed",
    );
    assert_eq!(relays[1].clients.len(), 3);
}

/// A bus that loses the publishes it is told to.
struct Losing<B> {
    inner: B,
    publishes: std::cell::Cell<u32>,
    lose: Vec<u32>,
}

impl<B: Bus> Bus for Losing<B> {
    type Subscription = B::Subscription;

    fn publish(
        &self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), BusError> {
        let n = self.publishes.get();
        self.publishes.set(n + 1);
        if self.lose.contains(&n) {
            return Ok(());
        }
        self.inner.publish(subject, reply, payload)
    }

    fn subscribe(&self, subject: &str) -> Result<Self::Subscription, BusError> {
        self.inner.subscribe(subject)
    }

    fn new_inbox(&self) -> String {
        self.inner.new_inbox()
    }

    fn max_payload(&self) -> usize {
        self.inner.max_payload()
    }
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn a_lost_frame_is_repaired_before_the_wait_overflows() {
    // Frames after the lost one wait for it; the world stands still, so
    // only empty frames follow, and the relay asks for a snapshot after
    // `gap_wait`, long before 64 frames have waited (`resyncs` counts
    // those overflows).
    let net = Net::start(1);
    let bus = net.connect(0, "quiet");
    let mut world = World::new(6, 50);
    let mut relay = FastArray::<Agent>::relay();
    let config = FollowConfig {
        gap_wait: Duration::from_millis(20),
        retry: Duration::from_millis(100),
    };
    let mut follower = FeedFollower::new(bus.clone(), "quiet.agents", config).unwrap();
    let mut publisher = FeedPublisher::new(
        Losing {
            inner: bus,
            publishes: std::cell::Cell::new(0),
            lose: Vec::new(),
        },
        "quiet.agents",
    )
    .unwrap();
    let mut tick = |world: &mut World, publisher: &mut FeedPublisher<_>, relay: &mut _, moving| {
        if moving {
            world.step();
        }
        world.array.commit();
        publisher.publish(&mut world.array).unwrap();
        std::thread::sleep(TICK);
        follower.poll(relay, Instant::now()).unwrap();
    };
    let start = Instant::now();
    while relay.feed_frame().is_none() {
        tick(&mut world, &mut publisher, &mut relay, false);
        assert!(start.elapsed() < Duration::from_secs(10), "never joined");
    }
    // The next publish, a frame with changes, is lost.
    let next = publisher.bus().publishes.get();
    publisher.bus_mut().lose.push(next);
    tick(&mut world, &mut publisher, &mut relay, true);
    let lost_at = world.array.frame();
    while relay != world.array {
        tick(&mut world, &mut publisher, &mut relay, false);
        assert!(start.elapsed() < Duration::from_secs(10), "never repaired");
    }
    let stats = relay.feed_stats();
    assert!(
        stats.snapshots >= 2 && stats.resyncs == 0,
        "repaired by a snapshot asked for the gap: {stats:?}"
    );
    assert!(
        world.array.frame() - lost_at < 60,
        "repaired {} frames after the loss",
        world.array.frame() - lost_at
    );
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn an_object_is_relayed_too() {
    let net = Net::start(1);
    let bus = net.connect(0, "object");
    let mut game = fastarray::Replicated::new(Agent::default());
    game.set_owner(Some(2)).unwrap();
    let mut publisher = FeedPublisher::new(bus.clone(), "world.match").unwrap();
    let mut relay = fastarray::Replicated::<Agent>::relay();
    let mut follower = FeedFollower::new(bus, "world.match", FollowConfig::default()).unwrap();
    let start = Instant::now();
    for tick in 0u16.. {
        if tick < 50 {
            game.get_mut().ammo = tick;
        }
        game.commit();
        publisher.publish(&mut game).unwrap();
        follower.poll(&mut relay, Instant::now()).unwrap();
        if tick >= 50 && relay.get() == game.get() && relay.owner() == Some(2) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the object never arrived"
        );
        std::thread::sleep(TICK);
    }
    let (mut state, mut client) = (SendState::new(), fastarray::Replicated::<Agent>::mirror());
    state.set_client(2).unwrap();
    let mut packet = Vec::new();
    relay.write_delta(&mut state, 0, &mut packet).unwrap();
    client.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(client.get().ammo, 49, "the owner sees its owner-only field");
}

/// A bus whose messages carry at most 16 KiB: a snapshot of a few
/// thousand agents takes several (NATS's own 1 MiB takes ~90 000 agents,
/// too slow to build in a debug test).
struct SmallMessages<B>(B);

impl<B: Bus> Bus for SmallMessages<B> {
    type Subscription = B::Subscription;

    fn publish(
        &self,
        subject: &str,
        reply: Option<&str>,
        payload: Vec<u8>,
    ) -> Result<(), BusError> {
        assert!(
            payload.len() <= self.max_payload(),
            "{} bytes",
            payload.len()
        );
        self.0.publish(subject, reply, payload)
    }

    fn subscribe(&self, subject: &str) -> Result<Self::Subscription, BusError> {
        self.0.subscribe(subject)
    }

    fn new_inbox(&self) -> String {
        self.0.new_inbox()
    }

    fn max_payload(&self) -> usize {
        16 << 10
    }
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn a_snapshot_larger_than_a_bus_message_goes_in_chunks() {
    let net = Net::start(1);
    let bus = net.connect(0, "large");
    let mut world = World::new(7, 5_000);
    let mut publisher = FeedPublisher::new(SmallMessages(bus.clone()), "large.agents").unwrap();
    let mut relay = FastArray::<Agent>::relay();
    let mut follower = FeedFollower::new(bus, "large.agents", FollowConfig::default()).unwrap();
    let (start, mut sent) = (Instant::now(), 0);
    while relay.feed_frame().is_none() {
        world.step();
        world.array.commit();
        sent += publisher.publish(&mut world.array).unwrap().snapshot_bytes;
        follower.poll(&mut relay, Instant::now()).unwrap();
        assert!(start.elapsed() < Duration::from_secs(10), "never joined");
        std::thread::sleep(TICK);
    }
    assert!(
        sent > 3 * (16 << 10),
        "{sent} bytes of snapshot in messages of 16 KiB"
    );
    // Frames follow the join; the relay catches up with the server.
    while relay != world.array {
        world.array.commit();
        publisher.publish(&mut world.array).unwrap();
        follower.poll(&mut relay, Instant::now()).unwrap();
        assert!(start.elapsed() < Duration::from_secs(10), "never caught up");
        std::thread::sleep(TICK);
    }
}
