//! Shards and handoff: several servers, each the authority of the items in
//! its region and of an id range of its own (`FastArray::shard`), hand an
//! item that crosses a border to the next (`hand_off`, `adopt`), and a
//! relay that follows every shard's feed serves one world, in which a
//! handed-off item is a change, never a removal and an add.

use fastarray::{DecodeError, FastArray, Replicate, ReplicationId, SendError, SendState, ShardId};

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
pub(crate) struct Walker {
    pub(crate) x: i32,
    pub(crate) hp: u16,
    #[replicate(owner_only)]
    pub(crate) secret: u32,
    #[replicate(initial_only)]
    pub(crate) badge: u32,
}

pub(crate) fn walker(x: i32) -> Walker {
    Walker {
        x,
        hp: 100,
        secret: x as u32,
        badge: (x as u32).wrapping_add(7),
    }
}

const WEST: ShardId = ShardId::new(0);
const EAST: ShardId = ShardId::new(1);

fn feed(shard: &FastArray<Walker>) -> Vec<u8> {
    let mut bytes = Vec::new();
    shard.write_feed(&mut bytes).unwrap();
    bytes
}

fn feed_snapshot(shard: &mut FastArray<Walker>) -> Vec<u8> {
    let mut bytes = Vec::new();
    shard.write_feed_snapshot(&mut bytes).unwrap();
    bytes
}

fn hand_off(from: &mut FastArray<Walker>, id: ReplicationId, to: ShardId) -> Vec<u8> {
    let mut bytes = Vec::new();
    from.hand_off(id, to, &mut bytes).unwrap();
    bytes
}

/// A relay that joined both shards.
fn relay_of(shards: &mut [&mut FastArray<Walker>]) -> FastArray<Walker> {
    let mut relay = FastArray::relay();
    for shard in shards {
        relay.apply_feed(&feed_snapshot(shard)).unwrap();
    }
    relay
}

/// The relay holds every shard's items, owners included, and nothing else.
fn assert_merges(relay: &FastArray<Walker>, shards: &[&FastArray<Walker>], label: &str) {
    let total: usize = shards.iter().map(|shard| shard.len()).sum();
    assert_eq!(relay.len(), total, "{label}: items held");
    for shard in shards {
        for (id, item) in shard.iter() {
            assert_eq!(relay.get(id), Some(item), "{label}: item {id}");
            assert_eq!(relay.owner(id), shard.owner(id), "{label}: owner of {id}");
        }
    }
}

/// A west and an east shard.
fn shards() -> (FastArray<Walker>, FastArray<Walker>) {
    (FastArray::shard(WEST), FastArray::shard(EAST))
}

/// A client of a relay.
struct Client {
    state: SendState,
    mirror: FastArray<Walker>,
}

impl Client {
    /// A client (numbered `number`, if given) that joined `relay`.
    fn join(relay: &mut FastArray<Walker>, number: Option<u64>) -> Self {
        let mut client = Self {
            state: SendState::new(),
            mirror: FastArray::mirror(),
        };
        if let Some(number) = number {
            client.state.set_client(number).unwrap();
        }
        client.sync(relay);
        client
    }

    /// Writes, applies and acknowledges one delta; returns (added, gone,
    /// changed) as the client saw them (gone: removed, or left its view,
    /// as an item that left a relay's shards does).
    fn sync(&mut self, relay: &mut FastArray<Walker>) -> (usize, usize, usize) {
        let packet = self.state.packets_in_flight() as u32 + 1_000;
        let mut bytes = Vec::new();
        relay
            .write_delta(&mut self.state, packet, &mut bytes)
            .unwrap();
        let report = self.mirror.apply_delta(&bytes, &mut ()).unwrap();
        self.state.on_ack(packet);
        (
            report.added,
            report.removed + report.left_scope,
            report.changed,
        )
    }
}

