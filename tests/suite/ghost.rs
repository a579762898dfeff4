//! Ghosts: a shard's read-only copies of a neighbour's items near their
//! border (`FastArray::ghost`), kept by the neighbour's ghost feed
//! (`write_ghost_feed`, `write_ghost_snapshot`) with every field but the
//! owner-only ones. Items come, change and leave as they walk; a handoff
//! moves the ghost to the other side.

use fastarray::{
    ApplyReport, Callbacks, DecodeError, FastArray, FieldMask, GhostFeed, Limit, MirrorLimits,
    Replicate, ReplicationId, SendError, SendState, ShardId,
};

use super::shard::{Walker, walker};

const WEST: ShardId = ShardId::new(0);
const EAST: ShardId = ShardId::new(1);
/// The border between west (x < 100) and east.
const BORDER: i32 = 100;
/// How far from the border a neighbour sees.
const REACH: i32 = 10;

/// Whether a west walker is within east's reach.
fn near_east(w: &Walker) -> bool {
    w.x >= BORDER - REACH
}

/// Whether an east walker is within west's reach.
fn near_west(w: &Walker) -> bool {
    w.x < BORDER + REACH
}

/// What a ghost of `w` holds.
fn ghost_of(w: &Walker) -> Walker {
    Walker {
        secret: 0,
        ..w.clone()
    }
}

fn write(shard: &FastArray<Walker>, feed: &mut GhostFeed, near: fn(&Walker) -> bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    shard.write_ghost_feed(feed, near, &mut bytes).unwrap();
    bytes
}

/// East's feed of `west`'s ghosts, and east's ghost array, joined from
/// its first message.
fn joined(west: &FastArray<Walker>) -> (GhostFeed, FastArray<Walker>) {
    let (mut to_east, mut ghosts) = (GhostFeed::new(), FastArray::ghost());
    let report = ghosts
        .apply_feed(&write(west, &mut to_east, near_east))
        .unwrap();
    assert!(report.snapshot);
    (to_east, ghosts)
}

/// The ghosts `ghosts` holds are exactly those of `shard`'s items `near`
/// keeps.
fn assert_ghosts(
    ghosts: &FastArray<Walker>,
    shard: &FastArray<Walker>,
    near: fn(&Walker) -> bool,
    label: &str,
) {
    let expected: Vec<(ReplicationId, Walker)> = (shard.iter())
        .filter(|(_, w)| near(w))
        .map(|(id, w)| (id, ghost_of(w)))
        .collect();
    assert_eq!(ghosts.len(), expected.len(), "{label}: ghosts held");
    for (id, ghost) in expected {
        assert_eq!(ghosts.get(id), Some(&ghost), "{label}: ghost {id}");
    }
}

#[test]
fn a_ghost_array_holds_the_items_near_the_border_with_every_field_but_the_owners() {
    let mut west = FastArray::shard(WEST);
    let far = west.push(walker(10));
    let near = west.push(walker(95));
    west.set_owner(near, Some(4)).unwrap();
    west.commit();
    let mut to_east = GhostFeed::new();
    let mut ghosts = FastArray::ghost();
    assert!(ghosts.is_ghost() && ghosts.needs_feed_snapshot());
    let report = ghosts
        .apply_feed(&write(&west, &mut to_east, near_east))
        .unwrap();
    assert!(
        report.snapshot && !report.needs_snapshot,
        "the first is a snapshot"
    );
    assert_ghosts(&ghosts, &west, near_east, "joined");
    assert_eq!(
        ghosts.get(near).unwrap().secret,
        0,
        "owner-only stays Default"
    );
    assert_eq!(ghosts.get(near).unwrap().badge, 102, "initial-only goes");
    assert!(!ghosts.contains(far));
    assert!(to_east.contains(near) && !to_east.contains(far) && to_east.len() == 1);
    assert_eq!(ghosts.owner(near), None, "a ghost is nobody's");
    assert_eq!(ghosts.feed_frame(), Some(1));
}

