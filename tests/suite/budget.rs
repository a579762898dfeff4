//! Budgeted writes: every packet makes progress, what fits does not depend
//! on the backlog, an item too large for the budget is reported while the
//! rest flows, and a budget serves items fairly under loss.

use fastarray::{Callbacks, FastArray, FieldMask, Replicate, ReplicationId, SendState};
use fastarray_testkit::fixtures::ranked::{Member, Squad};
use fastarray_testkit::link::{Link, LinkProfile};

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    a: u32,
    b: u16,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Item {
    kind: u16,
    count: u8,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Player {
    name: String,
    x: f32,
    y: f32,
    hp: u8,
    #[replicate(array)]
    bag: FastArray<Item>,
}

fn player(n: u32, name_len: usize) -> Player {
    let mut bag = FastArray::new();
    bag.push(Item {
        kind: n as u16,
        count: 1,
    });
    Player {
        name: "p".repeat(name_len),
        x: n as f32,
        y: 0.5,
        hp: 100,
        bag,
    }
}

/// Writes packets with `budget` over a perfect link (each applied and
/// acknowledged at once) until `conn` settles; returns each packet's
/// items sent (whole or changed, at every level) and panics after `limit`.
fn drain<T: Replicate>(
    server: &mut FastArray<T>,
    conn: &mut SendState,
    client: &mut FastArray<T>,
    budget: u64,
    limit: u32,
) -> Vec<usize> {
    let mut sent = Vec::new();
    for packet in 0..limit {
        server.commit();
        let mut bytes = Vec::new();
        let stats = server
            .write_delta_with_budget(conn, packet, &mut bytes, budget)
            .unwrap();
        assert!(stats.bits <= budget, "{} bits over {budget}", stats.bits);
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        sent.push(stats.added + stats.changed);
        if server.is_settled(conn) {
            return sent;
        }
    }
    let head = &sent[..sent.len().min(20)];
    panic!("not settled after {limit} packets of {budget} bits; the first: {head:?}");
}

/// Issue 10, finding 3: 20 new squads of one member each, 256 bits a
/// packet. Each squad's entry used to be resent in every packet with no
/// room left for any member, forever.
#[test]
fn squads_and_their_members_arrive_within_a_small_budget() {
    let mut server = FastArray::new();
    for tag in 0..20 {
        let mut members = FastArray::new();
        members.push(Member { hp: 7, rank: 1 });
        server.push(Squad { tag, members });
    }
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    let sent = drain(&mut server, &mut conn, &mut client, 256, 300);
    assert!(sent.len() <= 8, "{} packets: {sent:?}", sent.len());
    assert!(
        sent.iter().all(|&n| n > 0),
        "a packet without progress: {sent:?}"
    );
    assert_eq!(client, server);
}

/// Issue 10, finding 3 at an MTU: 600 players with a one-item bag in
/// 1 200-byte packets (they never settled).
#[test]
fn players_with_bags_settle_at_an_mtu_budget() {
    let mut server = FastArray::new();
    for n in 0..600 {
        server.push(player(n, 6));
    }
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    let sent = drain(&mut server, &mut conn, &mut client, 1_200 * 8, 10_000);
    // About 150 bits a player: some 64 a packet.
    assert!(sent.len() <= 15, "{} packets: {sent:?}", sent.len());
    assert_eq!(client, server);

    // Then each player moves and one bag item changes: still settles.
    for (n, id) in server.ids().collect::<Vec<_>>().into_iter().enumerate() {
        let mut p = server.get_mut(id).unwrap();
        p.x += 1.0;
        if n % 3 == 0 {
            let item = p.bag.ids().next().unwrap();
            p.bag.get_mut(item).unwrap().count = 2;
        }
    }
    drain(&mut server, &mut conn, &mut client, 1_200 * 8, 10_000);
    assert_eq!(client, server);
}

/// Issue 10, finding 4: with a budget that holds one or two items, each
/// packet carries as many as fit, whatever the backlog (88 bits with 20
/// adds used to deliver 1 in 400 packets).
#[test]
fn what_fits_does_not_depend_on_the_backlog() {
    for budget in [88u64, 96, 104, 200, 1_000] {
        let mut first = None;
        for backlog in [1u32, 20, 60, 200] {
            let mut server = FastArray::new();
            for n in 0..backlog {
                server.push(Unit { a: n, b: 7 });
            }
            let (mut conn, mut client) = (SendState::new(), FastArray::new());
            let sent = drain(&mut server, &mut conn, &mut client, budget, 10_000);
            assert!(
                sent.iter().all(|&n| n > 0),
                "{budget} bits, {backlog} items: {sent:?}"
            );
            assert_eq!(client, server);
            // The first packet of a backlog takes as many as fit: as many
            // as a backlog of that size holds.
            let first_sent = sent[0];
            let expected = *first.get_or_insert(first_sent);
            if backlog as usize >= expected {
                assert!(
                    first_sent >= expected,
                    "{budget} bits: {first_sent} of {backlog} in the first packet, {expected} of a smaller backlog"
                );
            }
            first = Some(first_sent.max(expected));
            let per_packet = sent.iter().sum::<usize>() as f64 / sent.len() as f64;
            assert!(
                sent.len() as u32 <= backlog.div_ceil(first_sent as u32) + 1,
                "{budget} bits, {backlog} items: {} packets ({per_packet:.1} a packet)",
                sent.len()
            );
        }
    }
}

/// Issue 10, finding 5: a player whose name makes it larger than the
/// budget is reported (id and size), and everybody else arrives.
#[test]
fn an_item_larger_than_the_budget_is_reported_and_the_rest_flows() {
    let mut server = FastArray::new();
    let mut big = None;
    for n in 0..40 {
        let id = server.push(player(n, if n == 17 { 2_000 } else { 4 }));
        if n == 17 {
            big = Some(id);
        }
    }
    let big = big.unwrap();
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    let budget = 1_200 * 8;
    let mut packet = 0;
    let mut reports = 0;
    loop {
        let mut bytes = Vec::new();
        let stats = server
            .write_delta_with_budget(&mut conn, packet, &mut bytes, budget)
            .unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
        packet += 1;
        let oversized = stats.oversized.expect("the big player is reported");
        assert_eq!(oversized.id, big);
        assert_eq!(oversized.count, 1);
        assert!(
            oversized.bits > budget && oversized.bits < 2_100 * 8,
            "{oversized:?}"
        );
        reports += 1;
        server.commit();
        if conn.pending_items() == 1 {
            break;
        }
        assert!(packet < 10, "the others did not flow");
    }
    assert!(reports >= 1);
    assert_eq!(client.len(), 39);
    assert!(!client.contains(big));
    // A write without a budget sends it.
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, packet, &mut bytes).unwrap();
    assert_eq!(stats.oversized, None);
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(packet);
    assert_eq!(client, server);
}

