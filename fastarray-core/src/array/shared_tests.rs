//! The frame's shared message is byte for byte the message a caught-up
//! connection would plan for itself, budgeted or not: so a budget that
//! holds it may take it.

use super::FastArray;
use crate::bits::BitWriter;
use crate::send_state::SendState;
use crate::send_state::stats::Budget;

#[derive(fastarray_derive::Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u16,
    team: u8,
    name: String,
}

/// `server`'s message for `state`, through the shared message if `share`,
/// within `budget` bits if given; with whether it was the shared one.
fn write(
    server: &mut FastArray<Unit>,
    state: &mut SendState,
    packet: u32,
    budget: Option<u64>,
    share: bool,
) -> (Vec<u8>, bool) {
    let budget = budget.map(Budget::of);
    let sender = server.sender.get_or_insert_with(Default::default);
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    let stats = sender
        .write_with(&mut server.store, state, packet, &mut writer, budget, share)
        .unwrap();
    writer.finish();
    (bytes, stats.shared)
}

/// A server of `units` units and the state of a connection whose client
/// holds them all, acknowledged.
fn caught_up(units: u16) -> (FastArray<Unit>, Vec<crate::id::ReplicationId>, SendState) {
    let mut server = FastArray::new();
    let ids = (0..units)
        .map(|n| {
            server.push(Unit {
                hp: n,
                team: (n % 4) as u8,
                name: format!("u{n}"),
            })
        })
        .collect();
    server.commit();
    let mut state = SendState::new();
    write(&mut server, &mut state, 0, None, true);
    state.on_ack(0);
    (server, ids, state)
}

#[test]
fn the_shared_message_is_what_a_connection_would_plan_and_a_budget_that_holds_it_takes_it() {
    let (mut server, ids, mut state) = caught_up(500);

    for round in 1..6u32 {
        for &id in ids.iter().skip(round as usize).step_by(37) {
            server.get_mut(id).unwrap().hp += 1;
        }
        server.commit();
        let own = write(&mut server, &mut state.clone(), round, None, false);
        let budgeted_own = write(&mut server, &mut state.clone(), round, Some(1 << 20), false);
        let shared = write(&mut server, &mut state.clone(), round, None, true);
        let fits = shared.0.len() as u64 * 8;
        let budgeted = write(&mut server, &mut state.clone(), round, Some(fits), true);
        let too_small = write(
            &mut server,
            &mut state.clone(),
            round,
            Some(fits - 16),
            true,
        );
        assert!(!own.1 && !budgeted_own.1);
        assert!(shared.1 && budgeted.1, "round {round}");
        assert_eq!(own.0, shared.0, "round {round}");
        assert_eq!(budgeted_own.0, shared.0, "round {round}");
        assert_eq!(budgeted.0, shared.0, "round {round}");
        // A budget the message does not fit: the connection's own, less.
        assert!(!too_small.1 && too_small.0.len() < shared.0.len());
        write(&mut server, &mut state, round, None, true);
        state.on_ack(round);
    }
}

/// Issue 32's one pass: a frame whose changes are the same fields of
/// items written in id order has its shared message's entries written by
/// the commit; any other frame's are written from the items. Either way
/// the message is byte for byte what a caught-up connection plans for
/// itself, frame after frame, as the gap code and the fields change.
#[test]
fn entries_written_by_the_commit_are_the_message_a_connection_would_plan() {
    let (mut server, ids, mut state) = caught_up(3_000);

    let mut by_commit = 0;
    for round in 1..40u32 {
        // Dense, spread, in reverse order, two fields, one item, a name.
        let step = [1, 1, 7, 1, 100, 1, 3, 2_999, 1, 13][round as usize % 10];
        let chosen = ids.iter().copied().skip(round as usize % 3).step_by(step);
        let chosen: Vec<_> = match round % 10 {
            2 => chosen.rev().collect(),
            _ => chosen.collect(),
        };
        for (n, &id) in chosen.iter().enumerate() {
            let mut unit = server.get_mut(id).unwrap();
            unit.hp = unit.hp.wrapping_add(1);
            if round % 10 == 3 && n % 2 == 0 {
                unit.team += 1;
            }
            if round % 10 == 9 {
                unit.name.push('!');
            }
        }
        server.commit();
        let frame = server.store.frame();
        // The first frame follows the full sync, which no connection took
        // as a shared message.
        let expected = round > 1 && round % 10 != 2 && round % 10 != 3 && chosen.len() >= 2;
        let body = &server.sender.as_ref().unwrap().body;
        assert_eq!(body.holds(frame), expected, "round {round}");
        let own = write(&mut server, &mut state.clone(), round, None, false);
        let shared = write(&mut server, &mut state, round, None, true);
        assert!(shared.1, "round {round}");
        assert_eq!(own.0, shared.0, "round {round}");
        state.on_ack(round);
        by_commit += u32::from(expected);
    }
    assert!(
        by_commit >= 20,
        "{by_commit} frames written by their commit"
    );

    // A commit with no caught-up connection writing since writes nothing.
    server.get_mut(ids[5]).unwrap().hp += 1;
    server.get_mut(ids[6]).unwrap().hp += 1;
    server.commit();
    server.get_mut(ids[5]).unwrap().hp += 1;
    server.get_mut(ids[6]).unwrap().hp += 1;
    server.commit();
    let frame = server.store.frame();
    assert!(!server.sender.as_ref().unwrap().body.holds(frame));
}

