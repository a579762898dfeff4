//! Packets from anyone but the peer: an off-path attacker who knows both
//! addresses and can guess sequence numbers, but never sees a packet,
//! forges server packets that reuse genuine sequences.

use std::time::{Duration, Instant};

use fastarray::{AckHeader, Connection, FastArray, MirrorConnection, Replicate};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    x: i32,
    hp: u8,
}

const TICK: Duration = Duration::from_millis(16);
const MTU: usize = 1_200;

/// What a spoofing run saw.
#[derive(Debug, Default)]
struct Spoofed {
    /// Forged packets the client applied.
    forged_applied: usize,
    /// Genuine packets the client refused (other than duplicates of
    /// genuine packets).
    genuine_refused: usize,
    /// Whether the mirror equals the server's array after the game stops
    /// and the last repairs are acknowledged.
    converged: bool,
}

/// A server and a client exchanging packets every tick without loss;
/// from tick 10 on, every fifth tick, the attacker's forged packet (the
/// next genuine sequence in the ack header, then a body that decodes: no
/// section) reaches the client just before the genuine packet with that
/// sequence.
fn spoof(seed: u64, mut conn: Connection, mut client: MirrorConnection) -> Spoofed {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let t0 = Instant::now();
    let mut units = FastArray::new();
    for n in 0..20 {
        units.push(Unit { x: n, hp: 100 });
    }
    units.commit();
    let mut mirror = FastArray::<Unit>::mirror();
    let mut seen = Spoofed::default();
    let (mut packet, mut reply) = (Vec::new(), Vec::new());
    for tick in 0..120u32 {
        let now = t0 + TICK * tick;
        if tick < 60 {
            // Changes, adds and removals: news the client must not miss.
            let ids: Vec<_> = units.ids().collect();
            for _ in 0..3 {
                let id = ids[rng.random_range(0..ids.len())];
                units.get_mut(id).unwrap().hp = rng.random();
            }
            if tick % 7 == 0 {
                units.remove(ids[rng.random_range(0..ids.len())]);
                units.push(Unit {
                    x: tick as i32,
                    hp: 1,
                });
            }
        }
        units.commit();
        packet.clear();
        conn.write_packet(now, MTU, &mut [&mut units], &mut packet)
            .unwrap();
        if (10..60).contains(&tick) && tick % 5 == 0 {
            let forged = forge(&mut rng, &packet);
            match client.apply(now, &forged, &mut [&mut mirror]) {
                Ok(_) => seen.forged_applied += 1,
                Err(_) => {}
            }
        }
        match client.apply(now, &packet, &mut [&mut mirror]) {
            Ok(_) => {}
            Err(_) => seen.genuine_refused += 1,
        }
        reply.clear();
        client.write_header(now, &mut reply);
        conn.receive(now, &reply).unwrap();
    }
    seen.converged = mirror == units;
    seen
}

/// The attacker's packet: the genuine packet's sequence (guessed: it is
/// one more than the last), an ack header that acknowledges nothing, and
/// an empty body; in the secure modes, the header's place is taken by a
/// guess at what precedes it.
fn forge(rng: &mut ChaCha8Rng, genuine: &[u8]) -> Vec<u8> {
    let prefix = genuine.len() - genuine_body(genuine).len();
    let mut forged = Vec::new();
    // Whatever precedes the ack header (nothing on the plain path): a
    // guess, with the genuine packet's first byte (its kind, public).
    if prefix > AckHeader::BYTES {
        forged.push(genuine[0]);
        for _ in 1..prefix - AckHeader::BYTES {
            forged.push(rng.random());
        }
    }
    // The sequence and the acknowledgement: guessed too (both sides send
    // a packet a tick, so they are the tick's number); a wrong guess is
    // refused as a duplicate or an ack from the future, a right one is
    // what this models.
    let at = prefix - AckHeader::BYTES;
    let header = AckHeader::from_bytes(genuine[at..prefix].try_into().unwrap());
    AckHeader {
        ack_bits: 0,
        ..header
    }
    .write(&mut forged);
    forged.push(0); // no section
    forged
}

/// The genuine packet after its headers.
fn genuine_body(packet: &[u8]) -> &[u8] {
    &packet[AckHeader::BYTES..]
}

/// The plain constructors are for transports that authenticate packets
/// themselves: over bare UDP a forged packet reusing a genuine sequence is
/// applied and acknowledged, the genuine one is refused as its duplicate,
/// its content is taken as delivered, and the client refuses later
/// packets (a change to an item it never received).
#[test]
fn forged_packets_desync_the_plain_path() {
    for seed in 0..5 {
        let seen = spoof(seed, Connection::new(1), MirrorConnection::new(1));
        assert!(seen.forged_applied > 0, "seed {seed}: {seen:?}");
        assert!(!seen.converged, "seed {seed}: {seen:?}");
        assert!(
            seen.genuine_refused > seen.forged_applied,
            "seed {seed}: {seen:?}"
        );
    }
}
