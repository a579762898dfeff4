//! The seed corpus: genuine inputs for every target.

use std::fmt::{self, Debug};

use fastarray::FastArray;

use super::ack::{AckOp, AckSetup, encode_ack_script};
use super::script::{Header, Op, encode_script};
use super::types::*;
use super::{ObjectFixture, SNAPSHOT_TYPES, snapshot_of};

/// One seed input: its target, a file name and its bytes.
pub struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

impl Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} ({} bytes)",
            self.target,
            self.name,
            self.bytes.len()
        )
    }
}

/// The seed corpus: genuine snapshots and messages (as the targets read
/// them) and valid scripts. Written to `fuzz/corpus/<target>/seed-*` by the
/// ignored test `write_seed_corpus` in `tests/suite/fuzz_replay.rs`.
pub fn seed_corpus() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut add = |target: &'static str, name: String, bytes: Vec<u8>| {
        seeds.push(Seed {
            target,
            name: format!("seed-{name}"),
            bytes,
        });
    };

    // snapshot: the genuine sessions' server snapshots, and small trees.
    let mut snapshots = |selector: u8, list: &[Vec<u8>]| {
        for (n, bytes) in list.iter().enumerate() {
            let name = SNAPSHOT_TYPES[usize::from(selector)].to_lowercase();
            add(
                "snapshot",
                format!("{name}-{n}"),
                [&[selector], &bytes[..]].concat(),
            );
        }
    };
    snapshots(0, &Unit::history().snapshots);
    snapshots(1, &Thing::history().snapshots);
    snapshots(3, &Named::history().snapshots);
    snapshots(4, &Squad::history().snapshots);
    snapshots(5, &Platoon::history().snapshots);
    let mut shapes = FastArray::new();
    shapes.push(Shape::Dot);
    shapes.push(Shape::Line { len: 9 });
    shapes.push(Shape::Rect { w: 1, h: 2 });
    shapes.push(Shape::Label("hi".into()));
    shapes.commit();
    snapshots(2, &[snapshot_of(&shapes)]);
    let mut nodes = FastArray::new();
    let leaf = |id| Node {
        id,
        children: Vec::new(),
    };
    nodes.push(Node {
        id: 1,
        children: vec![
            leaf(2),
            Node {
                id: 3,
                children: vec![leaf(4)],
            },
        ],
    });
    nodes.commit();
    snapshots(6, &[snapshot_of(&nodes)]);
    let mut chains = FastArray::new();
    chains.push(Chain {
        next: Some(Box::new(Chain {
            next: Some(Box::new(Chain { next: None })),
        })),
    });
    chains.push(Chain { next: None });
    chains.commit();
    snapshots(7, &[snapshot_of(&chains)]);
    let mut members = FastArray::new();
    (0..5).for_each(|n| {
        members.push(member(n));
    });
    members.commit();
    snapshots(8, &[snapshot_of(&members)]);

    // delta, inner: each genuine message on the mirror that applied the
    // ones before it, and a few late ones.
    let mut deltas = |target: &'static str, selector: u8, name: &str, messages: &[Vec<u8>]| {
        let len = messages.len();
        for (n, bytes) in messages.iter().enumerate() {
            let input = [&[selector, n as u8], &bytes[..]].concat();
            add(target, format!("{name}-{n}"), input);
        }
        for n in (2..len).step_by(3) {
            let input = [&[selector, n as u8], &messages[n - 2][..]].concat();
            add(target, format!("{name}-{n}-late"), input);
        }
    };
    deltas("delta", 0, "unit", &Unit::history().messages);
    deltas("delta", 1, "thing", &Thing::history().messages);
    deltas("delta", 2, "named", &Named::history().messages);
    deltas("delta", 3, "spawned", &Spawned::history().messages);
    deltas("inner", 0, "squad", &Squad::history().messages);
    deltas("inner", 1, "platoon", &Platoon::history().messages);
    deltas("object", 0, "world", World::messages());
    deltas("object", 1, "lobby", Lobby::messages());
    // delta, inner: the same messages to a mirror held to `LOW_LIMITS`
    // (the prefix byte's high bit), some of which it refuses.
    let mut limited = |target: &'static str, selector: u8, name: &str, messages: &[Vec<u8>]| {
        for (n, bytes) in messages.iter().enumerate() {
            let input = [&[selector, n as u8 | 0x80], &bytes[..]].concat();
            add(target, format!("{name}-{n}-limited"), input);
        }
    };
    limited("delta", 0, "unit", &Unit::history().messages);
    limited("inner", 0, "squad", &Squad::history().messages);
    limited("inner", 1, "platoon", &Platoon::history().messages);

    // stateful: valid scripts.
    for (name, header, ops) in seed_scripts() {
        add("stateful", name.into(), encode_script(header, &ops));
    }

    // connection: each genuine packet after the ones before it.
    for (n, packet) in super::connection::session().iter().enumerate() {
        add(
            "connection",
            format!("packet-{n}"),
            [&[n as u8], &packet[..]].concat(),
        );
    }

    // secure: a request, a response and a challenge as their layouts say,
    // and masks over genuine packets (none, the token, the tag, a cut).
    let protocol = super::secure::PROTOCOL.to_le_bytes();
    let hello = [
        &[1u8, 0][..],
        &protocol,
        &3u64.to_le_bytes(),
        &7u64.to_le_bytes(),
    ]
    .concat();
    add(
        "secure",
        "request".into(),
        [&[0u8, 0xF1][..], &hello, &[0; 5]].concat(),
    );
    add(
        "secure",
        "response".into(),
        [&[0u8, 0xF3][..], &hello, &[0; 16]].concat(),
    );
    add(
        "secure",
        "challenge".into(),
        [&[1u8, 0xF2][..], &[0; 24]].concat(),
    );
    add("secure", "token-genuine".into(), vec![2]);
    add("secure", "token-flip".into(), vec![2, 0, 0x40]);
    add(
        "secure",
        "token-body".into(),
        vec![2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    );
    add("secure", "sealed-genuine".into(), vec![3]);
    add("secure", "sealed-counter".into(), vec![3, 0, 1]);
    add("secure", "sealed-cut".into(), vec![3 | 4 << 2]);

    // ack: scripts of sends, genuine-looking acknowledgements, garbage
    // headers and polls.
    for (name, setup, ops) in ack_scripts() {
        add("ack", name.into(), encode_ack_script(setup, &ops));
    }
    seeds
}

