//! Detail levels: `#[replicate(detail = N)]` and `ScopeMut::set_detail`.
//! A connection that sees an item at a level below a field's detail is not
//! sent that field's changes; when the level rises, exactly the withheld
//! fields that changed are sent.

use fastarray::{FastArray, FieldMask, MAX_DETAIL, Replicate, ReplicationId, SendError, SendState};

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Plain {
    a: u8,
    b: u16,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Unit {
    #[replicate(quantize(min = -100.0, max = 100.0, bits = 12))]
    pos: [f32; 2],
    #[replicate(bits = 7, detail = 1)]
    hp: u8,
    #[replicate(detail = 2)]
    name: String,
    #[replicate(detail = 7)]
    emote: u16,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Outer {
    #[replicate(detail = 3)]
    id: u32,
    #[replicate(flatten, detail = 1)]
    unit: Unit,
    #[replicate(flatten)]
    plain: Plain,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Pair(#[replicate(detail = 4)] u8, u8);

fn mask(bits: u64) -> FieldMask {
    FieldMask::from_bits(bits)
}

#[test]
fn detail_masks_follow_the_attributes() {
    for level in 0..=MAX_DETAIL {
        assert_eq!(Plain::detail_mask(level), FieldMask::all(2));
    }
    let unit = [
        0b0001, 0b0011, 0b0111, 0b0111, 0b0111, 0b0111, 0b0111, 0b1111,
    ];
    for level in 0..=MAX_DETAIL {
        assert_eq!(
            Unit::detail_mask(level),
            mask(unit[level as usize]),
            "Unit at {level}"
        );
    }
    // Outer: id (bit 0), unit's 4 leaves (bits 1-4, from level 1), plain's
    // 2 leaves (bits 5-6, always).
    for level in 0..=MAX_DETAIL {
        let id = u64::from(level >= 3);
        let unit = if level >= 1 {
            unit[level as usize] << 1
        } else {
            0
        };
        let expected = id | unit | 0b110_0000;
        assert_eq!(
            Outer::detail_mask(level),
            mask(expected),
            "Outer at {level}"
        );
    }
    assert_eq!(Pair::detail_mask(3), mask(0b10));
    assert_eq!(Pair::detail_mask(4), mask(0b11));
}

/// Types of the same name and fields with other detail levels, and with
/// none: the schema hash is a type's name, fields and encodings, and
/// whether a level can withhold a field (a whole value then says which
/// fields it carries), not the levels themselves.
mod same {
    use fastarray::Replicate;

    #[derive(Replicate, Clone, Debug, PartialEq)]
    #[allow(dead_code)]
    pub struct Unit {
        #[replicate(quantize(min = -100.0, max = 100.0, bits = 12))]
        pos: [f32; 2],
        #[replicate(bits = 7, detail = 3)]
        hp: u8,
        name: String,
        #[replicate(detail = 1)]
        emote: u16,
    }

    pub mod flat {
        use fastarray::Replicate;

        #[derive(Replicate, Clone, Debug, PartialEq)]
        #[allow(dead_code)]
        pub struct Unit {
            #[replicate(quantize(min = -100.0, max = 100.0, bits = 12))]
            pos: [f32; 2],
            #[replicate(bits = 7)]
            hp: u8,
            name: String,
            emote: u16,
        }
    }
}

#[test]
fn detail_levels_are_not_part_of_the_schema_but_withholding_is() {
    const { assert!(Unit::WITHHOLDS && <same::Unit as Replicate>::WITHHOLDS) };
    const { assert!(!<same::flat::Unit as Replicate>::WITHHOLDS && !Plain::WITHHOLDS) };
    // Through its flattened `Unit`.
    const { assert!(Outer::WITHHOLDS) };
    assert_eq!(Unit::SCHEMA_HASH, <same::Unit as Replicate>::SCHEMA_HASH);
    assert_ne!(
        Unit::SCHEMA_HASH,
        <same::flat::Unit as Replicate>::SCHEMA_HASH
    );
}

fn unit(x: f32) -> Unit {
    Unit {
        pos: [x, 0.0],
        hp: 100,
        name: "far".into(),
        emote: 0,
    }
}

fn round(
    server: &mut FastArray<Unit>,
    conn: &mut SendState,
    client: &mut FastArray<Unit>,
    packet: u32,
) -> fastarray::DeltaStats {
    let mut bytes = Vec::new();
    let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(packet);
    stats
}

/// A unit in a connection's scope at detail level 0, not yet written.
fn far_unit() -> (FastArray<Unit>, ReplicationId, SendState, FastArray<Unit>) {
    let mut server = FastArray::new();
    let id = server.push(unit(1.0));
    server.commit();
    let (mut conn, client) = (SendState::new(), FastArray::<Unit>::mirror());
    let mut scope = server.scope(&mut conn).unwrap();
    scope.include(id);
    assert!(scope.set_detail(id, 0));
    assert_eq!(scope.detail(id), 0);
    (server, id, conn, client)
}

#[test]
fn fields_above_the_level_wait_and_exactly_those_that_changed_go_when_it_rises() {
    let (mut server, id, mut conn, mut client) = far_unit();
    // The add carries only what level 0 sends: `pos`. The other fields
    // hold their `Default` on the client.
    let stats = round(&mut server, &mut conn, &mut client, 1);
    assert_eq!(stats.added, 1);
    let seen = client.get(id).unwrap();
    assert_eq!((seen.hp, seen.name.as_str(), seen.emote), (0, "", 0));
    assert!((seen.pos[0] - 1.0).abs() < 0.05);
    assert!(!client.wire_eq(&server));
    assert!(server.is_settled(&conn), "withheld fields are not due");

    // At level 0 only `pos` goes.
    {
        let mut unit = server.get_mut(id).unwrap();
        unit.pos = [2.0, 0.0];
        unit.hp = 50;
        unit.name = "near".into();
    }
    server.commit();
    let stats = round(&mut server, &mut conn, &mut client, 2);
    assert_eq!(stats.changed, 1);
    let seen = client.get(id).unwrap();
    assert_eq!((seen.hp, seen.name.as_str()), (0, ""));
    assert!((seen.pos[0] - 2.0).abs() < 0.05);
    assert!(server.is_settled(&conn), "withheld fields are not due");

    // Nothing changes at level 0: nothing goes.
    server.get_mut(id).unwrap().emote = 9;
    server.commit();
    assert_eq!(round(&mut server, &mut conn, &mut client, 3).bits, 1);

    // Level 1: `hp` goes, alone (not `pos`, which the client has).
    server.scope(&mut conn).unwrap().set_detail(id, 1);
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 4, &mut bytes).unwrap();
    assert_eq!(stats.changed, 1);
    let mut only_hp = FastArray::<Unit>::mirror();
    only_hp.apply_delta(&bytes, &mut ()).unwrap_err(); // a partial change for an unknown item
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(4);
    assert_eq!(client.get(id).unwrap().hp, 50);
    assert_eq!(client.get(id).unwrap().name, "");

    // Every detail: `name` and `emote` go.
    server.scope(&mut conn).unwrap().set_detail(id, MAX_DETAIL);
    round(&mut server, &mut conn, &mut client, 5);
    assert!(client.wire_eq(&server));
    assert!(server.is_settled(&conn));
}

#[test]
fn a_whole_value_at_a_low_level_withholds_the_rest_until_it_rises() {
    let (mut server, id, mut conn, mut client) = far_unit();
    // Changed before the add was written: the add does not carry it.
    server.get_mut(id).unwrap().name = "x".into();
    server.commit();
    round(&mut server, &mut conn, &mut client, 1);
    assert_eq!(client.get(id).unwrap().name, "");
    server.scope(&mut conn).unwrap().set_detail(id, MAX_DETAIL);
    let stats = round(&mut server, &mut conn, &mut client, 2);
    assert_eq!((stats.added, stats.changed), (0, 1));
    assert!(client.wire_eq(&server));
}

/// A snapshot holds every item with every field: a scoped connection is
/// refused one (before, it silently lost its scope and was sent
/// everything), and is left as it was.
#[test]
fn a_scoped_connection_is_refused_a_snapshot() {
    let (mut server, id, mut conn, _) = far_unit();
    let mut out = Vec::new();
    assert_eq!(
        server.write_snapshot_for(&mut conn, &mut out),
        Err(SendError::ScopedSnapshot)
    );
    assert!(out.is_empty());
    let scope = server.scope(&mut conn).unwrap();
    assert!(scope.contains(id));
    assert_eq!(scope.detail(id), 0);
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Secretive {
    hp: u16,
    #[replicate(detail = 2)]
    secret: u32,
}

/// The repro: an item seen at level 0 whose add is in flight
/// twice; the second copy is lost after the first was acknowledged, and
/// its repair goes whole. A whole value is only what the connection may
/// see: `secret`, withheld at level 0, must not ride along.
#[test]
fn a_repair_sent_whole_does_not_carry_a_withheld_field() {
    let mut server = FastArray::new();
    let id = server.push(Secretive { hp: 10, secret: 0 });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Secretive>::mirror());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        scope.include(id);
        scope.set_detail(id, 0);
    }
    let write = |server: &mut FastArray<Secretive>, conn: &mut SendState, packet| {
        let mut bytes = Vec::new();
        let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
        (bytes, stats)
    };
    let (first, _) = write(&mut server, &mut conn, 1);
    server.get_mut(id).unwrap().hp = 11;
    server.commit();
    let (_second, stats) = write(&mut server, &mut conn, 2);
    assert_eq!(stats.added, 1, "the add is in flight: whole again");
    client.apply_delta(&first, &mut ()).unwrap();
    conn.on_ack(1);

    server.get_mut(id).unwrap().secret = 2;
    server.commit();
    let (third, _) = write(&mut server, &mut conn, 3);
    client.apply_delta(&third, &mut ()).unwrap();
    assert_eq!(client.get(id).unwrap().secret, 0, "withheld at level 0");

    conn.on_loss(2);
    let (fourth, _) = write(&mut server, &mut conn, 4);
    client.apply_delta(&fourth, &mut ()).unwrap();
    conn.on_ack(3);
    conn.on_ack(4);
    assert_eq!(client.get(id).unwrap().hp, 11, "the repair arrived");
    assert_eq!(
        client.get(id).unwrap().secret,
        0,
        "a field withheld from the connection reached it through loss repair"
    );

    // Once the level sends it, it goes.
    server.scope(&mut conn).unwrap().set_detail(id, 2);
    let (fifth, _) = write(&mut server, &mut conn, 5);
    client.apply_delta(&fifth, &mut ()).unwrap();
    conn.on_ack(5);
    assert_eq!(client.get(id).unwrap().secret, 2);
    assert!(client.wire_eq(&server));
}

/// An item that enters the scope at a low level goes whole with only the
/// fields that level sends; the others hold `Default` on the client until
/// the level rises.
#[test]
fn an_add_at_a_low_level_carries_only_what_the_level_sends() {
    let mut server = FastArray::new();
    let id = server.push(Secretive { hp: 10, secret: 7 });
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<Secretive>::mirror());
    {
        let mut scope = server.scope(&mut conn).unwrap();
        scope.include(id);
        scope.set_detail(id, 1);
    }
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    assert_eq!(stats.added, 1);
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(1);
    assert_eq!(*client.get(id).unwrap(), Secretive { hp: 10, secret: 0 });
    assert!(server.is_settled(&conn), "withheld fields are not due");

    server.scope(&mut conn).unwrap().set_detail(id, 2);
    let mut bytes = Vec::new();
    let stats = server.write_delta(&mut conn, 2, &mut bytes).unwrap();
    assert_eq!((stats.added, stats.changed), (0, 1));
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(2);
    assert_eq!(*client.get(id).unwrap(), Secretive { hp: 10, secret: 7 });
}

// "Withheld means never sent", over lossy links: a scoped connection
// whose items enter and leave the scope, change detail level up and down
// (also between a commit and the write), are written with and without a
// bit budget, lose, duplicate and reorder packets, and fall a window
// behind in an outage (the catch-up compares). The secret of an item
// changes every tick to a value never used before. At every write the
// session notes which secrets the connection may see (items in scope at a
// level that sends `secret`); after every packet the client applies, each
// secret it holds must be `Default` or one of those.

mod privacy {
    use std::collections::{BTreeMap, BTreeSet};

    use fastarray::{FastArray, Replicate, ReplicationId, ScopeExit, SendState};
    use fastarray_testkit::drive::{self, Session};
    use fastarray_testkit::link::{LinkProfile, Report};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[derive(Replicate, Clone, Debug, PartialEq)]
    pub struct Spy {
        x: i32,
        #[replicate(detail = 3)]
        secret: u32,
        #[replicate(detail = 5)]
        code: String,
    }

    struct Private {
        server: FastArray<Spy>,
        conn: SendState,
        client: FastArray<Spy>,
        rng: ChaCha8Rng,
        /// The next secret: every one is new.
        next: u32,
        /// Per item, the secrets and codes a write let the connection see.
        seen: BTreeMap<ReplicationId, (BTreeSet<u32>, BTreeSet<String>)>,
        budgeted: bool,
        /// Every item in scope is seen at every detail from now on.
        healed: bool,
        label: String,
    }

    impl Private {
        fn new(seed: u64, exit: ScopeExit, budgeted: bool, label: String) -> Self {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut server = FastArray::new();
            let mut next = 1;
            for _ in 0..24 {
                server.push(spy(&mut rng, &mut next));
            }
            server.commit();
            let mut conn = SendState::new();
            {
                let ids: Vec<ReplicationId> = server.ids().collect();
                let mut scope = server.scope(&mut conn).unwrap();
                scope.set_exit(exit);
                for (n, id) in ids.into_iter().enumerate() {
                    if n % 3 != 0 {
                        scope.include(id);
                        scope.set_detail(id, rng.random_range(0..=fastarray::MAX_DETAIL));
                    }
                }
            }
            Self {
                server,
                conn,
                client: FastArray::mirror(),
                rng,
                next,
                seen: BTreeMap::new(),
                budgeted,
                healed: false,
                label,
            }
        }

        /// Notes what the next message may carry: each item in scope, at
        /// the level it is seen at now.
        fn note_visible(&mut self) {
            let ids: Vec<ReplicationId> = self.server.ids().collect();
            let scope = self.server.scope(&mut self.conn).unwrap();
            let levels: Vec<(ReplicationId, u8)> = ids
                .into_iter()
                .filter(|&id| scope.contains(id))
                .map(|id| (id, scope.detail(id)))
                .collect();
            for (id, level) in levels {
                let item = self.server.get(id).unwrap();
                let seen = self.seen.entry(id).or_default();
                if level >= 3 {
                    seen.0.insert(item.secret);
                }
                if level >= 5 {
                    seen.1.insert(item.code.clone());
                }
            }
        }

        fn check_private(&self) {
            for id in self.client.ids() {
                let held = self.client.get(id).unwrap();
                let seen = self.seen.get(&id);
                assert!(
                    held.secret == 0 || seen.is_some_and(|seen| seen.0.contains(&held.secret)),
                    "{}: {id} holds secret {} that no write let it see",
                    self.label,
                    held.secret
                );
                assert!(
                    held.code.is_empty() || seen.is_some_and(|seen| seen.1.contains(&held.code)),
                    "{}: {id} holds code {:?} that no write let it see",
                    self.label,
                    held.code
                );
            }
        }

        fn relevel(&mut self, count: usize) {
            let ids: Vec<ReplicationId> = self.server.ids().collect();
            let mut scope = self.server.scope(&mut self.conn).unwrap();
            for _ in 0..count {
                let id = ids[self.rng.random_range(0..ids.len())];
                scope.set_detail(id, self.rng.random_range(0..=fastarray::MAX_DETAIL));
            }
        }
    }

    fn spy(rng: &mut ChaCha8Rng, next: &mut u32) -> Spy {
        *next += 1;
        Spy {
            x: rng.random_range(-100..100),
            secret: *next,
            code: format!("code {next}"),
        }
    }

    impl Session for Private {
        fn mutate(&mut self, tick: u32) {
            let ids: Vec<ReplicationId> = self.server.ids().collect();
            if self.rng.random_bool(0.3) {
                let id = self.server.push(spy(&mut self.rng, &mut self.next));
                if self.rng.random_bool(0.6) {
                    let level = self.rng.random_range(0..=fastarray::MAX_DETAIL);
                    let mut scope = self.server.scope(&mut self.conn).unwrap();
                    scope.include(id);
                    scope.set_detail(id, level);
                }
            }
            if self.rng.random_bool(0.1) && ids.len() > 8 {
                self.server.remove(ids[self.rng.random_range(1..ids.len())]);
            }
            for _ in 0..6 {
                let id = ids[self.rng.random_range(0..ids.len())];
                self.next += 1;
                let next = self.next;
                if let Some(mut spy) = self.server.get_mut(id) {
                    match next % 3 {
                        0 => spy.x += 1,
                        1 => spy.secret = next,
                        _ => spy.code = format!("code {next}"),
                    }
                }
            }
            let picks: Vec<(ReplicationId, bool, u8)> = (0..2)
                .map(|_| {
                    (
                        ids[self.rng.random_range(0..ids.len())],
                        self.rng.random_bool(0.5),
                        self.rng.random_range(0..=fastarray::MAX_DETAIL),
                    )
                })
                .collect();
            {
                let mut scope = self.server.scope(&mut self.conn).unwrap();
                for (id, include, level) in picks {
                    if include {
                        // Entering goes at every detail unless set at once.
                        scope.include(id);
                        scope.set_detail(id, level);
                    } else {
                        scope.exclude(id);
                    }
                }
            }
            self.relevel(2);
            // Before the link heals, every item in scope is seen at every
            // detail, so the mirror can be compared whole.
            if tick == 149 {
                self.healed = true;
                let mut scope = self.server.scope(&mut self.conn).unwrap();
                let ids: Vec<ReplicationId> = scope.ids().collect();
                for id in ids {
                    scope.set_detail(id, fastarray::MAX_DETAIL);
                }
            }
        }

        fn write(&mut self, packet: u32) -> Vec<u8> {
            self.server.commit();
            // Levels drop (and rise) between the commit and the write.
            if !self.healed && self.rng.random_bool(0.3) {
                self.relevel(3);
            }
            self.note_visible();
            let mut bytes = Vec::new();
            let result = if self.budgeted && self.rng.random_bool(0.7) {
                let budget = self.rng.random_range(40..400);
                self.server
                    .write_delta_with_budget(&mut self.conn, packet, &mut bytes, budget)
            } else {
                self.server.write_delta(&mut self.conn, packet, &mut bytes)
            };
            result.unwrap_or_else(|e| panic!("{}: {e}", self.label));
            bytes
        }

        fn apply(&mut self, bytes: &[u8]) {
            self.client
                .apply_delta(bytes, &mut ())
                .unwrap_or_else(|e| panic!("{}: {e}", self.label));
            self.check_private();
        }

        fn report(&mut self, report: Report) {
            report.tell(&mut self.conn);
        }

        fn idle_commit(&mut self) {
            self.server.commit();
        }

        fn settled(&self) -> bool {
            self.server.is_settled(&self.conn)
        }
    }

    fn run(exit: ScopeExit, budgeted: bool) {
        for profile in LinkProfile::all_for_tests() {
            for seed in 0..drive::seeds_or(12) {
                let label = format!("{} seed {seed} ({exit:?}, budget {budgeted})", profile.name);
                let mut session = Private::new(seed, exit, budgeted, label.clone());
                drive::drive(&profile, seed, 150, &mut session);
                // Converged: the items in scope, whole (every detail by
                // the end).
                let scope = session.server.scope(&mut session.conn).unwrap();
                let in_scope: Vec<ReplicationId> = scope.ids().collect();
                for id in in_scope {
                    let ours = session.server.get(id).unwrap();
                    let theirs = session.client.get(id);
                    assert!(
                        theirs.is_some_and(|theirs| ours.wire_eq(theirs)),
                        "{label}: {id} differs: {ours:?} / {theirs:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn withheld_fields_never_reach_the_client_over_lossy_links() {
        run(ScopeExit::Despawn, false);
    }

    #[test]
    fn withheld_fields_never_reach_the_client_within_budgets() {
        run(ScopeExit::Despawn, true);
    }

    #[test]
    fn withheld_fields_never_reach_a_persisted_copy() {
        run(ScopeExit::Persist, true);
    }
}