/// An array inside an item whose own item is too large: reported with the
/// owner's id.
#[test]
fn an_inner_item_larger_than_the_budget_is_reported_by_its_owner() {
    let mut server = FastArray::new();
    let owner = server.push(Squad {
        tag: 1,
        members: FastArray::new(),
    });
    let other = server.push(Squad {
        tag: 2,
        members: FastArray::new(),
    });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    drain(&mut server, &mut conn, &mut client, 1_000, 10);
    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Named {
        name: String,
    }
    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Team {
        #[replicate(array)]
        named: FastArray<Named>,
    }
    let mut server = FastArray::new();
    let team = server.push(Team {
        named: FastArray::new(),
    });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    drain(&mut server, &mut conn, &mut client, 1_000, 10);
    server.get_mut(team).unwrap().named.push(Named {
        name: "x".repeat(500),
    });
    server.commit();
    let stats = server
        .write_delta_with_budget(&mut conn, 50, &mut Vec::new(), 1_000)
        .unwrap();
    let oversized = stats.oversized.expect("reported");
    assert_eq!(oversized.id, team);
    assert!(oversized.bits > 4_000, "{oversized:?}");
    assert!(stats.deferred > 0);
    let _ = (owner, other);
}

/// Watches, per item, how many updates of other items the mirror applied
/// between two updates of that item: with a fair share of the budget,
/// about one per other item. Counting updates rather than ticks measures
/// the scheduler and not the link: a run of lost packets makes every item
/// wait, and no order of sending can help that.
struct Updates {
    /// Updates applied so far, of any item.
    total: u64,
    /// Per item, `total` at its last update.
    last: Vec<u64>,
    /// The most updates of others seen between two of one item's.
    worst: u64,
    counting: bool,
}

