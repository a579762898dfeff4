//! Who may see a field: `#[replicate(owner_only)]`, `#[replicate(skip_owner)]`
//! and `#[replicate(initial_only)]`, with item ownership
//! (`FastArray::set_owner`, `SendState::set_client`). A field an audience
//! withholds from a connection is never in a message to it, whatever path
//! wrote the message (its own delta, the frame's shared message, a
//! snapshot, loss repair, a resync, a scope's re-entry); an ownership move
//! sends the new owner its fields and the old owner the others'.

use fastarray::{
    Connection, FastArray, FieldMask, Replicate, Replicated, ReplicationId, SendError, SendState,
};

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Hero {
    hp: u16,
    /// The owner's alone.
    #[replicate(owner_only)]
    ammo: u32,
    /// What the owner predicts itself.
    #[replicate(skip_owner)]
    pos: i32,
    /// Fixed at spawn, as far as clients are concerned.
    #[replicate(initial_only)]
    name: String,
}

/// One client: its connection state and its mirror.
struct Client {
    state: SendState,
    mirror: FastArray<Hero>,
    packet: u32,
}

impl Client {
    fn new(client: Option<u64>) -> Self {
        let mut state = SendState::new();
        if let Some(client) = client {
            state.set_client(client).unwrap();
        }
        Self {
            state,
            mirror: FastArray::mirror(),
            packet: 0,
        }
    }

    /// Writes, applies and acknowledges one delta; returns its stats.
    fn sync(&mut self, server: &mut FastArray<Hero>) -> fastarray::DeltaStats {
        self.packet += 1;
        let mut bytes = Vec::new();
        let stats = server
            .write_delta(&mut self.state, self.packet, &mut bytes)
            .unwrap();
        self.mirror.apply_delta(&bytes, &mut ()).unwrap();
        self.state.on_ack(self.packet);
        stats
    }

    fn hero(&self, id: ReplicationId) -> &Hero {
        self.mirror.get(id).unwrap()
    }
}

fn hero(hp: u16, ammo: u32, pos: i32, name: &str) -> Hero {
    Hero {
        hp,
        ammo,
        pos,
        name: name.into(),
    }
}

#[test]
fn the_masks_and_the_schema_follow_the_attributes() {
    assert_eq!(Hero::OWNER_ONLY, FieldMask::single(1));
    assert_eq!(Hero::SKIP_OWNER, FieldMask::single(2));
    assert_eq!(Hero::INITIAL_ONLY, FieldMask::single(3));
    const { assert!(Hero::WITHHOLDS) };

    // Which fields an owner is sent is part of the schema: a snapshot's
    // items carry them.
    mod other {
        #[derive(fastarray::Replicate, Clone, Debug, PartialEq, Default)]
        pub struct Hero {
            hp: u16,
            #[replicate(skip_owner)]
            ammo: u32,
            #[replicate(skip_owner)]
            pos: i32,
            #[replicate(initial_only)]
            name: String,
        }
    }
    assert_ne!(Hero::SCHEMA_HASH, <other::Hero as Replicate>::SCHEMA_HASH);
}

#[test]
fn an_owner_is_sent_its_fields_and_not_the_others() {
    let mut server = FastArray::new();
    let alice = server.push(hero(10, 30, 5, "alice"));
    let bob = server.push(hero(12, 40, 6, "bob"));
    server.set_owner(alice, Some(1)).unwrap();
    server.set_owner(bob, Some(2)).unwrap();
    server.commit();
    assert_eq!((server.owner(alice), server.owner(bob)), (Some(1), Some(2)));

    let mut one = Client::new(Some(1));
    let mut two = Client::new(Some(2));
    let mut nobody = Client::new(None);
    for client in [&mut one, &mut two, &mut nobody] {
        client.sync(&mut server);
    }
    assert_eq!(*one.hero(alice), hero(10, 30, 0, "alice"));
    assert_eq!(*one.hero(bob), hero(12, 0, 6, "bob"));
    assert_eq!(*two.hero(alice), hero(10, 0, 5, "alice"));
    assert_eq!(*two.hero(bob), hero(12, 40, 0, "bob"));
    assert_eq!(*nobody.hero(alice), hero(10, 0, 5, "alice"));

    // Alice fires and walks: her client hears of the ammo, the others of
    // the step.
    {
        let mut a = server.get_mut(alice).unwrap();
        a.ammo = 29;
        a.pos = 7;
    }
    server.commit();
    assert_eq!(one.sync(&mut server).changed, 1);
    assert_eq!(*one.hero(alice), hero(10, 29, 0, "alice"));
    assert_eq!(two.sync(&mut server).changed, 1);
    assert_eq!(*two.hero(alice), hero(10, 0, 7, "alice"));
    nobody.sync(&mut server);

    // Only ammo: nothing at all for the others (the one-bit empty message).
    server.get_mut(alice).unwrap().ammo = 28;
    server.commit();
    assert_eq!(two.sync(&mut server).bits, 1);
    assert_eq!(nobody.sync(&mut server).bits, 1);
    assert_eq!(one.sync(&mut server).changed, 1);
    assert_eq!(one.hero(alice).ammo, 28);
}

