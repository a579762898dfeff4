//! The first-sync dance over a perfect link: commit, write one packet,
//! apply it on the mirror, acknowledge it. Tests that need a client
//! holding the server's state before the part they check call one of
//! these instead of repeating the four steps; a test that does something
//! in between (loses the packet, reads its bytes or stats, delivers it
//! late) writes the steps out.

use fastarray::{FastArray, Replicate, Replicated, SendState};

/// Commits `server`, writes packet `packet` for `conn`, applies it on
/// `client` and acknowledges it, over a perfect link; returns the
/// message's bits. Panics if the write or the apply fails.
pub fn exchange<T: Replicate>(
    server: &mut FastArray<T>,
    conn: &mut SendState,
    client: &mut FastArray<T>,
    packet: u32,
) -> u64 {
    server.commit();
    let mut bytes = Vec::new();
    let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(packet);
    stats.bits
}

/// [`exchange`] for a [`Replicated`] object: commits `server`, writes
/// packet `packet` for `conn`, applies it on `client` and acknowledges it;
/// returns the message's bits. Panics if the write or the apply fails.
pub fn exchange_object<T: Replicate>(
    server: &mut Replicated<T>,
    conn: &mut SendState,
    client: &mut Replicated<T>,
    packet: u32,
) -> u64 {
    server.commit();
    let mut bytes = Vec::new();
    let stats = server.write_delta(conn, packet, &mut bytes).unwrap();
    client.apply_delta(&bytes, &mut ()).unwrap();
    conn.on_ack(packet);
    stats.bits
}