#[test]
fn each_shard_pushes_ids_of_its_own_range() {
    let mut east = FastArray::shard(EAST);
    assert_eq!(east.shard_id(), EAST);
    assert_eq!(FastArray::<Walker>::new().shard_id(), WEST);
    let a = east.push(walker(1));
    let b = east.push(walker(2));
    assert_eq!(
        (a, b),
        (
            EAST.first_id(),
            ReplicationId::from_raw(EAST.first_id().to_raw() + 1)
        )
    );
    assert!(EAST.ids().contains(&b.to_raw()));
    assert_eq!(ShardId::of(b), EAST);
    // Its clients are served by relays.
    east.commit();
    let (mut state, mut bytes) = (SendState::new(), Vec::new());
    assert_eq!(
        east.write_delta(&mut state, 0, &mut bytes),
        Err(SendError::ShardClients { shard: EAST })
    );
    assert!(east.scope(&mut state).is_err());
    let mut relay = relay_of(&mut [&mut east]);
    let client = Client::join(&mut relay, None);
    assert_eq!(client.mirror.ids().collect::<Vec<_>>(), [a, b]);
    assert_eq!(client.mirror.get(b).map(|w| w.x), Some(2));
}

#[test]
fn a_handoff_moves_the_item_with_its_id_owner_and_every_field() {
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.set_owner(id, Some(4)).unwrap();
    west.commit();
    west.get_mut(id).unwrap().badge = 99; // an initial_only change: no delta carries it
    west.commit();
    let message = hand_off(&mut west, id, EAST);
    assert!(!west.contains(id), "gone from the west at once");
    assert_eq!(east.adopt(&message), Ok(id));
    assert_eq!(east.get(id).map(|w| w.badge), Some(99));
    assert_eq!(east.owner(id), Some(4));
    west.commit();
    let changes = east.commit();
    assert_eq!(changes.added(), [id]);
    // The east shard is its authority now: it changes it and hands it on.
    east.get_mut(id).unwrap().hp = 5;
    east.commit();
    let back = hand_off(&mut east, id, WEST);
    assert_eq!(west.adopt(&back), Ok(id));
    assert_eq!(west.get(id).map(|w| w.hp), Some(5));
    // The east's next pushes are still its own.
    assert_eq!(east.push(walker(3)), EAST.first_id());
}

#[test]
fn handoffs_and_adoptions_refuse_what_they_cannot_do_and_change_nothing() {
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.commit();
    let mut out = vec![0xAB];
    let missing = ReplicationId::from_raw(77);
    assert_eq!(
        west.hand_off(missing, EAST, &mut out),
        Err(SendError::UnknownItem { id: missing })
    );
    assert_eq!(
        west.hand_off(id, WEST, &mut out),
        Err(SendError::HandoffToSelf { shard: WEST })
    );
    assert_eq!(out, [0xAB], "nothing written");
    assert!(west.contains(id) && !west.has_uncommitted_work());

    let message = hand_off(&mut west, id, EAST);
    let mut relay = FastArray::<Walker>::relay();
    assert!(matches!(
        relay.hand_off(id, EAST, &mut out),
        Err(SendError::NotAShard { .. })
    ));
    let mut server = FastArray::new();
    let plain = server.push(walker(0));
    assert!(matches!(
        server.hand_off(plain, EAST, &mut out),
        Err(SendError::NotAShard { .. })
    ));
    for mut array in [relay, FastArray::mirror(), server] {
        assert!(matches!(
            array.adopt(&message),
            Err(DecodeError::NotAShard { .. })
        ));
    }
    // Every cut and every flipped bit of the message is refused or adopts
    // an item whole; a refusal changes nothing.
    for cut in 0..message.len() {
        let mut east = FastArray::<Walker>::shard(EAST);
        assert!(east.adopt(&message[..cut]).is_err());
        assert!(east.is_empty() && !east.has_uncommitted_work());
    }
    for bit in 0..message.len() * 8 {
        let mut bytes = message.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        let mut east = FastArray::<Walker>::shard(EAST);
        match east.adopt(&bytes) {
            Ok(_) => assert_eq!(east.len(), 1),
            Err(_) => assert!(east.is_empty() && !east.has_uncommitted_work()),
        }
    }
    // Of another type.
    #[derive(Replicate, Clone, Debug, PartialEq, Default)]
    struct Other {
        x: i32,
    }
    assert!(matches!(
        FastArray::<Other>::shard(EAST).adopt(&message),
        Err(DecodeError::SchemaMismatch { .. })
    ));
    assert_eq!(east.adopt(&message), Ok(id));
    assert_eq!(
        east.adopt(&message),
        Err(DecodeError::DuplicateId { id }),
        "adopted twice"
    );
    assert_eq!(east.len(), 1);
}