#[test]
fn initial_only_fields_go_with_whole_values_and_never_as_changes() {
    let mut server = FastArray::new();
    let id = server.push(hero(1, 0, 0, "first"));
    server.commit();
    let mut early = Client::new(None);
    early.sync(&mut server);
    assert_eq!(early.hero(id).name, "first");

    server.get_mut(id).unwrap().name = "renamed".into();
    let changes = server.commit();
    assert!(
        changes.changed().is_empty(),
        "no change to send: {changes:?}"
    );
    assert_eq!(early.sync(&mut server).bits, 1);
    assert_eq!(early.hero(id).name, "first");

    // With another change, the name still stays behind.
    {
        let mut h = server.get_mut(id).unwrap();
        h.name = "again".into();
        h.hp = 2;
    }
    let changes = server.commit();
    assert_eq!(changes.changed(), &[(id, FieldMask::single(0))]);
    early.sync(&mut server);
    assert_eq!(*early.hero(id), hero(2, 0, 0, "first"));

    // A client that sees the item whole later is sent its current name.
    let mut late = Client::new(None);
    late.sync(&mut server);
    assert_eq!(late.hero(id).name, "again");
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    let joined = FastArray::<Hero>::from_snapshot(&snapshot).unwrap();
    assert_eq!(joined.get(id).unwrap().name, "again");

    // Leaving the scope and coming back sends it whole again.
    let mut scoped = Client::new(None);
    server.scope(&mut scoped.state).unwrap().include(id);
    scoped.sync(&mut server);
    server.get_mut(id).unwrap().name = "third".into();
    server.commit();
    server.scope(&mut scoped.state).unwrap().exclude(id);
    scoped.sync(&mut server);
    server.commit();
    scoped.sync(&mut server);
    server.scope(&mut scoped.state).unwrap().include(id);
    scoped.sync(&mut server);
    assert_eq!(scoped.hero(id).name, "third");
}

#[test]
fn an_ownership_move_sends_each_side_what_it_may_now_see() {
    let mut server = FastArray::new();
    let id = server.push(hero(10, 30, 5, "ship"));
    server.set_owner(id, Some(1)).unwrap();
    server.commit();
    let mut one = Client::new(Some(1));
    let mut two = Client::new(Some(2));
    one.sync(&mut server);
    two.sync(&mut server);
    {
        let mut h = server.get_mut(id).unwrap();
        h.ammo = 31;
        h.pos = 8;
    }
    server.commit();
    one.sync(&mut server);
    two.sync(&mut server);
    assert_eq!(*one.hero(id), hero(10, 31, 0, "ship"));
    assert_eq!(*two.hero(id), hero(10, 0, 8, "ship"));

    // The ship changes hands: the move takes effect at the commit.
    server.set_owner(id, Some(2)).unwrap();
    assert_eq!(server.owner(id), Some(2));
    let changes = server.commit().clone();
    assert_eq!(
        changes.changed(),
        &[(id, Hero::OWNER_ONLY | Hero::SKIP_OWNER)]
    );
    assert_eq!(one.sync(&mut server).changed, 1);
    assert_eq!(two.sync(&mut server).changed, 1);
    // The old owner keeps the ammo it was last sent, and now sees the
    // position; the new owner sees the ammo.
    assert_eq!(*one.hero(id), hero(10, 31, 8, "ship"));
    assert_eq!(*two.hero(id), hero(10, 31, 8, "ship"));

    // From now on the ammo goes to the new owner alone, the position to
    // the old one alone.
    {
        let mut h = server.get_mut(id).unwrap();
        h.ammo = 12;
        h.pos = 9;
    }
    server.commit();
    one.sync(&mut server);
    two.sync(&mut server);
    assert_eq!(*one.hero(id), hero(10, 31, 9, "ship"));
    assert_eq!(*two.hero(id), hero(10, 12, 8, "ship"));

    // Nobody's: both see the position, neither the ammo's changes.
    server.set_owner(id, None).unwrap();
    server.commit();
    one.sync(&mut server);
    two.sync(&mut server);
    server.get_mut(id).unwrap().ammo = 3;
    server.commit();
    assert_eq!(one.sync(&mut server).bits, 1);
    assert_eq!(two.sync(&mut server).bits, 1);
    assert_eq!((one.hero(id).pos, two.hero(id).pos), (9, 9));
    assert_eq!((one.hero(id).ammo, two.hero(id).ammo), (31, 12));

    // A move to the same owner is no move; a removed item has no owner.
    server.set_owner(id, Some(4)).unwrap();
    server.commit();
    server.set_owner(id, Some(4)).unwrap();
    assert!(server.commit().changed().is_empty());
    server.remove(id);
    server.commit();
    assert_eq!(server.owner(id), None);
    assert!(!server.set_owner(id, Some(1)).unwrap(), "not held");
}

