//! An array is a server's authority or a client's mirror, and each refuses
//! the other's work: a mirror's local changes (which the next delta would
//! overwrite) panic or return `SendError::NotAnAuthority`; a delta applied
//! to an authority returns `DecodeError::NotAMirror` and changes nothing.

use std::panic::{AssertUnwindSafe, catch_unwind};

use fastarray::{
    DecodeError, FastArray, Replicate, Replicated, ReplicationId, SendError, SendState,
};
use fastarray_testkit::{exchange, exchange_object};

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u16,
    name: String,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
struct Match {
    round: u8,
    #[replicate(array)]
    units: FastArray<Unit>,
}

fn unit(hp: u16) -> Unit {
    Unit {
        hp,
        name: format!("u{hp}"),
    }
}

/// A server with three units and a client mirror that holds them.
fn synced() -> (FastArray<Unit>, SendState, FastArray<Unit>) {
    let mut server = FastArray::new();
    for hp in 1..=3 {
        server.push(unit(hp));
    }
    let (mut conn, mut client) = (SendState::new(), FastArray::mirror());
    exchange(&mut server, &mut conn, &mut client, 0);
    (server, conn, client)
}

/// The panic message of `f`, which must panic.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("should have panicked");
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload
            .downcast::<&str>()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    }
}

/// The original report: a client pushed an item of its own (taking id
/// #0), then the server's #0 arrived and silently replaced it.
#[test]
fn a_client_that_pushed_refuses_the_servers_delta_and_keeps_its_item() {
    let mut server = FastArray::new();
    let theirs = server.push(unit(100));
    server.commit();
    let mut conn = SendState::new();
    let mut packet = Vec::new();
    server.write_delta(&mut conn, 0, &mut packet).unwrap();

    let mut client = FastArray::new();
    let mine = client.push(unit(7));
    assert_eq!(
        mine, theirs,
        "the same id: the delta would have replaced it"
    );
    let error = client.apply_delta(&packet, &mut ()).unwrap_err();
    assert_eq!(error, DecodeError::NotAMirror { type_name: "Unit" });
    assert!(error.to_string().contains("authority"), "{error}");
    assert_eq!(client.len(), 1);
    assert_eq!(client.get(mine), Some(&unit(7)));
    assert!(!client.is_mirror());

    // The same after a commit, and for an authority that holds nothing now
    // but has a history of its own.
    client.commit();
    assert!(client.apply_delta(&packet, &mut ()).is_err());
    client.clear();
    client.commit();
    assert_eq!(
        client.apply_delta(&packet, &mut ()),
        Err(DecodeError::NotAMirror { type_name: "Unit" })
    );
    assert!(client.is_empty());
    let mut committed_only = FastArray::<Unit>::new();
    committed_only.commit();
    assert!(committed_only.apply_delta(&packet, &mut ()).is_err());
    assert!(committed_only.apply_snapshot(&packet).is_err());
}

#[test]
fn a_snapshot_applied_to_an_authority_is_refused() {
    let (server, _, _) = synced();
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    let mut other_server = FastArray::new();
    other_server.push(unit(9));
    assert_eq!(
        other_server.apply_snapshot(&snapshot),
        Err(DecodeError::NotAMirror { type_name: "Unit" })
    );
    assert_eq!(other_server.len(), 1);

    // A mirror, or a new array, takes it.
    let mut client = FastArray::new();
    client.apply_snapshot(&snapshot).unwrap();
    assert!(client.is_mirror());
    assert_eq!(client, server);
}

#[test]
fn which_arrays_are_mirrors() {
    assert!(FastArray::<Unit>::mirror().is_mirror());
    assert!(!FastArray::<Unit>::new().is_mirror());
    let (server, _, client) = synced();
    assert!(client.is_mirror() && !server.is_mirror());
    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).unwrap();
    assert!(
        FastArray::<Unit>::from_snapshot(&snapshot)
            .unwrap()
            .is_mirror()
    );
    assert!(client.clone().is_mirror());

    // A new array becomes a mirror when a delta applies, not before, and
    // not on a message that fails.
    let mut fresh = FastArray::<Unit>::new();
    assert!(fresh.apply_delta(&[0xff, 0xff, 0xff], &mut ()).is_err());
    assert!(!fresh.is_mirror());
    let mut conn = SendState::new();
    let mut server = server;
    exchange(&mut server, &mut conn, &mut fresh, 0);
    assert!(fresh.is_mirror());
    assert_eq!(fresh, server);

    assert!(Replicated::<Match>::mirror().is_mirror());
    assert!(!Replicated::new(Match::default()).is_mirror());
}