#[test]
fn a_handoff_taken_back_overrules_its_late_adoption_until_that_is_released() {
    // West gives up on a handoff and takes the walker back; east, whose
    // reply was lost, adopted it: both hold it, each moving it its way.
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.commit();
    east.commit();
    // One relay hears east's feed first, the other west's.
    let mut relays = [
        relay_of(&mut [&mut west, &mut east]),
        relay_of(&mut [&mut west, &mut east]),
    ];
    let mut clients: Vec<Client> = (relays.iter_mut())
        .map(|relay| Client::join(relay, None))
        .collect();
    let message = hand_off(&mut west, id, EAST);
    assert_eq!(west.take_back(&message), Ok(id));
    assert_eq!(east.adopt(&message), Ok(id));
    assert_eq!((west.tenure(id), east.tenure(id)), (2, 1));
    west.get_mut(id).unwrap().hp = 7;
    east.get_mut(id).unwrap().hp = 3;
    let mut tick = |west: &mut FastArray<Walker>, east: &mut FastArray<Walker>| {
        west.commit();
        east.commit();
        let (west_feed, east_feed) = (feed(west), feed(east));
        relays[0].apply_feed(&east_feed).unwrap();
        relays[0].apply_feed(&west_feed).unwrap();
        relays[1].apply_feed(&west_feed).unwrap();
        relays[1].apply_feed(&east_feed).unwrap();
        for (client, relay) in clients.iter_mut().zip(&mut relays) {
            let (_, gone, _) = client.sync(relay);
            assert_eq!(gone, 0, "the walker never leaves a client");
            assert_eq!(client.mirror.get(id).map(|w| w.hp), Some(7), "west's copy");
        }
    };
    tick(&mut west, &mut east);
    // East releases its copy: one authority again.
    assert!(!east.release(id, 2), "not at that tenure");
    assert!(east.release(id, 1));
    assert!(!west.release(id, 1) && west.contains(id));
    tick(&mut west, &mut east);
    for relay in &relays {
        assert_merges(relay, &[&west, &east], "released");
    }
}

#[test]
fn a_release_heard_before_its_handoff_makes_the_handoff_stale() {
    // West gave up on a handoff and took the walker back; its release
    // reaches east before the handoff does (or east restarted from a save
    // older than its adoption): east must never adopt that handoff.
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.commit();
    east.commit();
    let message = hand_off(&mut west, id, EAST);
    assert_eq!(west.take_back(&message), Ok(id));
    assert!(!east.release(id, 1), "nothing held, nothing dropped");
    let stale = Err(DecodeError::StaleHandoff { id });
    assert_eq!(east.adopt(&message), stale, "in the release's frame");
    east.commit();
    assert_eq!(east.adopt(&message), stale, "after its commit");
    assert!(!east.contains(id));
    // West's next handoff of it, from the tenure it holds now, is adopted.
    west.commit();
    let again = hand_off(&mut west, id, EAST);
    assert_eq!(east.adopt(&again), Ok(id));
    assert_eq!(east.tenure(id), 3);
}

#[test]
fn a_late_copy_of_a_handoff_is_not_adopted_again() {
    // A handoff sent again for want of a reply reaches the shard after the
    // item came and went: adopting it would make a second authority of it.
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.commit();
    let first = hand_off(&mut west, id, EAST);
    east.adopt(&first).unwrap();
    east.commit();
    let back = hand_off(&mut east, id, WEST);
    east.commit();
    west.adopt(&back).unwrap();
    west.commit();
    assert_eq!(east.adopt(&first), Err(DecodeError::StaleHandoff { id }));
    assert!(east.is_empty() && !east.has_uncommitted_work());
    // Its next crossing is adopted.
    let again = hand_off(&mut west, id, EAST);
    assert_eq!(east.adopt(&again), Ok(id));
}