#[test]
fn snapshots_carry_what_their_reader_may_see() {
    let mut server = FastArray::new();
    let mine = server.push(hero(1, 10, 100, "mine"));
    let theirs = server.push(hero(2, 20, 200, "theirs"));
    server.set_owner(mine, Some(1)).unwrap();
    server.set_owner(theirs, Some(2)).unwrap();
    server.commit();

    let mut state = SendState::new();
    state.set_client(1).unwrap();
    let mut bytes = Vec::new();
    server.write_snapshot_for(&mut state, &mut bytes).unwrap();
    assert_eq!(state.client(), Some(1), "the join keeps the client");
    let mut mirror = FastArray::<Hero>::from_snapshot(&bytes).unwrap();
    assert_eq!(*mirror.get(mine).unwrap(), hero(1, 10, 0, "mine"));
    assert_eq!(*mirror.get(theirs).unwrap(), hero(2, 0, 200, "theirs"));

    // Anyone's snapshot: nobody's fields.
    let mut anyone = Vec::new();
    let bits = server.write_snapshot(&mut anyone).unwrap();
    let public = FastArray::<Hero>::from_snapshot(&anyone).unwrap();
    assert_eq!(*public.get(mine).unwrap(), hero(1, 0, 100, "mine"));
    // One bit per item says whether the reader owns it; then the fields
    // the reader may see, as a type of only those would cost.
    #[derive(Replicate, Clone, Debug, PartialEq)]
    struct Public {
        hp: u16,
        pos: i32,
        name: String,
    }
    let mut plain = FastArray::new();
    for (hp, pos, name) in [(1, 100, "mine"), (2, 200, "theirs")] {
        let name = name.to_string();
        plain.push(Public { hp, pos, name });
    }
    plain.commit();
    let mut plain_bytes = Vec::new();
    assert_eq!(plain.write_snapshot(&mut plain_bytes).unwrap(), bits - 2);

    // The joined connection follows: its own item's ammo, the other's
    // position.
    {
        let mut h = server.get_mut(mine).unwrap();
        h.ammo = 11;
        h.pos = 101;
    }
    server.get_mut(theirs).unwrap().ammo = 21;
    server.commit();
    let mut delta = Vec::new();
    server.write_delta(&mut state, 1, &mut delta).unwrap();
    mirror.apply_delta(&delta, &mut ()).unwrap();
    assert_eq!(*mirror.get(mine).unwrap(), hero(1, 11, 0, "mine"));
    assert_eq!(*mirror.get(theirs).unwrap(), hero(2, 0, 200, "theirs"));
}

/// Caught-up connections share the frame's message unless it is not what
/// they may see: an owner of an item whose audience fields changed writes
/// its own.
#[test]
fn the_shared_message_is_everyone_elses() {
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..4).map(|n| server.push(hero(n, 0, 0, "h"))).collect();
    server.set_owner(ids[0], Some(1)).unwrap();
    server.commit();
    let mut clients: Vec<Client> = (1..=4).map(|n| Client::new(Some(n))).collect();
    for client in &mut clients {
        client.sync(&mut server);
    }
    // The hp of an owned item is everyone's: all four share.
    server.get_mut(ids[0]).unwrap().hp = 50;
    server.get_mut(ids[1]).unwrap().hp = 51;
    server.commit();
    for client in &mut clients {
        assert!(client.sync(&mut server).shared);
    }
    // Its ammo and position: the owner writes its own.
    {
        let mut h = server.get_mut(ids[0]).unwrap();
        h.ammo = 5;
        h.pos = 6;
    }
    server.get_mut(ids[2]).unwrap().hp = 52;
    server.commit();
    let shared: Vec<bool> = clients
        .iter_mut()
        .map(|client| client.sync(&mut server).shared)
        .collect();
    assert_eq!(shared, [false, true, true, true]);
    assert_eq!(*clients[0].hero(ids[0]), hero(50, 5, 0, "h"));
    assert_eq!(*clients[1].hero(ids[0]), hero(50, 0, 6, "h"));
    assert_eq!(clients[0].hero(ids[2]).hp, 52);
    // Its ammo alone: nothing to share, the owner's message carries it.
    server.get_mut(ids[0]).unwrap().ammo = 4;
    server.commit();
    let bits: Vec<u64> = clients
        .iter_mut()
        .map(|client| client.sync(&mut server).bits)
        .collect();
    assert!(bits[0] > 1);
    assert_eq!(bits[1..], [1, 1, 1]);
    assert_eq!(clients[0].hero(ids[0]).ammo, 4);
    // An add: the owner of the new item writes its own, whole with its
    // fields.
    let new = server.push(hero(9, 9, 9, "new"));
    server.set_owner(new, Some(3)).unwrap();
    server.commit();
    let shared: Vec<bool> = clients
        .iter_mut()
        .map(|client| client.sync(&mut server).shared)
        .collect();
    assert_eq!(shared, [true, true, false, true]);
    assert_eq!(*clients[2].hero(new), hero(9, 9, 0, "new"));
    assert_eq!(*clients[0].hero(new), hero(9, 0, 9, "new"));
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Scout {
    x: i16,
    /// The owner's, and only at detail 3 or more.
    #[replicate(owner_only, detail = 3)]
    plan: u32,
}

