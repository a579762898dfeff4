//! Relays: what a server publishes a frame for its relays (its feed,
//! every field and owner of what changed) against what it sends one
//! caught-up client, per workload at 10k. The bus carries the feed once
//! per relay; each relay then sends its clients what the server would.

use fastarray_bench::{Script, Workload, apply_ours, caught_up_conn, server_array};

use crate::SEED;

/// Bytes a frame, averaged over a run.
pub struct RelayBytes {
    pub workload: Workload,
    /// The feed (`write_feed`).
    pub feed: f64,
    /// One caught-up client's delta (`write_delta`).
    pub client: f64,
}

/// `ticks` ticks of `workload` over `items` items, every packet
/// acknowledged.
pub fn run_relay_bytes(workload: Workload, items: usize, ticks: u32) -> RelayBytes {
    let (mut script, agents) = Script::new(workload, items, SEED);
    let mut server = server_array(&agents);
    drop(agents);
    let mut conn = caught_up_conn(&mut server, 0);
    let (mut ops, mut bytes) = (Vec::new(), Vec::new());
    let (mut feed, mut client) = (0usize, 0usize);
    for tick in 1..=ticks {
        script.tick(&mut ops);
        apply_ours(&mut server, &ops);
        server.commit();
        bytes.clear();
        server.write_feed(&mut bytes).expect("feed");
        feed += bytes.len();
        bytes.clear();
        server
            .write_delta(&mut conn, tick, &mut bytes)
            .expect("write");
        conn.on_ack(tick);
        client += bytes.len();
    }
    RelayBytes {
        workload,
        feed: feed as f64 / f64::from(ticks),
        client: client as f64 / f64::from(ticks),
    }
}
