//! The example's game over real UDP on 127.0.0.1, renet and renet_netcode
//! as a user runs them: four clients, two joining late, each behind a relay
//! dropping 0%, 20% or 50% of the datagrams both ways. Every client must
//! hold exactly the server's units in its scope once the links heal.

#[path = "../examples/loopback/relay.rs"]
mod relay;
#[path = "../examples/loopback/run.rs"]
mod run;

use run::{Outcome, Setup, run};

/// A shorter game than the example's, so the debug build stays quick.
fn play(loss: f64, seed: u64) -> Outcome {
    let outcome = run(Setup {
        ticks: 300,
        loss,
        units: 600,
        seed,
    })
    .expect("the run");
    for client in &outcome.clients {
        assert!(
            client.joined.is_some(),
            "client {} never joined: {outcome:?}",
            client.id
        );
        assert!(
            client.error.is_none(),
            "client {}: {:?}",
            client.id,
            client.error
        );
        assert!(
            client.received.packets > 0,
            "client {} applied nothing",
            client.id
        );
        assert!(
            client.matches,
            "client {} differs from the server: {outcome:?}",
            client.id
        );
        // What the datagrams carried is fastarray's packets and renet's
        // and netcode's own bytes.
        assert!(
            client.wire_bytes_per_tick() > client.bytes_per_tick(),
            "{client:?}"
        );
    }
    assert!(outcome.converged(), "{outcome:?}");
    outcome
}

#[test]
fn converges_without_loss() {
    let outcome = play(0.0, 1);
    assert!(outcome.clients.iter().all(|client| client.dropped == 0));
    // Every client sees part of the map, not all of it.
    for client in &outcome.clients {
        let in_scope = client.in_scope / client.ticks;
        assert!(
            in_scope > 0 && (in_scope as usize) < outcome.units,
            "{client:?}"
        );
    }
}

#[test]
fn converges_at_20_percent_loss() {
    let outcome = play(0.2, 2);
    assert!(outcome.clients.iter().all(|client| client.dropped > 0));
}

#[test]
fn converges_at_50_percent_loss() {
    let outcome = play(0.5, 3);
    assert!(outcome.clients.iter().all(|client| client.dropped > 0));
}

/// The joins of the client that sees most fill packets up to the
/// adapter's MTU (renet and netcode add their headers): packets use the
/// room they have. That such a packet is one datagram of renet's is
/// `config`'s unit test, against renet's own packet builder.
#[test]
fn joins_fill_packets_to_the_mtu() {
    let outcome = play(0.0, 4);
    let largest = outcome
        .clients
        .iter()
        .map(|client| client.largest_datagram)
        .max();
    assert!(largest > Some(fastarray_renet::MTU), "{outcome:?}");
}
