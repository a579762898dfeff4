//! The byte-level naive baseline: what a programmer who diffs by hand writes
//! when CPU matters more than bytes. The sender keeps a shadow `Vec` per
//! connection, compares it with the array position by position, appends
//! each differing item as raw little-endian bytes after its position, and
//! refreshes the shadow with `clone_from` (which reuses the name's
//! allocation). The client writes each item into its slot, reusing the
//! slot's `String`, and leaves a name it holds already as it is (std's
//! UTF-8 check of every name it was sent took a third of its time, and
//! that time moved by 1.8× from one build to another of the same code,
//! with where the linker placed the check). No bit packing, no
//! quantization, no field masks: the cheapest CPU a hand-written differ
//! gets, at the price of bytes.
//!
//! ```text
//! message = u32(len) u32(K) K × (u32(position) item)
//! item    = 3 × f32(position) 3 × f32(velocity) u8(health) u16(ammo)
//!           u16(name length) name bytes
//! ```

use crate::Agent;

/// Bytes of an item before its name.
const FIXED: usize = 12 + 12 + 1 + 2 + 2;

/// The sending side of one connection: the shadow of what was sent.
#[derive(Clone, Debug, Default)]
pub struct BytesSender {
    shadow: Vec<Agent>,
}

impl BytesSender {
    /// A sender whose client holds `current`.
    pub fn new(current: &[Agent]) -> Self {
        BytesSender {
            shadow: current.to_vec(),
        }
    }

    /// Diffs `current` against the shadow, appends the message to `out`
    /// and updates the shadow. Returns the items sent.
    pub fn write(&mut self, current: &[Agent], out: &mut Vec<u8>) -> usize {
        out.extend_from_slice(&(current.len() as u32).to_le_bytes());
        let count_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        self.shadow.truncate(current.len());
        let mut count = 0u32;
        for (pos, item) in current.iter().enumerate() {
            match self.shadow.get_mut(pos) {
                Some(old) if old == item => continue,
                Some(old) => old.clone_from(item),
                None => self.shadow.push(item.clone()),
            }
            out.extend_from_slice(&(pos as u32).to_le_bytes());
            encode(item, out);
            count += 1;
        }
        out[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
        count as usize
    }
}

fn encode(item: &Agent, out: &mut Vec<u8>) {
    for v in item.position.iter().chain(&item.velocity) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.push(item.health);
    out.extend_from_slice(&item.ammo.to_le_bytes());
    let name = item.name.as_bytes();
    let len = name.len().min(usize::from(u16::MAX));
    out.extend_from_slice(&(len as u16).to_le_bytes());
    out.extend_from_slice(&name[..len]);
}

/// Why a message could not be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BytesError {
    /// The message ended inside a field.
    Truncated,
    /// A position beyond the client's array plus one.
    Position,
    /// A name that is not UTF-8.
    Name,
}

/// Reads little-endian values off a message.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], BytesError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(BytesError::Truncated)?;
        self.0 = rest;
        Ok(*head)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], BytesError> {
        if self.0.len() < n {
            return Err(BytesError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, BytesError> {
        self.take().map(u32::from_le_bytes)
    }

    fn f32(&mut self) -> Result<f32, BytesError> {
        self.take().map(f32::from_le_bytes)
    }
}

/// Applies a message to the client's array, by position, writing each
/// item into its slot.
pub fn apply(client: &mut Vec<Agent>, bytes: &[u8]) -> Result<(), BytesError> {
    let mut cursor = Cursor(bytes);
    let len = cursor.u32()? as usize;
    let count = cursor.u32()?;
    client.truncate(len);
    for _ in 0..count {
        let pos = cursor.u32()? as usize;
        if cursor.0.len() < FIXED {
            return Err(BytesError::Truncated);
        }
        if pos > client.len() {
            return Err(BytesError::Position);
        }
        if pos == client.len() {
            client.push(Agent::default());
        }
        let slot = &mut client[pos];
        for v in slot.position.iter_mut() {
            *v = cursor.f32()?;
        }
        for v in slot.velocity.iter_mut() {
            *v = cursor.f32()?;
        }
        slot.health = cursor.take::<1>()?[0];
        slot.ammo = u16::from_le_bytes(cursor.take()?);
        let name_len = usize::from(u16::from_le_bytes(cursor.take()?));
        let name = cursor.bytes(name_len)?;
        // The name the slot holds already (names rarely change) is not
        // checked and copied again: a `String`'s bytes are UTF-8.
        if slot.name.as_bytes() != name {
            let name = std::str::from_utf8(name).map_err(|_| BytesError::Name)?;
            slot.name.clear();
            slot.name.push_str(name);
        }
    }
    if cursor.0.is_empty() {
        Ok(())
    } else {
        Err(BytesError::Truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Script, Workload, apply_vec};

    /// The client follows the array through every workload, pushes and
    /// removals included.
    #[test]
    fn the_client_follows_the_array() {
        for workload in Workload::TABLE {
            let (mut script, mut items) = Script::new(workload, 300, 7);
            let mut sender = BytesSender::new(&items);
            let mut client = items.clone();
            let mut ops = Vec::new();
            for _ in 0..20 {
                script.tick(&mut ops);
                apply_vec(&mut items, &ops);
                let mut out = Vec::new();
                sender.write(&items, &mut out);
                apply(&mut client, &out).unwrap();
                assert_eq!(client, items, "{workload:?}");
            }
        }
    }

    /// A cut message is refused.
    #[test]
    fn a_truncated_message_is_refused() {
        let items = vec![Agent::default(); 2];
        let mut sender = BytesSender::new(&[]);
        let mut out = Vec::new();
        assert_eq!(sender.write(&items, &mut out), 2);
        let mut client = Vec::new();
        assert_eq!(
            apply(&mut client, &out[..out.len() - 1]),
            Err(BytesError::Truncated)
        );
    }
}