#[test]
fn ghosts_come_change_and_leave_as_items_walk_and_come_back_at_once() {
    let mut west = FastArray::shard(WEST);
    let a = west.push(walker(80));
    west.commit();
    let (mut to_east, mut ghosts) = joined(&west);
    assert!(ghosts.is_empty());
    let mut sizes = Vec::new();
    let steps: [(i32, u16, u32); 6] = [
        (92, 100, 0), // comes in
        (93, 90, 0),  // changes
        (93, 90, 5),  // a secret change: nothing for the ghost
        (70, 90, 5),  // leaves
        (91, 90, 5),  // comes back, the next frame
        (91, 80, 5),
    ];
    for (k, (x, hp, secret)) in steps.into_iter().enumerate() {
        {
            let mut w = west.get_mut(a).unwrap();
            w.x = x;
            w.hp = hp;
            w.secret += secret;
        }
        west.commit();
        let bytes = write(&west, &mut to_east, near_east);
        sizes.push(bytes.len());
        let report = ghosts.apply_feed(&bytes).unwrap();
        assert_eq!((report.frames, report.snapshot), (1, false), "step {k}");
        assert_ghosts(&ghosts, &west, near_east, &format!("step {k}"));
    }
    let empty = {
        west.commit();
        write(&west, &mut to_east, near_east).len()
    };
    assert_eq!(sizes[2], empty, "a change of no ghost field sends nothing");
    assert!(
        empty < 20,
        "an empty frame is under 20 bytes (WIRE.md): {empty}"
    );
    assert!(sizes[1] > empty && sizes[0] > sizes[1], "{sizes:?}");
    assert_eq!(ghosts.feed_stats().resyncs, 0);
}

#[test]
fn a_handoff_moves_the_ghost_to_the_other_side() {
    let (mut west, mut east) = (FastArray::shard(WEST), FastArray::shard(EAST));
    let a = west.push(walker(98));
    let b = east.push(walker(150));
    west.commit();
    east.commit();
    let (mut to_east, mut to_west) = (GhostFeed::new(), GhostFeed::new());
    let (mut west_ghosts, mut east_ghosts) = (FastArray::ghost(), FastArray::ghost());
    let mut tick = |west: &mut FastArray<Walker>, east: &mut FastArray<Walker>| {
        east_ghosts
            .apply_feed(&write(west, &mut to_east, near_east))
            .unwrap();
        west_ghosts
            .apply_feed(&write(east, &mut to_west, near_west))
            .unwrap();
        (east_ghosts.clone(), west_ghosts.clone())
    };
    let (east_sees, west_sees) = tick(&mut west, &mut east);
    assert!(east_sees.contains(a) && !west_sees.contains(b));
    // a crosses: west hands it off, east adopts it.
    west.get_mut(a).unwrap().x = 101;
    let mut handoff = Vec::new();
    west.hand_off(a, EAST, &mut handoff).unwrap();
    east.adopt(&handoff).unwrap();
    west.commit();
    east.commit();
    let (east_sees, west_sees) = tick(&mut west, &mut east);
    assert!(!east_sees.contains(a), "east holds a itself now");
    assert_eq!(west_sees.get(a), Some(&ghost_of(east.get(a).unwrap())));
    assert_ghosts(&west_sees, &east, near_west, "west's ghosts");
    assert_ghosts(&east_sees, &west, near_east, "east's ghosts");
}

#[test]
fn a_handoff_taken_back_in_the_frame_sends_the_ghost_whole_again() {
    let mut west = FastArray::shard(WEST);
    let a = west.push(walker(95));
    west.commit();
    let (mut to_east, mut ghosts) = joined(&west);
    // It moves, is handed off, and nobody takes it: west adopts it back,
    // all in one frame. The commit says it was removed and added.
    west.get_mut(a).unwrap().x = 96;
    let mut handoff = Vec::new();
    west.hand_off(a, EAST, &mut handoff).unwrap();
    west.adopt(&handoff).unwrap();
    let changes = west.commit();
    assert_eq!(
        (changes.removed(), changes.added()),
        ([a].as_slice(), [a].as_slice())
    );
    ghosts
        .apply_feed(&write(&west, &mut to_east, near_east))
        .unwrap();
    assert_ghosts(&ghosts, &west, near_east, "taken back");
}