#[test]
fn detail_levels_and_ownership_apply_together() {
    let mut server = FastArray::new();
    let id = server.push(Scout { x: 1, plan: 7 });
    server.set_owner(id, Some(1)).unwrap();
    server.commit();
    let mut state = SendState::new();
    state.set_client(1).unwrap();
    {
        let mut scope = server.scope(&mut state).unwrap();
        scope.include(id);
        scope.set_detail(id, 2);
    }
    let mut mirror = FastArray::<Scout>::mirror();
    let mut bytes = Vec::new();
    server.write_delta(&mut state, 1, &mut bytes).unwrap();
    mirror.apply_delta(&bytes, &mut ()).unwrap();
    state.on_ack(1);
    assert_eq!(*mirror.get(id).unwrap(), Scout { x: 1, plan: 0 });
    server.get_mut(id).unwrap().plan = 8;
    server.commit();
    bytes.clear();
    assert_eq!(
        server.write_delta(&mut state, 2, &mut bytes).unwrap().bits,
        1
    );
    // The level rises: the plan that changed meanwhile goes.
    server.scope(&mut state).unwrap().set_detail(id, 3);
    bytes.clear();
    server.write_delta(&mut state, 3, &mut bytes).unwrap();
    mirror.apply_delta(&bytes, &mut ()).unwrap();
    state.on_ack(3);
    assert_eq!(mirror.get(id).unwrap().plan, 8);

    // A non-owner held at a low level, whose level then rises after the
    // item changed hands away from it: nothing of the plan ever goes.
    server.set_owner(id, Some(2)).unwrap();
    server.commit();
    server.scope(&mut state).unwrap().set_detail(id, 0);
    server.get_mut(id).unwrap().plan = 9;
    server.commit();
    server.scope(&mut state).unwrap().set_detail(id, 7);
    for packet in 4..7 {
        bytes.clear();
        server.write_delta(&mut state, packet, &mut bytes).unwrap();
        mirror.apply_delta(&bytes, &mut ()).unwrap();
        state.on_ack(packet);
    }
    assert_eq!(mirror.get(id).unwrap().plan, 8);
}

#[test]
fn objects_have_owners_too() {
    let mut ship = Replicated::new(hero(5, 50, 500, "ship"));
    ship.set_owner(Some(1)).unwrap();
    ship.commit();
    let (mut owner, mut other) = (SendState::new(), SendState::new());
    owner.set_client(1).unwrap();
    other.set_client(2).unwrap();
    let (mut owner_mirror, mut other_mirror) =
        (Replicated::<Hero>::mirror(), Replicated::<Hero>::mirror());
    let mut bytes = Vec::new();
    ship.write_delta(&mut owner, 1, &mut bytes).unwrap();
    owner_mirror.apply_delta(&bytes, &mut ()).unwrap();
    bytes.clear();
    ship.write_delta(&mut other, 1, &mut bytes).unwrap();
    other_mirror.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(*owner_mirror.get(), hero(5, 50, 0, "ship"));
    assert_eq!(*other_mirror.get(), hero(5, 0, 500, "ship"));
    ship.set_owner(Some(2)).unwrap();
    assert_eq!(ship.owner(), Some(2));
    ship.commit();
    owner.on_ack(1);
    other.on_ack(1);
    bytes.clear();
    ship.write_delta(&mut other, 2, &mut bytes).unwrap();
    other_mirror.apply_delta(&bytes, &mut ()).unwrap();
    assert_eq!(other_mirror.get().ammo, 50);
    assert!(matches!(
        Replicated::<Hero>::mirror().set_owner(Some(1)),
        Err(SendError::NotAnAuthority { .. })
    ));
}

