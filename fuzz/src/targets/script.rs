//! Target `stateful`: a byte script drives a server array and 2 or 3
//! connections with mirrors over a misbehaving link, then heals it.

use std::fmt::Write as _;

use std::collections::BTreeSet;

use fastarray::{FastArray, ReplicationId, ScopeExit, SendState};

use super::types::{Fixture, MAX_ITEMS, Named, Platoon, Squad, Thing, pick};

/// How a script's bytes begin: the item type, the number of connections
/// and the budget of the healing writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Header {
    /// 0 `Thing`, 1 `Squad`, 2 `Platoon`, 3 `Named`.
    pub mode: u8,
    /// 2 or 3.
    pub conns: u8,
    /// The healing writes' bit budget (none, or 64 to 2 096 bits), raised
    /// to what a lone item needs ([`Session::feasible_budget`]).
    pub heal_budget: Option<u16>,
    /// Whether every connection has a scope (empty at first; [`Op::Scope`]
    /// changes it), and then each mirror must hold the server's items in
    /// its scope.
    pub scoped: bool,
    /// With `scoped`: whether items leaving a scope stay on the client,
    /// frozen (`ScopeExit::Persist`).
    pub persist: bool,
}

impl Header {
    fn read(data: &[u8]) -> Option<(Header, &[u8])> {
        let (&[a, b], rest) = data.split_first_chunk::<2>()?;
        let header = Header {
            mode: a % 4,
            conns: 2 + (a >> 2) % 2,
            heal_budget: (b >= 128).then(|| 64 + u16::from(b - 128) * 16),
            scoped: (a >> 3) & 1 == 1,
            persist: (a >> 4) & 1 == 1,
        };
        Some((header, rest))
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(
            (self.mode % 4)
                | ((self.conns.saturating_sub(2) % 2) << 2)
                | (u8::from(self.scoped) << 3)
                | (u8::from(self.persist) << 4),
        );
        out.push(match self.heal_budget {
            None => 0,
            Some(budget) => 128 + (budget.saturating_sub(64) / 16).min(127) as u8,
        });
    }
}

/// One step of a `stateful` script. `conn` is taken modulo the number of
/// connections, `back` picks a packet of that connection counting from the
/// newest (modulo the number written), `item` an item by position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Push a new item (at most 16).
    Push(u8),
    /// Remove an item.
    Remove(u8),
    /// Change an item through its guard (`Fixture::edit`: plain fields,
    /// arrays inside, or nothing).
    Edit { item: u8, op: u8, arg: u8 },
    /// Commit a frame.
    Commit,
    /// Write a delta for a connection (committing first if needed).
    Write { conn: u8 },
    /// Write with a bit budget of `1 + budget`.
    WriteBudget { conn: u8, budget: u16 },
    /// Deliver a packet to the connection's mirror (again, late, out of
    /// order: any packet written).
    Deliver { conn: u8, back: u8 },
    /// Acknowledge a packet, if it was delivered and not yet reported.
    Ack { conn: u8, back: u8 },
    /// Report a packet lost, if not yet reported (it may still arrive).
    Loss { conn: u8, back: u8 },
    /// Toggle acknowledging packets as they are delivered.
    AckOnArrival { conn: u8 },
    /// Reorder the items (sort or swap): never a change.
    Reorder(u8),
    /// Push an item and remove it in the same frame.
    PushRemove(u8),
    /// A good tick: commit, then write, deliver and acknowledge for every
    /// connection.
    Tick,
    /// Deliver every packet of a connection not yet delivered, newest first.
    DeliverAll { conn: u8 },
    /// Scoped scripts only: put an item in the connection's scope, or take
    /// it out if it is in.
    Scope { conn: u8, item: u8 },
}

impl Op {
    /// Reads one op, or `None` at the end of the input. A scoped script
    /// has one more op.
    fn read(bytes: &mut std::slice::Iter<'_, u8>, scoped: bool) -> Option<Op> {
        let code = *bytes.next()?;
        let mut arg = || bytes.next().copied();
        Some(match code % if scoped { 17 } else { 16 } {
            0 => Op::Push(arg()?),
            1 => Op::Remove(arg()?),
            2..=4 => Op::Edit {
                item: arg()?,
                op: arg()?,
                arg: arg()?,
            },
            5 => Op::Commit,
            6 => Op::Write { conn: arg()? },
            7 => Op::WriteBudget {
                conn: arg()?,
                budget: u16::from_le_bytes([arg()?, arg()?]),
            },
            8 => Op::Deliver {
                conn: arg()?,
                back: arg()?,
            },
            9 => Op::Ack {
                conn: arg()?,
                back: arg()?,
            },
            10 => Op::Loss {
                conn: arg()?,
                back: arg()?,
            },
            11 => Op::AckOnArrival { conn: arg()? },
            12 => Op::Reorder(arg()?),
            13 => Op::PushRemove(arg()?),
            14 => Op::Tick,
            15 => Op::DeliverAll { conn: arg()? },
            _ => Op::Scope {
                conn: arg()?,
                item: arg()?,
            },
        })
    }