#[test]
fn a_feed_covers_the_commits_it_missed_and_one_past_the_history_is_a_snapshot() {
    let mut west = FastArray::shard(WEST);
    let ids: Vec<ReplicationId> = (0..5).map(|k| west.push(walker(88 + k))).collect();
    west.commit();
    let (mut to_east, mut ghosts) = joined(&west);
    // Three commits, one message.
    west.get_mut(ids[0]).unwrap().x = 20;
    west.commit();
    west.get_mut(ids[1]).unwrap().hp = 3;
    west.remove(ids[2]);
    west.commit();
    west.push(walker(99));
    west.commit();
    let report = ghosts
        .apply_feed(&write(&west, &mut to_east, near_east))
        .unwrap();
    assert_eq!((report.frames, report.snapshot), (1, false));
    assert_ghosts(&ghosts, &west, near_east, "three commits");
    // More commits than the history holds: a snapshot.
    for k in 0..fastarray::HISTORY_LEN as i32 + 1 {
        west.get_mut(ids[3]).unwrap().x = 90 - k % 2 * 50;
        west.commit();
    }
    let report = ghosts
        .apply_feed(&write(&west, &mut to_east, near_east))
        .unwrap();
    assert!(report.snapshot);
    assert_ghosts(&ghosts, &west, near_east, "past the history");
}

#[test]
fn refilter_asks_every_item_when_the_reach_moves() {
    let mut west = FastArray::shard(WEST);
    for x in [50, 70, 95] {
        west.push(walker(x));
    }
    west.commit();
    let mut to_east = GhostFeed::new();
    let mut ghosts = FastArray::ghost();
    let wide = |w: &Walker| w.x >= 60;
    let mut apply = |west: &FastArray<Walker>, feed: &mut GhostFeed, near: fn(&Walker) -> bool| {
        ghosts.apply_feed(&write(west, feed, near)).unwrap();
        ghosts.clone()
    };
    apply(&west, &mut to_east, near_east);
    west.commit();
    // A filter that changed, unasked: only changed items would be asked.
    assert_eq!(apply(&west, &mut to_east, wide).len(), 1);
    to_east.refilter();
    west.commit();
    let seen = apply(&west, &mut to_east, wide);
    assert_ghosts(&seen, &west, wide, "refiltered");
    assert_eq!(seen.len(), 2);
}

#[test]
fn ghost_arrays_and_ghost_feeds_refuse_what_they_cannot_do() {
    let mut west = FastArray::shard(WEST);
    let a = west.push(walker(95));
    west.commit();
    let mut to_east = GhostFeed::new();
    let mut bytes = Vec::new();
    assert_eq!(
        west.write_ghost_snapshot(&to_east, &mut bytes),
        Err(SendError::GhostFeedBehind),
        "a feed that wrote nothing"
    );
    let joined = write(&west, &mut to_east, near_east);
    west.get_mut(a).unwrap().hp = 1;
    west.commit();
    assert_eq!(
        west.write_ghost_snapshot(&to_east, &mut bytes),
        Err(SendError::GhostFeedBehind),
        "a feed behind the last commit"
    );
    let next = write(&west, &mut to_east, near_east);
    west.get_mut(a).unwrap().hp = 2;
    assert_eq!(
        west.write_ghost_feed(&mut to_east, near_east, &mut bytes),
        Err(SendError::Uncommitted)
    );
    assert!(bytes.is_empty());
    west.commit();

    let mut ghosts = FastArray::<Walker>::ghost();
    ghosts.apply_feed(&joined).unwrap();
    // A ghost array writes nothing and applies no client's message.
    let mut packet = Vec::new();
    assert_eq!(
        ghosts.write_delta(&mut SendState::new(), 0, &mut packet),
        Err(SendError::Ghost {
            type_name: "Walker"
        })
    );
    assert!(matches!(
        ghosts.write_ghost_feed(&mut GhostFeed::new(), near_east, &mut packet),
        Err(SendError::Ghost { .. })
    ));
    let mut server = FastArray::new();
    server.push(walker(1));
    server.commit();
    server
        .write_delta(&mut SendState::new(), 0, &mut packet)
        .unwrap();
    assert!(matches!(
        ghosts.apply_delta(&packet, &mut ()),
        Err(DecodeError::Ghost { .. })
    ));
    // A relay's feed is not a ghost feed, and the other way round.
    let mut feed = Vec::new();
    west.write_feed(&mut feed).unwrap();
    assert!(matches!(
        ghosts.apply_feed(&feed),
        Err(DecodeError::UnexpectedMessageKind { .. })
    ));
    assert!(matches!(
        FastArray::<Walker>::relay().apply_feed(&next),
        Err(DecodeError::UnexpectedMessageKind { .. })
    ));
    assert!(matches!(
        FastArray::<Walker>::new().apply_feed(&next),
        Err(DecodeError::NotARelay { .. })
    ));
    assert_eq!(ghosts.get(a), Some(&ghost_of(&walker(95))), "unchanged");
    let local = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ghosts.clone().push(walker(3));
    }));
    assert!(local.is_err(), "a ghost's own push panics");
}

