//! A field type that counts how often the library encodes, compares and
//! copies it, so tests can check work is done once per changed item, not
//! per item or per connection.

use std::cell::Cell;

use fastarray::{BitCodec, BitReader, BitWriter, DecodeError, EncodeError};

thread_local! {
    static ENCODES: Cell<usize> = const { Cell::new(0) };
    static COMPARISONS: Cell<usize> = const { Cell::new(0) };
    static COPIES: Cell<usize> = const { Cell::new(0) };
}

/// A `u32` field whose `encode`, `same`, `clone` and `clone_from` calls
/// are counted per thread.
#[derive(Debug, PartialEq)]
pub struct Counted(pub u32);

impl Clone for Counted {
    fn clone(&self) -> Self {
        COPIES.with(|c| c.set(c.get() + 1));
        Counted(self.0)
    }

    fn clone_from(&mut self, source: &Self) {
        COPIES.with(|c| c.set(c.get() + 1));
        self.0 = source.0;
    }
}

impl BitCodec for Counted {
    const MIN_BITS: u64 = 32;
    const TYPE_HASH: u64 = fastarray::schema::named("Counted", &[]);

    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        ENCODES.with(|c| c.set(c.get() + 1));
        self.0.encode(writer)
    }

    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        u32::decode(reader).map(Counted)
    }

    fn same(&self, other: &Self) -> bool {
        COMPARISONS.with(|c| c.set(c.get() + 1));
        self.0 == other.0
    }
}

/// Encodes of a `Counted` on this thread since the last call (and resets).
pub fn take_encodes() -> usize {
    ENCODES.with(|c| c.replace(0))
}

/// Comparisons of a `Counted` on this thread since the last call (and resets).
pub fn take_comparisons() -> usize {
    COMPARISONS.with(|c| c.replace(0))
}

/// Copies of a `Counted` (`clone` or `clone_from`) on this thread since the
/// last call (and resets).
pub fn take_copies() -> usize {
    COPIES.with(|c| c.replace(0))
}
