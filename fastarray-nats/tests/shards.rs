//! Shards over a real NATS cluster (`nats-server` processes started by
//! each test; ignored in the plain `cargo test --workspace`, run by
//! `.ci/run` with `--ignored`): two shards hand walkers across their border
//! by request and reply ([`HandoffPort`]), and a relay that follows both
//! feeds ([`FeedFollower::of_shard`]) serves one world, in which a walker
//! that crosses is never removed. Each shard ghosts its walkers near the
//! border to the other ([`GhostSource`]), through a node that dies and a
//! shard whose ghost stream restarts; and a shard killed and restarted from
//! its save rejoins its relay and its neighbour.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fastarray::{
    FastArray, GhostFeed, Replicate, ReplicationId, SendState, ShardId, WithCallbacks,
};
use fastarray_nats::{
    Bus, FeedFollower, FeedPublisher, FollowConfig, GhostSource, HandoffConfig, HandoffPort,
    NatsBus, Subscription, handoff_subject,
};
use fastarray_testkit::link::{Link, LinkProfile};
use fastarray_testkit::proxies::Proxies;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;
use common::Net;

#[derive(Replicate, Clone, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
struct Walker {
    x: i32,
    hp: u8,
    #[replicate(owner_only)]
    purse: u16,
}

const TICK: Duration = Duration::from_millis(5);
const NAMES: [&str; 2] = ["test.west", "test.east"];

/// West of 0 is shard 0's, east shard 1's.
fn region(x: i32) -> ShardId {
    ShardId::new(u16::from(x >= 0))
}

struct Shard {
    array: FastArray<Walker>,
    publisher: FeedPublisher<NatsBus>,
    port: HandoffPort<NatsBus>,
}

