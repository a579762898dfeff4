//! What protecting a connection's packets costs per packet: sealing one
//! (what `Connection::write_packet` and `MirrorConnection::write_reply`
//! add after writing it) and opening one (what `receive` and `apply` do
//! before reading it), for a small packet (64 bytes: a client's reply)
//! and a full one (1 200 bytes: the demo's MTU).
//!
//! | bench | what one iteration times |
//! |---|---|
//! | `seal/plain/N` | the plain path's share: the packet's bytes appended to the out buffer |
//! | `seal/token/N` | the kind byte and the token, then the bytes |
//! | `seal/sealed/N` | the kind byte and the counter, the bytes, ChaCha20-Poly1305 in place, the tag |
//! | `open/plain/N` | the plain path's first step: the ack header read off the packet |
//! | `open/token/N` | the kind and the token checked (constant time), the inner bytes found |
//! | `open/sealed/N` | the replay window checked, the bytes copied out and decrypted, the tag checked, the counter recorded (each iteration a fresh packet, sealed untimed) |
//!
//! ```sh
//! cargo bench -p fastarray-bench --bench secure
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use fastarray::{AckHeader, Protection};
use fastarray_bench::secure::{SIZES, inner, sessions};

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

fn seal(c: &mut Criterion) {
    let mut group = c.benchmark_group("seal");
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));
        let inner = inner(size);
        let mut out = Vec::with_capacity(size + 64);
        group.bench_function(format!("plain/{size}"), |b| {
            b.iter(|| {
                out.clear();
                out.extend_from_slice(black_box(&inner));
                black_box(out.len())
            })
        });
        for (name, protection) in [
            ("token", Protection::Token),
            ("sealed", Protection::Encrypted),
        ] {
            let (mut at_server, _) = sessions(protection);
            group.bench_function(format!("{name}/{size}"), |b| {
                b.iter(|| {
                    out.clear();
                    at_server.seal(black_box(&inner), &mut out).unwrap();
                    black_box(out.len())
                })
            });
        }
    }
    group.finish();
}

fn open(c: &mut Criterion) {
    let mut group = c.benchmark_group("open");
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));
        let inner = inner(size);
        group.bench_function(format!("plain/{size}"), |b| {
            b.iter(|| {
                let (header, body) = AckHeader::read(black_box(&inner)).unwrap();
                black_box((header, body.len()))
            })
        });
        let mut scratch = Vec::with_capacity(size);
        let (mut at_server, mut at_client) = sessions(Protection::Token);
        let mut packet = Vec::new();
        at_server.seal(&inner, &mut packet).unwrap();
        group.bench_function(format!("token/{size}"), |b| {
            b.iter(|| {
                let opened = at_client.open(black_box(&packet), &mut scratch).unwrap();
                black_box(opened.len())
            })
        });
        // A sealed packet opens once: each iteration opens a fresh one.
        let (mut at_server, mut at_client) = sessions(Protection::Encrypted);
        group.bench_function(format!("sealed/{size}"), |b| {
            b.iter_batched_ref(
                || {
                    let mut packet = Vec::with_capacity(size + 32);
                    at_server.seal(&inner, &mut packet).unwrap();
                    packet
                },
                |packet| {
                    let opened = at_client.open(black_box(packet), &mut scratch).unwrap();
                    black_box(opened.len())
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = seal, open
}
criterion_main!(benches);
