//! Saving and restoring arrays and objects (feature `serde`), in a text
//! format (JSON) and a binary one (postcard):
//! * a save keeps every id, key, frame and the id counter; a restored
//!   array never gives an id again, removed items' ids included;
//! * a server saved while its connections had packets in flight (some
//!   lost, none acknowledged), then restarted from the save, brings its
//!   clients back by snapshot over a lossy link, and they converge; ids
//!   held in fields still name the same items;
//! * `#[serde(skip)]` fields are not saved and come back as `Default`;
//! * a mirror, uncommitted work, and saves that would reuse an id or
//!   contradict themselves are refused with the format's error.
#![cfg(feature = "serde")]

use fastarray_core::{FastArray, Replicated, ReplicationId, SendState};
use fastarray_derive::Replicate;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Replicate, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Unit {
    hp: u16,
    name: String,
    /// Another unit, by id: must name the same one after a restart.
    target: Option<ReplicationId>,
    /// Derived state, not saved: `Default` after a restart.
    #[serde(skip)]
    path_cache: u32,
}

#[derive(Replicate, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[replicate(crate = "fastarray_core")]
struct Match {
    round: u8,
    #[replicate(array)]
    squads: FastArray<Unit>,
}

/// The two formats a save goes through.
#[derive(Clone, Copy, Debug)]
enum Format {
    Json,
    Postcard,
}

const FORMATS: [Format; 2] = [Format::Json, Format::Postcard];

impl Format {
    fn save<T: Serialize>(self, value: &T) -> Vec<u8> {
        match self {
            Format::Json => serde_json::to_vec(value).unwrap(),
            Format::Postcard => postcard::to_allocvec(value).unwrap(),
        }
    }

    fn load<T: DeserializeOwned>(self, bytes: &[u8]) -> Result<T, String> {
        match self {
            Format::Json => serde_json::from_slice(bytes).map_err(|e| e.to_string()),
            Format::Postcard => postcard::from_bytes(bytes).map_err(|e| e.to_string()),
        }
    }

    fn save_err<T: Serialize>(self, value: &T) -> String {
        match self {
            Format::Json => serde_json::to_vec(value).unwrap_err().to_string(),
            Format::Postcard => format!("{:?}", postcard::to_allocvec(value).unwrap_err()),
        }
    }
}

fn unit(hp: u16, target: Option<ReplicationId>) -> Unit {
    Unit {
        hp,
        name: format!("unit {hp}"),
        target,
        path_cache: 7,
    }
}

/// What a client holds, compared with its server: the same items, their
/// unsaved caches aside (a mirror holds what the server sent).
fn same_replicated(server: &FastArray<Unit>, client: &FastArray<Unit>) -> bool {
    server.len() == client.len()
        && server.iter().all(|(id, item)| {
            client.get(id).is_some_and(|held| {
                (held.hp, &held.name, held.target) == (item.hp, &item.name, item.target)
            })
        })
}

#[test]
fn a_save_keeps_ids_keys_frames_and_the_id_counter() {
    for format in FORMATS {
        let mut server = FastArray::new();
        let a = server.push(unit(10, None));
        let b = server.push(unit(20, Some(a)));
        let gone = server.push(unit(30, None));
        server.commit();
        server.get_mut(a).unwrap().hp = 11;
        server.remove(gone);
        server.commit();

        let saved = format.save(&server);
        let mut restored: FastArray<Unit> = format.load(&saved).unwrap();
        assert!(!restored.is_mirror(), "{format:?}");
        assert_eq!(restored.frame(), server.frame());
        assert_eq!(restored.array_key(), server.array_key());
        assert_eq!(restored.len(), 2);
        for id in [a, b] {
            assert_eq!(restored.key(id), server.key(id), "{format:?}");
            let (held, was) = (restored.get(id).unwrap(), server.get(id).unwrap());
            assert_eq!(
                (held.hp, &held.name, held.target),
                (was.hp, &was.name, was.target)
            );
            // Not saved: back at its default.
            assert_eq!(held.path_cache, 0);
        }
        assert_eq!(restored.get(b).unwrap().target, Some(a));
        assert!(!restored.has_uncommitted_work());
        // The next id is above every id ever given, the removed one's too.
        let fresh = restored.push(unit(40, None));
        assert!(fresh > gone, "{format:?}: {fresh} reuses an id");
        assert_eq!(fresh, server.push(unit(40, None)));
        // An authority: a delta applied to it is refused.
        assert!(restored.apply_delta(&[0], &mut ()).is_err());
    }
}