#[test]
fn a_handoff_is_a_change_for_a_relays_clients_whichever_shard_is_heard_first() {
    for adoption_first in [false, true] {
        let label = if adoption_first {
            "adoption first"
        } else {
            "handoff first"
        };
        let (mut west, mut east) = shards();
        let id = west.push(walker(-1));
        west.set_owner(id, Some(1)).unwrap();
        east.push(walker(50));
        west.commit();
        east.commit();
        let mut relay = relay_of(&mut [&mut west, &mut east]);
        let mut client = Client::join(&mut relay, Some(1));

        // West moves it and hands it off in the same frame; east adopts
        // it, then moves it again.
        west.get_mut(id).unwrap().x = 0;
        let message = hand_off(&mut west, id, EAST);
        west.commit();
        let west_frame = feed(&west);
        east.adopt(&message).unwrap();
        east.commit();
        let adoption = feed(&east);
        east.get_mut(id).unwrap().x = 1;
        east.commit();
        let east_change = feed(&east);
        let order = if adoption_first {
            [adoption, east_change, west_frame]
        } else {
            [west_frame, adoption, east_change]
        };
        for bytes in order {
            relay.apply_feed(&bytes).unwrap();
            let (added, removed, _) = client.sync(&mut relay);
            assert_eq!((added, removed), (0, 0), "{label}: the client saw it leave");
            assert!(relay.contains(id), "{label}");
        }
        assert_merges(&relay, &[&west, &east], label);
        assert_eq!(
            client.mirror.get(id),
            east.get(id),
            "{label}: the owner's client"
        );
        let stats = relay.feed_stats();
        assert_eq!(stats.handoffs, 1, "{label}");
        assert_eq!(
            stats.superseded,
            u64::from(adoption_first),
            "{label}: the west's late handoff"
        );
        // The east's later changes reach the client; the west has no say.
        east.get_mut(id).unwrap().hp = 3;
        east.commit();
        relay.apply_feed(&feed(&east)).unwrap();
        client.sync(&mut relay);
        assert_eq!(client.mirror.get(id).map(|w| w.hp), Some(3), "{label}");
    }
}

#[test]
fn an_adoption_heard_after_the_item_moved_on_is_stale() {
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.commit();
    east.commit();
    let mut relay = relay_of(&mut [&mut west, &mut east]);
    // West → east → west, the east's frames heard last.
    let out = hand_off(&mut west, id, EAST);
    west.commit();
    let w1 = feed(&west);
    east.adopt(&out).unwrap();
    east.commit();
    let e1 = feed(&east);
    east.get_mut(id).unwrap().hp = 50;
    let back = hand_off(&mut east, id, WEST);
    east.commit();
    let e2 = feed(&east);
    west.adopt(&back).unwrap();
    west.commit();
    let w2 = feed(&west);
    for bytes in [w1, w2, e1, e2] {
        relay.apply_feed(&bytes).unwrap();
    }
    assert_merges(&relay, &[&west, &east], "west, west, east, east");
    assert_eq!(relay.get(id).map(|w| w.hp), Some(50));
    let stats = relay.feed_stats();
    assert_eq!(
        (stats.handoffs, stats.superseded),
        (1, 2),
        "east's adoption and handoff"
    );
    // The west is its holder: its changes count.
    west.get_mut(id).unwrap().x = -9;
    west.commit();
    relay.apply_feed(&feed(&west)).unwrap();
    assert_merges(&relay, &[&west, &east], "after");
}

#[test]
fn an_item_that_leaves_a_relays_shards_is_removed_a_while_later_and_comes_back_after_another() {
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.commit();
    let mut relay = relay_of(&mut [&mut west]);
    let mut client = Client::join(&mut relay, None);
    let out = hand_off(&mut west, id, EAST);
    for frame in 0..64 {
        west.commit();
        relay.apply_feed(&feed(&west)).unwrap();
        assert_eq!(relay.contains(id), frame < 63, "west frame {frame}");
        client.sync(&mut relay);
    }
    assert!(!client.mirror.contains(id), "it left the relay's world");
    // It comes back at once: too soon for the client's mirror to take
    // its id again. The relay puts it off, then asks for a snapshot.
    east.adopt(&out).unwrap();
    east.commit();
    let back = hand_off(&mut east, id, WEST);
    west.adopt(&back).unwrap();
    let mut frames = 0;
    while !relay.needs_feed_snapshot_from(WEST) {
        west.commit();
        relay.apply_feed(&feed(&west)).unwrap();
        client.sync(&mut relay);
        assert!(!relay.contains(id) && !client.mirror.contains(id));
        frames += 1;
        assert!(frames <= 128, "the relay never asked");
    }
    relay.apply_feed(&feed_snapshot(&mut west)).unwrap();
    assert_eq!(client.sync(&mut relay), (1, 0, 0));
    assert_eq!(client.mirror.get(id).map(|w| w.x), Some(-1));
    assert_merges(&relay, &[&west], "back");
}

