//! SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed pseudo-random
//! function of 64-bit output, the MAC of the handshake's stateless
//! challenge. Here rather than a dependency: it is 60 lines, it needs no
//! feature, and the tests check it against the reference vectors.

use core::hash::Hasher;

/// A SipHash-2-4 state under a 128-bit key, fed through [`Hasher`] (so
/// any `Hash` value, an address for one, can be part of the message).
#[derive(Clone, Debug)]
pub(crate) struct SipHasher24 {
    v: [u64; 4],
    /// The message's bytes not yet compressed (fewer than 8), low first.
    tail: u64,
    tail_len: u32,
    /// The message's length so far, in bytes.
    length: u64,
}

impl SipHasher24 {
    /// A state keyed with `key`.
    pub(crate) fn new(key: &[u8; 16]) -> Self {
        let k0 = u64::from_le_bytes([
            key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
        ]);
        let k1 = u64::from_le_bytes([
            key[8], key[9], key[10], key[11], key[12], key[13], key[14], key[15],
        ]);
        Self {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            tail_len: 0,
            length: 0,
        }
    }

    fn round(&mut self) {
        let [v0, v1, v2, v3] = &mut self.v;
        *v0 = v0.wrapping_add(*v1);
        *v1 = v1.rotate_left(13) ^ *v0;
        *v0 = v0.rotate_left(32);
        *v2 = v2.wrapping_add(*v3);
        *v3 = v3.rotate_left(16) ^ *v2;
        *v0 = v0.wrapping_add(*v3);
        *v3 = v3.rotate_left(21) ^ *v0;
        *v2 = v2.wrapping_add(*v1);
        *v1 = v1.rotate_left(17) ^ *v2;
        *v2 = v2.rotate_left(32);
    }

    fn compress(&mut self, block: u64) {
        self.v[3] ^= block;
        self.round();
        self.round();
        self.v[0] ^= block;
    }
}

impl Hasher for SipHasher24 {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.tail |= u64::from(byte) << (8 * self.tail_len);
            self.tail_len += 1;
            if self.tail_len == 8 {
                let block = self.tail;
                self.compress(block);
                self.tail = 0;
                self.tail_len = 0;
            }
        }
        self.length = self.length.wrapping_add(bytes.len() as u64);
    }

    fn finish(&self) -> u64 {
        let mut state = self.clone();
        let last = (self.length & 0xff) << 56 | self.tail;
        state.compress(last);
        state.v[2] ^= 0xff;
        for _ in 0..4 {
            state.round();
        }
        state.v[0] ^ state.v[1] ^ state.v[2] ^ state.v[3]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> [u8; 16] {
        core::array::from_fn(|i| i as u8)
    }

    fn sip(message: &[u8]) -> u64 {
        let mut hasher = SipHasher24::new(&key());
        hasher.write(message);
        hasher.finish()
    }

    #[test]
    fn reference_vectors() {
        // The paper's appendix and the reference implementation's
        // `vectors.h`: key 00..0f, messages 00, 00 01, ... of lengths 0-15.
        let message: Vec<u8> = (0..64).collect();
        assert_eq!(sip(&message[..0]), 0x726f_db47_dd0e_0e31);
        assert_eq!(sip(&message[..1]), 0x74f8_39c5_93dc_67fd);
        assert_eq!(sip(&message[..15]), 0xa129_ca61_49be_45e5);
    }

    #[test]
    #[allow(deprecated)] // std's SipHasher is SipHash-2-4, deprecated for hashing maps only
    fn equals_std_siphash_at_every_length_and_split() {
        let message: Vec<u8> = (0..64u8).map(|b| b.wrapping_mul(37)).collect();
        let (k0, k1) = (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
        for len in 0..message.len() {
            let mut std = std::hash::SipHasher::new_with_keys(k0, k1);
            std.write(&message[..len]);
            for split in [0, len / 3, len] {
                let mut ours = SipHasher24::new(&key());
                ours.write(&message[..split]);
                ours.write(&message[split..len]);
                assert_eq!(ours.finish(), std.finish(), "length {len}, split {split}");
            }
        }
    }
}