    /// Appends the bytes [`Op::read`] reads as this op.
    fn write(&self, out: &mut Vec<u8>) {
        match *self {
            Op::Push(a) => out.extend([0, a]),
            Op::Remove(a) => out.extend([1, a]),
            Op::Edit { item, op, arg } => out.extend([2, item, op, arg]),
            Op::Commit => out.push(5),
            Op::Write { conn } => out.extend([6, conn]),
            Op::WriteBudget { conn, budget } => {
                let [lo, hi] = budget.to_le_bytes();
                out.extend([7, conn, lo, hi]);
            }
            Op::Deliver { conn, back } => out.extend([8, conn, back]),
            Op::Ack { conn, back } => out.extend([9, conn, back]),
            Op::Loss { conn, back } => out.extend([10, conn, back]),
            Op::AckOnArrival { conn } => out.extend([11, conn]),
            Op::Reorder(a) => out.extend([12, a]),
            Op::PushRemove(a) => out.extend([13, a]),
            Op::Tick => out.push(14),
            Op::DeliverAll { conn } => out.extend([15, conn]),
            Op::Scope { conn, item } => out.extend([16, conn, item]),
        }
    }
}

/// A script's header and ops.
pub fn decode_script(data: &[u8]) -> Option<(Header, Vec<Op>)> {
    let (header, rest) = Header::read(data)?;
    let mut bytes = rest.iter();
    let ops = std::iter::from_fn(|| Op::read(&mut bytes, header.scoped)).collect();
    Some((header, ops))
}

/// The bytes of a script.
pub fn encode_script(header: Header, ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    header.write(&mut out);
    ops.iter().for_each(|op| op.write(&mut out));
    out
}

/// A script, one op a line (for reading crash inputs).
pub fn describe_script(data: &[u8]) -> String {
    let Some((header, ops)) = decode_script(data) else {
        return "(too short for a header)".into();
    };
    let mut text = format!("{header:?}\n");
    for (n, op) in ops.iter().enumerate() {
        let _ = writeln!(text, "{n:4}: {op:?}");
    }
    text
}

/// Runs a script (see [`Op`]) against a server array and 2 or 3
/// connections with mirrors (with a scope each, in a scoped script). Every genuine packet delivered must apply;
/// every write must succeed within its budget. Then the link heals: every
/// packet not yet reported is acknowledged if it was delivered and lost
/// otherwise, and each connection writes, delivers and acknowledges until
/// it is settled (at most [`HEAL_ROUNDS`] rounds), when its mirror must
/// equal the server.
pub fn stateful(data: &[u8]) {
    let Some((header, ops)) = decode_script(data) else {
        return;
    };
    match header.mode {
        0 => Session::<Thing>::new(header).play(&ops),
        1 => Session::<Squad>::new(header).play(&ops),
        2 => Session::<Platoon>::new(header).play(&ops),
        _ => Session::<Named>::new(header).play(&ops),
    }
}

/// Rounds of healing allowed before a connection must be settled.
pub const HEAL_ROUNDS: usize = 400;

struct Sent {
    packet: u32,
    bytes: Vec<u8>,
    delivered: bool,
    reported: bool,
}

struct Conn<T> {
    state: SendState,
    mirror: FastArray<T>,
    sent: Vec<Sent>,
    ack_on_arrival: bool,
}

struct Session<T> {
    header: Header,
    server: FastArray<T>,
    conns: Vec<Conn<T>>,
    next_packet: u32,
    /// The op being played, for messages.
    step: usize,
}

/// Which packet `back` names: counting from the newest.
fn sent_index(len: usize, back: u8) -> Option<usize> {
    (len > 0).then(|| len - 1 - usize::from(back) % len)
}

