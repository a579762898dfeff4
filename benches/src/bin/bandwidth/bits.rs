//! Bits per tick, lossless: every model over every workload and size.

use fastarray_bench::naive::{self, NaiveSender};
use fastarray_bench::ue::UeConnection;
use fastarray_bench::{
    AMMO_BITS, Op, Script, Workload, apply_ours, apply_vec, caught_up, id_of, same_agent,
    same_contents, same_vec, server_array,
};

use crate::SEED;

/// Totals of one run: bits of every model over `ticks` ticks.
#[derive(Clone, Debug, Default)]
pub struct Bits {
    pub workload: Option<Workload>,
    pub items: usize,
    pub ticks: u64,
    /// Our delta bits (exact, `DeltaStats::bits`).
    pub ours: u64,
    /// Our delta bytes (what the transport carries).
    pub ours_bytes: u64,
    /// Item-level changes: changed items + removed + added.
    pub changes: u64,
    /// Raw value bits of the changed fields (ammo: 16 per change).
    pub raw_values: u64,
    pub naive: u64,
    pub ue: u64,
    pub snapshot: u64,
    pub bitcode: u64,
}

impl Bits {
    pub fn per_tick(&self, total: u64) -> f64 {
        total as f64 / self.ticks as f64
    }
}

/// Runs `workload` on `items` items for `ticks` ticks with one caught-up
/// connection per model, every packet delivered and acknowledged, and checks
/// that every client ends equal to its server.
pub fn run_bits(workload: Workload, items: usize, ticks: u32) -> Bits {
    let (mut script, agents) = Script::new(workload, items, SEED);
    let mut server = server_array(&agents);
    let (mut conn, mut mirror) = caught_up(&mut server, 0);
    let mut plain = agents.clone();
    let mut naive_sender = NaiveSender::new(&plain);
    let mut naive_client = agents;
    let mut unreal = UeConnection::new(&server);
    let mut buffer = bitcode::Buffer::new();
    let mut ops = Vec::new();
    let mut out = Vec::new();
    let mut bits = Bits {
        workload: Some(workload),
        items,
        ticks: u64::from(ticks),
        ..Bits::default()
    };
    for tick in 1..=ticks {
        script.tick(&mut ops);
        for op in &ops {
            bits.changes += match op {
                Op::Ammo { .. } | Op::Move { .. } | Op::Add { .. } => 1,
                Op::Remove { positions, .. } => positions.len() as u64,
                Op::Swap { .. } => 0,
            };
            bits.raw_values += match op {
                Op::Ammo { .. } => AMMO_BITS,
                _ => 0,
            };
        }
        apply_ours(&mut server, &ops);
        server.commit();
        out.clear();
        let stats = server
            .write_delta(&mut conn, tick, &mut out)
            .expect("write");
        assert_eq!(out.len() as u64, stats.bits.div_ceil(8));
        bits.ours += stats.bits;
        bits.ours_bytes += out.len() as u64;
        mirror.apply_delta(&out, &mut ()).expect("apply");
        conn.on_ack(tick);

        apply_vec(&mut plain, &ops);
        out.clear();
        bits.naive += naive_sender.write(&plain, &mut out).expect("write");
        naive::apply(&mut naive_client, &out).expect("apply");

        bits.ue += unreal.write(tick, &server).bits;
        unreal.on_ack(tick);

        out.clear();
        bits.snapshot += server.write_snapshot(&mut out).expect("snapshot");
        bits.bitcode += 8 * buffer.encode(&plain).len() as u64;
    }
    assert!(
        same_contents(&server, &mirror),
        "{workload:?}: mirror differs"
    );
    assert!(
        same_vec(&plain, &naive_client),
        "{workload:?}: naive client differs"
    );
    assert!(
        plain.iter().enumerate().all(|(pos, item)| server
            .get(id_of(script.serial_at(pos)))
            .is_some_and(|s| same_agent(s, item))),
        "{workload:?}: the plain array and ours disagree"
    );
    bits
}