#[test]
fn a_handoff_nobody_adopts_is_taken_back_or_given_up() {
    let (mut west, mut east) = shards();
    let kept = west.push(walker(-1));
    let lost = west.push(walker(-2));
    west.commit();
    east.commit();
    let mut relay = relay_of(&mut [&mut west, &mut east]);
    let mut client = Client::join(&mut relay, None);

    // The east cannot be reached: the west takes `kept` back, in the same
    // frame; `lost` is handed off and its message lost.
    let out = hand_off(&mut west, kept, EAST);
    west.adopt(&out).unwrap();
    hand_off(&mut west, lost, EAST);
    west.commit();
    relay.apply_feed(&feed(&west)).unwrap();
    assert_eq!(client.sync(&mut relay), (0, 0, 0));
    assert!(relay.contains(lost), "pending: the east may adopt it yet");
    // The east's frames go by without it: the relay gives it up.
    for frame in 0..64 {
        east.commit();
        relay.apply_feed(&feed(&east)).unwrap();
        assert_eq!(relay.contains(lost), frame < 63, "east frame {frame}");
    }
    assert_eq!(client.sync(&mut relay), (0, 1, 0));
    assert_merges(&relay, &[&west, &east], "given up");
}

#[test]
fn a_snapshot_after_a_handoff_keeps_the_item_pending_and_one_after_the_adoption_takes_it() {
    let (mut west, mut east) = shards();
    let id = west.push(walker(-1));
    west.commit();
    east.commit();
    let mut relay = relay_of(&mut [&mut west, &mut east]);
    let mut client = Client::join(&mut relay, None);
    // The relay misses every frame of both; it resyncs from snapshots.
    let out = hand_off(&mut west, id, EAST);
    west.commit();
    for _ in 0..3 {
        west.commit();
    }
    relay.apply_feed(&feed_snapshot(&mut west)).unwrap();
    assert!(relay.contains(id), "the west's snapshot says where it went");
    east.adopt(&out).unwrap();
    east.get_mut(id).unwrap().hp = 1;
    east.commit();
    east.commit();
    relay.apply_feed(&feed_snapshot(&mut east)).unwrap();
    assert_eq!(client.sync(&mut relay), (0, 0, 1));
    assert_merges(&relay, &[&west, &east], "resynced");
    assert_eq!(relay.feed_stats().handoffs, 1);
}

mod lossy {
    //! Three shards in a ring, walkers crossing every border, handoffs that
    //! arrive late or not at all (the shard that let an item go takes it
    //! back), each shard's feed on a bus link that loses, repeats and
    //! reorders, and two relays: one follows every shard, one only two of
    //! them. Each relay's clients are on lossy links too. Once the links
    //! heal, each relay holds what its shards hold and each client what its
    //! relay holds; all along, the relay of every shard removes no item a
    //! shard did not destroy.

    use std::collections::BTreeSet;

    use fastarray::{FastArray, ReplicationId, SendState, ShardId};
    use fastarray_testkit::link::{Link, LinkProfile};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::{Walker, walker};

    const SHARDS: u16 = 3;
    const WIDTH: i32 = 100;
    const HEAL_AT: u32 = 150;

    fn region(x: i32) -> ShardId {
        ShardId::new((x.rem_euclid(WIDTH * i32::from(SHARDS)) / WIDTH) as u16)
    }

    struct Client {
        state: SendState,
        mirror: FastArray<Walker>,
        link: Link,
    }

    /// A relay, the shards it follows (a bus link for each) and its clients.
    struct Relay {
        array: FastArray<Walker>,
        follows: Vec<ShardId>,
        buses: Vec<Link>,
        asked_at: Vec<Option<u32>>,
        gap_since: Vec<Option<u32>>,
        clients: Vec<Client>,
    }

