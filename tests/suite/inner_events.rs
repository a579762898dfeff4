//! Events of arrays inside items (`Callbacks::inner_event`): each member
//! of a squad is reported added, changed and removed with its squad's id,
//! next to its squad's own events, so that visuals spawned from events
//! match the mirror whatever the link does.

use std::collections::BTreeMap;

use fastarray::{
    ArrayOwner, Callbacks, FastArray, FieldMask, InnerChange, InnerEvent, Replicate, Replicated,
    ReplicationId, SendState,
};
use fastarray_testkit::drive::{self, ArraySession, ObjectSession, Session};
use fastarray_testkit::exchange;
use fastarray_testkit::fixtures::ranked::{Member, Squad, squad};
use fastarray_testkit::link::{LinkProfile, Report};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A replicated object holding squads: members are two arrays deep.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Army {
    morale: u8,
    #[replicate(array)]
    squads: FastArray<Squad>,
}

fn id(raw: u64) -> ReplicationId {
    ReplicationId::from_raw(raw)
}

/// Every event, in order, as text.
#[derive(Default)]
struct Log(Vec<String>);

impl Log {
    fn inner(&mut self, event: &InnerEvent<'_>) {
        let owners: Vec<String> = event
            .owners()
            .map(|ArrayOwner { id, field }| format!("{id}.{field}"))
            .collect();
        let change = match event.change() {
            InnerChange::Added => "added".to_string(),
            InnerChange::Changed(mask) => format!("changed {:#b}", mask.bits()),
            InnerChange::Removed => "removed".to_string(),
        };
        self.0.push(format!(
            "{} {} in {}",
            change,
            event.id(),
            owners.join(" in ")
        ));
    }
}

impl Callbacks<Squad> for Log {
    fn pre_remove(&mut self, id: ReplicationId, _: &Squad) {
        self.0.push(format!("pre_remove {id}"));
    }
    fn post_add(&mut self, id: ReplicationId, _: &Squad) {
        self.0.push(format!("post_add {id}"));
    }
    fn post_change(&mut self, id: ReplicationId, _: &Squad, changed: FieldMask) {
        self.0
            .push(format!("post_change {id} {:#b}", changed.bits()));
    }
    fn inner_event(&mut self, event: &InnerEvent<'_>) {
        self.inner(event);
    }
}

impl Callbacks<Army> for Log {
    fn post_change(&mut self, id: ReplicationId, _: &Army, changed: FieldMask) {
        self.0
            .push(format!("post_change {id} {:#b}", changed.bits()));
    }
    fn inner_event(&mut self, event: &InnerEvent<'_>) {
        self.inner(event);
    }
}

/// Two squads of three members, synchronised and acknowledged, and an
/// empty log.
fn synced() -> (FastArray<Squad>, SendState, FastArray<Squad>) {
    let mut server = FastArray::new();
    server.push(squad(1, 3));
    server.push(squad(2, 3));
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    exchange(&mut server, &mut conn, &mut client, 0);
    exchange(&mut server, &mut conn, &mut client, 1);
    (server, conn, client)
}

/// Commits and writes packet `packet`.
fn write(server: &mut FastArray<Squad>, conn: &mut SendState, packet: u32) -> Vec<u8> {
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(conn, packet, &mut bytes).unwrap();
    bytes
}

/// The events of applying `bytes`.
fn events(client: &mut FastArray<Squad>, bytes: &[u8]) -> Vec<String> {
    let mut log = Log::default();
    client.apply_delta(bytes, &mut log).unwrap();
    log.0
}

#[test]
fn an_added_squad_reports_its_members_after_itself() {
    let mut server = FastArray::new();
    server.push(squad(1, 2));
    let (mut conn, mut client) = (SendState::new(), FastArray::new());
    let bytes = write(&mut server, &mut conn, 0);
    assert_eq!(
        events(&mut client, &bytes),
        [
            "post_add #0",
            "added #0 in #0.members",
            "added #1 in #0.members"
        ]
    );
}