impl Callbacks<Unit> for Updates {
    fn post_change(&mut self, id: ReplicationId, _item: &Unit, changed: FieldMask) {
        if changed.is_empty() {
            return;
        }
        let last = &mut self.last[id.to_raw() as usize];
        if self.counting {
            self.worst = self.worst.max(self.total - *last);
        }
        self.total += 1;
        *last = self.total;
    }
}

/// The most updates of other items a mirror applied between two updates
/// of one item, over the fair share (one per other item), with every item
/// changing every tick and a budget of a few items a packet.
fn fairness(profile: LinkProfile, seed: u64, items: u32, budget: u64) -> f64 {
    let ticks = 1_200u32;
    let mut server = FastArray::new();
    for n in 0..items {
        server.push(Unit { a: n, b: 0 });
    }
    let mut conn = SendState::new();
    let mut client = FastArray::new();
    let mut link = Link::new(profile, seed);
    let mut updates = Updates {
        total: 0,
        last: vec![0; items as usize],
        worst: 0,
        counting: false,
    };
    for now in 0..ticks {
        let ids: Vec<_> = server.ids().collect();
        for id in ids {
            server.get_mut(id).unwrap().a += 1;
        }
        server.commit();
        let mut bytes = Vec::new();
        server
            .write_delta_with_budget(&mut conn, now, &mut bytes, budget)
            .unwrap();
        link.send(now, now, bytes);
        // After a warm-up in which every item arrived once.
        updates.counting |= now == 200;
        for bytes in link.deliver(now) {
            client.apply_delta(&bytes, &mut updates).unwrap();
        }
        for report in link.reports(now) {
            report.tell(&mut conn);
        }
    }
    updates.worst as f64 / f64::from(items - 1)
}

/// Issue 10, finding 10: with every item changing every tick and a budget
/// of a few items a packet, no item waits more than twice its fair share,
/// without loss and with 40% of packets lost. (With 300 items, ids up to
/// 300 used to be counted at their full varint length, so the small ids
/// fitted where the large ones did not: 2.95 times, without loss.)
///
/// Loss reports arrive the next tick here. When they take a few ticks, a
/// run of L losses of an item's packets delays it by L round trips while
/// other items keep arriving: no order of sending avoids that, so the
/// bound there is looser (measured: 3.6 at most with 20 items, 1.6 with
/// 100). Run with `--nocapture` for the table.
#[test]
fn a_budget_serves_every_item_fairly_under_loss() {
    let prompt = LinkProfile {
        loss: 0.4,
        delay: (1, 1),
        ack_delay: (0, 0),
        ..LinkProfile::lossy(0.4)
    };
    let late = LinkProfile {
        loss: 0.4,
        ..LinkProfile::lossy(0.4)
    };
    // Each `Unit` entry takes about 56 bits with its id: 2 to 4 a packet.
    for (budget, items) in [(150u64, 20u32), (260, 40), (200, 100), (150, 300)] {
        for seed in 0..2 {
            let clean = fairness(LinkProfile::perfect(), seed, items, budget);
            let lossy = fairness(prompt.clone(), seed, items, budget);
            let slow = fairness(late.clone(), seed, items, budget);
            println!(
                "{budget} bits, {items} items, seed {seed}: no loss {clean:.2}, 40% loss {lossy:.2}, 40% loss reported late {slow:.2}"
            );
            assert!(
                clean <= 2.0,
                "{budget} bits, {items} items, no loss: {clean:.2}"
            );
            assert!(
                lossy <= 2.0,
                "{budget} bits, {items} items, 40% loss, seed {seed}: {lossy:.2}"
            );
            assert!(
                slow <= 4.0,
                "{budget} bits, {items} items, 40% loss reported late, seed {seed}: {slow:.2}"
            );
        }
    }
}