    impl Relay {
        fn new(follows: Vec<ShardId>, profile: &LinkProfile, seed: u64) -> Self {
            let n = follows.len();
            let clients = [Some(1), None]
                .into_iter()
                .enumerate()
                .map(|(k, number)| {
                    let mut state = SendState::new();
                    if let Some(number) = number {
                        state.set_client(number).unwrap();
                    }
                    Client {
                        state,
                        mirror: FastArray::mirror(),
                        link: Link::new(profile.clone(), seed * 64 + k as u64),
                    }
                })
                .collect();
            Self {
                array: FastArray::relay(),
                buses: (0..n)
                    .map(|k| Link::new(profile.clone(), seed * 64 + 10 + k as u64))
                    .collect(),
                follows,
                asked_at: vec![None; n],
                gap_since: vec![None; n],
                clients,
            }
        }

        /// Whether the relay holds what the shards it follows hold.
        fn merges(&self, shards: &[FastArray<Walker>]) -> bool {
            let followed = || self.follows.iter().map(|s| &shards[usize::from(s.get())]);
            self.array.len() == followed().map(FastArray::len).sum::<usize>()
                && followed().all(|shard| {
                    shard.iter().all(|(id, item)| {
                        self.array.get(id) == Some(item) && self.array.owner(id) == shard.owner(id)
                    })
                })
        }

        fn settled(&self) -> bool {
            self.clients
                .iter()
                .all(|client| self.array.is_settled(&client.state) && client.link.idle())
        }
    }

    struct Handoff {
        due: u32,
        from: ShardId,
        to: ShardId,
        bytes: Vec<u8>,
    }

    fn mutate(
        shard: &mut FastArray<Walker>,
        rng: &mut ChaCha8Rng,
        destroyed: &mut BTreeSet<ReplicationId>,
    ) {
        let home = i32::from(shard.shard_id().get()) * WIDTH;
        if rng.random_bool(0.3) {
            let id = shard.push(walker(home + rng.random_range(0..WIDTH)));
            shard
                .set_owner(id, rng.random_bool(0.5).then_some(1))
                .unwrap();
        }
        let ids: Vec<ReplicationId> = shard.ids().collect();
        if ids.is_empty() {
            return;
        }
        if rng.random_bool(0.1) && ids.len() > 3 {
            let id = ids[rng.random_range(0..ids.len())];
            shard.remove(id);
            destroyed.insert(id);
        }
        for _ in 0..4 {
            let id = ids[rng.random_range(0..ids.len())];
            let (step, hurt) = (rng.random_range(-9..=9), rng.random_bool(0.3));
            if let Some(mut walker) = shard.get_mut(id) {
                walker.x += step;
                if hurt {
                    walker.hp = walker.hp.wrapping_sub(1);
                    walker.secret += 1;
                }
            }
        }
        if rng.random_bool(0.1) {
            let id = ids[rng.random_range(0..ids.len())];
            shard
                .set_owner(id, rng.random_bool(0.5).then_some(1))
                .unwrap();
        }
    }