#[test]
fn relays_and_ghost_arrays_apply_feeds_within_the_limits_they_are_given() {
    let mut west = FastArray::shard(WEST);
    for x in 91..94 {
        west.push(walker(x));
    }
    west.commit();
    let two = MirrorLimits {
        items: 2,
        ..MirrorLimits::DEFAULT
    };
    let eight_bytes = MirrorLimits {
        message_bytes: 8,
        ..MirrorLimits::DEFAULT
    };
    let ghost_snapshot = write(&west, &mut GhostFeed::new(), near_east);
    let mut feed_snapshot = Vec::new();
    west.write_feed_snapshot(&mut feed_snapshot).unwrap();
    for (follower, bytes, limits, limit) in [
        (FastArray::ghost(), &ghost_snapshot, two, Limit::Items),
        (FastArray::relay(), &feed_snapshot, two, Limit::Items),
        (
            FastArray::relay(),
            &feed_snapshot,
            eight_bytes,
            Limit::MessageBytes,
        ),
    ] {
        refused_within_limits(follower, bytes, limits, limit);
    }
}

/// `follower`, given `limits`, refuses `bytes` (a snapshot of three
/// walkers) for `limit`, holds nothing and still needs a snapshot; with
/// the default limits, it applies them.
fn refused_within_limits(
    mut follower: FastArray<Walker>,
    bytes: &[u8],
    limits: MirrorLimits,
    limit: Limit,
) {
    follower.set_limits(limits);
    assert_eq!(follower.limits(), limits);
    let refused = follower.apply_feed(bytes);
    assert!(
        matches!(refused, Err(DecodeError::LimitExceeded { limit: l, .. }) if l == limit),
        "{limit:?}: {refused:?}"
    );
    assert!(follower.is_empty() && follower.needs_feed_snapshot());
    follower.set_limits(MirrorLimits::DEFAULT);
    follower.apply_feed(bytes).unwrap();
    assert_eq!(follower.len(), 3);
}

