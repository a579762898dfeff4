//! Sequence arithmetic: 16-bit sequences on the wire, 32-bit packet
//! numbers in memory.
//!
//! A sequence is a packet number's low 16 bits. Sequences wrap (65 535 is
//! followed by 0), so "newer" means "ahead by less than half the space"
//! (RFC 1982 serial arithmetic): `b` is newer than `a` when
//! `b - a (mod 65 536)` is in `1..=32 767`. A sequence 32 768 away either
//! way counts as older. Extending a sequence to a packet number picks the
//! number with those low bits nearest a reference (the newest number seen):
//! it is exact while the two are less than 32 768 packets apart.

/// Half the sequence space: sequences at least this far ahead count as behind.
pub(super) const HALF: u16 = 1 << 15;

/// Whether sequence `a` is newer than sequence `b`: ahead of it by
/// 1 to 32 767, wrapping at 65 535 (RFC 1982 style).
///
/// ```
/// use fastarray_core::ack::sequence_greater_than;
///
/// assert!(sequence_greater_than(1, 0));
/// assert!(sequence_greater_than(0, 65_535)); // across the wrap
/// assert!(!sequence_greater_than(65_535, 0));
/// assert!(!sequence_greater_than(7, 7));
/// ```
pub fn sequence_greater_than(a: u16, b: u16) -> bool {
    let ahead = a.wrapping_sub(b);
    ahead != 0 && ahead < HALF
}

/// The packet number whose low 16 bits are `sequence`, nearest
/// `reference`: at most 32 767 after it, or at most 32 768 before it.
/// Packet numbers themselves wrap at `u32::MAX` (after 2^32 packets, over
/// two years at 60 packets a second).
///
/// ```
/// use fastarray_core::ack::extend_sequence;
///
/// assert_eq!(extend_sequence(3, 65_534), 65_539); // 3 after the wrap
/// assert_eq!(extend_sequence(65_530, 65_540), 65_530); // behind the reference
/// assert_eq!(extend_sequence(10, 10), 10);
/// ```
pub fn extend_sequence(sequence: u16, reference: u32) -> u32 {
    // The truncation to 16 bits is the point: the difference of the low bits.
    let diff = sequence.wrapping_sub(reference as u16) as i16;
    reference.wrapping_add_signed(i32::from(diff))
}

/// Whether packet number `a` is after packet number `b`, with the same
/// half-space rule over 32 bits.
pub(super) fn after(a: u32, b: u32) -> bool {
    let ahead = a.wrapping_sub(b);
    ahead != 0 && ahead < (1 << 31)
}
