//! The first-sync dance over a perfect link: commit, write one packet,
//! apply it on the mirror, acknowledge it. Tests that need a client
//! holding the server's state before the part they check call one of
//! these instead of repeating the four steps; a test that does something
//! in between (loses the packet, reads its bytes or stats, delivers it
//! late) writes the steps out.

use fastarray::{
    ApplyReport, DecodeError, DeltaStats, FastArray, Replicate, Replicated, SendError, SendState,
};

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
    dance(
        conn,
        packet,
        |conn, out| server.write_delta(conn, packet, out),
        |bytes| client.apply_delta(bytes, &mut ()),
    )
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
    dance(
        conn,
        packet,
        |conn, out| server.write_delta(conn, packet, out),
        |bytes| client.apply_delta(bytes, &mut ()),
    )
}

/// The steps after the commit, whatever the server and mirror are: writes
/// with `write`, applies with `apply`, acknowledges `packet`.
fn dance(
    conn: &mut SendState,
    packet: u32,
    write: impl FnOnce(&mut SendState, &mut Vec<u8>) -> Result<DeltaStats, SendError>,
    apply: impl FnOnce(&[u8]) -> Result<ApplyReport, DecodeError>,
) -> u64 {
    let mut bytes = Vec::new();
    let stats = write(conn, &mut bytes).unwrap();
    apply(&bytes).unwrap();
    conn.on_ack(packet);
    stats.bits
}
