//! Compile-time schema hashing.
//!
//! A [`Replicate`](crate::Replicate) type's `SCHEMA_HASH` folds in the name
//! and wire type of every replicated field in order, so two builds that would
//! read each other's bits differently get different hashes. The functions are
//! `const` so the derive can compute the hash at compile time from the field
//! types' own [`BitCodec::TYPE_HASH`](crate::BitCodec::TYPE_HASH), which
//! resolves generic parameters correctly (`Foo<u8>` and `Foo<u32>` differ).
//! The hash is FNV-1a (64-bit); it is stable across platforms and releases
//! of the compiler.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The starting value of a schema hash.
pub const START: u64 = FNV_OFFSET;

/// Folds the bytes of `s` into `hash` (with a terminator, so `"ab","c"` and
/// `"a","bc"` differ).
pub const fn str(hash: u64, s: &str) -> u64 {
    let mut hash = bytes(hash, s.as_bytes());
    hash ^= 0xff;
    hash.wrapping_mul(FNV_PRIME)
}

/// Folds `bytes` into `hash` (a default baseline's encoding, at run time).
pub const fn bytes(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    hash
}

/// Folds a 64-bit value (for example a field type's hash) into `hash`.
pub const fn u64(mut hash: u64, value: u64) -> u64 {
    let mut i = 0;
    while i < 8 {
        hash ^= (value >> (8 * i)) & 0xff;
        hash = hash.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    hash
}

/// The hash of a type named `name` with parameter hashes `params`.
pub const fn named(name: &str, params: &[u64]) -> u64 {
    let mut hash = str(START, name);
    let mut i = 0;
    while i < params.len() {
        hash = u64(hash, params[i]);
        i += 1;
    }
    hash
}

/// The smaller of two bit counts (for an enum's `MIN_BITS`, the cheapest
/// variant), usable in constants.
pub const fn min_bits(a: u64, b: u64) -> u64 {
    if a < b { a } else { b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_boundaries_matter() {
        assert_ne!(str(str(START, "ab"), "c"), str(str(START, "a"), "bc"));
        assert_ne!(named("T", &[1, 2]), named("T", &[2, 1]));
        assert_ne!(
            named("Vec", &[named("u8", &[])]),
            named("Vec", &[named("u16", &[])])
        );
    }
}