#[test]
fn a_removed_squad_reports_its_members_removed_before_itself() {
    let (mut server, mut conn, mut client) = synced();
    server.remove(id(0));
    let bytes = write(&mut server, &mut conn, 2);
    assert_eq!(
        events(&mut client, &bytes),
        [
            "removed #0 in #0.members",
            "removed #1 in #0.members",
            "removed #2 in #0.members",
            "pre_remove #0"
        ]
    );
}

#[test]
fn members_changes_come_in_unreal_order_before_their_squads_change() {
    let (mut server, mut conn, mut client) = synced();
    {
        let mut first = server.get_mut(id(0)).unwrap();
        first.members.remove(id(1));
        first.members.get_mut(id(0)).unwrap().hp = 50;
        first.members.get_mut(id(2)).unwrap().rank = 9;
        first.members.push(Member { hp: 7, rank: 2 });
    }
    server.get_mut(id(1)).unwrap().tag = 20;
    server.push(squad(3, 1));
    let bytes = write(&mut server, &mut conn, 2);
    assert_eq!(
        events(&mut client, &bytes),
        [
            "post_add #2",
            "added #0 in #2.members",
            "removed #1 in #0.members",
            "added #3 in #0.members",
            "changed 0b1 #0 in #0.members",
            "changed 0b10 #2 in #0.members",
            "post_change #0 0b0",
            "post_change #1 0b1",
        ]
    );
    assert_eq!(client, server);
}

#[test]
fn an_event_gives_the_member_as_it_is_now() {
    let (mut server, mut conn, mut client) = synced();
    server
        .get_mut(id(1))
        .unwrap()
        .members
        .get_mut(id(2))
        .unwrap()
        .hp = 99;
    let bytes = write(&mut server, &mut conn, 2);

    struct Seen(Vec<(ArrayOwner, ReplicationId, InnerChange, Option<Member>)>);
    impl Callbacks<Squad> for Seen {
        fn inner_event(&mut self, event: &InnerEvent<'_>) {
            assert!(event.item::<Squad>().is_none(), "not a squad");
            let member = event.item::<Member>().cloned();
            self.0
                .push((event.owner(), event.id(), event.change(), member));
        }
    }
    let mut seen = Seen(Vec::new());
    client.apply_delta(&bytes, &mut seen).unwrap();
    let owner = ArrayOwner {
        id: id(1),
        field: "members",
    };
    let change = InnerChange::Changed(FieldMask::single(0));
    let member = Member { hp: 99, rank: 1 };
    assert_eq!(seen.0, [(owner, id(2), change, Some(member))]);
}

#[test]
fn a_member_added_and_removed_in_lost_packets_is_never_reported() {
    let (mut server, mut conn, mut client) = synced();
    let ghost = server
        .get_mut(id(0))
        .unwrap()
        .members
        .push(Member { hp: 1, rank: 1 });
    let lost = write(&mut server, &mut conn, 2);
    assert!(conn.on_loss(2));
    server.get_mut(id(0)).unwrap().members.remove(ghost);
    let removal = write(&mut server, &mut conn, 3);
    assert_eq!(events(&mut client, &removal), [] as [&str; 0]);
    conn.on_ack(3);
    // The lost packet arrives after all, late: its add is for a removed id.
    assert_eq!(events(&mut client, &lost), [] as [&str; 0]);
    assert_eq!(client, server);

    // The same, both packets in flight, delivered out of order.
    let ghost = server
        .get_mut(id(1))
        .unwrap()
        .members
        .push(Member { hp: 2, rank: 1 });
    let add = write(&mut server, &mut conn, 4);
    server.get_mut(id(1)).unwrap().members.remove(ghost);
    let removal = write(&mut server, &mut conn, 5);
    assert_eq!(events(&mut client, &removal), [] as [&str; 0]);
    assert_eq!(events(&mut client, &add), [] as [&str; 0]);
    assert_eq!(client, server);
}