impl<T: Fixture> Session<T> {
    fn new(header: Header) -> Self {
        let mut server = FastArray::new();
        let conns = (0..header.conns)
            .map(|_| {
                let mut state = SendState::new();
                if header.scoped {
                    let mut scope = server.scope(&mut state).expect("a new connection");
                    if header.persist {
                        scope.set_exit(ScopeExit::Persist);
                    }
                }
                Conn {
                    state,
                    mirror: FastArray::mirror(),
                    sent: Vec::new(),
                    ack_on_arrival: false,
                }
            })
            .collect();
        Session {
            header,
            server,
            conns,
            // Near the wrap of a u16 sequence, widened.
            next_packet: 65_530,
            step: 0,
        }
    }

    fn play(mut self, ops: &[Op]) {
        for (step, &op) in ops.iter().enumerate() {
            self.step = step;
            self.op(op);
        }
        self.step = ops.len();
        self.heal();
    }

    fn conn(&self, conn: u8) -> usize {
        usize::from(conn) % self.conns.len()
    }

    fn op(&mut self, op: Op) {
        match op {
            Op::Push(seed) => {
                if self.server.len() < MAX_ITEMS {
                    self.server.push(T::make(seed));
                }
            }
            Op::Remove(item) => {
                if let Some(id) = pick(&self.server, item) {
                    self.server.remove(id);
                }
            }
            Op::Edit { item, op, arg } => {
                if let Some(id) = pick(&self.server, item) {
                    if let Some(mut value) = self.server.get_mut(id) {
                        value.edit(op, arg);
                    }
                }
            }
            Op::Commit => {
                self.server.commit();
            }
            Op::Write { conn } => {
                self.write(self.conn(conn), None);
            }
            Op::WriteBudget { conn, budget } => {
                self.write(self.conn(conn), Some(1 + u64::from(budget)));
            }
            Op::Deliver { conn, back } => {
                let c = self.conn(conn);
                if let Some(i) = sent_index(self.conns[c].sent.len(), back) {
                    self.deliver(c, i);
                }
            }
            Op::Ack { conn, back } => {
                let c = self.conn(conn);
                if let Some(i) = sent_index(self.conns[c].sent.len(), back) {
                    self.ack(c, i);
                }
            }
            Op::Loss { conn, back } => {
                let c = self.conn(conn);
                if let Some(i) = sent_index(self.conns[c].sent.len(), back) {
                    let conn = &mut self.conns[c];
                    let sent = &mut conn.sent[i];
                    if !sent.reported {
                        sent.reported = true;
                        conn.state.on_loss(sent.packet);
                    }
                }
            }
            Op::AckOnArrival { conn } => {
                let c = self.conn(conn);
                self.conns[c].ack_on_arrival ^= true;
            }
            Op::Reorder(n) => {
                if n % 2 == 0 {
                    self.server
                        .sort_by(|a, b| format!("{b:?}").cmp(&format!("{a:?}")));
                } else if let (Some(a), Some(b)) =
                    (pick(&self.server, n), pick(&self.server, n / 2))
                {
                    self.server.swap(a, b);
                }
            }
            Op::PushRemove(seed) => {
                let id = self.server.push(T::make(seed));
                self.server.remove(id);
            }
            Op::Tick => {
                self.server.commit();
                for c in 0..self.conns.len() {
                    let i = self.write(c, None);
                    self.deliver(c, i);
                    self.ack(c, i);
                }
            }
            Op::DeliverAll { conn } => {
                let c = self.conn(conn);
                for i in (0..self.conns[c].sent.len()).rev() {
                    if !self.conns[c].sent[i].delivered {
                        self.deliver(c, i);
                    }
                }
            }
            Op::Scope { conn, item } => {
                let c = self.conn(conn);
                if let Some(id) = pick(&self.server, item) {
                    let state = &mut self.conns[c].state;
                    let mut scope = self.server.scope(state).expect("the array's own");
                    if !scope.exclude(id) {
                        scope.include(id);
                    }
                }
            }
        }
    }

    /// Writes a delta for connection `c` (committing first if needed) and
    /// returns the index of its packet.
    fn write(&mut self, c: usize, budget: Option<u64>) -> usize {
        if self.server.has_uncommitted_work() {
            self.server.commit();
        }
        let packet = self.next_packet;
        self.next_packet = self.next_packet.wrapping_add(1);
        let conn = &mut self.conns[c];
        let mut bytes = Vec::new();
        let written = match budget {
            None => self.server.write_delta(&mut conn.state, packet, &mut bytes),
            Some(budget) => {
                self.server
                    .write_delta_with_budget(&mut conn.state, packet, &mut bytes, budget)
            }
        };
        let stats = match written {
            Ok(stats) => stats,
            Err(error) => panic!("op {}: conn {c}: write failed: {error}", self.step),
        };
        if let Some(budget) = budget {
            assert!(
                stats.bits <= budget,
                "op {}: conn {c}: {} bits over a budget of {budget}",
                self.step,
                stats.bits
            );
        }
        assert_eq!(
            bytes.len() as u64,
            stats.bits.div_ceil(8),
            "op {}: conn {c}: the stats' bits do not match the bytes",
            self.step
        );
        conn.sent.push(Sent {
            packet,
            bytes,
            delivered: false,
            reported: false,
        });
        conn.sent.len() - 1
    }