    fn run(profile: &LinkProfile, seed: u64) {
        let label = format!("{} seed {seed}", profile.name);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut shards: Vec<FastArray<Walker>> = (0..SHARDS)
            .map(|k| FastArray::shard(ShardId::new(k)))
            .collect();
        let all: Vec<ShardId> = (0..SHARDS).map(ShardId::new).collect();
        let mut relays = [
            Relay::new(all.clone(), profile, seed),
            Relay::new(all[..2].to_vec(), profile, seed + 1_000),
        ];
        let mut handoffs: Vec<Handoff> = Vec::new();
        let mut destroyed = BTreeSet::new();
        let mut bus_packet = 0u32;
        // Whether an item may vanish from the relay of every shard: only
        // in a bus outage longer than the 64 frames a snapshot recalls the
        // handoffs of.
        let strict = profile.name != "outage";
        for now in 0.. {
            if now < HEAL_AT {
                for shard in &mut shards {
                    mutate(shard, &mut rng, &mut destroyed);
                    let home = shard.shard_id();
                    let leaving: Vec<(ReplicationId, ShardId)> = shard
                        .iter()
                        .map(|(id, w)| (id, region(w.x)))
                        .filter(|&(_, to)| to != home)
                        .collect();
                    for (id, to) in leaving {
                        let mut bytes = Vec::new();
                        shard.hand_off(id, to, &mut bytes).unwrap();
                        let due = now + rng.random_range(0..=3);
                        handoffs.push(Handoff {
                            due,
                            from: home,
                            to,
                            bytes,
                        });
                    }
                }
            }
            if now == HEAL_AT {
                for relay in &mut relays {
                    relay.buses.iter_mut().for_each(Link::heal);
                    relay.clients.iter_mut().for_each(|c| c.link.heal());
                }
            }
            // Handoffs due: adopted, or taken back by the shard they left.
            let (due, later): (Vec<Handoff>, Vec<Handoff>) =
                handoffs.into_iter().partition(|h| h.due <= now);
            handoffs = later;
            for handoff in due {
                let unreachable = now < HEAL_AT && rng.random_bool(0.1);
                let to = if unreachable {
                    handoff.from
                } else {
                    handoff.to
                };
                shards[usize::from(to.get())]
                    .adopt(&handoff.bytes)
                    .unwrap_or_else(|e| panic!("{label}: adopt: {e}"));
            }
            for shard in &mut shards {
                shard.commit();
            }
            for (r, relay) in relays.iter_mut().enumerate() {
                let before: Vec<ReplicationId> = relay.array.ids().collect();
                for (k, &of) in relay.follows.iter().enumerate() {
                    let shard = &mut shards[usize::from(of.get())];
                    let mut send = |bus: &mut Link, bytes: Vec<u8>| {
                        bus_packet += 1;
                        bus.send(now, bus_packet, bytes);
                    };
                    let mut bytes = Vec::new();
                    shard.write_feed(&mut bytes).unwrap();
                    send(&mut relay.buses[k], bytes);
                    relay.gap_since[k] =
                        match (relay.array.has_feed_gap_from(of), relay.gap_since[k]) {
                            (true, None) => Some(now),
                            (true, since) => since,
                            (false, _) => None,
                        };
                    let stuck = relay.gap_since[k].is_some_and(|since| now >= since + 4);
                    if (relay.array.needs_feed_snapshot_from(of) || stuck)
                        && relay.asked_at[k].is_none_or(|at| now >= at + 8)
                    {
                        let mut bytes = Vec::new();
                        shard.write_feed_snapshot(&mut bytes).unwrap();
                        send(&mut relay.buses[k], bytes);
                        relay.asked_at[k] = Some(now);
                    }
                    for bytes in relay.buses[k].deliver(now) {
                        relay
                            .array
                            .apply_feed(&bytes)
                            .unwrap_or_else(|e| panic!("{label}: relay {r}: {e}"));
                    }
                    let _ = relay.buses[k].reports(now);
                }
                if r == 0 && strict {
                    let vanished: Vec<_> = before
                        .iter()
                        .filter(|&&id| !relay.array.contains(id) && !destroyed.contains(&id))
                        .collect();
                    assert!(
                        vanished.is_empty(),
                        "{label}: tick {now}: {vanished:?} left"
                    );
                }
                let packet = now + 1;
                for (n, client) in relay.clients.iter_mut().enumerate() {
                    if now < HEAL_AT || !relay.array.is_settled(&client.state) {
                        let mut bytes = Vec::new();
                        relay
                            .array
                            .write_delta(&mut client.state, packet, &mut bytes)
                            .unwrap_or_else(|e| panic!("{label}: relay {r} client {n}: {e}"));
                        client.link.send(now, packet, bytes);
                    }
                    for bytes in client.link.deliver(now) {
                        client
                            .mirror
                            .apply_delta(&bytes, &mut ())
                            .unwrap_or_else(|e| panic!("{label}: relay {r} client {n}: {e}"));
                    }
                    for report in client.link.reports(now) {
                        report.tell(&mut client.state);
                    }
                }
            }
            if now > HEAL_AT
                && handoffs.is_empty()
                && relays
                    .iter()
                    .all(|relay| relay.merges(&shards) && relay.settled())
            {
                break;
            }
            assert!(
                now < HEAL_AT + 600,
                "{label}: not settled: merged {:?} settled {:?} stats {:?}",
                relays.iter().map(|r| r.merges(&shards)).collect::<Vec<_>>(),
                relays.iter().map(Relay::settled).collect::<Vec<_>>(),
                relays
                    .iter()
                    .map(|r| r.array.feed_stats())
                    .collect::<Vec<_>>(),
            );
        }
        for (r, relay) in relays.iter().enumerate() {
            for (n, client) in relay.clients.iter().enumerate() {
                let owner = client.state.client();
                let differ: Vec<_> = relay
                    .array
                    .ids()
                    .chain(client.mirror.ids())
                    .filter(|&id| {
                        let seen = (relay.array.get(id), client.mirror.get(id));
                        match seen {
                            (Some(a), Some(b)) => {
                                (a.x, a.hp, a.badge) != (b.x, b.hp, b.badge)
                                    || (relay.array.owner(id) == owner
                                        && owner.is_some()
                                        && a.secret != b.secret)
                            }
                            _ => true,
                        }
                    })
                    .collect();
                assert!(
                    differ.is_empty(),
                    "{label}: relay {r} client {n}: {differ:?}"
                );
            }
        }
        let stats = relays[0].array.feed_stats();
        assert!(stats.handoffs > 0, "{label}: {stats:?}");
    }