#[test]
fn json_shows_the_saved_form() {
    let mut server = FastArray::new();
    server.push(unit(5, None));
    server.commit();
    let json: serde_json::Value = serde_json::to_value(&server).unwrap();
    assert_eq!(json["frame"], 1);
    assert_eq!(json["next_id"], 1);
    assert_eq!(json["items"][0]["id"], 0);
    assert_eq!(json["items"][0]["key_frame"], 1);
    assert_eq!(json["items"][0]["value"]["hp"], 5);
    assert!(json["items"][0]["value"].get("path_cache").is_none());
}

/// Sends `server`'s delta for each client through a link that loses
/// packets with probability `loss`; reports each packet's fate at once.
/// Returns the packets sent.
fn tick(
    server: &mut FastArray<Unit>,
    clients: &mut [(SendState, FastArray<Unit>)],
    packet: &mut u32,
    rng: &mut ChaCha8Rng,
    loss: f64,
    report: bool,
) {
    for (state, mirror) in clients.iter_mut() {
        let mut bytes = Vec::new();
        server.write_delta(state, *packet, &mut bytes).unwrap();
        let lost = rng.random_bool(loss);
        if !lost {
            mirror.apply_delta(&bytes, &mut ()).unwrap();
        }
        if report {
            if lost {
                state.on_loss(*packet);
            } else {
                state.on_ack(*packet);
            }
        }
        *packet += 1;
    }
}

fn mutate(server: &mut FastArray<Unit>, rng: &mut ChaCha8Rng) {
    let ids: Vec<ReplicationId> = server.ids().collect();
    for id in &ids {
        if rng.random_bool(0.3) {
            server.get_mut(*id).unwrap().hp = rng.random();
        }
    }
    if rng.random_bool(0.3) && !ids.is_empty() {
        server.remove(ids[rng.random_range(0..ids.len())]);
    }
    let target = ids.first().copied();
    server.push(unit(rng.random(), target));
    server.commit();
}

#[test]
fn clients_of_a_server_restarted_from_a_save_taken_with_packets_in_flight_converge() {
    for format in FORMATS {
        for seed in 0..8 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut server = FastArray::new();
            let first = server.push(unit(1, None));
            for hp in 2..20 {
                server.push(unit(hp, Some(first)));
            }
            server.commit();
            let mut clients: Vec<(SendState, FastArray<Unit>)> = (0..3)
                .map(|_| (SendState::new(), FastArray::mirror()))
                .collect();
            let mut packet = 0;
            for _ in 0..10 {
                mutate(&mut server, &mut rng);
                tick(&mut server, &mut clients, &mut packet, &mut rng, 0.3, true);
            }
            // The last ticks' packets are still in flight when the save is
            // taken (some delivered, some lost, none reported).
            for _ in 0..3 {
                mutate(&mut server, &mut rng);
                tick(&mut server, &mut clients, &mut packet, &mut rng, 0.3, false);
            }
            let saved = format.save(&server);
            let before = server.clone();
            drop(server);

            // The restart: the server from its save; each client keeps its
            // mirror and joins again by snapshot, over a new connection.
            let mut server: FastArray<Unit> = format.load(&saved).unwrap();
            assert!(same_replicated(&before, &server), "{format:?} seed {seed}");
            for (state, mirror) in clients.iter_mut() {
                *state = SendState::new();
                let mut bytes = Vec::new();
                server.write_snapshot_for(state, &mut bytes).unwrap();
                mirror.apply_snapshot(&bytes).unwrap();
                assert!(same_replicated(&server, mirror), "{format:?} seed {seed}");
            }
            for _ in 0..15 {
                mutate(&mut server, &mut rng);
                tick(&mut server, &mut clients, &mut packet, &mut rng, 0.3, true);
            }
            // The link heals: every client catches up.
            for _ in 0..10 {
                tick(&mut server, &mut clients, &mut packet, &mut rng, 0.0, true);
            }
            for (state, mirror) in &clients {
                assert!(server.is_settled(state), "{format:?} seed {seed}");
                assert!(same_replicated(&server, mirror), "{format:?} seed {seed}");
                // References by id still name the same item.
                for (_, item) in mirror.iter() {
                    if let Some(target) = item.target {
                        assert_eq!(target, first);
                        assert_eq!(mirror.get(target).is_some(), server.contains(target));
                    }
                }
            }
        }
    }
}