#[test]
fn a_late_packet_for_a_removed_squad_reports_nothing() {
    let (mut server, mut conn, mut client) = synced();
    server
        .get_mut(id(0))
        .unwrap()
        .members
        .get_mut(id(0))
        .unwrap()
        .hp = 40;
    server
        .get_mut(id(0))
        .unwrap()
        .members
        .push(Member { hp: 3, rank: 3 });
    let late = write(&mut server, &mut conn, 2);
    server.remove(id(0));
    let removal = write(&mut server, &mut conn, 3);
    // The removal reports the members the mirror holds: not the one the
    // late packet adds.
    assert_eq!(
        events(&mut client, &removal),
        [
            "removed #0 in #0.members",
            "removed #1 in #0.members",
            "removed #2 in #0.members",
            "pre_remove #0"
        ]
    );
    assert_eq!(events(&mut client, &late), [] as [&str; 0]);
    conn.on_ack(2);
    conn.on_ack(3);
    assert_eq!(client, server);
}

#[test]
fn a_duplicate_packet_reports_nothing_twice() {
    let (mut server, mut conn, mut client) = synced();
    server
        .get_mut(id(1))
        .unwrap()
        .members
        .push(Member { hp: 5, rank: 5 });
    server
        .get_mut(id(1))
        .unwrap()
        .members
        .get_mut(id(0))
        .unwrap()
        .hp = 6;
    let bytes = write(&mut server, &mut conn, 2);
    assert_eq!(
        events(&mut client, &bytes),
        [
            "added #3 in #1.members",
            "changed 0b1 #0 in #1.members",
            "post_change #1 0b0"
        ]
    );
    assert_eq!(events(&mut client, &bytes), [] as [&str; 0]);
}

#[test]
fn a_replicated_objects_arrays_report_their_items_two_deep() {
    let mut server = Replicated::new(Army::default());
    let alpha = server.get_mut().squads.push(squad(1, 2));
    let (mut conn, mut client) = (SendState::new(), Replicated::<Army>::mirror());
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 0, &mut bytes).unwrap();
    let mut log = Log::default();
    client.apply_delta(&bytes, &mut log).unwrap();
    conn.on_ack(0);
    assert_eq!(
        log.0,
        [
            "added #0 in #0.squads",
            "added #0 in #0.members in #0.squads",
            "added #1 in #0.members in #0.squads",
            "post_change #0 0b0",
        ]
    );

    server.get_mut().morale = 3;
    server
        .get_mut()
        .squads
        .get_mut(alpha)
        .unwrap()
        .members
        .remove(id(1));
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 1, &mut bytes).unwrap();
    let mut log = Log::default();
    client.apply_delta(&bytes, &mut log).unwrap();
    conn.on_ack(1);
    assert_eq!(
        log.0,
        [
            "removed #1 in #0.members in #0.squads",
            "changed 0b0 #0 in #0.squads",
            "post_change #0 0b1",
        ]
    );

    server.get_mut().squads.remove(alpha);
    let mut log = Log::default();
    server.commit();
    let mut bytes = Vec::new();
    server.write_delta(&mut conn, 2, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut log).unwrap();
    assert_eq!(
        log.0,
        [
            "removed #0 in #0.members in #0.squads",
            "removed #0 in #0.squads",
            "post_change #0 0b0",
        ]
    );
    assert_eq!(client.get(), server.get());
}

/// The client's visuals, spawned and despawned from events only: squads
/// (from the top-level events, or the inner events of an army's squads)
/// and members by squad. Every event is checked against what the shadow
/// holds: nothing is added twice, changed or removed unknown, and a
/// squad's members come and go while the squad is there.
#[derive(Default)]
struct Shadow {
    squads: BTreeMap<ReplicationId, u8>,
    members: BTreeMap<(ReplicationId, ReplicationId), Member>,
}

impl Shadow {
    fn add_squad(&mut self, id: ReplicationId, squad: &Squad) {
        assert!(
            self.squads.insert(id, squad.tag).is_none(),
            "squad {id} added twice"
        );
    }

