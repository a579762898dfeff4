//! How a session protects its packets: a token, or encryption.

/// How a session protects its packets: chosen by the client's request,
/// accepted only if the server was made for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protection {
    /// Every packet carries the session's 8-byte token, checked before
    /// anything else is read: refuses what an off-path attacker sends.
    Token,
    /// Every packet is sealed with ChaCha20-Poly1305 under the session's
    /// keys, with a replay window: refuses what anyone without the keys
    /// sends or changes, and hides the content (feature `encryption`).
    Encrypted,
}

impl Protection {
    pub(crate) fn byte(self) -> u8 {
        match self {
            Self::Token => 0,
            Self::Encrypted => 1,
        }
    }

    pub(crate) fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::Token),
            1 => Some(Self::Encrypted),
            _ => None,
        }
    }
}
