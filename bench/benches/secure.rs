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
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use fastarray::{AckHeader, ClientHandshake, Protection, ServerHandshake, Session, SessionKeys};

const PROTOCOL: u64 = 0xbe7c_0001;
/// The inner packets' sizes: ack header and body.
const SIZES: [usize; 2] = [64, 1_200];

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

/// A server's and a client's session from a handshake, with `protection`.
fn sessions(protection: Protection) -> (Session, Session) {
    let now = Instant::now();
    let from: SocketAddr = "127.0.0.1:50000".parse().unwrap();
    let keys = SessionKeys {
        client_to_server: [1; 32],
        server_to_client: [2; 32],
    };
    let mut server = ServerHandshake::new(PROTOCOL, protection).unwrap();
    let mut client = match protection {
        Protection::Token => ClientHandshake::new(PROTOCOL, 1).unwrap(),
        Protection::Encrypted => ClientHandshake::encrypted(PROTOCOL, 1, keys.clone()).unwrap(),
    };
    let (mut request, mut challenge, mut response) = (Vec::new(), Vec::new(), Vec::new());
    client.poll_transmit(now, &mut request);
    server.handle(now, &from, &request, &mut challenge).unwrap();
    let at_client = client.receive(&challenge).unwrap().unwrap();
    client.poll_transmit(now, &mut response);
    let at_server = match protection {
        Protection::Token => server.handle(now, &from, &response, &mut Vec::new()),
        Protection::Encrypted => {
            server.handle_encrypted(now, &from, &response, &mut Vec::new(), |_| Some(keys))
        }
    };
    (at_server.unwrap().unwrap(), at_client)
}

fn inner(size: usize) -> Vec<u8> {
    (0..size).map(|n| (n * 7) as u8).collect()
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
