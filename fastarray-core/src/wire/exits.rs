//! Which removals of a delta are scope exits. A delta with exits says so
//! in its kind (`1 1 1 0`, two bits more than a plain delta's `1 0`; a
//! delta by handles says it in its kind's last bit, at no cost); after
//! its list of removals, one bit per removal, in the list's order, says
//! which (`1`: the item left the client's scope and still exists; `0`: it
//! was destroyed). A delta without exits pays nothing for them.

use super::MessageKind;
use crate::bits::{BitReader, BitWriter};
use crate::error::DecodeError;

/// The bits exits add to a delta of `count` removals, `any` being whether
/// one of them is an exit: the kind's extra bits (none for a delta by
/// `handles`) and a flag per removal.
pub(crate) fn exit_bits(count: u64, any: bool, handles: bool) -> u64 {
    match (any, handles) {
        (false, _) => 0,
        (true, false) => MessageKind::DeltaWithExits.bits() - MessageKind::Delta.bits() + count,
        (true, true) => count,
    }
}

/// Writes the flag of each removal, given in the removals' order (for a
/// delta of kind `DeltaWithExits`).
pub(crate) fn write_exits(writer: &mut BitWriter<'_>, exits: impl Iterator<Item = bool>) {
    exits.for_each(|exit| writer.write_bool(exit));
}

/// Reads the flags of `count` removals of a delta of kind
/// `DeltaWithExits`, calling `visit` with each in order. Flags that name
/// no exit are refused: such a delta is written as a plain one.
pub(crate) fn read_exits(
    reader: &mut BitReader<'_>,
    count: usize,
    visit: &mut impl FnMut(bool),
) -> Result<(), DecodeError> {
    let bit_offset = reader.bit_offset();
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