#[test]
fn a_connection_names_its_client_before_it_writes() {
    let mut server = FastArray::new();
    server.push(hero(1, 2, 3, "x"));
    server.commit();
    let mut state = SendState::new();
    assert_eq!(state.client(), None);
    state.set_client(3).unwrap();
    state.set_client(3).unwrap();
    state.set_client(4).unwrap();
    let mut bytes = Vec::new();
    server.write_delta(&mut state, 1, &mut bytes).unwrap();
    assert_eq!(state.set_client(5), Err(SendError::ClientAfterWrite));
    assert_eq!(state.set_client(4), Ok(()));
    assert_eq!(state.client(), Some(4));
    assert!(
        SendError::ClientAfterWrite
            .to_string()
            .contains("before its first write")
    );

    let mut conn = Connection::new(2);
    conn.set_client(8).unwrap();
    assert_eq!(
        (
            conn.client(),
            conn.state(0).client(),
            conn.state(1).client()
        ),
        (Some(8), Some(8), Some(8))
    );
    assert!(matches!(
        FastArray::<Hero>::mirror().set_owner(ReplicationId::from_raw(0), Some(1)),
        Err(SendError::NotAnAuthority { .. })
    ));

    // A move is uncommitted work until the commit.
    let id = server.ids().next().unwrap();
    server.set_owner(id, Some(4)).unwrap();
    assert!(server.has_uncommitted_work());
    bytes.clear();
    assert_eq!(
        server.write_delta(&mut state, 2, &mut bytes),
        Err(SendError::Uncommitted)
    );
    server.commit();
    assert!(server.write_delta(&mut state, 2, &mut bytes).is_ok());
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Fleet {
    tag: u8,
    #[replicate(array)]
    ships: FastArray<Hero>,
}

/// The arrays inside an item serve the same client: an owner of an inner
/// item is sent its owner-only fields there too.
#[test]
fn arrays_inside_items_serve_the_same_client() {
    let mut server = FastArray::new();
    let fleet = server.push(Fleet::default());
    server.commit();
    let ship = {
        let mut f = server.get_mut(fleet).unwrap();
        let ship = f.ships.push(hero(1, 77, 88, "flagship"));
        f.ships.set_owner(ship, Some(1)).unwrap();
        ship
    };
    server.commit();
    let mut out = Vec::new();
    for client in [1, 2] {
        let mut state = SendState::new();
        state.set_client(client).unwrap();
        let mut mirror = FastArray::<Fleet>::mirror();
        let mut bytes = Vec::new();
        server.write_delta(&mut state, 1, &mut bytes).unwrap();
        mirror.apply_delta(&bytes, &mut ()).unwrap();
        out.push(mirror.get(fleet).unwrap().ships.get(ship).unwrap().clone());
        // And by snapshot.
        let mut joined = SendState::new();
        joined.set_client(client).unwrap();
        bytes.clear();
        server.write_snapshot_for(&mut joined, &mut bytes).unwrap();
        let mirror = FastArray::<Fleet>::from_snapshot(&bytes).unwrap();
        out.push(mirror.get(fleet).unwrap().ships.get(ship).unwrap().clone());
    }
    let mine = hero(1, 77, 0, "flagship");
    let theirs = hero(1, 0, 88, "flagship");
    assert_eq!(out, [mine.clone(), mine, theirs.clone(), theirs]);
}

// "Withheld means never sent", over lossy links, with ownership moving:
// four clients on links of their own (one with a scope, detail levels and
// a bit budget now and then; one joined by snapshot; one that owns
// nothing), items whose owner changes among them, adds and removals, and
// every change a value never used before. At every write the session
// notes, per client and item, the values the rule lets it see now (the
// owner's fields if it owns the item, the others' if not); after every
// packet a client applies, each value it holds must be `Default` or one of
// those. At the end, each client holds what it may see exactly.
mod privacy {
    use std::collections::{BTreeMap, BTreeSet};

    use fastarray::{
        Callbacks, FastArray, FieldMask, MAX_DETAIL, Replicate, ReplicationId, SendState,
    };
    use fastarray_testkit::link::{Link, LinkProfile};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[derive(Replicate, Clone, Debug, PartialEq, Default)]
    pub struct Agent {
        x: i32,
        #[replicate(owner_only)]
        secret: u32,
        #[replicate(skip_owner)]
        guess: u32,
        #[replicate(owner_only, detail = 3)]
        intel: u32,
        #[replicate(initial_only)]
        badge: u32,
    }

    /// Which of an agent's values one client may have been sent.
    #[derive(Default)]
    struct Seen {
        secret: BTreeSet<u32>,
        guess: BTreeSet<u32>,
        intel: BTreeSet<u32>,
        badge: BTreeSet<u32>,
    }

    struct Client {
        number: Option<u64>,
        state: SendState,
        mirror: FastArray<Agent>,
        link: Link,
        scoped: bool,
        budgeted: bool,
        seen: BTreeMap<ReplicationId, Seen>,
    }

    struct World {
        server: FastArray<Agent>,
        clients: Vec<Client>,
        rng: ChaCha8Rng,
        next: u32,
        label: String,
    }

    impl World {
        fn new(profile: &LinkProfile, seed: u64, label: String) -> Self {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut server = FastArray::new();
            let mut next = 1;
            for _ in 0..16 {
                let id = server.push(agent(&mut next));
                let owner = owner(&mut rng);
                server.set_owner(id, owner).unwrap();
            }
            server.commit();
            let specs = [
                (Some(1), false, false),
                (Some(2), true, true),
                (Some(3), false, true),
                (None, false, false),
            ];
            let clients = specs
                .into_iter()
                .enumerate()
                .map(|(n, (number, scoped, budgeted))| {
                    let mut state = SendState::new();
                    if let Some(number) = number {
                        state.set_client(number).unwrap();
                    }
                    Client {
                        number,
                        state,
                        mirror: FastArray::mirror(),
                        link: Link::new(profile.clone(), seed * 8 + n as u64),
                        scoped,
                        budgeted,
                        seen: BTreeMap::new(),
                    }
                })
                .collect();
            let mut world = Self {
                server,
                clients,
                rng,
                next,
                label,
            };
            // Client 3 joins by snapshot, over a reliable channel.
            world.note_visible();
            let client = &mut world.clients[2];
            let mut bytes = Vec::new();
            world
                .server
                .write_snapshot_for(&mut client.state, &mut bytes)
                .unwrap();
            client.mirror = FastArray::from_snapshot(&bytes).unwrap();
            world.check(2);
            // Client 2 sees some of the world, at random levels.
            let ids: Vec<ReplicationId> = world.server.ids().collect();
            let mut scope = world.server.scope(&mut world.clients[1].state).unwrap();
            for id in ids {
                if world.rng.random_bool(0.7) {
                    scope.include(id);
                    scope.set_detail(id, world.rng.random_range(0..=MAX_DETAIL));
                }
            }
            world
        }

        fn mutate(&mut self, tick: u32, heal_at: u32) {
            let ids: Vec<ReplicationId> = self.server.ids().collect();
            let settling = tick + 1 >= heal_at;
            if self.rng.random_bool(0.3) {
                let id = self.server.push(agent(&mut self.next));
                let owner = owner(&mut self.rng);
                self.server.set_owner(id, owner).unwrap();
                if self.rng.random_bool(0.6) {
                    let level = self.rng.random_range(0..=MAX_DETAIL);
                    let mut scope = self.server.scope(&mut self.clients[1].state).unwrap();
                    scope.include(id);
                    scope.set_detail(id, level);
                }
            }
            if self.rng.random_bool(0.1) && ids.len() > 8 {
                self.server.remove(ids[self.rng.random_range(1..ids.len())]);
            }
            for _ in 0..8 {
                let id = ids[self.rng.random_range(0..ids.len())];
                self.next += 1;
                let next = self.next;
                let field = self.rng.random_range(0..5);
                if let Some(mut agent) = self.server.get_mut(id) {
                    match field {
                        0 => agent.x += 1,
                        1 => agent.secret = next,
                        2 => agent.guess = next,
                        3 => agent.intel = next,
                        _ => agent.badge = next,
                    }
                }
            }
            if !settling && self.rng.random_bool(0.3) {
                let id = ids[self.rng.random_range(0..ids.len())];
                let owner = owner(&mut self.rng);
                self.server.set_owner(id, owner).unwrap();
            }
            let mut scope = self.server.scope(&mut self.clients[1].state).unwrap();
            for _ in 0..2 {
                let id = ids[self.rng.random_range(0..ids.len())];
                if self.rng.random_bool(0.5) {
                    scope.include(id);
                    let level = self.rng.random_range(0..=MAX_DETAIL);
                    scope.set_detail(id, if settling { MAX_DETAIL } else { level });
                } else {
                    scope.exclude(id);
                }
            }
            if settling {
                let ids: Vec<ReplicationId> = scope.ids().collect();
                for id in ids {
                    scope.set_detail(id, MAX_DETAIL);
                }
            }
        }

        /// Notes what the next messages may carry, per client.
        fn note_visible(&mut self) {
            let ids: Vec<ReplicationId> = self.server.ids().collect();
            for client in &mut self.clients {
                for &id in &ids {
                    let level = if client.scoped {
                        let scope = self.server.scope(&mut client.state).unwrap();
                        if !scope.contains(id) {
                            continue;
                        }
                        scope.detail(id)
                    } else {
                        MAX_DETAIL
                    };
                    let agent = self.server.get(id).unwrap();
                    let owns = client.number.is_some() && self.server.owner(id) == client.number;
                    let seen = client.seen.entry(id).or_default();
                    seen.badge.insert(agent.badge);
                    if owns {
                        seen.secret.insert(agent.secret);
                        if level >= 3 {
                            seen.intel.insert(agent.intel);
                        }
                    } else {
                        seen.guess.insert(agent.guess);
                    }
                }
            }
        }

        /// Panics if client `n` holds a value it was never allowed.
        fn check(&self, n: usize) {
            let client = &self.clients[n];
            for (id, held) in client.mirror.iter() {
                let seen = client.seen.get(&id);
                let allowed = |value: u32, set: fn(&Seen) -> &BTreeSet<u32>| {
                    value == 0 || seen.is_some_and(|seen| set(seen).contains(&value))
                };
                let label = &self.label;
                assert!(
                    allowed(held.secret, |s| &s.secret),
                    "{label}: client {n} holds secret {} of {id}",
                    held.secret
                );
                assert!(
                    allowed(held.intel, |s| &s.intel),
                    "{label}: client {n} holds intel {} of {id}",
                    held.intel
                );
                assert!(
                    allowed(held.guess, |s| &s.guess),
                    "{label}: client {n} holds guess {} of {id}",
                    held.guess
                );
                assert!(
                    allowed(held.badge, |s| &s.badge),
                    "{label}: client {n} holds badge {} of {id}",
                    held.badge
                );
            }
        }

        /// Whether every client holds what it may, every packet
        /// acknowledged.
        fn settled(&self) -> bool {
            self.clients
                .iter()
                .all(|client| self.server.is_settled(&client.state))
        }

        /// Whether nothing is in transit on any link.
        fn idle(&self) -> bool {
            self.clients.iter().all(|client| client.link.idle())
        }

        fn tick(&mut self, now: u32, writing: bool) {
            self.server.commit();
            if writing {
                self.note_visible();
            }
            let packet = u32::from((65_500 + now) as u16);
            for n in 0..self.clients.len() {
                let client = &mut self.clients[n];
                if writing {
                    let mut bytes = Vec::new();
                    let result = if client.budgeted && self.rng.random_bool(0.5) {
                        let budget = self.rng.random_range(60..400);
                        self.server.write_delta_with_budget(
                            &mut client.state,
                            packet,
                            &mut bytes,
                            budget,
                        )
                    } else {
                        self.server
                            .write_delta(&mut client.state, packet, &mut bytes)
                    };
                    result.unwrap_or_else(|e| panic!("{}: client {n}: {e}", self.label));
                    client.link.send(now, packet, bytes);
                }
                for bytes in client.link.deliver(now) {
                    let mut changes = NoInitialChanges(&self.label);
                    self.clients[n]
                        .mirror
                        .apply_delta(&bytes, &mut changes)
                        .unwrap_or_else(|e| panic!("{}: client {n}: {e}", self.label));
                    self.check(n);
                }
                let client = &mut self.clients[n];
                for report in client.link.reports(now) {
                    report.tell(&mut client.state);
                }
            }
        }

        /// Each client holds exactly what it may see of the items it sees.
        fn check_converged(&mut self) {
            let ids: Vec<ReplicationId> = self.server.ids().collect();
            for n in 0..self.clients.len() {
                let client = &mut self.clients[n];
                for &id in &ids {
                    if client.scoped && !self.server.scope(&mut client.state).unwrap().contains(id)
                    {
                        continue;
                    }
                    let ours = self.server.get(id).unwrap();
                    let theirs = client.mirror.get(id).unwrap_or_else(|| {
                        panic!("{}: client {n} lacks {id}", self.label);
                    });
                    let owns = client.number.is_some() && self.server.owner(id) == client.number;
                    let same = ours.x == theirs.x
                        && if owns {
                            ours.secret == theirs.secret && ours.intel == theirs.intel
                        } else {
                            ours.guess == theirs.guess
                        };
                    assert!(
                        same,
                        "{}: client {n} (owner: {owns}) holds {theirs:?} for {ours:?}",
                        self.label
                    );
                }
            }
        }
    }

    /// A mirror's callbacks that panic if a change (not a whole value)
    /// carries an `initial_only` field.
    struct NoInitialChanges<'a>(&'a str);

    impl Callbacks<Agent> for NoInitialChanges<'_> {
        fn post_change(&mut self, id: ReplicationId, _: &Agent, changed: FieldMask) {
            assert!(
                !changed.intersects(Agent::INITIAL_ONLY),
                "{}: {id}'s badge arrived as a change",
                self.0
            );
        }

        fn post_change_whole(&mut self, _: ReplicationId, _: &Agent, _: FieldMask) {}
    }

    fn agent(next: &mut u32) -> Agent {
        *next += 5;
        Agent {
            x: 0,
            secret: *next,
            guess: *next + 1,
            intel: *next + 2,
            badge: *next + 3,
        }
    }

    fn owner(rng: &mut ChaCha8Rng) -> Option<u64> {
        match rng.random_range(0..5) {
            0 => None,
            n => Some(n.min(3)),
        }
    }

    #[test]
    fn withheld_fields_never_reach_a_client_as_owners_change_over_lossy_links() {
        const HEAL_AT: u32 = 150;
        for profile in LinkProfile::all_for_tests() {
            for seed in 0..fastarray_testkit::drive::seeds_or(6) {
                let label = format!("{} seed {seed}", profile.name);
                let mut world = World::new(&profile, seed, label.clone());
                for now in 0.. {
                    if now < HEAL_AT {
                        world.mutate(now, HEAL_AT);
                    } else if now == HEAL_AT {
                        for client in &mut world.clients {
                            client.link.heal();
                        }
                    }
                    world.tick(now, now < HEAL_AT || !world.settled());
                    if now > HEAL_AT && world.settled() && world.idle() {
                        break;
                    }
                    if now >= HEAL_AT + 400 {
                        for (n, client) in world.clients.iter().enumerate() {
                            eprintln!(
                                "client {n}: settled {} pending {} in flight {} idle {}",
                                world.server.is_settled(&client.state),
                                client.state.pending_items(),
                                client.state.packets_in_flight(),
                                client.link.idle()
                            );
                        }
                        panic!("{label}: not settled");
                    }
                }
                world.check_converged();
            }
        }
    }
}