/// A caught-up connection whose packets are acknowledged two ticks late
/// takes every frame's shared message, adds and removals included, and
/// its view never takes those records: each acknowledgement brings the
/// oldest one's adds and removals to rest in one step. Its client's items
/// are counted all the same; a loss makes the view take them all, in
/// order, and is repaired.
#[test]
fn a_follower_acknowledging_late_leaves_its_records_to_their_acknowledgements() {
    let mut server = FastArray::new();
    let mut ids: Vec<_> = (0..200u16)
        .map(|n| {
            server.push(Unit {
                hp: n,
                team: 0,
                name: format!("u{n}"),
            })
        })
        .collect();
    server.commit();
    let (mut state, mut client) = (SendState::new(), FastArray::<Unit>::mirror());
    let (sync, _) = write(&mut server, &mut state, 0, None, true);
    client.apply_delta(&sync, &mut ()).unwrap();
    state.on_ack(0);

    let mut sent = std::collections::VecDeque::new();
    let mut made = 200u16;
    for packet in 1..60u32 {
        for _ in 0..3 {
            made += 1;
            let unit = Unit {
                hp: made,
                team: 1,
                name: format!("n{made}"),
            };
            ids.push(server.push(unit));
        }
        for _ in 0..3 {
            server.remove(ids.remove(usize::from(made) % ids.len()));
        }
        for &id in ids.iter().step_by(5) {
            server.get_mut(id).unwrap().hp += 1;
        }
        server.commit();
        let (bytes, shared) = write(&mut server, &mut state, packet, None, true);
        assert!(shared, "packet {packet}");
        sent.push_back((packet, bytes));
        if sent.len() > 2 {
            let (late, bytes) = sent.pop_front().unwrap();
            client.apply_delta(&bytes, &mut ()).unwrap();
            assert!(state.on_ack(late));
        }
        // Every record in flight is one the view has not taken.
        assert_eq!(state.packets_in_flight(), sent.len());
        assert_eq!(state.untaken_records(), sent.len(), "packet {packet}");
        // The client holds or will hold the live items, and holds the
        // removed ones whose removals are in flight.
        let leaving = 3 * sent.len();
        assert_eq!(state.client_items(), ids.len() + leaving, "packet {packet}");
    }
    // The newest packet is lost, the one before delivered.
    let (lost, _) = sent.pop_back().unwrap();
    assert!(state.on_loss(lost));
    assert_eq!(state.untaken_records(), 0);
    let (late, bytes) = sent.pop_front().unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();
    assert!(state.on_ack(late));
    for packet in 100..104u32 {
        server.commit();
        let (bytes, _) = write(&mut server, &mut state, packet, None, true);
        client.apply_delta(&bytes, &mut ()).unwrap();
        // A message with nothing to carry is not recorded.
        state.on_ack(packet);
    }
    assert!(server.is_settled(&state));
    assert_eq!(client.len(), ids.len());
    for &id in &ids {
        assert_eq!(client.get(id), server.get(id));
    }
}

/// An item added in one frame and removed in the next, both packets in
/// flight: a connection whose view has not taken the two records yet
/// writes what one whose view took them does (the form of the next shared
/// message asks the packets in flight whether one carries an add, not the
/// view).
#[test]
fn an_item_added_and_removed_in_flight_is_counted_the_same_taken_or_not() {
    let (mut server, mut ids, mut later) = caught_up(40);
    let mut at_once = later.clone();
    let added = server.push(Unit {
        hp: 1,
        team: 1,
        name: "new".into(),
    });
    server.remove(ids.remove(0));
    for packet in 1..4u32 {
        if packet == 2 {
            server.remove(added);
        }
        for &id in &ids {
            server.get_mut(id).unwrap().hp += 1;
        }
        server.commit();
        let a = write(&mut server, &mut later, packet, None, true);
        let b = write(&mut server, &mut at_once, packet, None, true);
        assert!(a.1, "packet {packet}");
        assert_eq!(a, b, "packet {packet}");
        at_once.replay_now();
    }
    assert_eq!(later.untaken_records(), 3);
    assert_eq!(later.client_items(), at_once.client_items());
}