    fn change_squad(&mut self, id: ReplicationId, squad: &Squad) {
        *self
            .squads
            .get_mut(&id)
            .expect("change of an unknown squad") = squad.tag;
    }

    fn remove_squad(&mut self, id: ReplicationId) {
        assert!(
            self.squads.remove(&id).is_some(),
            "unknown squad {id} removed"
        );
        assert!(
            !self.members.keys().any(|&(squad, _)| squad == id),
            "squad {id} removed before its members"
        );
    }

    fn inner(&mut self, event: &InnerEvent<'_>) {
        if let Some(squad) = event.item::<Squad>() {
            assert_eq!(event.owner().field, "squads");
            return match event.change() {
                InnerChange::Added => self.add_squad(event.id(), squad),
                InnerChange::Changed(_) => self.change_squad(event.id(), squad),
                InnerChange::Removed => self.remove_squad(event.id()),
            };
        }
        let member = event.item::<Member>().expect("a member").clone();
        let ArrayOwner { id: squad, field } = event.owner();
        assert_eq!(field, "members");
        assert!(
            self.squads.contains_key(&squad),
            "member of absent squad {squad}"
        );
        let key = (squad, event.id());
        match event.change() {
            InnerChange::Added => {
                assert!(
                    self.members.insert(key, member).is_none(),
                    "{key:?} added twice"
                );
            }
            InnerChange::Changed(mask) => {
                let old = self.members.insert(key, member.clone());
                let old = old.unwrap_or_else(|| panic!("unknown {key:?} changed"));
                assert_eq!(
                    member.diff(&old),
                    mask,
                    "{key:?}: the mask names what changed"
                );
            }
            InnerChange::Removed => {
                assert!(
                    self.members.remove(&key).is_some(),
                    "unknown {key:?} removed"
                );
            }
        }
    }

    /// Panics unless the shadow holds exactly `squads` and their members.
    fn check(&self, squads: &FastArray<Squad>, label: &str) {
        let expected: BTreeMap<_, _> = squads.iter().map(|(id, s)| (id, s.tag)).collect();
        assert_eq!(self.squads, expected, "{label}: squads");
        let members: BTreeMap<_, _> = squads
            .iter()
            .flat_map(|(squad, s)| {
                s.members
                    .iter()
                    .map(move |(id, m)| ((squad, id), m.clone()))
            })
            .collect();
        assert_eq!(self.members, members, "{label}: members");
    }
}

impl Callbacks<Squad> for Shadow {
    fn pre_remove(&mut self, id: ReplicationId, _: &Squad) {
        self.remove_squad(id);
    }
    fn post_add(&mut self, id: ReplicationId, squad: &Squad) {
        self.add_squad(id, squad);
    }
    fn post_change(&mut self, id: ReplicationId, squad: &Squad, _: FieldMask) {
        self.change_squad(id, squad);
    }
    fn inner_event(&mut self, event: &InnerEvent<'_>) {
        self.inner(event);
    }
}

impl Callbacks<Army> for Shadow {
    fn inner_event(&mut self, event: &InnerEvent<'_>) {
        self.inner(event);
    }
}