/// Hand-written `ack` scripts covering every op.
fn ack_scripts() -> Vec<(&'static str, AckSetup, Vec<AckOp>)> {
    let setup = AckSetup {
        max_in_flight: None,
        reorder_threshold: 3,
        first_packet: 0,
    };
    // Both ways at once: send, the peer's header acknowledges the newest
    // packet and some before it, apply the peer's packet, time goes on.
    let mut exchange = Vec::new();
    for n in 0..80u16 {
        exchange.push(AckOp::Send { size: 60 });
        exchange.push(AckOp::Ack {
            sequence: n,
            back: (n % 3) as u8,
            ack_bits: 0xffff_fff0 | u32::from(n % 16),
            apply: n % 5 != 0,
        });
        exchange.push(AckOp::Poll { step: 2 });
    }
    exchange.push(AckOp::Applied { back: 3 });
    // Nothing acknowledged: every packet times out.
    let mut silence: Vec<AckOp> = (0..20).map(|_| AckOp::Send { size: 100 }).collect();
    silence.extend([AckOp::Poll { step: 40 }, AckOp::Poll { step: 255 }]);
    // Garbage: truncated and random headers, duplicates, raw applied numbers.
    let garbage = vec![
        AckOp::Receive {
            bytes: vec![1, 2, 3],
            apply: true,
        },
        AckOp::Send { size: 8 },
        AckOp::Receive {
            bytes: vec![0, 0, 0, 0, 0, 0, 0, 0],
            apply: true,
        },
        AckOp::Receive {
            bytes: vec![0, 0, 0, 0, 0, 0, 0, 0],
            apply: true,
        },
        AckOp::Receive {
            bytes: vec![9, 1, 0xff, 0xff, 0, 0, 0, 0],
            apply: false,
        },
        AckOp::AppliedRaw { packet: 265 },
        AckOp::AppliedRaw { packet: u32::MAX },
        AckOp::Ack {
            sequence: 40_000,
            back: 0,
            ack_bits: u32::MAX,
            apply: true,
        },
        AckOp::Send { size: 8 },
        AckOp::Receive {
            bytes: vec![0x40, 0x9c, 0, 0x80, 0, 0, 0, 0],
            apply: true,
        },
    ];
    // A genuine peer over a network that reorders (pick), duplicates
    // (flag 4), loses (packets never picked) and fails to decode (no
    // flag 2).
    let mut pair = Vec::new();
    for n in 0..60u8 {
        pair.extend([AckOp::Send { size: 40 }, AckOp::PeerSend]);
        if n % 4 != 1 {
            pair.push(AckOp::Deliver {
                pick: n % 3,
                flags: 1 | if n % 7 == 0 { 0 } else { 2 } | if n % 5 == 0 { 4 } else { 0 },
            });
        }
        if n % 3 != 2 {
            pair.push(AckOp::Deliver {
                pick: n / 3,
                flags: if n % 9 == 0 { 0 } else { 2 } | if n % 4 == 0 { 4 } else { 0 },
            });
        }
        pair.push(AckOp::Poll { step: 1 + n % 4 });
    }
    vec![
        ("pair", setup, pair.clone()),
        (
            "pair-wrap-threshold-1",
            AckSetup {
                reorder_threshold: 1,
                first_packet: 1,
                ..setup
            },
            pair,
        ),
        ("exchange", setup, exchange.clone()),
        (
            "exchange-wrap",
            AckSetup {
                first_packet: 1,
                ..setup
            },
            exchange.clone(),
        ),
        (
            "exchange-u32-wrap-small-window",
            AckSetup {
                max_in_flight: Some(7),
                reorder_threshold: 0,
                first_packet: 2,
            },
            exchange,
        ),
        ("timeouts", setup, silence),
        ("garbage", setup, garbage),
    ]
}