/// Every cut of a ghost message is refused and changes nothing; every
/// flipped bit is refused and changes nothing, or applies as a message.
#[test]
fn a_damaged_ghost_message_changes_nothing() {
    let mut west = FastArray::shard(WEST);
    let ids: Vec<ReplicationId> = (0..4).map(|k| west.push(walker(85 + 3 * k))).collect();
    west.commit();
    let mut to_east = GhostFeed::new();
    let snapshot = write(&west, &mut to_east, near_east);
    west.get_mut(ids[0]).unwrap().x = 10;
    west.get_mut(ids[1]).unwrap().hp = 7;
    west.push(walker(97));
    west.commit();
    let frame = write(&west, &mut to_east, near_east);
    let mut joined = FastArray::ghost();
    joined.apply_feed(&snapshot).unwrap();
    for (name, bytes, base) in [
        ("snapshot", &snapshot, FastArray::<Walker>::ghost()),
        ("frame", &frame, joined),
    ] {
        let state = |g: &FastArray<Walker>| {
            let items: Vec<(ReplicationId, Walker)> =
                g.iter().map(|(id, w)| (id, w.clone())).collect();
            (
                items,
                g.feed_frame(),
                g.needs_feed_snapshot(),
                g.has_feed_gap(),
            )
        };
        let before = state(&base);
        for cut in 0..bytes.len() {
            let mut ghost = base.clone();
            assert!(
                ghost.apply_feed(&bytes[..cut]).is_err(),
                "{name} cut at {cut}"
            );
            assert_eq!(state(&ghost), before, "{name} cut at {cut}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let mut ghost = base.clone();
            if ghost.apply_feed(&damaged).is_err() {
                assert_eq!(state(&ghost), before, "{name} bit {bit}");
            }
        }
    }
}

#[test]
fn a_ghost_holds_no_field_of_its_owner() {
    // The ghost fields are the audience rule of a client that owns
    // nothing: every field but `owner_only`.
    assert_eq!(Walker::OWNER_ONLY, FieldMask::single(2));
    let mut west = FastArray::shard(WEST);
    let a = west.push(walker(95));
    west.commit();
    let (mut to_east, mut ghosts) = joined(&west);
    west.get_mut(a).unwrap().secret = 77;
    west.commit();
    let bytes = write(&west, &mut to_east, near_east);
    let key = ghosts.key(a);
    ghosts.apply_feed(&bytes).unwrap();
    assert_eq!(ghosts.key(a), key, "nothing changed for the ghost");
    assert_eq!(ghosts.get(a).unwrap().secret, 0);
}

/// Two shards, each ghosting its border walkers to the other, over bus
/// links that lose, repeat and reorder; walkers cross the border with
/// handoffs. Each ghost array asks for a snapshot when it needs one (or a
/// gap does not fill). Once the links heal, each holds exactly the ghosts
/// of its neighbour's walkers within reach.
mod lossy {
    use fastarray::{FastArray, GhostFeed, ReplicationId, ShardId};
    use fastarray_testkit::link::{Link, LinkProfile};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::{BORDER, Walker, assert_ghosts, near_east, near_west, walker};
    use fastarray::DecodeError;

    const HEAL_AT: u32 = 120;

    struct Side {
        shard: FastArray<Walker>,
        /// Its feed to the other side, and the filter of it.
        feed: GhostFeed,
        near: fn(&Walker) -> bool,
        /// Its ghosts of the other side.
        ghosts: FastArray<Walker>,
        /// The link that brings them.
        bus: Link,
        asked_at: Option<u32>,
        gap_since: Option<u32>,
    }

    fn run(profile: &LinkProfile, seed: u64) {
        let label = format!("{} seed {seed}", profile.name);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let side = |shard: ShardId, near: fn(&Walker) -> bool, k: u64| Side {
            shard: FastArray::shard(shard),
            feed: GhostFeed::new(),
            near,
            ghosts: FastArray::ghost(),
            bus: Link::new(profile.clone(), seed * 8 + k),
            asked_at: None,
            gap_since: None,
        };
        let mut sides = [
            side(ShardId::new(0), near_east, 0),
            side(ShardId::new(1), near_west, 1),
        ];
        let mut packet = 0u32;
        let mut kept = 0;
        for now in 0.. {
            if now < HEAL_AT {
                for k in 0..2 {
                    let shard = &mut sides[k].shard;
                    if rng.random_bool(0.4) {
                        shard.push(walker(
                            BORDER - 20 + rng.random_range(0..20) + 20 * k as i32,
                        ));
                    }
                    let ids: Vec<ReplicationId> = shard.ids().collect();
                    for _ in 0..3.min(ids.len()) {
                        let id = ids[rng.random_range(0..ids.len())];
                        let mut w = shard.get_mut(id).unwrap();
                        w.x += rng.random_range(-4..=4);
                        w.hp = w.hp.wrapping_sub(u16::from(rng.random_bool(0.3)));
                        w.secret += 1;
                    }
                    if rng.random_bool(0.05) && ids.len() > 2 {
                        shard.remove(ids[rng.random_range(0..ids.len())]);
                    }
                    // Walkers that crossed go to the other side.
                    let crossed: Vec<ReplicationId> = (shard.iter())
                        .filter(|(_, w)| (w.x >= BORDER) != (k == 1))
                        .map(|(id, _)| id)
                        .collect();
                    for id in crossed {
                        let mut bytes = Vec::new();
                        let to = ShardId::new(1 - k as u16);
                        sides[k].shard.hand_off(id, to, &mut bytes).unwrap();
                        // This side keeps a ghost of it until the other's
                        // feed says where it went (unless a ghost of it
                        // from an earlier stay there is still held).
                        match sides[k].ghosts.keep_ghost(&bytes, &mut ()) {
                            Ok(_) => kept += 1,
                            Err(DecodeError::DuplicateId { .. }) => {}
                            Err(error) => panic!("{label}: keep: {error}"),
                        }
                        sides[1 - k].shard.adopt(&bytes).unwrap();
                    }
                }
            }
            if now == HEAL_AT {
                sides.iter_mut().for_each(|side| side.bus.heal());
            }
            for side in &mut sides {
                side.shard.commit();
            }
            for k in 0..2 {
                let (from, to) = match k {
                    0 => {
                        let [a, b] = &mut sides;
                        (a, b)
                    }
                    _ => {
                        let [a, b] = &mut sides;
                        (b, a)
                    }
                };
                let mut bytes = Vec::new();
                (from.shard)
                    .write_ghost_feed(&mut from.feed, from.near, &mut bytes)
                    .unwrap();
                packet += 1;
                to.bus.send(now, packet, bytes);
                to.gap_since = match (to.ghosts.has_feed_gap(), to.gap_since) {
                    (true, None) => Some(now),
                    (true, since) => since,
                    (false, _) => None,
                };
                let stuck = to.gap_since.is_some_and(|since| now >= since + 4);
                if (to.ghosts.needs_feed_snapshot() || stuck)
                    && to.asked_at.is_none_or(|at| now >= at + 8)
                {
                    let mut bytes = Vec::new();
                    from.shard
                        .write_ghost_snapshot(&from.feed, &mut bytes)
                        .unwrap();
                    packet += 1;
                    to.bus.send(now, packet, bytes);
                    to.asked_at = Some(now);
                }
                for bytes in to.bus.deliver(now) {
                    to.ghosts
                        .apply_feed(&bytes)
                        .unwrap_or_else(|e| panic!("{label}: ghosts of {k}: {e}"));
                }
                let _ = to.bus.reports(now);
            }
            let holds = |k: usize| {
                let (shard, ghosts) = (&sides[k].shard, &sides[1 - k].ghosts);
                let near = sides[k].near;
                let expected = shard.iter().filter(|(_, w)| near(w)).count();
                ghosts.len() == expected
                    && shard
                        .iter()
                        .filter(|(_, w)| near(w))
                        .all(|(id, w)| ghosts.get(id) == Some(&super::ghost_of(w)))
            };
            if now > HEAL_AT && holds(0) && holds(1) {
                break;
            }
            assert!(
                now < HEAL_AT + 400,
                "{label}: not converged: {:?} {:?}",
                sides[0].ghosts.feed_stats(),
                sides[1].ghosts.feed_stats()
            );
        }
        for k in 0..2 {
            let near = sides[k].near;
            assert_ghosts(&sides[1 - k].ghosts, &sides[k].shard, near, &label);
        }
        assert!(kept > 0, "{label}: no ghost kept through a handoff");
    }

    #[test]
    fn ghost_arrays_converge_over_lossy_links_with_walkers_crossing() {
        for profile in LinkProfile::all_for_tests() {
            for seed in 0..fastarray_testkit::drive::seeds_or(3) {
                run(&profile, seed);
            }
        }
    }
}

/// What a ghost array's callbacks heard, one line an event.
#[derive(Default)]
struct Heard(Vec<String>);

impl Callbacks<Walker> for Heard {
    fn post_add(&mut self, id: ReplicationId, item: &Walker) {
        self.0.push(format!("add {id} x {}", item.x));
    }
    fn pre_remove(&mut self, id: ReplicationId, item: &Walker) {
        self.0.push(format!("remove {id} x {}", item.x));
    }
    fn post_change(&mut self, id: ReplicationId, item: &Walker, changed: FieldMask) {
        self.0.push(format!(
            "change {id} x {} fields {:?}",
            item.x,
            changed.bits()
        ));
    }
    fn post_change_whole(&mut self, id: ReplicationId, item: &Walker, changed: FieldMask) {
        self.0.push(format!(
            "whole {id} x {} fields {:?}",
            item.x,
            changed.bits()
        ));
    }
    fn post_receive(&mut self, report: &ApplyReport) {
        self.0.push(format!(
            "received {:?}: {} added, {} changed, {} removed",
            report.frame, report.added, report.changed, report.removed
        ));
    }
}

impl Heard {
    fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.0)
    }
}

