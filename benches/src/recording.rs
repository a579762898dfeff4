//! One workload's messages recorded for the client benches: ours, the
//! naive position differ's and the byte-level differ's, tick by tick, with
//! each client as it was before the first (the criterion group
//! `<workload>_10k/*_apply` and the interleaved `apply` bin replay them).

use fastarray::{FastArray, SendState};

use crate::bytes::BytesSender;
use crate::naive::NaiveSender;
use crate::{Agent, Script, Workload, apply_ours, apply_vec, caught_up, server_array};

/// A workload's messages over some ticks, and the clients before the first.
pub struct Recording {
    /// Our messages, one per tick, to a connection that acknowledges each.
    pub ours: Vec<Vec<u8>>,
    /// Our mirror before the first tick (caught up).
    pub mirror: FastArray<Agent>,
    /// The naive position differ's messages (`crate::naive`).
    pub naive: Vec<Vec<u8>>,
    /// The byte-level differ's messages (`crate::bytes`).
    pub bytes: Vec<Vec<u8>>,
    /// The naive clients' items before the first tick.
    pub client: Vec<Agent>,
}

/// Records `ticks` ticks of `workload` over `items` items from `seed`.
pub fn record(workload: Workload, items: usize, seed: u64, ticks: usize) -> Recording {
    let (mut script, agents) = Script::new(workload, items, seed);
    let mut server = server_array(&agents);
    let (mut conn, mirror): (SendState, _) = caught_up(&mut server, 0);
    let mut plain = agents.clone();
    let mut naive = NaiveSender::new(&plain);
    let mut bytes = BytesSender::new(&plain);
    let mut ops = Vec::new();
    let mut recording = Recording {
        ours: Vec::new(),
        mirror,
        naive: Vec::new(),
        bytes: Vec::new(),
        client: agents,
    };
    for tick in 1..=ticks as u32 {
        script.tick(&mut ops);
        apply_ours(&mut server, &ops);
        server.commit();
        let mut out = Vec::new();
        server
            .write_delta(&mut conn, tick, &mut out)
            .expect("write");
        conn.on_ack(tick);
        recording.ours.push(out);
        apply_vec(&mut plain, &ops);
        let mut out = Vec::new();
        naive.write(&plain, &mut out).expect("write");
        recording.naive.push(out);
        let mut out = Vec::new();
        bytes.write(&plain, &mut out);
        recording.bytes.push(out);
    }
    recording
}
