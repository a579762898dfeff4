//! The built-in transport: bare UDP datagrams, a client per source address.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::{Duration, Instant};

use super::{ClientId, ClientTransport, ServerEvent, ServerTransport};

/// The largest datagram read: any UDP payload fits.
const RECEIVE_BUFFER: usize = 65_536;

/// Errors read in a row before a poll gives up until the next one (an
/// ICMP error is reported once; a socket that keeps failing must not hold
/// the tick).
const ERRORS_PER_POLL: u32 = 64;

/// A server over one UDP socket. A datagram from an address it does not
/// know connects a client (the next [`ClientId`], counting from 1); a
/// client silent for longer than the timeout (10 s unless
/// [`with_timeout`](Self::with_timeout)) is disconnected.
///
/// It authenticates nothing: anyone who can send to the socket can be a
/// client, and one who can forge a client's address can speak for it.
/// On a network you do not trust, use a transport that authenticates its
/// peers (renet's secure netcode, QUIC) or fastarray's secure connections.
/// At most [`max_clients`](Self::with_max_clients) (1 024 unless set)
/// clients are held, so that strangers cannot grow the server's state
/// without bound: datagrams from further addresses are dropped.
#[derive(Debug)]
pub struct UdpServerTransport {
    socket: UdpSocket,
    by_address: HashMap<SocketAddr, ClientId>,
    clients: HashMap<ClientId, Peer>,
    next_id: ClientId,
    timeout: Duration,
    max_clients: usize,
    buffer: Vec<u8>,
}

#[derive(Debug)]
struct Peer {
    address: SocketAddr,
    heard: Instant,
}

impl UdpServerTransport {
    /// A server on a new socket bound to `address` (`"127.0.0.1:0"` takes
    /// any free port: ask [`local_addr`](Self::local_addr)).
    pub fn bind(address: impl ToSocketAddrs) -> io::Result<Self> {
        let socket = UdpSocket::bind(address)?;
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            by_address: HashMap::new(),
            clients: HashMap::new(),
            next_id: 1,
            timeout: Duration::from_secs(10),
            max_clients: 1024,
            buffer: vec![0; RECEIVE_BUFFER],
        })
    }

    /// The same server, disconnecting clients silent for `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same server, holding at most `max_clients` clients.
    pub fn with_max_clients(mut self, max_clients: usize) -> Self {
        self.max_clients = max_clients;
        self
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The address client `client` sends from.
    pub fn address(&self, client: ClientId) -> Option<SocketAddr> {
        self.clients.get(&client).map(|peer| peer.address)
    }

    /// The client sending from `address`, if it is connected.
    pub fn client(&self, address: SocketAddr) -> Option<ClientId> {
        self.by_address.get(&address).copied()
    }
}

impl ServerTransport for UdpServerTransport {
    fn poll(&mut self, now: Instant, events: &mut Vec<ServerEvent>) {
        let mut errors = 0;
        while errors < ERRORS_PER_POLL {
            let (len, from) = match self.socket.recv_from(&mut self.buffer) {
                Ok(received) => received,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                // An ICMP "port unreachable" from a departed client (on
                // some systems), an interrupted call: the next datagram
                // may well be fine.
                Err(_) => {
                    errors += 1;
                    continue;
                }
            };
            let client = match self.by_address.get(&from) {
                Some(&client) => client,
                None if self.clients.len() >= self.max_clients => continue,
                None => {
                    let client = self.next_id;
                    self.next_id += 1;
                    self.by_address.insert(from, client);
                    self.clients.insert(
                        client,
                        Peer {
                            address: from,
                            heard: now,
                        },
                    );
                    events.push(ServerEvent::Connected { client });
                    client
                }
            };
            if let Some(peer) = self.clients.get_mut(&client) {
                peer.heard = now;
            }
            events.push(ServerEvent::Packet {
                client,
                packet: self.buffer[..len].to_vec(),
            });
        }
        let timeout = self.timeout;
        let mut silent: Vec<ClientId> = self
            .clients
            .iter()
            .filter(|(_, peer)| now.saturating_duration_since(peer.heard) > timeout)
            .map(|(&client, _)| client)
            .collect();
        silent.sort_unstable();
        for client in silent {
            if let Some(peer) = self.clients.remove(&client) {
                self.by_address.remove(&peer.address);
            }
            events.push(ServerEvent::Disconnected { client });
        }
    }

    fn send(&mut self, client: ClientId, packet: &[u8]) {
        if let Some(peer) = self.clients.get(&client) {
            // A full send buffer drops the datagram, as the network may:
            // the acknowledgements tell the server, which sends it again.
            let _ = self.socket.send_to(packet, peer.address);
        }
    }
}

/// A client over one UDP socket, sending to one server.
#[derive(Debug)]
pub struct UdpClientTransport {
    socket: UdpSocket,
    buffer: Vec<u8>,
}

impl UdpClientTransport {
    /// A client on a new socket on an ephemeral port of the server's
    /// address family, sending to `server`.
    pub fn connect(server: SocketAddr) -> io::Result<Self> {
        let local: SocketAddr = if server.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            ([0u16; 8], 0).into()
        };
        let socket = UdpSocket::bind(local)?;
        socket.connect(server)?;
        socket.set_nonblocking(true)?;
        Ok(Self {
            socket,
            buffer: vec![0; RECEIVE_BUFFER],
        })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

impl ClientTransport for UdpClientTransport {
    fn poll(&mut self, _now: Instant, packets: &mut Vec<Vec<u8>>) {
        let mut errors = 0;
        while errors < ERRORS_PER_POLL {
            match self.socket.recv(&mut self.buffer) {
                Ok(len) => packets.push(self.buffer[..len].to_vec()),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                // The server's port closed for now (ICMP), an interrupted call.
                Err(_) => errors += 1,
            }
        }
    }

    fn send(&mut self, packet: &[u8]) {
        let _ = self.socket.send(packet);
    }
}
