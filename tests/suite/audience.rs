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