/// A relay on node 2, and its followers of both shards' feeds.
fn relay_of_both(net: &Net) -> (FastArray<Walker>, Vec<FeedFollower<NatsBus>>) {
    let bus = net.connect(2, "relay");
    let followers = (0..2)
        .map(|k| {
            FeedFollower::new(bus.clone(), NAMES[k], FollowConfig::default())
                .unwrap()
                .of_shard(ShardId::new(k as u16))
        })
        .collect();
    (FastArray::relay(), followers)
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn two_shards_hand_walkers_across_their_border_and_a_relay_merges_them() {
    let net = Net::start(3);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut shards: Vec<Shard> = (0..2)
        .map(|k| {
            let bus = net.connect(k, NAMES[k]);
            let mut array = FastArray::shard(ShardId::new(k as u16));
            for n in 0..30 {
                let x = if k == 0 { -1 - n } else { n };
                let id = array.push(Walker {
                    x,
                    hp: 100,
                    purse: 0,
                });
                array.set_owner(id, Some(1 + n as u64 % 3)).unwrap();
            }
            array.commit();
            Shard {
                array,
                publisher: FeedPublisher::new(bus.clone(), NAMES[k]).unwrap(),
                port: HandoffPort::new(bus, NAMES[k], HandoffConfig::default()).unwrap(),
            }
        })
        .collect();
    let (mut relay, mut followers) = relay_of_both(&net);
    let profile = LinkProfile::lossy(0.1);
    let mut clients: Vec<(SendState, FastArray<Walker>, Link)> = (1..=3)
        .map(|number| {
            let mut state = SendState::new();
            state.set_client(number).unwrap();
            (
                state,
                FastArray::mirror(),
                Link::new(profile.clone(), number),
            )
        })
        .collect();

    let mut destroyed = BTreeSet::new();
    let (mut crossed, mut confirmed) = (0, 0);
    let moving_until = 300;
    let mut joined = false;
    for now in 0u32.. {
        let moving = now < moving_until;
        let clock = Instant::now();
        for (k, shard) in shards.iter_mut().enumerate() {
            if moving {
                let ids: Vec<ReplicationId> = shard.array.ids().collect();
                for id in ids {
                    let (step, hurt) = (rng.random_range(-3..=3), rng.random_bool(0.05));
                    let mut walker = shard.array.get_mut(id).unwrap();
                    walker.x += step;
                    if hurt {
                        walker.hp = walker.hp.saturating_sub(7);
                        walker.purse += 1;
                    }
                }
                if rng.random_bool(0.05) {
                    let id = shard.array.ids().next().unwrap();
                    shard.array.remove(id);
                    destroyed.insert(id);
                    let x = if k == 0 { -5 } else { 5 };
                    shard.array.push(Walker {
                        x,
                        hp: 100,
                        purse: 0,
                    });
                }
                let leaving: Vec<(ReplicationId, ShardId)> = (shard.array.iter())
                    .map(|(id, walker)| (id, region(walker.x)))
                    .filter(|&(_, to)| to.get() != k as u16)
                    .collect();
                for (id, to) in leaving {
                    let to_name = NAMES[usize::from(to.get())];
                    shard
                        .port
                        .hand_off(&mut shard.array, id, to, to_name, clock)
                        .unwrap();
                    crossed += 1;
                }
            }
            let handled = shard.port.poll(&mut shard.array, clock).unwrap();
            confirmed += handled.confirmed;
            assert_eq!(handled.taken_back + handled.refused, 0, "{handled:?}");
            shard.array.commit();
            shard.publisher.publish(&mut shard.array).unwrap();
        }
        let before: Vec<ReplicationId> = relay.ids().collect();
        for follower in &mut followers {
            follower.poll(&mut relay, clock).unwrap();
        }
        let vanished: Vec<_> = (before.iter())
            .filter(|&&id| !relay.contains(id) && !destroyed.contains(&id))
            .collect();
        assert!(
            vanished.is_empty(),
            "tick {now}: {vanished:?} left the relay"
        );
        joined |= relay.feed_frame_from(ShardId::new(0)).is_some()
            && relay.feed_frame_from(ShardId::new(1)).is_some();
        for (state, mirror, link) in &mut clients {
            if joined && (moving || !relay.is_settled(state)) {
                let mut bytes = Vec::new();
                relay.write_delta(state, now, &mut bytes).unwrap();
                link.send(now, now, bytes);
            }
            if now == moving_until {
                link.heal();
            }
            for bytes in link.deliver(now) {
                mirror.apply_delta(&bytes, &mut ()).unwrap();
            }
            for report in link.reports(now) {
                report.tell(state);
            }
        }
        if !moving {
            let merged = relay.len() == shards.iter().map(|s| s.array.len()).sum::<usize>()
                && shards.iter().all(|shard| {
                    shard.port.in_flight() == 0
                        && (shard.array.iter()).all(|(id, walker)| {
                            relay.get(id) == Some(walker)
                                && relay.owner(id) == shard.array.owner(id)
                        })
                });
            let settled = clients
                .iter()
                .all(|(state, _, link)| relay.is_settled(state) && link.idle());
            if merged && settled {
                break;
            }
            assert!(now < moving_until + 400, "not settled: merged {merged}");
        }
        std::thread::sleep(TICK);
    }
    for (state, mirror, _) in &clients {
        for (id, walker) in relay.iter() {
            let seen = mirror
                .get(id)
                .unwrap_or_else(|| panic!("client lacks {id}"));
            assert_eq!((seen.x, seen.hp), (walker.x, walker.hp));
            if relay.owner(id) == state.client() {
                assert_eq!(seen.purse, walker.purse);
            }
        }
        assert_eq!(mirror.len(), relay.len());
    }
    let stats = relay.feed_stats();
    assert!(
        crossed > 20 && confirmed == crossed,
        "{crossed} crossed, {confirmed} confirmed"
    );
    assert!(stats.handoffs > 0, "{stats:?}");
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn a_handoff_refused_or_never_answered_is_taken_back() {
    let net = Net::start(1);
    let bus = net.connect(0, "west");
    let config = HandoffConfig {
        retry: Duration::from_millis(20),
        give_up: Duration::from_millis(150),
    };
    let mut west = FastArray::<Walker>::shard(ShardId::new(0));
    let lost = west.push(Walker {
        x: 1,
        hp: 9,
        purse: 3,
    });
    let refused = west.push(Walker {
        x: 2,
        hp: 8,
        purse: 4,
    });
    west.commit();
    let mut port = HandoffPort::new(bus.clone(), "test.west", config).unwrap();
    // An array that is not a shard refuses what it is handed.
    let mut plain = FastArray::<Walker>::new();
    let mut plain_port = HandoffPort::new(net.connect(0, "plain"), "test.plain", config).unwrap();
    let start = Instant::now();
    port.hand_off(&mut west, lost, ShardId::new(1), "test.nowhere", start)
        .unwrap();
    port.hand_off(&mut west, refused, ShardId::new(2), "test.plain", start)
        .unwrap();
    assert!(west.is_empty());
    let mut back = fastarray_nats::Handled::default();
    while west.len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(5), "never taken back");
        std::thread::sleep(Duration::from_millis(5));
        let handled = plain_port.poll(&mut plain, Instant::now()).unwrap();
        assert_eq!(handled.adopted, 0);
        let handled = port.poll(&mut west, Instant::now()).unwrap();
        back.taken_back += handled.taken_back;
        back.resent += handled.resent;
    }
    assert_eq!(west.get(lost).map(|w| w.purse), Some(3));
    assert_eq!(west.get(refused).map(|w| w.hp), Some(8));
    assert_eq!(back.taken_back, 2);
    assert!(back.resent > 0, "the unanswered one was sent again");
    assert_eq!(port.in_flight(), 0);
    assert!(plain.is_empty());
}