#[test]
fn a_mirror_refuses_each_local_change_with_a_panic_and_is_left_as_it_was() {
    type Change = (&'static str, fn(&mut FastArray<Unit>, ReplicationId));
    let changes: [Change; 7] = [
        ("FastArray::push", |a, _| {
            a.push(unit(5));
        }),
        ("FastArray::get_mut", |a, id| {
            a.get_mut(id).unwrap().hp = 0;
        }),
        ("FastArray::iter_mut", |a, _| {
            for (_, mut item) in a.iter_mut() {
                item.hp = 0;
            }
        }),
        ("FastArray::remove", |a, id| {
            a.remove(id);
        }),
        ("FastArray::retain", |a, _| a.retain(|_, item| item.hp > 1)),
        ("FastArray::clear", |a, _| a.clear()),
        ("FastArray::commit", |a, _| {
            a.commit();
        }),
    ];
    let (_, _, client) = synced();
    let id = client.ids().next().unwrap();
    for (name, change) in changes {
        let mut mirror = client.clone();
        let message = panic_message(|| change(&mut mirror, id));
        assert!(
            message.starts_with(&format!("{name} on a mirror of `")),
            "{name}: {message}"
        );
        assert!(message.contains("apply_delta"), "{name}: {message}");
        assert_eq!(mirror, client, "{name} changed the mirror");
        assert!(!mirror.has_uncommitted_work(), "{name}");
    }
}

#[test]
fn a_mirror_refuses_to_write_with_a_typed_error() {
    let (_, _, mut client) = synced();
    let refused = SendError::NotAnAuthority { type_name: "Unit" };
    let mut conn = SendState::new();
    let mut out = vec![1, 2, 3];
    assert_eq!(
        client.write_delta(&mut conn, 0, &mut out).unwrap_err(),
        refused
    );
    assert_eq!(
        client
            .write_delta_with_budget(&mut conn, 0, &mut out, 1_000)
            .unwrap_err(),
        refused
    );
    assert_eq!(
        client.write_snapshot_for(&mut conn, &mut out).unwrap_err(),
        refused
    );
    assert!(refused.to_string().contains("mirror"));
    assert_eq!(out, [1, 2, 3]);
    assert_eq!((conn.packets_in_flight(), conn.client_items()), (0, 0));
    // A snapshot of what it holds is a read, and allowed.
    let mut snapshot = Vec::new();
    client.write_snapshot(&mut snapshot).unwrap();
    assert_eq!(FastArray::<Unit>::from_snapshot(&snapshot).unwrap(), client);
}

/// Order is never replicated, so reordering is local to each side: a
/// mirror may sort its items, and later deltas apply to them by id.
#[test]
fn a_mirror_may_reorder_and_still_follows_its_server() {
    let (mut server, mut conn, mut client) = synced();
    client.sort_by(|a, b| b.hp.cmp(&a.hp));
    let ids: Vec<_> = client.ids().collect();
    assert!(client.swap(ids[0], ids[2]));
    let first = server.ids().next().unwrap();
    server.get_mut(first).unwrap().hp = 50;
    server.remove(ids[1]);
    server.push(unit(4));
    exchange(&mut server, &mut conn, &mut client, 1);
    assert_eq!(client, server);
}

/// The frames of each field's newest value follow the items through a
/// mirror's reorders: a late message still loses to a newer one for the
/// items it names, wherever they moved in between.
#[test]
fn a_late_message_after_a_reorder_changes_only_fields_it_has_newer() {
    let (mut server, mut conn, mut client) = synced();
    for hp in 4..=8 {
        server.push(unit(hp));
    }
    exchange(&mut server, &mut conn, &mut client, 1);
    let ids: Vec<_> = server.ids().collect();
    let write = |server: &mut FastArray<Unit>, conn: &mut SendState, packet| {
        server.commit();
        let mut out = Vec::new();
        server.write_delta(conn, packet, &mut out).unwrap();
        out
    };
    // Frame 1 changes items 0 to 3; frame 2 items 2 to 5 again.
    for &id in &ids[..4] {
        server.get_mut(id).unwrap().hp += 100;
    }
    let early = write(&mut server, &mut conn, 2);
    for &id in &ids[2..6] {
        server.get_mut(id).unwrap().hp += 100;
    }
    let late = write(&mut server, &mut conn, 3);
    // The newer message arrives first; the mirror reorders its items;
    // then the older one arrives.
    client.apply_delta(&late, &mut ()).unwrap();
    client.sort_by(|a, b| b.hp.cmp(&a.hp));
    assert!(client.swap(ids[0], ids[4]));
    assert!(client.swap(ids[1], ids[3]));
    client.apply_delta(&early, &mut ()).unwrap();
    assert_eq!(client, server);
    let hp = |array: &FastArray<Unit>, n: usize| array.get(ids[n]).unwrap().hp;
    assert_eq!(
        (hp(&client, 0), hp(&client, 3), hp(&client, 5)),
        (101, 204, 106)
    );
}

#[test]
fn a_replicated_mirror_refuses_local_changes_and_a_server_object_refuses_deltas() {
    let mut server = Replicated::new(Match::default());
    server.get_mut().units.push(unit(1));
    let mut conn = SendState::new();
    let mut client = Replicated::<Match>::mirror();
    exchange_object(&mut server, &mut conn, &mut client, 0);

    let message = panic_message(|| client.get_mut().round = 9);
    assert!(
        message.starts_with("Replicated::get_mut on a mirror of `"),
        "{message}"
    );
    let message = panic_message(|| {
        client.commit();
    });
    assert!(
        message.starts_with("Replicated::commit on a mirror of `"),
        "{message}"
    );
    assert_eq!(client.get(), server.get());
    let mut out = Vec::new();
    assert_eq!(
        client.write_delta(&mut SendState::new(), 0, &mut out),
        Err(SendError::NotAnAuthority { type_name: "Match" })
    );
    assert!(out.is_empty());

    // The server's own object refuses a delta (here, one it wrote).
    server.get_mut().round = 2;
    server.commit();
    let mut packet = Vec::new();
    server.write_delta(&mut conn, 1, &mut packet).unwrap();
    let mut other = Replicated::new(Match::default());
    assert_eq!(
        other.apply_delta(&packet, &mut ()).unwrap_err(),
        DecodeError::NotAMirror { type_name: "Match" }
    );
    assert_eq!(other.get(), &Match::default());
    client.apply_delta(&packet, &mut ()).unwrap();
    assert_eq!(client.get().round, 2);
}