// The same over a lossy link for a replicated object whose owner moves
// between the client and someone else, half the seeds under a bit budget:
// the test kit's `ObjectSession`, its logic noting at every write what
// the client may be sent, its mirror's callbacks checking every value that
// arrives.
mod object_privacy {
    use std::cell::RefCell;
    use std::collections::BTreeSet;
    use std::rc::Rc;

    use fastarray::{Callbacks, FieldMask, Replicated, ReplicationId, SendState};
    use fastarray_testkit::drive::{self, Logic, ObjectSession};
    use fastarray_testkit::link::LinkProfile;
    use rand::Rng;
    use rand_chacha::ChaCha8Rng;

    use super::Hero;

    /// The ammo values written while the client owned the object, the
    /// positions written while it did not.
    #[derive(Default)]
    struct Allowed {
        ammo: BTreeSet<u32>,
        pos: BTreeSet<i32>,
    }

    /// Changes a field a tick to a value never used before, and moves the
    /// owner until the link is about to heal; notes what each write may
    /// carry.
    struct Moving {
        next: u32,
        allowed: Rc<RefCell<Allowed>>,
    }

    impl Logic<Replicated<Hero>> for Moving {
        fn mutate(
            &mut self,
            server: &mut Replicated<Hero>,
            _: &mut SendState,
            rng: &mut ChaCha8Rng,
            tick: u32,
        ) {
            self.next += 1;
            {
                let mut hero = server.get_mut();
                match rng.random_range(0..3) {
                    0 => hero.ammo = self.next,
                    1 => hero.pos = self.next as i32,
                    _ => hero.hp += 1,
                }
            }
            if tick < 149 && rng.random_bool(0.2) {
                let owner = [None, Some(1), Some(2)][rng.random_range(0..3)];
                server.set_owner(owner).unwrap();
            }
        }

