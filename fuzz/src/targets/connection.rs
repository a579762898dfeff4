//! Target `connection`: a client's `MirrorConnection` with two channels
//! (an array of `Unit`s and a `World` object, which holds arrays of its
//! own) applies `data[0]` (modulo the session's length + 1) genuine
//! packets of a server's `Connection`, then `data[1..]` as a packet.
//!
//! Promises checked: nothing panics; an `Err` leaves both mirrors as they
//! were, and the next genuine packet then does to them what it does to a
//! client that never saw the bad packet; after an `Ok`, the rest of the
//! genuine packets do not panic either.

use std::sync::OnceLock;
use std::time::Instant;

use fastarray::{Connection, FastArray, MirrorConnection, Replicated};

use super::types::{Fixture, ObjectFixture, Unit, World};

/// A server's packets: 12 ticks of changes to the units and the world, in
/// packets of at most 200 bytes (so the first ticks' work spans several).
pub fn session() -> &'static [Vec<u8>] {
    static PACKETS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    PACKETS.get_or_init(|| {
        let now = Instant::now();
        let mut units = FastArray::new();
        for seed in 0..12 {
            units.push(Unit::make(seed));
        }
        let mut world = Replicated::new(World::default());
        let mut conn = Connection::new(2);
        let mut packets = Vec::new();
        for tick in 0..12u8 {
            let ids: Vec<_> = units.ids().collect();
            for (n, id) in ids.into_iter().enumerate() {
                if (n + usize::from(tick)) % 3 == 0 {
                    units.get_mut(id).expect("a live id").edit(tick, n as u8);
                }
            }
            if tick % 4 == 3 {
                units.push(Unit::make(tick + 40));
            }
            world.get_mut().step(tick);
            units.commit();
            world.commit();
            for _ in 0..3 {
                let mut packet = Vec::new();
                let stats = conn
                    .write_packet(now, 200, &mut [&mut units, &mut world], &mut packet)
                    .expect("a genuine packet");
                packets.push(packet);
                if stats.totals.deferred == 0 {
                    break;
                }
            }
        }
        packets
    })
}

/// A client that applied the first `prefix` genuine packets.
fn client(prefix: usize) -> (MirrorConnection, FastArray<Unit>, Replicated<World>) {
    let now = Instant::now();
    let mut conn = MirrorConnection::new(2);
    let mut units = FastArray::<Unit>::mirror();
    let mut world = Replicated::<World>::mirror();
    for packet in &session()[..prefix] {
        conn.apply(now, packet, &mut [&mut units, &mut world])
            .expect("genuine packets apply");
    }
    (conn, units, world)
}

/// See the module docs.
pub fn connection(data: &[u8]) {
    let Some((&prefix, packet)) = data.split_first() else {
        return;
    };
    let packets = session();
    let prefix = usize::from(prefix) % (packets.len() + 1);
    let now = Instant::now();
    let (mut conn, mut units, mut world) = client(prefix);
    match conn.apply(now, packet, &mut [&mut units, &mut world]) {
        Err(error) => {
            let (mut clean, mut clean_units, mut clean_world) = client(prefix);
            assert!(
                units == clean_units && world.get() == clean_world.get(),
                "a refused packet ({error}) changed a mirror"
            );
            if let Some(next) = packets.get(prefix) {
                let ours = conn.apply(now, next, &mut [&mut units, &mut world]);
                let theirs = clean.apply(now, next, &mut [&mut clean_units, &mut clean_world]);
                assert_eq!(
                    ours.is_ok(),
                    theirs.is_ok(),
                    "after a refused packet ({error})"
                );
                assert!(units == clean_units && world.get() == clean_world.get());
            }
        }
        Ok(_) => {
            for next in &packets[prefix..] {
                let _ = conn.apply(now, next, &mut [&mut units, &mut world]);
            }
        }
    }
}
