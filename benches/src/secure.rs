//! The sessions the secure bench and the report measure: a server's and a
//! client's side of one handshake, for each [`Protection`](fastarray::Protection).

use std::net::SocketAddr;
use std::time::Instant;

use fastarray::{ClientHandshake, Protection, ServerHandshake, Session, SessionKeys};

const PROTOCOL: u64 = 0xbe7c_0001;

/// The inner packets' sizes measured: a client's reply and a full packet
/// of the demo's MTU.
pub const SIZES: [usize; 2] = [64, 1_200];

/// An inner packet (ack header and body) of `size` bytes.
pub fn inner(size: usize) -> Vec<u8> {
    (0..size).map(|n| (n * 7) as u8).collect()
}

/// A server's and a client's session from one handshake over loopback
/// addresses, with `protection` (login keys fixed for `Encrypted`).
pub fn sessions(protection: Protection) -> (Session, Session) {
    let now = Instant::now();
    let from: SocketAddr = "127.0.0.1:50000".parse().expect("an address");
    let keys = SessionKeys {
        client_to_server: [1; 32],
        server_to_client: [2; 32],
    };
    let mut server = ServerHandshake::new(PROTOCOL, protection).expect("OS randomness");
    let mut client = match protection {
        Protection::Token => ClientHandshake::new(PROTOCOL, 1),
        Protection::Encrypted => ClientHandshake::encrypted(PROTOCOL, 1, keys.clone()),
    }
    .expect("OS randomness");
    let (mut request, mut challenge, mut response) = (Vec::new(), Vec::new(), Vec::new());
    client.poll_transmit(now, &mut request);
    server
        .handle(now, &from, &request, &mut challenge)
        .expect("a genuine request");
    let at_client = client
        .receive(&challenge)
        .expect("a genuine challenge")
        .expect("established");
    client.poll_transmit(now, &mut response);
    let at_server = match protection {
        Protection::Token => server.handle(now, &from, &response, &mut Vec::new()),
        Protection::Encrypted => {
            server.handle_encrypted(now, &from, &response, &mut Vec::new(), |_| Some(keys))
        }
    };
    (
        at_server.expect("a genuine response").expect("established"),
        at_client,
    )
}

/// The bytes sealing adds to an inner packet of `size` bytes, measured on
/// a packet of a genuine session (0 for the plain path).
pub fn added_bytes(protection: Option<Protection>, size: usize) -> usize {
    let Some(protection) = protection else {
        return 0;
    };
    let (mut at_server, _) = sessions(protection);
    let mut out = Vec::new();
    at_server
        .seal(&inner(size), &mut out)
        .expect("a fresh session seals");
    out.len() - size
}