    /// Delivers packet `i` of connection `c` to its mirror: it must apply.
    fn deliver(&mut self, c: usize, i: usize) {
        let step = self.step;
        let conn = &mut self.conns[c];
        let sent = &mut conn.sent[i];
        if let Err(error) = conn.mirror.apply_delta(&sent.bytes, &mut ()) {
            panic!(
                "op {step}: conn {c}: genuine packet {} (#{i}) refused: {error}",
                sent.packet
            );
        }
        sent.delivered = true;
        if conn.ack_on_arrival && !sent.reported {
            sent.reported = true;
            conn.state.on_ack(sent.packet);
        }
    }

    /// Acknowledges packet `i` of connection `c` if it arrived and was not
    /// reported yet (a transport never acknowledges what did not arrive).
    fn ack(&mut self, c: usize, i: usize) {
        let conn = &mut self.conns[c];
        let sent = &mut conn.sent[i];
        if sent.delivered && !sent.reported {
            sent.reported = true;
            conn.state.on_ack(sent.packet);
        }
    }

    /// `budget`, raised to 64 bits more than the largest message that
    /// carries one item alone, whole with everything in its arrays, to a
    /// new client: a budget that small can carry every item, so healing
    /// within it must end. (Below it, an item may never fit, and not
    /// settling is what a budget means.)
    fn feasible_budget(&self, budget: u16) -> u64 {
        let lone = |item: &T| {
            let mut array = FastArray::new();
            array.push(item.clone());
            array.commit();
            let mut bytes = Vec::new();
            let written = array.write_delta(&mut SendState::new(), 0, &mut bytes);
            written.map_or(0, |stats| stats.bits)
        };
        let largest = self.server.iter().map(|(_, item)| lone(item)).max();
        u64::from(budget).max(largest.unwrap_or(0) + 64)
    }

    /// Connection `c`'s mirror holds exactly the server's items in its
    /// scope, equal (and, with persisted exits, frozen copies of items out
    /// of it that still exist).
    fn check_scope(&mut self, c: usize) {
        let conn = &mut self.conns[c];
        let scope = self.server.scope(&mut conn.state).expect("the array's own");
        let in_scope: BTreeSet<ReplicationId> = scope.ids().collect();
        let persist = self.header.persist;
        let held: BTreeSet<ReplicationId> = conn
            .mirror
            .ids()
            .filter(|&id| !(persist && scope.is_frozen(id)))
            .collect();
        assert_eq!(
            in_scope, held,
            "conn {c}: the mirror holds other items than its scope"
        );
        for id in in_scope {
            assert!(
                self.server.get(id) == conn.mirror.get(id),
                "conn {c}: item {id} differs from the server's after healing"
            );
        }
    }

    /// The link heals: see [`stateful`].
    fn heal(&mut self) {
        for conn in &mut self.conns {
            for sent in &mut conn.sent {
                if !sent.reported {
                    sent.reported = true;
                    if sent.delivered {
                        conn.state.on_ack(sent.packet);
                    } else {
                        conn.state.on_loss(sent.packet);
                    }
                }
            }
        }
        self.server.commit();
        let budget = self
            .header
            .heal_budget
            .map(|budget| self.feasible_budget(budget));
        for c in 0..self.conns.len() {
            let mut rounds = 0;
            while !self.server.is_settled(&self.conns[c].state) {
                let i = self.write(c, budget);
                self.deliver(c, i);
                self.ack(c, i);
                rounds += 1;
                let state = &self.conns[c].state;
                assert!(
                    rounds < HEAL_ROUNDS || self.server.is_settled(state),
                    "conn {c}: not settled after {HEAL_ROUNDS} healing rounds \
                     (budget {budget:?}): {} packets in flight, {} items pending",
                    state.packets_in_flight(),
                    state.pending_items(),
                );
                self.server.commit();
            }
            if self.header.scoped {
                self.check_scope(c);
            } else {
                let conn = &self.conns[c];
                assert_eq!(
                    conn.mirror, self.server,
                    "conn {c}: the mirror differs from the server after healing"
                );
            }
        }
    }
}