#[test]
fn an_object_with_array_fields_is_saved_and_its_clients_rejoin() {
    for format in FORMATS {
        let mut server = Replicated::new(Match::default());
        let lead = server.get_mut().squads.push(unit(9, None));
        server.get_mut().squads.push(unit(8, Some(lead)));
        server.get_mut().round = 3;
        server.commit();
        let mut state = SendState::new();
        let mut client = Replicated::<Match>::mirror();
        let mut bytes = Vec::new();
        server.write_delta(&mut state, 1, &mut bytes).unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();

        let saved = format.save(&server);
        let mut restored: Replicated<Match> = format.load(&saved).unwrap();
        assert_eq!(restored.frame(), server.frame());
        assert_eq!(restored.key(), server.key());
        assert_eq!(restored.get().round, 3);
        assert_eq!(restored.get().squads.len(), 2);
        assert_eq!(restored.get().squads.get(lead).unwrap().hp, 9);
        // The array inside keeps its counter too.
        let next = restored.get_mut().squads.push(unit(7, None));
        assert!(next > lead);
        restored.commit();

        let mut state = SendState::new();
        let mut bytes = Vec::new();
        restored.write_snapshot_for(&mut state, &mut bytes).unwrap();
        client.apply_snapshot(&bytes).unwrap();
        restored.get_mut().round = 4;
        restored.commit();
        let mut bytes = Vec::new();
        restored.write_delta(&mut state, 2, &mut bytes).unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        state.on_ack(2);
        assert_eq!(client.get().round, 4);
        assert!(same_replicated(
            &restored.get().squads,
            &client.get().squads
        ));
        assert!(restored.is_settled(&state));
    }
}

#[test]
fn a_mirror_a_ghost_array_and_uncommitted_work_are_not_saved() {
    for format in FORMATS {
        let mut server = FastArray::new();
        server.push(unit(1, None));
        let error = format.save_err(&server);
        assert!(
            error.contains("uncommitted") || format_is_terse(format),
            "{error}"
        );
        server.commit();
        let mut client = FastArray::<Unit>::mirror();
        let mut bytes = Vec::new();
        server
            .write_delta(&mut SendState::new(), 0, &mut bytes)
            .unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        let error = format.save_err(&client);
        assert!(
            error.contains("mirror") || format_is_terse(format),
            "{error}"
        );

        let ghosts = FastArray::<Unit>::ghost();
        let error = format.save_err(&ghosts);
        assert!(
            error.contains("ghost") || format_is_terse(format),
            "{error}"
        );

        let object = Replicated::<Match>::mirror();
        let error = format.save_err(&object);
        assert!(
            error.contains("mirror") || format_is_terse(format),
            "{error}"
        );
    }
}

/// postcard's errors do not carry the message (`SerializeCustom`): the
/// refusal is still an error.
fn format_is_terse(format: Format) -> bool {
    matches!(format, Format::Postcard)
}

