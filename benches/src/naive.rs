//! The naive baseline: position diffing, what a plain replicated array does
//! (Unreal's `TArray` property replication).
//!
//! The sender keeps, per connection, a shadow copy of the array as last
//! sent. Each tick it compares the array with the shadow index by index and
//! sends the new length and, for each position that differs, the position
//! and the whole item. The client applies by position. Items are encoded
//! with our own bit codec (the derived `BitCodec`), positions and counts
//! as our varints, so the comparison with us isolates the strategy (ids and
//! changed fields versus positions and whole items), not the codec.
//!
//! ```text
//! message = varint(len) varint(K) K × (varint(position gap) item)
//! ```

use std::collections::{BTreeSet, VecDeque};

use fastarray::{BitCodec, BitReader, BitWriter, DecodeError, EncodeError};

use crate::Agent;

/// The sending side of one connection: the shadow of what was sent.
#[derive(Clone, Debug, Default)]
pub struct NaiveSender {
    shadow: Vec<Agent>,
    /// Scratch: the positions to send this time.
    changed: Vec<usize>,
}

impl NaiveSender {
    /// A sender whose client holds `current`.
    pub fn new(current: &[Agent]) -> Self {
        NaiveSender {
            shadow: current.to_vec(),
            changed: Vec::new(),
        }
    }

    /// Diffs `current` against the shadow, appends the message to `out`
    /// and updates the shadow. Returns the message's bits.
    pub fn write(&mut self, current: &[Agent], out: &mut Vec<u8>) -> Result<u64, EncodeError> {
        self.changed.clear();
        for (pos, item) in current.iter().enumerate() {
            if self.shadow.get(pos) != Some(item) {
                self.changed.push(pos);
            }
        }
        self.encode(current, out)
    }

    /// Like [`write`](Self::write), also sending the positions in `also`
    /// (the lossy model's repairs) that are still in range.
    fn write_with(
        &mut self,
        current: &[Agent],
        also: impl Iterator<Item = usize>,
        out: &mut Vec<u8>,
    ) -> Result<u64, EncodeError> {
        self.changed.clear();
        for (pos, item) in current.iter().enumerate() {
            if self.shadow.get(pos) != Some(item) {
                self.changed.push(pos);
            }
        }
        self.changed.extend(also.filter(|&pos| pos < current.len()));
        self.changed.sort_unstable();
        self.changed.dedup();
        self.encode(current, out)
    }

    /// Positions sent by the last write.
    pub fn last_sent(&self) -> &[usize] {
        &self.changed
    }

    fn encode(&mut self, current: &[Agent], out: &mut Vec<u8>) -> Result<u64, EncodeError> {
        let mut writer = BitWriter::new(out);
        writer.write_varint(current.len() as u64);
        writer.write_varint(self.changed.len() as u64);
        let mut next = 0;
        for &pos in &self.changed {
            writer.write_varint((pos - next) as u64);
            next = pos + 1;
            current[pos].encode(&mut writer)?;
        }
        self.shadow.truncate(current.len());
        for &pos in &self.changed {
            match self.shadow.get_mut(pos) {
                Some(slot) => slot.clone_from(&current[pos]),
                None => self.shadow.push(current[pos].clone()),
            }
        }
        Ok(writer.finish())
    }
}

/// Applies a naive message to the client's array, by position.
pub fn apply(client: &mut Vec<Agent>, bytes: &[u8]) -> Result<(), DecodeError> {
    let mut reader = BitReader::new(bytes);
    let len = reader.read_varint()? as usize;
    let count = reader.read_varint()?;
    client.truncate(len);
    let mut next = 0usize;
    for _ in 0..count {
        let pos = next + reader.read_varint()? as usize;
        next = pos + 1;
        let item = Agent::decode(&mut reader)?;
        match client.get_mut(pos) {
            Some(slot) => *slot = item,
            None => client.push(item),
        }
    }
    reader.expect_end()
}

/// The naive sender over a lossy link, as a bit-count model: a lost
/// packet's positions are sent again (with their current values) unless a
/// later packet carried them, as Unreal's property replication resends the
/// changelist of a NAKed packet. Only the sender is modelled: with packets
/// reordered, a client applying by position would also need ordering
/// information that we do not count.
#[derive(Clone, Debug, Default)]
pub struct NaiveLossy {
    sender: NaiveSender,
    records: VecDeque<(u32, u64, Vec<usize>)>,
    /// Per position, the record that last carried it.
    last_seq: Vec<u64>,
    /// Positions to send again.
    due: BTreeSet<usize>,
    next_seq: u64,
}

impl NaiveLossy {
    /// A sender whose client holds `current`.
    pub fn new(current: &[Agent]) -> Self {
        NaiveLossy {
            sender: NaiveSender::new(current),
            next_seq: 1,
            ..NaiveLossy::default()
        }
    }

    /// Writes the packet `packet` for `current`; returns its bits.
    pub fn write(&mut self, packet: u32, current: &[Agent]) -> u64 {
        let mut out = Vec::new();
        let due = std::mem::take(&mut self.due);
        let bits = self
            .sender
            .write_with(current, due.into_iter(), &mut out)
            .expect("agents always encode");
        let seq = self.next_seq;
        self.next_seq += 1;
        let sent = self.sender.last_sent().to_vec();
        for &pos in &sent {
            if self.last_seq.len() <= pos {
                self.last_seq.resize(pos + 1, 0);
            }
            self.last_seq[pos] = seq;
        }
        self.records.push_back((packet, seq, sent));
        bits
    }

    /// The packet arrived.
    pub fn on_ack(&mut self, packet: u32) {
        if let Some(i) = self.records.iter().position(|r| r.0 == packet) {
            self.records.remove(i);
        }
    }

    /// The packet was lost: its positions are due again unless a later
    /// packet carried them.
    pub fn on_loss(&mut self, packet: u32) {
        let Some(i) = self.records.iter().position(|r| r.0 == packet) else {
            return;
        };
        if let Some((_, seq, positions)) = self.records.remove(i) {
            for pos in positions {
                if self.last_seq.get(pos) == Some(&seq) {
                    self.due.insert(pos);
                }
            }
        }
    }
}