        fn before_write(
            &mut self,
            server: &mut Replicated<Hero>,
            _: &mut SendState,
            _: &mut ChaCha8Rng,
        ) {
            let (hero, mut allowed) = (server.get(), self.allowed.borrow_mut());
            if server.owner() == Some(1) {
                allowed.ammo.insert(hero.ammo);
            } else {
                allowed.pos.insert(hero.pos);
            }
        }
    }

    /// The client's callbacks: every value that arrives must be allowed.
    struct Checked {
        allowed: Rc<RefCell<Allowed>>,
        label: String,
    }

    impl Callbacks<Hero> for Checked {
        fn post_change(&mut self, _: ReplicationId, held: &Hero, _: FieldMask) {
            let allowed = self.allowed.borrow();
            assert!(
                held.ammo == 0 || allowed.ammo.contains(&held.ammo),
                "{}: ammo {} reached a client that did not own it",
                self.label,
                held.ammo
            );
            assert!(
                held.pos == 0 || allowed.pos.contains(&held.pos),
                "{}: position {} reached the owner",
                self.label,
                held.pos
            );
        }
    }

    #[test]
    fn an_objects_withheld_fields_never_reach_its_client_over_lossy_links() {
        for profile in LinkProfile::all_for_tests() {
            for seed in 0..drive::seeds_or(12) {
                let mut conn = SendState::new();
                conn.set_client(1).unwrap();
                let label = format!("{} seed {seed}", profile.name);
                let allowed = Rc::new(RefCell::new(Allowed::default()));
                let logic = Moving {
                    next: 0,
                    allowed: Rc::clone(&allowed),
                };
                let checked = Checked {
                    allowed,
                    label: label.clone(),
                };
                let session = (Replicated::new(Hero::default()), conn, Replicated::mirror());
                let mut session =
                    ObjectSession::with_logic(session, seed, label.clone(), logic, checked);
                session.budget = (seed % 2 == 1).then_some(96);
                drive::drive(&profile, seed, 150, &mut session);
                let (ours, theirs) = (session.server.get(), session.client.get());
                let same = ours.hp == theirs.hp
                    && if session.server.owner() == Some(1) {
                        ours.ammo == theirs.ammo
                    } else {
                        ours.pos == theirs.pos
                    };
                assert!(same, "{label}: {theirs:?} for {ours:?}");
            }
        }
    }
}

