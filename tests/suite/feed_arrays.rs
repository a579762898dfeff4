//! Feeds, handoffs and ghosts of items with `#[replicate(array)]` fields:
//! a relay follows the arrays inside its server's items (and the arrays
//! inside those) with the same ids, owners and fields, and serves its
//! clients their deltas as the server would; a handoff carries an item's
//! arrays to the adopting shard; a ghost carries them with its ghost
//! fields.

use fastarray::{
    Callbacks, DecodeError, FastArray, FieldMask, GhostFeed, Limit, MirrorLimits, Replicate,
    ReplicationId, SendState, ShardId,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Gem {
    kind: u8,
    #[replicate(owner_only)]
    worth: u16,
    #[replicate(initial_only)]
    serial: u32,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Bag {
    slot: u8,
    #[replicate(array)]
    gems: FastArray<Gem>,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Hero {
    x: i32,
    #[replicate(owner_only)]
    gold: u32,
    #[replicate(array)]
    bags: FastArray<Bag>,
    #[replicate(array)]
    buffs: FastArray<Gem>,
}

fn gem(kind: u8) -> Gem {
    Gem {
        kind,
        worth: u16::from(kind) * 10,
        serial: u32::from(kind) + 1_000,
    }
}

fn hero(x: i32, bags: u8) -> Hero {
    let mut hero = Hero {
        x,
        gold: x.unsigned_abs(),
        bags: FastArray::new(),
        buffs: FastArray::new(),
    };
    for slot in 0..bags {
        let mut bag = Bag {
            slot,
            gems: FastArray::new(),
        };
        for kind in 0..slot + 1 {
            bag.gems.push(gem(kind));
        }
        hero.bags.push(bag);
    }
    hero.buffs.push(gem(9));
    hero
}

fn feed(server: &FastArray<Hero>) -> Vec<u8> {
    let mut bytes = Vec::new();
    server.write_feed(&mut bytes).unwrap();
    bytes
}

fn feed_snapshot(server: &mut FastArray<Hero>) -> Vec<u8> {
    let mut bytes = Vec::new();
    server.write_feed_snapshot(&mut bytes).unwrap();
    bytes
}

/// Every id, owner and plain fields (`plain`) of `array`'s items, and
/// the same of the arrays inside them (`inner`), in id order: to compare
/// a follower with its source.
fn contents<T: Replicate>(
    array: &FastArray<T>,
    plain: impl Fn(&T) -> String,
    inner: impl Fn(&T) -> Vec<String>,
) -> Vec<String> {
    let mut ids: Vec<ReplicationId> = array.ids().collect();
    ids.sort_unstable();
    let mut lines = Vec::new();
    for id in ids {
        let item = array.get(id).unwrap();
        lines.push(format!("{id} owner {:?}: {}", array.owner(id), plain(item)));
        lines.extend(inner(item).into_iter().map(|line| format!("  {line}")));
    }
    lines
}

fn gems(array: &FastArray<Gem>) -> Vec<String> {
    contents(array, |gem| format!("{gem:?}"), |_| Vec::new())
}

fn bags(array: &FastArray<Bag>) -> Vec<String> {
    contents(
        array,
        |bag| format!("slot {}", bag.slot),
        |bag| gems(&bag.gems),
    )
}

fn one_hero(hero: &Hero) -> Vec<String> {
    let mut lines = bags(&hero.bags);
    lines.push("buffs".into());
    lines.extend(gems(&hero.buffs));
    lines
}

fn heroes(array: &FastArray<Hero>) -> Vec<String> {
    contents(
        array,
        |hero| format!("x {} gold {}", hero.x, hero.gold),
        one_hero,
    )
}

/// A client of an array: its send state and mirror.
struct Client {
    state: SendState,
    mirror: FastArray<Hero>,
}

impl Client {
    fn new(number: u64) -> Self {
        let mut state = SendState::new();
        state.set_client(number).unwrap();
        Self {
            state,
            mirror: FastArray::mirror(),
        }
    }

    fn sync(&mut self, from: &mut FastArray<Hero>) {
        let packet = self.state.packets_in_flight() as u32 + 1_000;
        let mut bytes = Vec::new();
        from.write_delta(&mut self.state, packet, &mut bytes)
            .unwrap();
        self.mirror.apply_delta(&bytes, &mut ()).unwrap();
        self.state.on_ack(packet);
    }
}

/// One frame of random edits of `server`: heroes, their plain fields, and
/// the bags, gems and buffs inside them, added, changed, given owners and
/// removed.
fn edit(server: &mut FastArray<Hero>, rng: &mut ChaCha8Rng) {
    let ids: Vec<ReplicationId> = server.ids().collect();
    if ids.len() < 6 || rng.random_bool(0.2) {
        let id = server.push(hero(rng.random_range(-50..50), rng.random_range(0..3)));
        server.set_owner(id, Some(rng.random_range(1..3))).unwrap();
    }
    if ids.len() > 8 && rng.random_bool(0.2) {
        server.remove(ids[rng.random_range(0..ids.len())]);
    }
    for &id in &ids {
        if !server.contains(id) || rng.random_bool(0.4) {
            continue;
        }
        let mut hero = server.get_mut(id).unwrap();
        match rng.random_range(0..8) {
            0 => hero.x += 1,
            1 => hero.gold += 5,
            2 => {
                let slot = rng.random_range(0..200);
                hero.bags.push(Bag {
                    slot,
                    gems: FastArray::new(),
                });
            }
            3 => {
                let bag_ids: Vec<ReplicationId> = hero.bags.ids().collect();
                if let Some(&bag) = bag_ids.get(rng.random_range(0..bag_ids.len().max(1))) {
                    hero.bags.remove(bag);
                }
            }
            4 | 5 => {
                let bag_ids: Vec<ReplicationId> = hero.bags.ids().collect();
                let Some(&bag) = bag_ids.get(rng.random_range(0..bag_ids.len().max(1))) else {
                    continue;
                };
                let mut bag = hero.bags.get_mut(bag).unwrap();
                let gem_ids: Vec<ReplicationId> = bag.gems.ids().collect();
                match (rng.random_range(0..4), gem_ids.first()) {
                    (0, _) | (_, None) => {
                        bag.gems.push(gem(rng.random_range(0..50)));
                    }
                    (1, Some(&first)) => {
                        bag.gems.remove(first);
                    }
                    (2, Some(&first)) => {
                        let mut gem = bag.gems.get_mut(first).unwrap();
                        gem.worth += 1;
                        gem.serial += 1;
                    }
                    (_, Some(&first)) => {
                        bag.gems
                            .set_owner(first, Some(rng.random_range(1..3)))
                            .unwrap();
                        bag.slot = bag.slot.wrapping_add(1);
                    }
                }
            }
            6 => {
                hero.buffs.push(gem(rng.random_range(0..50)));
            }
            _ => {
                let buff_ids: Vec<ReplicationId> = hero.buffs.ids().collect();
                if let Some(&buff) = buff_ids.first() {
                    hero.buffs.get_mut(buff).unwrap().kind += 1;
                }
            }
        }
    }
    server.commit();
}

#[test]
fn a_relay_follows_the_arrays_inside_items_and_serves_them_as_the_server_would() {
    for seed in 0..8 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut server = FastArray::new();
        for x in 0..6 {
            let id = server.push(hero(x, 3));
            server.set_owner(id, Some(1 + x as u64 % 2)).unwrap();
        }
        server.commit();
        let mut relay = FastArray::<Hero>::relay();
        relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
        // A relay of the relay, joined later.
        let mut second = FastArray::<Hero>::relay();
        // Client 1 of the server, and client 1 of each relay.
        let mut direct = Client::new(1);
        let mut of_relay = Client::new(1);
        let mut of_second = Client::new(1);
        // The server's client 1 that joins when the second relay does
        // (`initial_only` fields hold what they held at the join).
        let mut direct_late = Client::new(1);
        for frame in 0..60 {
            edit(&mut server, &mut rng);
            if frame % 15 == 14 {
                // A resync: the snapshot is applied as the changes it
                // makes to what the relay holds, arrays included.
                relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
            } else {
                relay.apply_feed(&feed(&server)).unwrap();
            }
            if frame == 20 {
                second.apply_feed(&feed_snapshot(&mut relay)).unwrap();
            } else if frame > 20 {
                second.apply_feed(&feed(&relay)).unwrap();
            }
            let label = format!("seed {seed}, frame {frame}");
            assert_eq!(heroes(&relay), heroes(&server), "{label}: the relay");
            direct.sync(&mut server);
            of_relay.sync(&mut relay);
            assert_eq!(
                heroes(&of_relay.mirror),
                heroes(&direct.mirror),
                "{label}: the relay's client"
            );
            if frame >= 20 {
                assert_eq!(
                    heroes(&second),
                    heroes(&server),
                    "{label}: the relay's relay"
                );
                of_second.sync(&mut second);
                direct_late.sync(&mut server);
                assert_eq!(
                    heroes(&of_second.mirror),
                    heroes(&direct_late.mirror),
                    "{label}: the relay's relay's client"
                );
            }
        }
        // An owner-only field inside an array reaches the relay's client
        // that owns the item it is in, and no other.
        let owner_of_bag = ChaCha8Rng::seed_from_u64(seed).random_range(1..3);
        let id = server.push(hero(0, 1));
        server.commit();
        relay.apply_feed(&feed(&server)).unwrap();
        {
            let mut hero = server.get_mut(id).unwrap();
            let bag = hero.bags.ids().next().unwrap();
            let mut bag = hero.bags.get_mut(bag).unwrap();
            let gem = bag.gems.ids().next().unwrap();
            bag.gems.set_owner(gem, Some(owner_of_bag)).unwrap();
            bag.gems.get_mut(gem).unwrap().worth = 77;
        }
        server.commit();
        relay.apply_feed(&feed(&server)).unwrap();
        let mut other = Client::new(3 - owner_of_bag);
        let mut owner = Client::new(owner_of_bag);
        let worth = |client: &mut Client, relay: &mut FastArray<Hero>| {
            client.sync(relay);
            let hero = client.mirror.get(id).unwrap();
            let (_, bag) = hero.bags.iter().next().unwrap();
            bag.gems.iter().next().unwrap().1.worth
        };
        assert_eq!(worth(&mut owner, &mut relay), 77, "seed {seed}: the owner");
        assert_eq!(
            worth(&mut other, &mut relay),
            0,
            "seed {seed}: another client"
        );
    }
}

#[test]
fn a_frame_carries_what_changed_inside_the_items_arrays_and_nothing_else() {
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..50).map(|x| server.push(hero(x, 4))).collect();
    server.commit();
    let mut relay = FastArray::<Hero>::relay();
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
    server.commit();
    let idle = feed(&server);
    // One gem in one bag of one hero.
    {
        let mut hero = server.get_mut(ids[7]).unwrap();
        let bag = hero.bags.ids().next().unwrap();
        let mut bag = hero.bags.get_mut(bag).unwrap();
        let first = bag.gems.ids().next().unwrap();
        bag.gems.get_mut(first).unwrap().kind = 42;
    }
    server.commit();
    let one = feed(&server);
    relay.apply_feed(&idle).unwrap();
    relay.apply_feed(&one).unwrap();
    assert_eq!(heroes(&relay), heroes(&server));
    // The frame carries the one bag that changed, whole (its slot and 1
    // to 4 gems), not the hero's 4 bags, nor 50 heroes'.
    assert!(one.len() < 45, "{} bytes for one change inside", one.len());
    // A plain field's change carries no arrays.
    server.get_mut(ids[8]).unwrap().x = 1_000;
    server.commit();
    let plain = feed(&server);
    assert!(
        plain.len() < 40,
        "{} bytes for one plain change",
        plain.len()
    );
    relay.apply_feed(&plain).unwrap();
    assert_eq!(heroes(&relay), heroes(&server));
}

#[test]
fn a_handoff_carries_the_items_arrays_and_the_adopting_shard_goes_on_with_their_ids() {
    const WEST: ShardId = ShardId::new(0);
    const EAST: ShardId = ShardId::new(1);
    let (mut west, mut east) = (FastArray::shard(WEST), FastArray::shard(EAST));
    let id = west.push(hero(-1, 3));
    west.set_owner(id, Some(1)).unwrap();
    // Every bag's id, that of one removed too: the east's next bag must
    // take none of them.
    let taken: Vec<ReplicationId> = west.get(id).unwrap().bags.ids().collect();
    {
        let mut hero = west.get_mut(id).unwrap();
        hero.bags.set_owner(taken[2], Some(1)).unwrap();
        hero.bags.remove(taken[0]);
    }
    east.push(hero(50, 1));
    west.commit();
    east.commit();
    let mut relay = FastArray::<Hero>::relay();
    relay.apply_feed(&feed_snapshot(&mut west)).unwrap();
    relay.apply_feed(&feed_snapshot(&mut east)).unwrap();
    let mut client = Client::new(1);
    client.sync(&mut relay);
    let before = one_hero(west.get(id).unwrap());

    let mut message = Vec::new();
    west.hand_off(id, EAST, &mut message).unwrap();
    west.commit();
    east.adopt(&message).unwrap();
    east.commit();
    let held = east.get(id).expect("adopted");
    assert_eq!(
        one_hero(held),
        before,
        "east holds the arrays and owners as west did"
    );
    assert_eq!((held.x, held.gold, east.owner(id)), (-1, 1, Some(1)));

    relay.apply_feed(&feed(&west)).unwrap();
    relay.apply_feed(&feed(&east)).unwrap();
    let report = {
        let packet = client.state.packets_in_flight() as u32 + 1_000;
        let mut bytes = Vec::new();
        relay
            .write_delta(&mut client.state, packet, &mut bytes)
            .unwrap();
        let report = client.mirror.apply_delta(&bytes, &mut ()).unwrap();
        client.state.on_ack(packet);
        report
    };
    assert_eq!(
        (report.added, report.removed),
        (0, 0),
        "the client saw it leave"
    );

    // East's next bag takes an id none of west's bags took.
    let new_bag = east.get_mut(id).unwrap().bags.push(Bag {
        slot: 9,
        gems: FastArray::new(),
    });
    assert!(
        taken.iter().all(|&old| old < new_bag),
        "{new_bag} reuses an id"
    );
    east.commit();
    relay.apply_feed(&feed(&east)).unwrap();
    client.sync(&mut relay);
    let mut fresh = Client::new(1);
    fresh.sync(&mut relay);
    assert_eq!(heroes(&client.mirror), heroes(&fresh.mirror));
    assert!(client.mirror.get(id).unwrap().bags.contains(new_bag));
}

#[test]
fn a_ghost_carries_its_items_arrays_with_their_ghost_fields() {
    let mut west = FastArray::shard(ShardId::new(0));
    let near = west.push(hero(95, 3));
    let far = west.push(hero(0, 3));
    west.set_owner(near, Some(1)).unwrap();
    west.commit();
    let reach = |hero: &Hero| hero.x >= 90;
    let mut to_east = GhostFeed::new();
    let mut ghosts = FastArray::<Hero>::ghost();
    let mut bytes = Vec::new();
    west.write_ghost_feed(&mut to_east, reach, &mut bytes)
        .unwrap();
    ghosts.apply_feed(&bytes).unwrap();

    // What a ghost holds: every field but the owner-only ones, inside
    // the arrays too, and no owners.
    let ghost_of = |hero: &Hero| {
        let mut lines = Vec::new();
        lines.push(hero.x.to_string());
        for (id, bag) in hero.bags.iter() {
            lines.push(format!("{id} {}", bag.slot));
            for (id, gem) in bag.gems.iter() {
                lines.push(format!("  {id} {} {}", gem.kind, gem.serial));
            }
        }
        for (id, gem) in hero.buffs.iter() {
            lines.push(format!("{id} {} {}", gem.kind, gem.serial));
        }
        lines
    };
    let check = |ghosts: &FastArray<Hero>, west: &FastArray<Hero>, label: &str| {
        assert_eq!(ghosts.len(), 1, "{label}");
        let ghost = ghosts.get(near).expect(label);
        assert_eq!(
            ghost_of(ghost),
            ghost_of(west.get(near).unwrap()),
            "{label}"
        );
        assert_eq!(ghost.gold, 0, "{label}: the owner's gold");
        assert!(
            ghost.bags.iter().all(|(_, bag)| {
                bag.gems
                    .iter()
                    .all(|(id, gem)| gem.worth == 0 && bag.gems.owner(id).is_none())
            }),
            "{label}: an owner-only field or an owner inside"
        );
        assert!(!ghosts.contains(far), "{label}");
    };
    check(&ghosts, &west, "joined");

    // A gem added and one changed inside the ghost's arrays, and a plain
    // change of the far hero.
    {
        let mut hero = west.get_mut(near).unwrap();
        let bag = hero.bags.ids().next().unwrap();
        let mut bag = hero.bags.get_mut(bag).unwrap();
        bag.gems.push(gem(33));
        let first = bag.gems.ids().next().unwrap();
        bag.gems.get_mut(first).unwrap().kind = 12;
    }
    west.get_mut(far).unwrap().x = 1;
    west.commit();
    bytes.clear();
    west.write_ghost_feed(&mut to_east, reach, &mut bytes)
        .unwrap();
    let mut heard = Heard::default();
    ghosts.apply_feed_with(&bytes, &mut heard).unwrap();
    check(&ghosts, &west, "after a change inside");
    // The game hears a change of the ghost's arrays, not a removal and an
    // add.
    assert_eq!(heard.0, [format!("whole {near} fields 0")]);
}

/// What a ghost array's callbacks heard.
#[derive(Default)]
struct Heard(Vec<String>);

impl Callbacks<Hero> for Heard {
    fn post_add(&mut self, id: ReplicationId, _: &Hero) {
        self.0.push(format!("add {id}"));
    }
    fn pre_remove(&mut self, id: ReplicationId, _: &Hero) {
        self.0.push(format!("remove {id}"));
    }
    fn post_change(&mut self, id: ReplicationId, _: &Hero, changed: FieldMask) {
        self.0
            .push(format!("change {id} fields {}", changed.bits()));
    }
    fn post_change_whole(&mut self, id: ReplicationId, _: &Hero, changed: FieldMask) {
        self.0.push(format!("whole {id} fields {}", changed.bits()));
    }
}

#[test]
fn a_damaged_feed_message_of_items_with_arrays_changes_nothing() {
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..3).map(|x| server.push(hero(x, 2))).collect();
    server.set_owner(ids[0], Some(1)).unwrap();
    server.commit();
    let snapshot = feed_snapshot(&mut server);
    {
        let mut hero = server.get_mut(ids[1]).unwrap();
        let bag = hero.bags.ids().next().unwrap();
        hero.bags.get_mut(bag).unwrap().gems.push(gem(4));
        hero.buffs.clear();
    }
    server.push(hero(7, 1));
    server.commit();
    let frame = feed(&server);
    let mut joined = FastArray::<Hero>::relay();
    joined.apply_feed(&snapshot).unwrap();
    for (name, bytes, base) in [
        ("snapshot", &snapshot, FastArray::<Hero>::relay()),
        ("frame", &frame, joined),
    ] {
        let state = |relay: &FastArray<Hero>| (heroes(relay), relay.feed_frame());
        let before = state(&base);
        for cut in 0..bytes.len() {
            let mut relay = base.clone();
            assert!(
                relay.apply_feed(&bytes[..cut]).is_err(),
                "{name} cut at {cut}"
            );
            assert_eq!(state(&relay), before, "{name} cut at {cut}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let mut relay = base.clone();
            if relay.apply_feed(&damaged).is_err() {
                assert_eq!(state(&relay), before, "{name} bit {bit}");
            }
        }
    }
}

#[test]
fn a_relay_refuses_arrays_past_its_inner_limit() {
    let mut server = FastArray::new();
    let id = server.push(hero(0, 1));
    server.commit();
    let mut relay = FastArray::<Hero>::relay();
    relay.set_limits(MirrorLimits {
        inner_items: 3,
        ..MirrorLimits::DEFAULT
    });
    relay.apply_feed(&feed_snapshot(&mut server)).unwrap();
    {
        let mut hero = server.get_mut(id).unwrap();
        for kind in 0..3 {
            hero.buffs.push(gem(kind));
        }
    }
    server.commit();
    let refused = relay.apply_feed(&feed(&server)).unwrap_err();
    assert_eq!(
        refused,
        DecodeError::LimitExceeded {
            limit: Limit::InnerItems,
            max: 3,
            would_be: 4
        }
    );
    assert_eq!(relay.get(id).unwrap().buffs.len(), 1, "the relay changed");
}
