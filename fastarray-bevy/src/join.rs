//! How a client gets the world when it connects ([`Join`]), and the
//! snapshot message that carries it on the reliable channel.

/// How a client that connects gets the world it will see.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Join {
    /// In the unreliable packets, as changes: everything is new to the
    /// client, and goes as fast as the packets per tick allow, repaired
    /// when lost. Works on every transport.
    #[default]
    Delta,
    /// In one snapshot of every array, on the transport's reliable
    /// channel ([`ServerTransport::has_reliable`]); the deltas follow
    /// from it. The client drops the server's packets until the snapshot
    /// came (they are sent again). Set it on the server only: on a
    /// transport with a reliable channel the server tells every joining
    /// client how it joins (joining by delta, with an empty snapshot, so
    /// the client waits one message), and its clients follow. A client
    /// that sees only what it is shown
    /// ([`VisibilityPolicy::Explicit`]) joins by delta all the same (its
    /// join message is the empty one), and so does every client on a
    /// transport without a reliable channel (which carries no join
    /// message).
    ///
    /// [`ServerTransport::has_reliable`]: crate::ServerTransport::has_reliable
    /// [`VisibilityPolicy::Explicit`]: crate::VisibilityPolicy::Explicit
    Snapshot,
}

/// The snapshot message: `u32` count of channels, then per channel a
/// `u32` length and that many bytes (a channel's snapshot, or nothing:
/// that channel joins by delta). Little-endian.
pub(crate) fn write(sections: &[Vec<u8>], out: &mut Vec<u8>) {
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    for section in sections {
        out.extend_from_slice(&(section.len() as u32).to_le_bytes());
        out.extend_from_slice(section);
    }
}

/// Reads a snapshot message of `channels` channels into its sections;
/// `None` if it is not one.
pub(crate) fn read(message: &[u8], channels: usize) -> Option<Vec<&[u8]>> {
    let mut rest = message;
    let mut take = |len: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(len)?;
        rest = tail;
        Some(head)
    };
    let word = |bytes: &[u8]| u32::from_le_bytes(bytes.try_into().expect("4 bytes")) as usize;
    let count = word(take(4)?);
    if count != channels && count != 0 {
        return None;
    }
    let mut sections = Vec::with_capacity(count);
    for _ in 0..count {
        let len = word(take(4)?);
        sections.push(take(len)?);
    }
    rest.is_empty().then_some(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_and_a_broken_one_is_refused() {
        let mut message = Vec::new();
        write(&[vec![1, 2, 3], vec![], vec![9]], &mut message);
        assert_eq!(read(&message, 3), Some(vec![&[1u8, 2, 3][..], &[], &[9]]));
        assert_eq!(read(&message, 2), None, "another protocol");
        for cut in 0..message.len() {
            assert_eq!(read(&message[..cut], 3), None);
        }
        message.push(0);
        assert_eq!(read(&message, 3), None, "trailing bytes");
        let mut empty = Vec::new();
        write(&[], &mut empty);
        assert_eq!(read(&empty, 3), Some(vec![]));
        // A claimed length beyond the message allocates nothing.
        assert_eq!(read(&[1, 0, 0, 0, 255, 255, 255, 255], 1), None);
    }
}