/// How far across the border a shard sees its neighbour's walkers.
const REACH: i32 = 6;

/// Whether shard `k`'s walker `w` is within the other shard's reach.
fn near_other(k: usize, w: &Walker) -> bool {
    if k == 0 { w.x >= -REACH } else { w.x < REACH }
}

/// What a ghost of `w` holds: every field but the owner-only purse.
fn ghost_of(w: &Walker) -> Walker {
    Walker {
        purse: 0,
        ..w.clone()
    }
}

/// Two shards of 20 walkers each, either side of x = 0, on the bus.
fn two_nodes(net: &Net) -> Vec<Option<Node>> {
    (0..2)
        .map(|k| {
            let mut array = FastArray::shard(ShardId::new(k as u16));
            for n in 0..20 {
                let x = if k == 0 { -1 - n } else { n };
                array.push(Walker {
                    x,
                    hp: 100,
                    purse: 0,
                });
            }
            array.commit();
            Some(Node::start(net.connect(k, NAMES[k]), k, array))
        })
        .collect()
}

/// Whether shard `k`'s ghosts in `ghosts` are exactly its walkers within
/// the other's reach.
fn ghosts_hold(shard: &FastArray<Walker>, k: usize, ghosts: &FastArray<Walker>) -> bool {
    let near: Vec<_> = (shard.iter()).filter(|(_, w)| near_other(k, w)).collect();
    ghosts.len() == near.len()
        && near
            .iter()
            .all(|(id, w)| ghosts.get(*id) == Some(&ghost_of(w)))
}

/// Whether neither shard has a handoff in flight and each holds exactly
/// the other's walkers within its reach as ghosts.
fn settled_and_ghosted(west: &Node, east: &Node) -> bool {
    west.port.in_flight() == 0
        && east.port.in_flight() == 0
        && ghosts_hold(&west.array, 0, &east.ghosts)
        && ghosts_hold(&east.array, 1, &west.ghosts)
}