#[test]
fn a_ghost_arrays_callbacks_hear_ghosts_come_change_and_go() {
    let mut west = FastArray::shard(WEST);
    let a = west.push(walker(95));
    let b = west.push(walker(92));
    let c = west.push(walker(10));
    west.commit();
    let (mut to_east, mut ghosts, mut heard) =
        (GhostFeed::new(), FastArray::ghost(), Heard::default());
    let feed = |west: &FastArray<Walker>, to_east: &mut GhostFeed| write(west, to_east, near_east);
    ghosts
        .apply_feed_with(&feed(&west, &mut to_east), &mut heard)
        .unwrap();
    assert_eq!(
        heard.take(),
        [
            format!("add {a} x 95"),
            format!("add {b} x 92"),
            "received Some(1): 2 added, 0 changed, 0 removed".into()
        ]
    );

    // a moves (field 0), b leaves, c comes.
    west.get_mut(a).unwrap().x = 96;
    west.get_mut(b).unwrap().x = 50;
    west.get_mut(c).unwrap().x = 91;
    west.commit();
    ghosts
        .apply_feed_with(&feed(&west, &mut to_east), &mut heard)
        .unwrap();
    assert_eq!(
        heard.take(),
        [
            format!("remove {b} x 92"),
            format!("add {c} x 91"),
            format!("change {a} x 96 fields 1"),
            "received Some(2): 1 added, 1 changed, 1 removed".into()
        ]
    );

    // a is handed off and taken back in one frame: one ghost all along,
    // sent whole again, not a removal and an add.
    let mut handoff = Vec::new();
    west.hand_off(a, EAST, &mut handoff).unwrap();
    west.adopt(&handoff).unwrap();
    west.commit();
    ghosts
        .apply_feed_with(&feed(&west, &mut to_east), &mut heard)
        .unwrap();
    assert_eq!(
        heard.take(),
        [
            format!("whole {a} x 96 fields 0"),
            "received Some(3): 0 added, 1 changed, 0 removed".into()
        ]
    );

    // Two frames in the wrong order: nothing is heard of the early one
    // until the gap fills, then both, in order.
    west.get_mut(c).unwrap().x = 93;
    west.commit();
    let fourth = feed(&west, &mut to_east);
    west.get_mut(c).unwrap().x = 94;
    west.commit();
    let fifth = feed(&west, &mut to_east);
    ghosts.apply_feed_with(&fifth, &mut heard).unwrap();
    assert!(heard.take().is_empty());
    ghosts.apply_feed_with(&fourth, &mut heard).unwrap();
    assert_eq!(
        heard.take(),
        [
            format!("change {c} x 93 fields 1"),
            "received Some(4): 0 added, 1 changed, 0 removed".into(),
            format!("change {c} x 94 fields 1"),
            "received Some(5): 0 added, 1 changed, 0 removed".into()
        ]
    );

    // West restarts its feed, whose first message is a snapshot: the
    // resync says what differs.
    west.get_mut(a).unwrap().x = 97;
    west.get_mut(c).unwrap().x = 0;
    west.get_mut(b).unwrap().x = 99;
    west.commit();
    let snapshot = feed(&west, &mut GhostFeed::new());
    ghosts.apply_feed_with(&snapshot, &mut heard).unwrap();
    assert_eq!(
        heard.take(),
        [
            format!("remove {c} x 94"),
            format!("whole {a} x 97 fields 1"),
            format!("add {b} x 99"),
            "received Some(1): 1 added, 1 changed, 1 removed".into()
        ]
    );
    assert_ghosts(&ghosts, &west, near_east, "resynced");

    // Feeds are for followers.
    let mut server = FastArray::<Walker>::new();
    assert_eq!(
        server.apply_feed_with(&snapshot, &mut heard),
        Err(DecodeError::NotARelay {
            type_name: "Walker"
        })
    );
}