#[test]
fn saves_that_would_reuse_an_id_or_contradict_themselves_are_refused() {
    let good = r#"{"frame":2,"array_key":1,"next_id":3,"items":[
        {"id":0,"key":0,"key_frame":1,"value":{"hp":1,"name":"a","target":null}},
        {"id":2,"key":1,"key_frame":2,"value":{"hp":2,"name":"b","target":0}}]}"#;
    let loaded: FastArray<Unit> = serde_json::from_str(good).unwrap();
    assert_eq!(loaded.len(), 2);
    let cases = [
        (good.replace(r#""id":2"#, r#""id":0"#), "twice"),
        (good.replace(r#""next_id":3"#, r#""next_id":2"#), "reused"),
        (
            good.replace(r#""key_frame":2"#, r#""key_frame":9"#),
            "after the array's frame",
        ),
        (
            good.replace(r#""next_id":3,"#, ""),
            "missing field `next_id`",
        ),
        (
            good.replace(r#""frame":2,"#, r#""frame":2,"frame":2,"#),
            "duplicate field `frame`",
        ),
        (good.replace("items", "things"), "unknown field `things`"),
        (good[..good.len() / 2].to_owned(), "EOF"),
    ];
    for (json, says) in cases {
        let error = serde_json::from_str::<FastArray<Unit>>(&json)
            .unwrap_err()
            .to_string();
        assert!(error.contains(says), "{error} does not say {says}");
    }
    // The binary form of a good save, cut anywhere or with any byte
    // changed: an error or an array, never a panic.
    let mut server = FastArray::new();
    let a = server.push(unit(1, None));
    server.push(unit(2, Some(a)));
    server.commit();
    let bytes = postcard::to_allocvec(&server).unwrap();
    for len in 0..bytes.len() {
        assert!(postcard::from_bytes::<FastArray<Unit>>(&bytes[..len]).is_err());
    }
    for at in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[at] ^= flip;
            if let Ok(array) = postcard::from_bytes::<FastArray<Unit>>(&bad) {
                // Whatever it holds, it never gives a held id again.
                let mut array = array;
                let fresh = array.push(unit(0, None));
                assert_eq!(array.ids().filter(|&id| id == fresh).count(), 1);
            }
        }
    }
}

#[derive(Replicate, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[replicate(crate = "fastarray_core")]
struct Pilot {
    hp: u8,
    #[replicate(owner_only)]
    fuel: u16,
}

/// Owners are saved with the items: a restarted server's clients, who
/// rejoin by snapshot, see the owner-only fields of what they own and no
/// others'. A move not committed is uncommitted work, and not saved.
#[test]
fn owners_survive_a_restart() {
    for format in FORMATS {
        let mut server = FastArray::new();
        let mine = server.push(Pilot { hp: 1, fuel: 10 });
        let free = server.push(Pilot { hp: 2, fuel: 20 });
        server.set_owner(mine, Some(7)).unwrap();
        assert!(server.has_uncommitted_work());
        let error = format.save_err(&server);
        assert!(
            error.contains("uncommitted") || format_is_terse(format),
            "{error}"
        );
        server.commit();
        let mut object = Replicated::new(Pilot { hp: 3, fuel: 30 });
        object.set_owner(Some(8)).unwrap();
        object.commit();

        let (array_save, object_save) = (format.save(&server), format.save(&object));
        drop((server, object));
        let mut server: FastArray<Pilot> = format.load(&array_save).unwrap();
        let object: Replicated<Pilot> = format.load(&object_save).unwrap();
        assert_eq!((server.owner(mine), server.owner(free)), (Some(7), None));
        assert_eq!(object.owner(), Some(8));
        assert!(!server.has_uncommitted_work());

        let mut state = SendState::new();
        state.set_client(7).unwrap();
        let mut bytes = Vec::new();
        server.write_snapshot_for(&mut state, &mut bytes).unwrap();
        let client = FastArray::<Pilot>::from_snapshot(&bytes).unwrap();
        assert_eq!(client.get(mine), Some(&Pilot { hp: 1, fuel: 10 }));
        assert_eq!(client.get(free), Some(&Pilot { hp: 2, fuel: 0 }));
        // The restored owner is committed: nothing moves at the next commit.
        assert!(server.commit().changed().is_empty());
    }
}

/// Applies `shard`'s last frame to `relay`.
fn follow(relay: &mut FastArray<Unit>, shard: &FastArray<Unit>) {
    let mut bytes = Vec::new();
    shard.write_feed(&mut bytes).unwrap();
    relay.apply_feed(&bytes).unwrap();
}

/// Whether `relay` holds what the shards hold, and nothing else.
fn merges(relay: &FastArray<Unit>, shards: &[&FastArray<Unit>]) -> bool {
    relay.len() == shards.iter().map(|s| s.len()).sum::<usize>()
        && shards
            .iter()
            .all(|shard| shard.iter().all(|(id, unit)| relay.get(id) == Some(unit)))
}

#[test]
fn a_shard_restarted_from_a_save_keeps_its_shard_and_tenures_and_its_relay_converges() {
    use fastarray_core::ShardId;
    let (west_id, east_id) = (ShardId::new(0), ShardId::new(1));
    for format in FORMATS {
        let mut west = FastArray::<Unit>::shard(west_id);
        let mut east = FastArray::<Unit>::shard(east_id);
        let crosser = west.push(unit(1, None));
        let late = west.push(unit(2, None));
        let home = east.push(unit(3, None));
        // West adopts an item of east's range, which is above its id counter.
        let visitor = east.push(unit(4, None));
        west.commit();
        east.commit();
        let mut relay = FastArray::<Unit>::relay();
        for shard in [&mut west, &mut east] {
            let mut bytes = Vec::new();
            shard.write_feed_snapshot(&mut bytes).unwrap();
            relay.apply_feed(&bytes).unwrap();
        }
        let mut message = Vec::new();
        west.hand_off(crosser, east_id, &mut message).unwrap();
        east.adopt(&message).unwrap();
        message.clear();
        east.hand_off(visitor, west_id, &mut message).unwrap();
        west.adopt(&message).unwrap();
        west.commit();
        east.commit();
        follow(&mut relay, &west);
        follow(&mut relay, &east);
        let east_save = format.save(&east);
        let west_save = format.save(&west);
        let restored = format.load::<FastArray<Unit>>(&west_save).unwrap();
        assert!(
            same_replicated(&west, &restored) && restored.contains(visitor),
            "{format:?}: a shard holding another shard's id restores"
        );
        // After the save, east adopts `late`; then it fails, and restarts
        // from the save, as a new stream: `late` is lost with it.
        message.clear();
        west.hand_off(late, east_id, &mut message).unwrap();
        east.adopt(&message).unwrap();
        west.commit();
        east.commit();
        follow(&mut relay, &west);
        follow(&mut relay, &east);
        let mut east: FastArray<Unit> = format.load(&east_save).unwrap();
        assert!(east.is_shard() && east.shard_id() == east_id, "{format:?}");
        assert!(east.contains(crosser) && !east.contains(late));
        let pushed = east.push(unit(5, None));
        assert!(pushed > home && east_id.ids().contains(&pushed.to_raw()));
        east.get_mut(crosser).unwrap().hp = 99;
        east.commit();
        // The relay finds a new stream, asks for a snapshot, and holds what
        // the shards hold.
        follow(&mut relay, &east);
        assert!(relay.needs_feed_snapshot_from(east_id), "{format:?}");
        let mut bytes = Vec::new();
        east.write_feed_snapshot(&mut bytes).unwrap();
        relay.apply_feed(&bytes).unwrap();
        assert!(merges(&relay, &[&west, &east]), "{format:?}: {relay:?}");
        // The crosser keeps its tenure: east hands it back, and the relay
        // takes west's adoption over east's (a stale word would be dropped).
        message.clear();
        east.hand_off(crosser, west_id, &mut message).unwrap();
        west.adopt(&message).unwrap();
        west.get_mut(crosser).unwrap().hp = 7;
        west.commit();
        east.commit();
        follow(&mut relay, &west);
        follow(&mut relay, &east);
        assert_eq!(relay.get(crosser).map(|u| u.hp), Some(7), "{format:?}");
        assert!(merges(&relay, &[&west, &east]), "{format:?}");
        assert!(
            relay.feed_stats().handoffs >= 3,
            "{format:?}: {:?}",
            relay.feed_stats()
        );
    }
}

#[test]
fn a_restarted_shard_still_refuses_a_late_copy_of_a_handoff() {
    // East adopts a walker, hands it back, saves and restarts; a copy of
    // the first handoff, sent again for want of a reply, comes late.
    use fastarray_core::{DecodeError, ShardId};
    let (west_id, east_id) = (ShardId::new(0), ShardId::new(1));
    for format in FORMATS {
        let mut west = FastArray::<Unit>::shard(west_id);
        let mut east = FastArray::<Unit>::shard(east_id);
        let id = west.push(unit(1, None));
        west.commit();
        let mut first = Vec::new();
        west.hand_off(id, east_id, &mut first).unwrap();
        west.commit();
        east.adopt(&first).unwrap();
        east.commit();
        let mut back = Vec::new();
        east.hand_off(id, west_id, &mut back).unwrap();
        east.commit();
        west.adopt(&back).unwrap();
        west.commit();
        let mut east: FastArray<Unit> = format.load(&format.save(&east)).unwrap();
        assert_eq!(
            east.adopt(&first),
            Err(DecodeError::StaleHandoff { id }),
            "{format:?}"
        );
        // Its next crossing is adopted.
        let mut again = Vec::new();
        west.hand_off(id, east_id, &mut again).unwrap();
        assert_eq!(east.adopt(&again), Ok(id), "{format:?}");
    }
    // East adopts a handoff, saves and dies before it replies; west gives
    // up and takes the walker back. Restarted from its save, east holds
    // the walker too, until west's release comes: then it drops it, and
    // refuses every copy of the handoff, even after another restart.
    for format in FORMATS {
        let mut west = FastArray::<Unit>::shard(west_id);
        let mut east = FastArray::<Unit>::shard(east_id);
        let id = west.push(unit(1, None));
        west.commit();
        let mut handoff = Vec::new();
        west.hand_off(id, east_id, &mut handoff).unwrap();
        west.commit();
        east.adopt(&handoff).unwrap();
        east.commit();
        let save = format.save(&east);
        west.take_back(&handoff).unwrap();
        let mut east: FastArray<Unit> = format.load(&save).unwrap();
        assert!(east.contains(id), "{format:?}: the save holds it");
        assert!(east.release(id, east.tenure(id)), "{format:?}");
        east.commit();
        let mut east: FastArray<Unit> = format.load(&format.save(&east)).unwrap();
        assert!(!east.contains(id), "{format:?}");
        assert_eq!(
            east.adopt(&handoff),
            Err(DecodeError::StaleHandoff { id }),
            "{format:?}"
        );
    }
    // Departures expire oldest first, whatever order a save lists them
    // in: item 8 left at frame 5, long gone by frame 2 100; item 7 at 2 000.
    let mut west = FastArray::<Unit>::shard(west_id);
    let ids: Vec<ReplicationId> = (0..9).map(|n| west.push(unit(n, None))).collect();
    west.commit();
    let mut handoff = Vec::new();
    west.hand_off(ids[8], east_id, &mut handoff).unwrap();
    let save = r#"{"frame":2000,"array_key":0,"next_id":1099511627776,"shard":1,
        "departed":[[7,1,2000],[8,1,5]],"items":[]}"#;
    let mut east: FastArray<Unit> = serde_json::from_str(save).unwrap();
    for _ in 0..100 {
        east.commit();
    }
    assert_eq!(
        east.adopt(&handoff),
        Ok(ids[8]),
        "item 8's departure expired"
    );
    // A save that says an item left after the save's frame is refused.
    let save = r#"{"frame":3,"array_key":0,"next_id":1,"shard":0,"departed":[[7,1,4]],"items":[]}"#;
    assert!(serde_json::from_str::<FastArray<Unit>>(save).is_err());
    let save = r#"{"frame":3,"array_key":0,"next_id":1,"departed":[[7,1,2]],"items":[]}"#;
    assert!(
        serde_json::from_str::<FastArray<Unit>>(save).is_err(),
        "no shard"
    );
}

#[test]
fn only_a_shard_has_a_range_of_ids() {
    // An array of one process counts its ids to 2^64: one restored with
    // its counter past the first 2^40 (shard 0's range) pushes and commits.
    let save = r#"{"frame":3,"array_key":0,"next_id":2199023255552,"items":[]}"#;
    let mut array: FastArray<Unit> = serde_json::from_str(save).unwrap();
    let id = array.push(unit(1, None));
    array.commit();
    assert_eq!(id, ReplicationId::from_raw(1 << 41));
    // A shard stops at the end of its range.
    let save = r#"{"frame":3,"array_key":0,"next_id":2199023255552,"shard":1,"items":[]}"#;
    let mut shard: FastArray<Unit> = serde_json::from_str(save).unwrap();
    shard.push(unit(1, None));
    let commit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        shard.commit();
    }));
    assert!(commit.is_err(), "shard 1 pushed an id of shard 2's range");
}
