//! The session token and the randomness the handshake draws: an 8-byte
//! value only the two peers know, compared in constant time.

use super::error::HandshakeError;

/// The token's size on the wire, in bytes.
pub(crate) const TOKEN_BYTES: usize = 8;

/// Whether `a` and `b` are equal, in a time that depends on their lengths
/// only: how many leading bytes of a guess were right is not told.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    core::hint::black_box(difference) == 0
}

/// `N` bytes from the operating system's generator.
pub(crate) fn random<const N: usize>() -> Result<[u8; N], HandshakeError> {
    let mut bytes = [0; N];
    getrandom::fill(&mut bytes).map_err(|_| HandshakeError::Randomness)?;
    Ok(bytes)
}

/// A random `u64` from the operating system's generator.
pub(crate) fn random_u64() -> Result<u64, HandshakeError> {
    random::<8>().map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_is_exact() {
        assert!(constant_time_eq(b"12345678", b"12345678"));
        assert!(!constant_time_eq(b"12345678", b"12345679"));
        assert!(!constant_time_eq(b"x2345678", b"12345678"));
        assert!(!constant_time_eq(b"1234567", b"12345678"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn randomness_differs_between_draws() {
        let (a, b) = (random::<16>().unwrap(), random::<16>().unwrap());
        assert_ne!(a, b);
    }
}