/// Hand-written scripts covering every op.
fn seed_scripts() -> Vec<(&'static str, Header, Vec<Op>)> {
    let header = |mode, conns, heal_budget| Header {
        mode,
        conns,
        heal_budget,
        scoped: false,
        persist: false,
    };
    let fill = |n: u8| (0..n).map(Op::Push).collect::<Vec<_>>();
    let edits = |n: u8| {
        (0..n)
            .map(|k| Op::Edit {
                item: k.wrapping_mul(5),
                op: k,
                arg: k.wrapping_mul(37),
            })
            .collect::<Vec<_>>()
    };
    let ticks = |n: usize| vec![Op::Tick; n];
    let mut scripts = Vec::new();
    for (mode, name) in [(0, "thing"), (1, "squad"), (2, "platoon"), (3, "named")] {
        // Good ticks only.
        let ops = [fill(6), ticks(2), edits(8), ticks(2)].concat();
        scripts.push((name, header(mode, 2, None), ops));
    }
    // Loss, reordering, duplicates, late delivery, ack on arrival.
    let lossy = [
        fill(5),
        vec![
            Op::Write { conn: 0 },
            Op::Write { conn: 1 },
            Op::Deliver { conn: 1, back: 0 },
            Op::Ack { conn: 1, back: 0 },
            Op::Loss { conn: 0, back: 0 },
        ],
        edits(6),
        vec![
            Op::Remove(2),
            Op::PushRemove(9),
            Op::Write { conn: 0 },
            Op::Write { conn: 1 },
            Op::Write { conn: 2 },
            Op::AckOnArrival { conn: 2 },
            Op::DeliverAll { conn: 2 },
            Op::Deliver { conn: 0, back: 1 },
            Op::Deliver { conn: 0, back: 0 },
            Op::Deliver { conn: 0, back: 0 },
            Op::Ack { conn: 0, back: 0 },
            Op::Reorder(0),
            Op::Reorder(3),
        ],
        edits(4),
        ticks(1),
    ]
    .concat();
    for (mode, name) in [(0, "thing-lossy"), (1, "squad-lossy"), (2, "platoon-lossy")] {
        scripts.push((name, header(mode, 3, None), lossy.clone()));
    }
    // Budgeted writes, and healing within a budget.
    let budgeted = [
        fill(8),
        edits(12),
        vec![
            Op::WriteBudget {
                conn: 0,
                budget: 100,
            },
            Op::WriteBudget { conn: 1, budget: 7 },
            Op::Deliver { conn: 0, back: 0 },
            Op::Ack { conn: 0, back: 0 },
            Op::WriteBudget {
                conn: 0,
                budget: 300,
            },
            Op::Deliver { conn: 0, back: 0 },
            Op::Deliver { conn: 1, back: 0 },
            Op::Ack { conn: 1, back: 0 },
        ],
        edits(3),
        ticks(1),
    ]
    .concat();
    for (mode, name) in [
        (0, "thing-budget"),
        (1, "squad-budget"),
        (3, "named-budget"),
    ] {
        scripts.push((name, header(mode, 2, Some(512)), budgeted.clone()));
    }
    // Commits without writes: a connection falls more than 64 frames
    // behind and resynchronises.
    let behind = [
        fill(4),
        ticks(1),
        edits(3),
        vec![Op::Commit; 70],
        vec![Op::Write { conn: 0 }, Op::Deliver { conn: 0, back: 0 }],
        ticks(1),
    ]
    .concat();
    scripts.push(("thing-resync", header(0, 2, None), behind.clone()));
    scripts.push(("squad-resync", header(1, 2, None), behind));
    // The arrays inside one item go past frame 64 (they commit only when
    // their item is written), while a second connection lags and loses
    // packets: their short frames then need a reference.
    let mut long = [fill(3), ticks(1)].concat();
    for k in 0..70u8 {
        // Item 2 has two members (item 0 none).
        long.push(Op::Edit {
            item: 2,
            op: 4,
            arg: k,
        });
        long.push(Op::Commit);
        long.push(Op::Write { conn: 0 });
        long.push(Op::Deliver { conn: 0, back: 0 });
        long.push(Op::Ack { conn: 0, back: 0 });
        if k % 8 == 0 {
            long.push(Op::Write { conn: 1 });
        }
        if k % 16 == 4 {
            long.push(Op::Loss { conn: 1, back: 0 });
        }
    }
    for conn in 0..2 {
        long.extend([
            Op::Remove(2),
            Op::Write { conn },
            Op::Deliver { conn, back: 0 },
            Op::Ack { conn, back: 0 },
        ]);
    }
    scripts.push(("squad-long-inner", header(1, 2, None), long.clone()));
    scripts.push(("platoon-long-inner", header(2, 2, None), long));
    // Scopes: items enter and leave while packets are lost, late and
    // duplicated, one flips every step, and some are removed out of scope.
    let scope = |conn, item| Op::Scope { conn, item };
    let mut scoped = [fill(8), ticks(1)].concat();
    scoped.extend((0..8).map(|item| scope(item % 3, item)));
    scoped.extend(ticks(1));
    for k in 0..12u8 {
        scoped.extend([
            scope(k % 3, k.wrapping_mul(3)),
            scope(0, 1),
            Op::Edit {
                item: k,
                op: k,
                arg: k.wrapping_mul(11),
            },
            Op::Write { conn: k % 3 },
            Op::Deliver {
                conn: k % 3,
                back: k % 2,
            },
        ]);
        if k % 4 == 1 {
            scoped.extend([
                Op::Loss {
                    conn: k % 3,
                    back: 1,
                },
                Op::Remove(k),
            ]);
        }
        if k % 3 == 2 {
            scoped.extend([Op::Ack { conn: 0, back: 0 }, Op::DeliverAll { conn: 1 }]);
        }
    }
    scoped.extend([Op::Commit; 70]);
    scoped.extend([scope(2, 4), Op::Write { conn: 2 }, Op::Tick]);
    for (mode, name) in [
        (0, "thing-scoped"),
        (1, "squad-scoped"),
        (2, "platoon-scoped"),
    ] {
        let header = Header {
            scoped: true,
            ..header(mode, 3, None)
        };
        scripts.push((name, header, scoped.clone()));
    }
    let budgeted = Header {
        scoped: true,
        ..header(3, 2, Some(300))
    };
    scripts.push(("named-scoped-budget", budgeted, scoped.clone()));
    for (mode, name) in [(0, "thing-persist"), (1, "squad-persist")] {
        let header = Header {
            scoped: true,
            persist: true,
            ..header(mode, 3, None)
        };
        scripts.push((name, header, scoped.clone()));
    }
    scripts
}