    #[test]
    fn relays_of_shards_converge_and_keep_what_crosses_a_border() {
        for profile in LinkProfile::all_for_tests() {
            for seed in 0..fastarray_testkit::drive::seeds_or(3) {
                run(&profile, seed);
            }
        }
    }
}

#[test]
fn a_relays_callbacks_say_what_it_holds_through_gaps_handoffs_and_resyncs() {
    use rand::{Rng, SeedableRng};
    for seed in 0..4 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut west, mut east) = shards();
        for x in 0..20 {
            west.push(walker(-1 - x));
            east.push(walker(x));
        }
        west.commit();
        east.commit();
        let mut relay = FastArray::<Walker>::relay();
        let mut proxies = fastarray_testkit::proxies::Proxies::default();
        for shard in [&mut west, &mut east] {
            relay
                .apply_feed_with(&feed_snapshot(shard), &mut proxies)
                .unwrap();
        }
        let mut late: Vec<Vec<u8>> = Vec::new();
        for tick in 0..80 {
            for (k, shard) in [&mut west, &mut east].into_iter().enumerate() {
                let ids: Vec<ReplicationId> = shard.ids().collect();
                for &id in &ids {
                    if rng.random_bool(0.3) {
                        shard.get_mut(id).unwrap().x += rng.random_range(-3..=3);
                    }
                }
                if rng.random_bool(0.1) {
                    shard.push(walker(if k == 0 { -5 } else { 5 }));
                }
                if rng.random_bool(0.1) && ids.len() > 3 {
                    shard.remove(ids[0]);
                }
            }
            // Walkers that crossed are handed off.
            let crossing: Vec<(usize, ReplicationId)> = (west.iter())
                .filter(|(_, w)| w.x >= 0)
                .map(|(id, _)| (0, id))
                .chain(east.iter().filter(|(_, w)| w.x < 0).map(|(id, _)| (1, id)))
                .collect();
            for (from, id) in crossing {
                let (giver, taker, to) = match from {
                    0 => (&mut west, &mut east, EAST),
                    _ => (&mut east, &mut west, WEST),
                };
                let message = hand_off(giver, id, to);
                taker.adopt(&message).unwrap();
            }
            west.commit();
            east.commit();
            // Frames come in late and out of order; now and then a resync.
            late.push(feed(&west));
            late.push(feed(&east));
            if tick % 25 == 24 {
                relay
                    .apply_feed_with(&feed_snapshot(&mut west), &mut proxies)
                    .unwrap();
            }
            while late.len() > 3 || (tick == 79 && !late.is_empty()) {
                let bytes = late.remove(rng.random_range(0..late.len()));
                relay.apply_feed_with(&bytes, &mut proxies).unwrap();
                let held: std::collections::BTreeMap<ReplicationId, Walker> =
                    relay.iter().map(|(id, w)| (id, w.clone())).collect();
                assert_eq!(proxies.items, held, "seed {seed}, tick {tick}");
            }
        }
        // Every frame heard: the relay holds what the shards hold (a
        // resync snapshot once listed as handed off an item that had come
        // back and been removed since, which the relay then kept).
        assert_merges(&relay, &[&west, &east], "settled");
        assert!(
            proxies.received > 120,
            "seed {seed}: {} messages received",
            proxies.received
        );
    }
}
