//! Single events at 10k items (the targets): one change, one removal, one
//! shuffle, with our message broken down into its parts.

use fastarray::{BitWriter, FastArray};
use fastarray_bench::naive::NaiveSender;
use fastarray_bench::ue::UeConnection;
use fastarray_bench::{
    AMMO_BITS, Agent, Script, Workload, apply_ours, apply_vec, caught_up, id_of, same_contents,
    server_array,
};

use crate::{LOSS_ITEMS, SEED};

/// One message, ours and the Unreal model, with our bits broken down.
#[derive(Clone, Debug, Default)]
pub struct Event {
    pub ours: u64,
    pub ue: u64,
    pub naive: u64,
    /// `(part, bits)` of our message.
    pub parts: Vec<(&'static str, u64)>,
}

fn gamma_bits(value: u64) -> u64 {
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    writer.write_gamma(value);
    writer.finish()
}

/// Bits of an id list's count (`WIRE.md`): `0`, `1 0`, or `1 1 gamma(n − 2)`.
pub fn count_bits(count: u64) -> u64 {
    match count {
        0 => 1,
        1 => 2,
        _ => 2 + gamma_bits(count - 2),
    }
}

/// Bits of the gap code that an id list chooses for exponential-Golomb.
pub const GOLOMB_CODE_BITS: u64 = 5;

/// Bits of the middle id of the 10k array as a list of its own: the
/// exponential-Golomb code of order `N`, its bit length (`1` + `N` bits).
pub fn middle_id_bits() -> u64 {
    1 + u64::from(64 - MIDDLE.leading_zeros())
}

/// Bits of a short frame.
pub const FRAME_BITS: u64 = 16;

/// A fresh 10k array, caught up with every model, then `mutate`d once.
fn single_event(
    mutate: impl FnOnce(&mut FastArray<Agent>, &mut Vec<Agent>),
    parts: impl FnOnce(u64) -> Vec<(&'static str, u64)>,
) -> Event {
    let (_, agents) = Script::new(Workload::Sparse, LOSS_ITEMS, SEED);
    let mut server = server_array(&agents);
    let (mut conn, mut mirror) = caught_up(&mut server, 0);
    let mut unreal = UeConnection::new(&server);
    let mut plain = agents.clone();
    let mut naive_sender = NaiveSender::new(&plain);
    mutate(&mut server, &mut plain);
    server.commit();
    let mut out = Vec::new();
    let stats = server.write_delta(&mut conn, 1, &mut out).expect("write");
    mirror.apply_delta(&out, &mut ()).expect("apply");
    assert!(same_contents(&server, &mirror));
    out.clear();
    let naive = naive_sender.write(&plain, &mut out).expect("write");
    let parts = parts(stats.bits);
    assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), stats.bits);
    Event {
        ours: stats.bits,
        ue: unreal.write(1, &server).bits,
        naive,
        parts,
    }
}

/// The middle item of the 10k array.
const MIDDLE: u64 = LOSS_ITEMS as u64 / 2;

pub fn one_change() -> Event {
    single_event(
        |server, plain| {
            let id = id_of(MIDDLE);
            server.get_mut(id).expect("live").ammo ^= 0x5555;
            plain[MIDDLE as usize].ammo ^= 0x5555;
        },
        |total| {
            let fixed = 2
                + FRAME_BITS
                + count_bits(0)
                + count_bits(1)
                + GOLOMB_CODE_BITS
                + middle_id_bits()
                + 1;
            vec![
                ("message kind", 2),
                ("frame (short form)", FRAME_BITS),
                ("removal count", count_bits(0)),
                ("item count", count_bits(1)),
                ("gap code (exp-Golomb, order 13)", GOLOMB_CODE_BITS),
                ("id 5000", middle_id_bits()),
                ("whole/fields flag", 1),
                ("field set", total - fixed - AMMO_BITS),
                ("ammo value", AMMO_BITS),
            ]
        },
    )
}

pub fn one_removal() -> Event {
    single_event(
        |server, plain| {
            server.remove(id_of(MIDDLE));
            plain.remove(MIDDLE as usize);
        },
        |_| {
            vec![
                ("message kind", 2),
                ("frame (short form)", FRAME_BITS),
                ("removal count", count_bits(1)),
                ("gap code (exp-Golomb, order 13)", GOLOMB_CODE_BITS),
                ("id 5000", middle_id_bits()),
                ("item count", count_bits(0)),
            ]
        },
    )
}

pub fn one_shuffle() -> Event {
    let (mut script, _) = Script::new(Workload::Shuffle, LOSS_ITEMS, SEED);
    let mut ops = Vec::new();
    script.tick(&mut ops);
    single_event(
        |server, plain| {
            apply_ours(server, &ops);
            apply_vec(plain, &ops);
        },
        |_| vec![("empty message", 1)],
    )
}
