//! Which removals of a delta are scope exits: after a non-empty list of
//! removals, one bit says whether any is; if one is, one bit per removal,
//! in the list's order, says which (`1`: the item left the client's scope
//! and still exists; `0`: it was destroyed). A delta without exits pays one
//! bit when it removes something, and nothing otherwise.

use crate::bits::{BitReader, BitWriter};
use crate::error::DecodeError;

/// The bits that say which of `count` removals are exits, `any` being
/// whether one is.
pub(crate) fn exit_bits(count: u64, any: bool) -> u64 {
    match (count, any) {
        (0, _) => 0,
        (_, false) => 1,
        (count, true) => 1 + count,
    }
}

/// Writes which removals are exits, given in the removals' order.
pub(crate) fn write_exits(writer: &mut BitWriter<'_>, exits: impl Iterator<Item = bool> + Clone) {
    let mut count = 0;
    let mut any = false;
    for exit in exits.clone() {
        count += 1;
        any |= exit;
    }
    if count == 0 {
        return;
    }
    writer.write_bool(any);
    if any {
        exits.for_each(|exit| writer.write_bool(exit));
    }
}

/// Reads which of `count` removals are exits, calling `visit` with each
/// flag in order (nothing when none is). A flag list that names no exit is
/// refused: it has one encoding, the single `0` bit.
pub(crate) fn read_exits(
    reader: &mut BitReader<'_>,
    count: usize,
    visit: &mut impl FnMut(bool),
) -> Result<(), DecodeError> {
    if count == 0 {
        return Ok(());
    }
    let bit_offset = reader.bit_offset();
    if !reader.read_bool()? {
        return Ok(());
    }
    let mut any = false;
    for _ in 0..count {
        let exit = reader.read_bool()?;
        any |= exit;
        visit(exit);
    }
    if any {
        Ok(())
    } else {
        Err(DecodeError::InvalidExits { bit_offset })
    }
}