mod follower {
    use proptest::prelude::*;

    use super::*;
    use crate::id::ReplicationId;

    /// One tick of [`a_view_taking_entries_later_writes_the_same_bytes`].
    #[derive(Clone, Debug)]
    struct Tick {
        /// Units pushed.
        adds: u8,
        /// Which live units are removed (every `removes`-th, from an offset).
        removes: (u8, u8),
        /// Which live units change (every `changes`-th).
        changes: u8,
        /// For each packet in flight, oldest first: acknowledged now (0),
        /// lost now (1), or left in flight (2 and more).
        fates: Vec<u8>,
    }

    fn tick() -> impl Strategy<Value = Tick> {
        (
            0..6u8,
            (0..12u8, 0..4u8),
            1..8u8,
            prop::collection::vec(
                prop_oneof![6 => Just(0u8), 1 => Just(1u8), 3 => 2..4u8],
                0..6,
            ),
        )
            .prop_map(|(adds, removes, changes, fates)| Tick {
                adds,
                removes,
                changes,
                fates,
            })
    }

    proptest! {
        /// A caught-up connection's view takes the entries of a frame's
        /// shared message at the next thing asked of it, or folds them into
        /// the packet's acknowledgement: every message, answer and count is
        /// what a view taking them as the packet is written gives, through
        /// adds, removals, losses, acknowledgements out of order, and
        /// packets left in flight past later writes.
        #[test]
        fn a_view_taking_entries_later_writes_the_same_bytes(ticks in prop::collection::vec(tick(), 1..40)) {
            let (mut server, mut ids, mut later) = caught_up(40);
            let mut at_once = later.clone();
            let mut in_flight: Vec<u32> = Vec::new();
            let (mut packet, mut made) = (1u32, 40u16);
            for tick in ticks {
                for _ in 0..tick.adds {
                    made += 1;
                    ids.push(server.push(Unit { hp: made, team: 1, name: format!("n{made}") }));
                }
                let (every, from) = tick.removes;
                if every > 0 {
                    let gone: Vec<ReplicationId> =
                        ids.iter().skip(from as usize).step_by(every as usize * 3).copied().collect();
                    for id in gone {
                        server.remove(id);
                        ids.retain(|&kept| kept != id);
                    }
                }
                for &id in ids.iter().step_by(tick.changes as usize) {
                    server.get_mut(id).unwrap().hp += 1;
                }
                server.commit();
                let a = write(&mut server, &mut later, packet, None, true);
                let b = write(&mut server, &mut at_once, packet, None, true);
                prop_assert_eq!(&a, &b, "packet {}", packet);
                at_once.replay_now();
                in_flight.push(packet);
                packet += 1;
                let mut kept = Vec::new();
                for (i, p) in in_flight.drain(..).enumerate() {
                    match tick.fates.get(i).copied().unwrap_or(0) {
                        0 => prop_assert_eq!(later.on_ack(p), at_once.on_ack(p)),
                        1 => prop_assert_eq!(later.on_loss(p), at_once.on_loss(p)),
                        _ => kept.push(p),
                    }
                }
                in_flight = kept;
                prop_assert_eq!(later.client_items(), at_once.client_items());
                prop_assert_eq!(later.pending_items(), at_once.pending_items());
                prop_assert_eq!(later.packets_in_flight(), at_once.packets_in_flight());
            }
        }
    }
}

#[test]
fn the_buffer_of_lent_messages_grown_by_a_full_sync_goes_at_the_next_message_of_its_own() {
    let (mut server, _, _) = caught_up(10_000);
    let mut state = SendState::new();
    let (sync, stats) = server.write_delta_slice(&mut state, 1).unwrap();
    let sync = sync.len();
    assert!(!stats.shared && sync > 50_000, "{sync} bytes");
    let kept = |server: &FastArray<Unit>| server.sender.as_ref().unwrap().lent_capacity();
    assert!(kept(&server) >= sync);
    // The sync is lost: a datagram's worth of it at a time.
    state.on_loss(1);
    let (part, stats) = server
        .write_delta_slice_with_budget(&mut state, 2, 1_200 * 8)
        .unwrap();
    let part = part.len();
    assert!(part <= 1_200 && stats.deferred > 0);
    assert!(kept(&server) <= 4 * part, "{} bytes kept", kept(&server));
}