#[test]
fn a_shard_keeps_a_ghost_of_what_it_hands_off_until_the_other_says_where_it_went() {
    // West's ghosts of east's walkers: east's walkers with x < 110.
    let (mut west, mut east) = (FastArray::shard(WEST), FastArray::shard(EAST));
    let a = west.push(walker(99));
    let b = west.push(walker(98));
    let c = west.push(walker(97));
    west.commit();
    east.commit();
    let (mut from_east, mut west_sees, mut heard) = (
        GhostFeed::new(),
        FastArray::<Walker>::ghost(),
        Heard::default(),
    );
    let tick = |east: &mut FastArray<Walker>,
                from_east: &mut GhostFeed,
                west_sees: &mut FastArray<Walker>,
                heard: &mut Heard| {
        east.commit();
        let bytes = write(east, from_east, near_west);
        west_sees.apply_feed_with(&bytes, heard).unwrap();
    };
    tick(&mut east, &mut from_east, &mut west_sees, &mut heard);
    heard.take();

    // All three cross; west keeps a ghost of each.
    let mut handoffs = Vec::new();
    for id in [a, b, c] {
        west.get_mut(id).unwrap().x = 100;
        let mut bytes = Vec::new();
        west.hand_off(id, EAST, &mut bytes).unwrap();
        assert_eq!(west_sees.keep_ghost(&bytes, &mut heard), Ok(id));
        handoffs.push(bytes);
    }
    west.commit();
    assert_eq!(
        heard.take(),
        [a, b, c].map(|id| format!("add {id} x 100")),
        "the game sees them come"
    );
    assert_eq!(
        west_sees.keep_ghost(&handoffs[0], &mut heard),
        Err(DecodeError::DuplicateId { id: a })
    );
    for id in [a, b, c] {
        assert!(west_sees.is_kept(id));
        // Its ghost fields: no secret.
        let ghost = west_sees.get(id).unwrap();
        assert_eq!((ghost.x, ghost.secret, ghost.hp), (100, 0, 100));
    }
    // A message of east's before the adoptions says nothing of them.
    tick(&mut east, &mut from_east, &mut west_sees, &mut heard);
    assert!(heard.take().iter().all(|line| line.starts_with("received")));
    assert_eq!(west_sees.len(), 3);

    // East adopts a (which stays near), and b, which it moves out of
    // west's reach in the same frame; c's handoff is lost.
    east.adopt(&handoffs[0]).unwrap();
    east.adopt(&handoffs[1]).unwrap();
    east.get_mut(b).unwrap().x = 500;
    tick(&mut east, &mut from_east, &mut west_sees, &mut heard);
    assert_eq!(
        heard.take(),
        [
            format!("whole {a} x 100 fields 0"),
            format!("remove {b} x 100"),
            "received Some(3): 0 added, 1 changed, 1 removed".into()
        ],
        "a is east's ghost now; b went out of reach"
    );
    assert!(!west_sees.is_kept(a) && west_sees.contains(a) && !west_sees.contains(b));
    assert!(west_sees.is_kept(c));

    // West takes c back: it drops its kept ghost at once.
    west.take_back(&handoffs[2]).unwrap();
    west.commit();
    assert!(west_sees.drop_kept(c, &mut heard) && !west_sees.contains(c));
    assert_eq!(heard.take(), [format!("remove {c} x 100")]);
    assert!(
        !west_sees.drop_kept(c, &mut ()) && !west_sees.drop_kept(a, &mut ()),
        "a is east's ghost"
    );

    // A kept ghost nobody speaks of goes after 64 messages.
    west.get_mut(c).unwrap().x = 100;
    let mut lost = Vec::new();
    west.hand_off(c, EAST, &mut lost).unwrap();
    west.commit();
    west_sees.keep_ghost(&lost, &mut heard).unwrap();
    for _ in 0..63 {
        tick(&mut east, &mut from_east, &mut west_sees, &mut heard);
    }
    assert!(west_sees.is_kept(c));
    heard.take();
    tick(&mut east, &mut from_east, &mut west_sees, &mut heard);
    assert_eq!(heard.take()[0], format!("remove {c} x 100"));
    assert!(!west_sees.contains(c));

    // A resync drops what the snapshot does not hold.
    west.take_back(&lost).unwrap();
    west.get_mut(c).unwrap().x = 101;
    let mut again = Vec::new();
    west.hand_off(c, EAST, &mut again).unwrap();
    west.commit();
    west_sees.keep_ghost(&again, &mut heard).unwrap();
    let snapshot = write(&east, &mut GhostFeed::new(), near_west);
    west_sees.apply_feed(&snapshot).unwrap();
    assert!(!west_sees.contains(c) && !west_sees.is_kept(c));
    assert_ghosts(&west_sees, &east, near_west, "resynced");

    // Only a ghost array keeps ghosts.
    let mut relay = FastArray::<Walker>::relay();
    assert_eq!(
        relay.keep_ghost(&again, &mut ()),
        Err(DecodeError::NotAGhost {
            type_name: "Walker"
        })
    );
}