/// Whether a node's proxies (kept from its ghost array's callbacks alone)
/// are its ghosts.
fn proxies_follow(node: &Node) -> bool {
    node.proxies.follow(&node.ghosts)
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn two_shards_ghost_their_border_walkers_to_each_other_through_faults() {
    let mut net = Net::start(3);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut nodes = two_nodes(&net);
    let moving_until = 300;
    let mut before_restart = None;
    // Whether each side held a ghost after east's stream restarted (at the
    // end either may hold none: where the walkers stop depends on when
    // their handoffs were answered).
    let mut ghosted_after_restart = [false; 2];
    for now in 0u32.. {
        let moving = now < moving_until;
        let clock = Instant::now();
        if now == 100 {
            // East's node dies: its client moves to another node.
            net.cluster.kill(1);
        }
        let [Some(west), Some(east)] = &mut nodes[..] else {
            unreachable!("both run");
        };
        if now == 200 {
            // East's ghost stream restarts, as a restarted shard's does:
            // west's ghost array must resync from a snapshot.
            before_restart = Some(west.ghosts.feed_stats());
            east.feed = GhostFeed::new();
        }
        west.tick(0, &mut rng, moving, clock);
        east.tick(1, &mut rng, moving, clock);
        assert!(proxies_follow(west) && proxies_follow(east), "tick {now}");
        if now > 200 {
            ghosted_after_restart[0] |= !west.ghosts.is_empty();
            ghosted_after_restart[1] |= !east.ghosts.is_empty();
        }
        if !moving {
            if settled_and_ghosted(west, east) {
                break;
            }
            assert!(
                now < moving_until + 400,
                "not converged: {:?} {:?}",
                west.ghosts.feed_stats(),
                east.ghosts.feed_stats()
            );
        }
        std::thread::sleep(TICK);
    }
    let [Some(west), Some(east)] = &nodes[..] else {
        unreachable!("both run");
    };
    let (stats, before) = (west.ghosts.feed_stats(), before_restart.unwrap());
    assert!(
        stats.snapshots > before.snapshots,
        "west resynced: {before:?} {stats:?}"
    );
    assert_eq!(ghosted_after_restart, [true; 2]);
    assert!(west.kept + east.kept > 0, "no ghost kept through a handoff");
}

/// A shard with everything it runs on the bus: handoffs, its feed for
/// relays, its ghosts for the other shard and its ghosts of it.
struct Node {
    array: FastArray<Walker>,
    port: HandoffPort<NatsBus>,
    publisher: FeedPublisher<NatsBus>,
    feed: GhostFeed,
    ghost_publisher: FeedPublisher<NatsBus>,
    ghosts: FastArray<Walker>,
    proxies: Proxies<Walker>,
    /// Ghosts kept of walkers handed off.
    kept: u32,
    ghost_follower: FeedFollower<NatsBus>,
}

impl Node {
    /// Shard `k` of `array`, on the bus `bus` (a restarted one has new
    /// streams: its relay and its neighbour resync from snapshots).
    fn start(bus: NatsBus, k: usize, array: FastArray<Walker>) -> Self {
        let ghosts_of = |k: usize| format!("{}.ghosts", NAMES[k]);
        Self {
            array,
            port: HandoffPort::new(bus.clone(), NAMES[k], HandoffConfig::default()).unwrap(),
            publisher: FeedPublisher::new(bus.clone(), NAMES[k]).unwrap(),
            feed: GhostFeed::new(),
            ghost_publisher: FeedPublisher::new(bus.clone(), &ghosts_of(k)).unwrap(),
            ghosts: FastArray::ghost(),
            proxies: Proxies::default(),
            kept: 0,
            ghost_follower: FeedFollower::new(bus, &ghosts_of(1 - k), FollowConfig::default())
                .unwrap(),
        }
    }

    /// One tick: walkers move (if `moving`) and cross, then the commit
    /// and everything published and followed.
    fn tick(&mut self, k: usize, rng: &mut ChaCha8Rng, moving: bool, clock: Instant) {
        if moving {
            let ids: Vec<ReplicationId> = self.array.ids().collect();
            for id in ids {
                let mut walker = self.array.get_mut(id).unwrap();
                walker.x += rng.random_range(-2..=2);
                walker.purse += u16::from(rng.random_bool(0.1));
            }
            let leaving: Vec<(ReplicationId, ShardId)> = (self.array.iter())
                .map(|(id, walker)| (id, region(walker.x)))
                .filter(|&(_, to)| to.get() != k as u16)
                .collect();
            for (id, to) in leaving {
                // This shard keeps a ghost of it until the other's feed
                // says where it went.
                let to_name = NAMES[usize::from(to.get())];
                let mut sink = WithCallbacks::new(&mut self.ghosts, &mut self.proxies);
                (self.port)
                    .hand_off_keeping_ghost(&mut self.array, &mut sink, id, to, to_name, clock)
                    .unwrap();
                self.kept += u32::from(self.ghosts.is_kept(id));
            }
        }
        let handled = self.port.poll(&mut self.array, clock).unwrap();
        assert_eq!(handled.refused, 0, "{handled:?}");
        for &id in self.port.taken_back() {
            self.ghosts.drop_kept(id, &mut self.proxies);
        }
        self.array.commit();
        self.publisher.publish(&mut self.array).unwrap();
        let near = |w: &Walker| near_other(k, w);
        let mut source = GhostSource::new(&self.array, &mut self.feed, near);
        self.ghost_publisher.publish(&mut source).unwrap();
        let mut sink = WithCallbacks::new(&mut self.ghosts, &mut self.proxies);
        self.ghost_follower.poll(&mut sink, clock).unwrap();
    }
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn a_shard_restarted_from_its_save_rejoins_its_relay_and_its_neighbour() {
    let net = Net::start(3);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut nodes = two_nodes(&net);
    let (mut relay, mut followers) = relay_of_both(&net);
    let (kill_at, restart_at, moving_until) = (100, 110, 250);
    let mut save = String::new();
    let mut east_resyncs = None;
    for now in 0u32.. {
        let clock = Instant::now();
        let moving = now < moving_until;
        if now == kill_at {
            // East saves, then its process dies: its bus client with it.
            let east = nodes[1].take().unwrap();
            save = serde_json::to_string(&east.array).unwrap();
        }
        if now == restart_at {
            let array: FastArray<Walker> = serde_json::from_str(&save).unwrap();
            assert!(array.is_shard() && array.shard_id() == ShardId::new(1));
            east_resyncs = Some(relay.feed_stats().snapshots);
            nodes[1] = Some(Node::start(net.connect(1, "east-restarted"), 1, array));
        }
        for (k, node) in nodes.iter_mut().enumerate() {
            if let Some(node) = node {
                node.tick(k, &mut rng, moving, clock);
            }
        }
        for follower in &mut followers {
            follower.poll(&mut relay, clock).unwrap();
        }
        if !moving {
            let [Some(west), Some(east)] = &nodes[..] else {
                unreachable!("both run again");
            };
            let shards = [&west.array, &east.array];
            let merged = relay.len() == west.array.len() + east.array.len()
                && shards
                    .iter()
                    .all(|shard| shard.iter().all(|(id, w)| relay.get(id) == Some(w)));
            let settled = settled_and_ghosted(west, east);
            if merged && settled {
                break;
            }
            assert!(
                now < moving_until + 400,
                "not converged: merged {merged}, settled and ghosted {settled}, relay {:?}",
                relay.feed_stats()
            );
        }
        std::thread::sleep(TICK);
    }
    let snapshots = relay.feed_stats().snapshots;
    assert!(
        snapshots > east_resyncs.unwrap(),
        "the relay resynced from the restarted east: {snapshots}"
    );
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn a_handoff_adopted_after_it_was_given_up_is_released() {
    let net = Net::start(1);
    let config = HandoffConfig {
        retry: Duration::from_millis(50),
        give_up: Duration::from_millis(300),
    };
    let mut shards: Vec<(FastArray<Walker>, HandoffPort<NatsBus>)> = (0..2)
        .map(|k| {
            let port = HandoffPort::new(net.connect(0, NAMES[k]), NAMES[k], config).unwrap();
            (FastArray::shard(ShardId::new(k as u16)), port)
        })
        .collect();
    let id = shards[0].0.push(Walker {
        x: 1,
        hp: 9,
        purse: 2,
    });
    shards[0].0.commit();
    let (west, port) = &mut shards[0];
    port.hand_off(west, id, ShardId::new(1), NAMES[1], Instant::now())
        .unwrap();
    // East is busy past west's patience: west takes the walker back.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (west, port) = &mut shards[0];
        let handled = port.poll(west, Instant::now()).unwrap();
        west.commit();
        if handled.taken_back > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "never taken back");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(shards[0].0.tenure(id), 2);
    // East wakes up, adopts the handoff (its copies are held already) and
    // replies, and releases it: west asked for the release when it gave up.
    // West hears the late reply, then the answer to its release (east sent
    // them in that order on one subject). Polled until west has the answer:
    // east may adopt and release in one poll, before west heard either
    // (made sure of: both requests reach east before it polls).
    std::thread::sleep(Duration::from_millis(100));
    let (mut adopted, mut overruled, mut released, mut answered) = (0, 0, 0, 0);
    while answered == 0 {
        for (k, (array, port)) in shards.iter_mut().enumerate() {
            let handled = port.poll(array, Instant::now()).unwrap();
            array.commit();
            adopted += handled.adopted;
            released += handled.released;
            if k == 0 {
                overruled += handled.overruled;
                answered += handled.release_answered;
            }
        }
        assert!(Instant::now() < deadline, "never released");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!((adopted, overruled, released, answered), (1, 1, 1, 1));
    assert!(shards[0].0.contains(id) && !shards[1].0.contains(id));
    assert_eq!(
        shards[0].0.get(id),
        Some(&Walker {
            x: 1,
            hp: 9,
            purse: 2
        })
    );
}

#[test]
#[ignore = "needs nats-server: .ci/run installs it and runs these with --ignored"]
fn a_shard_that_adopted_and_restarted_from_its_save_before_replying_releases_the_item() {
    let net = Net::start(1);
    let config = HandoffConfig {
        retry: Duration::from_millis(50),
        give_up: Duration::from_millis(300),
    };
    let mut west_port = HandoffPort::new(net.connect(0, NAMES[0]), NAMES[0], config).unwrap();
    let mut west = FastArray::shard(ShardId::new(0));
    let walker = Walker {
        x: 1,
        hp: 9,
        purse: 2,
    };
    let id = west.push(walker.clone());
    west.commit();
    // East's process takes the handoff off the bus, adopts it, saves, and
    // dies before it replies.
    let east_bus = net.connect(0, "east");
    let mut requests = east_bus.subscribe(&handoff_subject(NAMES[1])).unwrap();
    // A flush only writes the subscription to the socket: west's handoff,
    // on another connection, could reach the server first and go nowhere
    // (west resends it only when polled). The server has the subscription
    // once a message east publishes after it comes back.
    (east_bus.publish(&handoff_subject(NAMES[1]), None, b"probe".to_vec())).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while requests
        .try_next()
        .is_none_or(|probe| probe.payload != b"probe")
    {
        assert!(Instant::now() < deadline, "the probe never came back");
        std::thread::sleep(Duration::from_millis(5));
    }
    west_port
        .hand_off(&mut west, id, ShardId::new(1), NAMES[1], Instant::now())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let request = loop {
        if let Some(request) = requests.try_next() {
            break request;
        }
        assert!(Instant::now() < deadline, "no handoff came");
        std::thread::sleep(Duration::from_millis(5));
    };
    // The payload: its serial (8 bytes), 0 for a handoff, the handoff.
    assert_eq!(request.payload[8], 0);
    let mut east = FastArray::<Walker>::shard(ShardId::new(1));
    east.adopt(&request.payload[9..]).unwrap();
    east.commit();
    let save = serde_json::to_string(&east).unwrap();
    drop((east, requests, east_bus));

    // West hears nothing and takes the walker back.
    loop {
        let handled = west_port.poll(&mut west, Instant::now()).unwrap();
        west.commit();
        if handled.taken_back > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "never taken back");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(west.tenure(id), 2);
    // East stays down a while (west asks for the release meanwhile), then
    // restarts from its save: it holds the walker too, until the release
    // comes.
    std::thread::sleep(Duration::from_millis(200));
    let mut east: FastArray<Walker> = serde_json::from_str(&save).unwrap();
    assert!(east.contains(id), "the save holds the walker");
    let mut east_port =
        HandoffPort::new(net.connect(0, "east-restarted"), NAMES[1], config).unwrap();
    let (mut released, mut answered) = (0, 0);
    while answered == 0 {
        let handled = east_port.poll(&mut east, Instant::now()).unwrap();
        east.commit();
        released += handled.released;
        let handled = west_port.poll(&mut west, Instant::now()).unwrap();
        west.commit();
        answered += handled.release_answered;
        assert!(Instant::now() < deadline, "the release never came");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(released, 1);
    assert!(!east.contains(id), "a second authority of the walker");
    assert_eq!(west.get(id), Some(&walker));
}
