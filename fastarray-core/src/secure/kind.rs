//! The first byte of every packet of the secure path.

/// What a packet of the secure path is: its first byte. Games may give
/// their own datagrams any other first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketKind {
    /// Client to server, first: "I want to connect" (`0xF1`, 32 bytes).
    Request,
    /// Server to client: the challenge, with the token (`0xF2`, 25 bytes).
    Challenge,
    /// Client to server: the challenge echoed (`0xF3`, 43 bytes; 59 with
    /// encryption).
    Response,
    /// A connection packet carrying the session's token (`0xF4`).
    Data,
    /// A connection packet sealed with the session's keys (`0xF5`).
    Sealed,
}

impl PacketKind {
    /// All kinds, in byte order.
    const ALL: [PacketKind; 5] = [
        Self::Request,
        Self::Challenge,
        Self::Response,
        Self::Data,
        Self::Sealed,
    ];

    /// The kind of `packet`, from its first byte: `None` if it is no
    /// packet of the secure path.
    pub fn of(packet: &[u8]) -> Option<Self> {
        let byte = *packet.first()?;
        Self::ALL.into_iter().find(|kind| kind.byte() == byte)
    }

    /// The kind's first byte.
    pub const fn byte(self) -> u8 {
        match self {
            Self::Request => 0xF1,
            Self::Challenge => 0xF2,
            Self::Response => 0xF3,
            Self::Data => 0xF4,
            Self::Sealed => 0xF5,
        }
    }
}
