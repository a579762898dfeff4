//! Snapshots in chunks: a feed snapshot can be larger than one bus
//! message (NATS carries 1 MiB by default; 100 000 agents take more), so
//! a reply is split into chunks that each fit, and the relay puts them
//! back together before it applies the snapshot.
//!
//! A chunk is a 16-byte header — the snapshot's serial (8 bytes, drawn at
//! random for each snapshot written), the chunk's index and the number of
//! chunks (4 bytes each, little-endian) — then its part of the snapshot.
//! Chunks may come in any order, twice, or not at all: a relay keeps the
//! chunks of one snapshot at a time, and one that never completes is
//! replaced by the next the relay asks for.

use std::hash::BuildHasher;

use fastarray_core::MirrorLimits;

/// Bytes of a chunk's header.
pub(crate) const HEADER: usize = 16;

/// The largest snapshot a relay puts together: what a relay's array
/// applies at most ([`MirrorLimits::message_bytes`]'s default).
pub(crate) const MAX_SNAPSHOT: usize = MirrorLimits::DEFAULT.message_bytes;

/// The most chunks a snapshot is split into: what a relay keeps room for
/// is bounded by this, not by a count a chunk claims (16 MiB in chunks of
/// 4 KiB; NATS carries 1 MiB a message by default, 16 chunks).
pub(crate) const MAX_CHUNKS: usize = 4_096;

/// A serial for a new snapshot, unlike the others.
pub(crate) fn new_serial() -> u64 {
    std::hash::RandomState::new().hash_one(0u8)
}

/// `bytes` as the chunks of snapshot `serial`, each at most `max_payload`
/// bytes with its header; `None` if that takes more than [`MAX_CHUNKS`].
pub(crate) fn split(serial: u64, bytes: &[u8], max_payload: usize) -> Option<Vec<Vec<u8>>> {
    let part = max_payload.saturating_sub(HEADER).max(1);
    let parts: Vec<&[u8]> = if bytes.is_empty() {
        vec![&[]]
    } else {
        bytes.chunks(part).collect()
    };
    if parts.len() > MAX_CHUNKS {
        return None;
    }
    let count = parts.len() as u32;
    let chunks = parts
        .into_iter()
        .enumerate()
        .map(|(index, part)| {
            let mut chunk = Vec::with_capacity(HEADER + part.len());
            chunk.extend_from_slice(&serial.to_le_bytes());
            chunk.extend_from_slice(&(index as u32).to_le_bytes());
            chunk.extend_from_slice(&count.to_le_bytes());
            chunk.extend_from_slice(part);
            chunk
        })
        .collect();
    Some(chunks)
}

/// Why a chunk was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChunkError {
    /// Shorter than its header.
    Short,
    /// An index not below the count, or a count of zero.
    Index,
    /// Its snapshot would be larger than [`MAX_SNAPSHOT`], or in more than
    /// [`MAX_CHUNKS`] chunks.
    TooLarge,
}

/// The chunks of one snapshot received so far.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    serial: u64,
    parts: Vec<Option<Vec<u8>>>,
    missing: usize,
    bytes: usize,
}

impl Assembly {
    /// Takes a chunk; returns the whole snapshot once its last chunk
    /// arrived. A chunk of another snapshot drops the one being put
    /// together.
    pub(crate) fn accept(&mut self, chunk: &[u8]) -> Result<Option<Vec<u8>>, ChunkError> {
        if chunk.len() < HEADER {
            return Err(ChunkError::Short);
        }
        let word = |at: usize| u32::from_le_bytes(chunk[at..at + 4].try_into().expect("4 bytes"));
        let serial = u64::from_le_bytes(chunk[..8].try_into().expect("8 bytes"));
        let (index, count) = (word(8) as usize, word(12) as usize);
        let part = &chunk[HEADER..];
        if count == 0 || index >= count {
            return Err(ChunkError::Index);
        }
        if count > MAX_CHUNKS || part.len() > MAX_SNAPSHOT {
            return Err(ChunkError::TooLarge);
        }
        if serial != self.serial || count != self.parts.len() {
            *self = Self {
                serial,
                parts: Vec::new(),
                missing: count,
                bytes: 0,
            };
            self.parts.resize(count, None);
        }
        if self.parts[index].is_some() {
            return Ok(None);
        }
        if self.bytes + part.len() > MAX_SNAPSHOT {
            *self = Self::default();
            return Err(ChunkError::TooLarge);
        }
        self.bytes += part.len();
        self.parts[index] = Some(part.to_vec());
        self.missing -= 1;
        if self.missing > 0 {
            return Ok(None);
        }
        let whole = self.parts.drain(..).flatten().flatten().collect();
        *self = Self::default();
        Ok(Some(whole))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_comes_back_whole_from_its_chunks_in_any_order() {
        let bytes: Vec<u8> = (0..10_000u32).map(|n| n as u8).collect();
        let mut chunks = split(7, &bytes, 1_000).unwrap();
        assert_eq!(chunks.len(), 11);
        assert!(chunks.iter().all(|chunk| chunk.len() <= 1_000));
        chunks.reverse();
        let mut assembly = Assembly::default();
        let (last, rest) = chunks.split_last().unwrap();
        for chunk in rest {
            assert_eq!(assembly.accept(chunk), Ok(None));
            assert_eq!(assembly.accept(chunk), Ok(None), "a repeat is ignored");
        }
        assert_eq!(assembly.accept(last), Ok(Some(bytes.clone())));
        let empty = split(8, &[], 100).unwrap();
        assert_eq!(split(9, &bytes, 17), None, "10 000 chunks of one byte");
        assert_eq!(Assembly::default().accept(&empty[0]), Ok(Some(Vec::new())));
    }

    #[test]
    fn a_newer_snapshot_replaces_an_incomplete_one() {
        let (old, new) = (vec![1u8; 300], vec![2u8; 300]);
        let mut assembly = Assembly::default();
        assert_eq!(assembly.accept(&split(1, &old, 116).unwrap()[0]), Ok(None));
        let chunks = split(2, &new, 116).unwrap();
        let mut whole = None;
        for chunk in &chunks {
            whole = assembly.accept(chunk).unwrap();
        }
        assert_eq!(whole, Some(new));
    }

    #[test]
    fn malformed_chunks_are_refused() {
        let mut assembly = Assembly::default();
        assert_eq!(assembly.accept(&[0; 15]), Err(ChunkError::Short));
        let mut chunk = split(3, &[1, 2, 3], 100).unwrap().remove(0);
        chunk[8] = 1; // index 1 of 1
        assert_eq!(assembly.accept(&chunk), Err(ChunkError::Index));
        chunk[8] = 0;
        chunk[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(assembly.accept(&chunk), Err(ChunkError::Index));
        chunk[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(assembly.accept(&chunk), Err(ChunkError::TooLarge));
    }
}