/// Messages and snapshots of a type with audience fields, bits flipped at
/// random: the mirror refuses or applies them, and never panics.
#[test]
fn corrupted_messages_are_refused_without_panics() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(30);
    let mut server = FastArray::new();
    let ids: Vec<ReplicationId> = (0..6).map(|n| server.push(hero(n, 1, 2, "x"))).collect();
    server.set_owner(ids[0], Some(1)).unwrap();
    server.commit();
    let mut messages = Vec::new();
    for client in [Some(1), Some(2), None] {
        let mut state = SendState::new();
        if let Some(client) = client {
            state.set_client(client).unwrap();
        }
        let mut bytes = Vec::new();
        server.write_delta(&mut state, 1, &mut bytes).unwrap();
        messages.push((false, bytes.clone()));
        bytes.clear();
        let mut joined = SendState::new();
        if let Some(client) = client {
            joined.set_client(client).unwrap();
        }
        server.write_snapshot_for(&mut joined, &mut bytes).unwrap();
        messages.push((true, bytes));
    }
    let mut refused = 0;
    for _ in 0..3000 {
        let (snapshot, original) = &messages[rng.random_range(0..messages.len())];
        let mut bytes = original.clone();
        for _ in 0..rng.random_range(1..4) {
            let bit = rng.random_range(0..bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
        let result = if *snapshot {
            FastArray::<Hero>::from_snapshot(&bytes).map(drop)
        } else {
            let mut mirror = FastArray::<Hero>::mirror();
            mirror.apply_delta(&bytes, &mut ()).map(drop)
        };
        refused += usize::from(result.is_err());
    }
    // Most flips land in ids, lengths, values and field sets that decode:
    // the refusals are those the checks catch.
    assert!(refused > 100, "{refused} refused");
}
