//! fastarray over renet 2.x and renet_netcode, on real UDP sockets on
//! 127.0.0.1: a server and four clients, with about 600 units that move,
//! take damage, die and spawn every tick, and a match object. Each client
//! sees the units within its view radius (an `InterestGrid` keyed by renet
//! client id; the client tells where it stands in the data after its
//! acknowledgements); two clients join a running game.
//!
//! Each client reaches the server through a relay that drops a seeded
//! share of the datagrams both ways (and holds each 0 to 2 ticks, so they
//! reorder, and sends 2% twice): the game runs once at 0%, once at 20% and
//! once at 50% loss. Then the links heal, the last repairs go out, and
//! every client's mirrors are checked against the server's units in its
//! scope (equal on the wire). It exits non-zero if any client differs.
//!
//! ```sh
//! cargo run --release -p fastarray-renet --example loopback           # 600 ticks a run
//! cargo run --release -p fastarray-renet --example loopback -- 1200   # more
//! ```
//!
//! The whole run shares one thread and a clock that advances a tick at a
//! time: it takes as long as the work does, and is the same every time.

mod relay;
mod run;

use std::process::ExitCode;

use run::{Setup, run};

fn main() -> ExitCode {
    let ticks = match std::env::args().nth(1).map(|arg| arg.parse()) {
        None => 600,
        Some(Ok(ticks)) => ticks,
        Some(Err(_)) => {
            eprintln!("usage: loopback [TICKS]");
            return ExitCode::from(2);
        }
    };
    let mut all_converged = true;
    for loss in [0.0, 0.2, 0.5] {
        let setup = Setup {
            ticks,
            loss,
            units: 600,
            seed: 7,
        };
        let started = std::time::Instant::now();
        let outcome = match run(setup) {
            Ok(outcome) => outcome,
            Err(error) => {
                eprintln!("error at {:.0}% loss: {error}", loss * 100.0);
                return ExitCode::FAILURE;
            }
        };
        println!(
            "\n{:.0}% loss each way, {ticks} ticks of play, {} units at the end ({:.1} s)",
            loss * 100.0,
            outcome.units,
            started.elapsed().as_secs_f64()
        );
        println!(
            "client  joined  in scope  bytes/tick  wire/tick  largest  applied  dup  old  dropped  matches"
        );
        for client in &outcome.clients {
            println!(
                "{:>6}  {:>6}  {:>8.0}  {:>10.0}  {:>9.0}  {:>7}  {:>7}  {:>3}  {:>3}  {:>7}  {}",
                client.id,
                client
                    .joined
                    .map_or("never".to_string(), |tick| tick.to_string()),
                client.in_scope as f64 / client.ticks.max(1) as f64,
                client.bytes_per_tick(),
                client.wire_bytes_per_tick(),
                client.largest_datagram,
                client.received.packets,
                client.received.duplicates,
                client.received.too_old,
                client.dropped,
                if client.matches { "yes" } else { "NO" },
            );
            if let Some(error) = &client.error {
                println!("        error: {error}");
            }
        }
        match outcome.settled_after {
            Some(after) => println!("healed: every client settled {after} ticks later"),
            None => println!("healed: the clients did not all settle"),
        }
        all_converged &= outcome.converged();
    }
    println!(
        "\njoined: the tick the server saw it connect; in scope: units it saw, on average;\n\
         bytes/tick: fastarray's packets to it per tick of play (its 8-byte header included);\n\
         wire/tick: the UDP payloads the server sent it (renet's and netcode's headers, acks, keep-alives too);\n\
         largest: its largest datagram (a full fastarray packet of 1 198 bytes, in renet's and netcode's);\n\
         applied: packets applied; dup, old: duplicates and packets too late, counted by the adapter\n\
         (dup stays 0 over renet_netcode, whose replay protection drops the relay's copies first);\n\
         dropped: datagrams its relay dropped, both ways; matches: its mirrors equal the server's\n\
         units in its scope and the match, on the wire."
    );
    if all_converged {
        println!("every client converged at every loss rate");
        ExitCode::SUCCESS
    } else {
        eprintln!("MISMATCH: a client differs from the server");
        ExitCode::FAILURE
    }
}