/// One tick of game logic: squads and members come, change and go.
fn play(squads: &mut FastArray<Squad>, rng: &mut ChaCha8Rng) {
    let ids: Vec<_> = squads.ids().collect();
    let pick = |rng: &mut ChaCha8Rng| ids.get(rng.random_range(0..ids.len().max(1))).copied();
    for _ in 0..rng.random_range(0..4) {
        match rng.random_range(0..10) {
            0 => {
                squads.push(squad(rng.random(), rng.random_range(0..4)));
            }
            1 => {
                if let Some(id) = pick(rng) {
                    squads.remove(id);
                }
            }
            2 => {
                if let Some(mut squad) = pick(rng).and_then(|id| squads.get_mut(id)) {
                    squad.tag = rng.random();
                }
            }
            3 => {
                if let Some(mut squad) = pick(rng).and_then(|id| squads.get_mut(id)) {
                    squad.members.clear();
                }
            }
            4 | 5 => {
                if let Some(mut squad) = pick(rng).and_then(|id| squads.get_mut(id)) {
                    let hp = rng.random();
                    squad.members.push(Member { hp, rank: 0 });
                }
            }
            6 => {
                if let Some(mut squad) = pick(rng).and_then(|id| squads.get_mut(id)) {
                    let first = squad.members.ids().next();
                    if let Some(member) = first {
                        squad.members.remove(member);
                    }
                }
            }
            _ => {
                if let Some(mut squad) = pick(rng).and_then(|id| squads.get_mut(id)) {
                    let members: Vec<_> = squad.members.ids().collect();
                    if let Some(&member) = members.get(rng.random_range(0..members.len().max(1))) {
                        let mut member = squad.members.get_mut(member).unwrap();
                        member.hp = rng.random();
                        member.rank = rng.random_range(0..16);
                    }
                }
            }
        }
    }
}

/// A session whose shadow is checked against the mirror after every
/// message applied.
struct Checked<S> {
    session: S,
    check: fn(&S),
}

impl<S: Session> Session for Checked<S> {
    fn mutate(&mut self, tick: u32) {
        self.session.mutate(tick);
    }
    fn write(&mut self, packet: u32) -> Vec<u8> {
        self.session.write(packet)
    }
    fn apply(&mut self, bytes: &[u8]) {
        self.session.apply(bytes);
        (self.check)(&self.session);
    }
    fn report(&mut self, report: Report) {
        self.session.report(report);
    }
    fn idle_commit(&mut self) {
        self.session.idle_commit();
    }
    fn settled(&self) -> bool {
        self.session.settled()
    }
}

type SquadSession = ArraySession<Squad, fn(&mut FastArray<Squad>, &mut ChaCha8Rng), Shadow>;

#[test]
fn visuals_spawned_from_events_match_the_mirror_over_lossy_links() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds() {
            let label = format!("{} seed {seed}", profile.name);
            let logic: fn(&mut FastArray<Squad>, &mut ChaCha8Rng) = play;
            let session =
                ArraySession::new(FastArray::new(), seed, label, logic, Shadow::default());
            let mut checked = Checked {
                session,
                check: |s: &SquadSession| s.callbacks.check(&s.client, "after a message"),
            };
            drive::drive(&profile, seed, 120, &mut checked);
            let session = checked.session;
            assert_eq!(
                session.client, session.server,
                "{} seed {seed}",
                profile.name
            );
            session.callbacks.check(&session.client, profile.name);
        }
    }
}

type ArmySession = ObjectSession<Army, fn(&mut Replicated<Army>, &mut ChaCha8Rng), Shadow>;

#[test]
fn an_armys_visuals_match_its_mirror_over_lossy_links() {
    fn lead(army: &mut Replicated<Army>, rng: &mut ChaCha8Rng) {
        let mut army = army.get_mut();
        if rng.random_range(0..4) == 0 {
            army.morale = rng.random();
        }
        play(&mut army.squads, rng);
    }
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..drive::seeds().div_ceil(2) {
            let label = format!("{} seed {seed}", profile.name);
            let start = (
                Replicated::new(Army::default()),
                SendState::new(),
                Replicated::mirror(),
            );
            let logic: fn(&mut Replicated<Army>, &mut ChaCha8Rng) = lead;
            let session = ObjectSession::new(start, seed, label, logic, Shadow::default());
            let mut checked = Checked {
                session,
                check: |s: &ArmySession| s.callbacks.check(&s.client.get().squads, "army"),
            };
            drive::drive(&profile, seed, 120, &mut checked);
            let session = checked.session;
            assert_eq!(session.client.get(), session.server.get());
            session
                .callbacks
                .check(&session.client.get().squads, profile.name);
        }
    }
}
