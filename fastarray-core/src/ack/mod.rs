//! Packet acknowledgements for unreliable transports (UDP): which of this
//! side's packets the peer applied, which are lost, and the round-trip
//! time, in the classic game-transport scheme (Glenn Fiedler's
//! "Reliability and Flow Control", netcode, naia, lightyear). Sans-IO:
//! nothing here touches a socket or a clock.
//!
//! Every packet starts with an 8-byte [`AckHeader`]: the packet's own
//! 16-bit sequence, the newest sequence the sender applied of the
//! receiver's packets (`ack`), and 32 bits saying which of the 32 before
//! that one it applied too (`ack_bits`). Both sides send packets
//! regularly, so each packet is acknowledged by many of the peer's
//! headers, and one of them getting through is enough. Each side keeps an
//! [`Acks`]: it numbers outgoing packets (32-bit packet numbers whose low
//! 16 bits are the sequence), reads incoming headers, and reports every
//! packet it sent as exactly one [`AckEvent`]: `Acked` (the peer applied
//! it) or `Lost` (overtaken by [`reorder_threshold`](AckConfig::reorder_threshold)
//! acknowledged packets, unacknowledged past a timeout derived from the
//! RTT, or out of the headers' 33-packet reach). The numbers are the ones
//! [`FastArray::write_delta`](crate::FastArray::write_delta) takes, so the
//! events map straight onto [`SendState::on_ack`](crate::SendState::on_ack)
//! and [`SendState::on_loss`](crate::SendState::on_loss).
//!
//! A packet is acknowledged only once its payload was *applied*
//! ([`Acks::applied`]), not merely received: a packet that fails to decode
//! is reported lost to its sender, which sends its content again.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use fastarray_core::{AckEvent, AckHeader, Acks, FastArray, SendState};
//! use fastarray_derive::Replicate;
//!
//! #[derive(Replicate, Clone, Debug, PartialEq)]
//! #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
//! struct Unit { hp: u16 }
//!
//! /// The server's side of one client: the array's state for it, and acks.
//! struct Client { state: SendState, acks: Acks }
//!
//! /// A tick: the server changes its array and sends the client a delta.
//! fn send(units: &mut FastArray<Unit>, to: &mut Client, now: Instant) -> Vec<u8> {
//!     let id = units.ids().next().unwrap();
//!     units.get_mut(id).unwrap().hp -= 10;
//!     units.commit();
//!     let mut packet = Vec::new();
//!     let (header, number) = to.acks.send(now, 0); // the size comes after
//!     header.write(&mut packet);
//!     units.write_delta(&mut to.state, number, &mut packet).unwrap();
//!     to.acks.add_sent_bytes(now, packet.len());
//!     packet // your socket sends it
//! }
//!
//! /// The client reads a packet: its header, then its payload.
//! fn receive(packet: &[u8], acks: &mut Acks, mirror: &mut FastArray<Unit>, now: Instant) {
//!     let (header, payload) = AckHeader::read(packet).unwrap();
//!     let number = acks.receive(&header, now, packet.len()).unwrap();
//!     mirror.apply_delta(payload, &mut ()).unwrap();
//!     acks.applied(number); // only now will the client's headers acknowledge it
//! }
//!
//! /// The server hands each event to the client's `SendState` by number.
//! fn handle(client: &mut Client, now: Instant) -> Vec<AckEvent> {
//!     let mut events = Vec::new();
//!     while let Some(event) = client.acks.poll(now) {
//!         match event {
//!             AckEvent::Acked(packet) => client.state.on_ack(packet),
//!             AckEvent::Lost(packet) => client.state.on_loss(packet), // its content is due again
//!         };
//!         events.push(event);
//!     }
//!     events
//! }
//!
//! let ms = Duration::from_millis;
//! let t0 = Instant::now();
//! let mut units = FastArray::new();
//! units.push(Unit { hp: 100 });
//! units.commit();
//! let mut client = Client { state: SendState::new(), acks: Acks::default() };
//! let (mut mirror, mut client_acks) = (FastArray::mirror(), Acks::default());
//!
//! // Packets 0, 1, 2, 50 ms apart, 20 ms on the way; the network loses 1.
//! for tick in 0..3 {
//!     let packet = send(&mut units, &mut client, t0 + ms(50 * tick));
//!     if tick != 1 {
//!         receive(&packet, &mut client_acks, &mut mirror, t0 + ms(50 * tick + 20));
//!     }
//! }
//!
//! // The client's next packet (a bare header here) acknowledges 2, and 0 in its bits.
//! let (header, _) = client_acks.send(t0 + ms(120), AckHeader::BYTES);
//! assert_eq!((header.ack, header.ack_bits), (2, 0b10));
//! client.acks.receive(&header, t0 + ms(140), AckHeader::BYTES).unwrap();
//! assert_eq!(handle(&mut client, t0 + ms(140)), [AckEvent::Acked(0), AckEvent::Acked(2)]);
//! assert_eq!(client.acks.stats().rtt, ms(40)); // packet 2: sent at 100, acknowledged at 140
//!
//! // Packet 1 is never acknowledged: lost once the RTT-based timeout passes.
//! assert_eq!(client.acks.in_flight(), 1);
//! assert_eq!(handle(&mut client, t0 + ms(200)), [AckEvent::Lost(1)]);
//!
//! // The next delta carries what was lost again.
//! let packet = send(&mut units, &mut client, t0 + ms(200));
//! receive(&packet, &mut client_acks, &mut mirror, t0 + ms(220));
//! assert_eq!(mirror, units);
//! ```
//!
//! Limits: sequences wrap at 65 536 and are compared by half the space
//! ([`sequence_greater_than`]), so both sides' views must stay less than
//! 32 768 packets apart: a peer packet arriving more than 32 packets after
//! newer ones is refused ([`AckError::TooOld`]), and a connection whose
//! peer applies none of 32 768 packets in a row must be closed (its acks
//! would be misread). Packet numbers wrap at 2^32.
//!
//! Headers are not authenticated: a header forged by a third party can
//! acknowledge any packet in flight. The checks here refuse what no
//! genuine peer sends and keep memory bounded whatever arrives; on a
//! hostile network, authenticate packets before handing them to
//! [`Acks::receive`], as [`Connection::secure`](crate::Connection::secure)
//! does with a handshake's [`Session`](crate::Session).

mod config;
mod endpoint;
mod error;
mod header;
mod received;
mod rtt;
mod sent;
mod sequence;
mod stats;
#[cfg(test)]
mod tests;

pub use config::AckConfig;
pub use endpoint::{AckEvent, Acks};
pub use error::AckError;
pub use header::AckHeader;
pub use sequence::{extend_sequence, sequence_greater_than};
pub use stats::LinkStats;
