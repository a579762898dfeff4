//! Bits per tick over a lossy link, and the fan-out check: are the
//! caught-up connections' messages the same?

use fastarray_bench::naive::NaiveLossy;
use fastarray_bench::ue::UeConnection;
use fastarray_bench::{
    Script, Workload, apply_ours, apply_vec, caught_up, caught_up_conn, same_contents, server_array,
};
use fastarray_testkit::link::{Link, LinkProfile, Report};

use crate::{LOSS_ITEMS, LOSS_TICKS, SEED};

/// Bits per tick over a lossy link, per model.
#[derive(Clone, Debug, Default)]
pub struct Loss {
    pub workload: Option<Workload>,
    pub rate: f64,
    pub ticks: u64,
    pub ours: u64,
    pub naive: u64,
    pub ue: u64,
    pub bitcode: u64,
    /// Packets lost (same fates for every model).
    pub lost: u64,
    /// Ticks after the link healed until our client was settled.
    pub settle_ticks: u32,
}

/// `workload` at 10k items for `LOSS_TICKS` ticks over a link losing
/// `rate` of the packets (with delay jitter, so reordering too). Every model
/// sees the same fates: one link each, same seed, same sends. Then the link
/// heals and our client must converge.
pub fn run_loss(workload: Workload, rate: f64) -> Loss {
    let profile = LinkProfile {
        name: "bench",
        ..LinkProfile::lossy(rate)
    };
    let (mut script, agents) = Script::new(workload, LOSS_ITEMS, SEED);
    let mut server = server_array(&agents);
    let (mut conn, mut mirror) = caught_up(&mut server, u32::MAX);
    let mut plain = agents.clone();
    let mut naive_model = NaiveLossy::new(&plain);
    let mut unreal = UeConnection::new(&server);
    let mut buffer = bitcode::Buffer::new();
    let seed = SEED ^ (rate * 1000.0) as u64;
    let mut links = [
        Link::new(profile.clone(), seed),
        Link::new(profile.clone(), seed),
        Link::new(profile, seed),
    ];
    let mut loss = Loss {
        workload: Some(workload),
        rate,
        ticks: u64::from(LOSS_TICKS),
        ..Loss::default()
    };
    let mut ops = Vec::new();
    for now in 0u32.. {
        let loaded = now < LOSS_TICKS;
        if loaded {
            script.tick(&mut ops);
            apply_ours(&mut server, &ops);
            apply_vec(&mut plain, &ops);
        } else if now == LOSS_TICKS {
            links[0].heal();
        }
        server.commit();
        if loaded || !server.is_settled(&conn) {
            let mut bytes = Vec::new();
            let stats = server
                .write_delta(&mut conn, now, &mut bytes)
                .expect("write");
            if loaded {
                loss.ours += stats.bits;
            }
            links[0].send(now, now, bytes);
        }
        if loaded {
            loss.naive += naive_model.write(now, &plain);
            links[1].send(now, now, Vec::new());
            loss.ue += unreal.write(now, &server).bits;
            links[2].send(now, now, Vec::new());
            loss.bitcode += 8 * buffer.encode(&plain).len() as u64;
        }
        for bytes in links[0].deliver(now) {
            mirror.apply_delta(&bytes, &mut ()).expect("apply");
        }
        links[1].deliver(now);
        links[2].deliver(now);
        for report in links[0].reports(now) {
            report.tell(&mut conn);
        }
        for report in links[1].reports(now) {
            match report {
                Report::Acked(p) => naive_model.on_ack(p),
                Report::Lost(p) => naive_model.on_loss(p),
            }
        }
        for report in links[2].reports(now) {
            match report {
                Report::Acked(p) => unreal.on_ack(p),
                Report::Lost(p) => unreal.on_loss(p),
            }
        }
        if !loaded && links[0].idle() && server.is_settled(&conn) {
            loss.settle_ticks = now - LOSS_TICKS;
            break;
        }
        assert!(
            now < LOSS_TICKS + 1000,
            "{workload:?} at {rate}: no convergence"
        );
    }
    loss.lost = links[1].stats().lost;
    assert!(
        same_contents(&server, &mirror),
        "{workload:?} at {rate}: mirror differs after healing"
    );
    loss
}

// ---------------------------------------------------------------------------
// Fan-out: are the caught-up connections' messages the same?

/// Ticks of the sparse workload at 10k with `conns` caught-up connections,
/// and how many of them gave every connection byte-identical messages.
#[derive(Clone, Copy, Debug, Default)]
pub struct FanOut {
    pub conns: usize,
    pub ticks: u32,
    pub identical: u32,
}

pub fn fan_out_messages(conns: usize, ticks: u32) -> FanOut {
    let (mut script, agents) = Script::new(Workload::Sparse, LOSS_ITEMS, SEED);
    let mut server = server_array(&agents);
    let mut states: Vec<_> = (0..conns).map(|_| caught_up_conn(&mut server, 0)).collect();
    let mut ops = Vec::new();
    let mut fan = FanOut {
        conns,
        ticks,
        identical: 0,
    };
    for tick in 1..=ticks {
        script.tick(&mut ops);
        apply_ours(&mut server, &ops);
        server.commit();
        let messages: Vec<Vec<u8>> = states
            .iter_mut()
            .map(|conn| {
                let mut bytes = Vec::new();
                server.write_delta(conn, tick, &mut bytes).expect("write");
                conn.on_ack(tick);
                bytes
            })
            .collect();
        if messages.windows(2).all(|w| w[0] == w[1]) {
            fan.identical += 1;
        }
    }
    fan
}
