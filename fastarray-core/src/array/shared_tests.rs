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
