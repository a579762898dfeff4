//! `BitCodec` for [`ReplicationId`]: a field that refers to an item.

use super::BitCodec;
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError};
use crate::id::ReplicationId;
use crate::schema;

/// A [varint](BitWriter::write_varint) of the raw id: ids count up from 0
/// in each array, so the ids a game holds are small (1 bit for `#0`, 5 for
/// `#3`…`#6`, 16 for `#1000`). Every `u64` is a valid id, so decoding fails
/// only on an overlong or truncated varint.
impl BitCodec for ReplicationId {
    const MIN_BITS: u64 = 1;
    const TYPE_HASH: u64 = schema::named("ReplicationId", &[]);
    const NESTS: bool = false;

    #[inline]
    fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint(self.to_raw());
        Ok(())
    }

    #[inline]
    fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        reader.read_varint().map(ReplicationId::from_raw)
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(id: u64) -> (Vec<u8>, u64) {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        ReplicationId::from_raw(id).encode(&mut writer).unwrap();
        let bits = writer.finish();
        (bytes, bits)
    }

    #[test]
    fn ids_round_trip_in_varint_bits() {
        for (raw, bits) in [(0, 1), (1, 4), (3, 5), (14, 8), (1000, 16), (u64::MAX, 77)] {
            let (bytes, written) = encoded(raw);
            assert_eq!(written, bits, "#{raw}");
            let mut reader = BitReader::new(&bytes);
            assert_eq!(
                ReplicationId::decode(&mut reader),
                Ok(ReplicationId::from_raw(raw))
            );
            assert_eq!(reader.bit_offset(), bits);
        }
    }

    #[test]
    fn bad_ids_are_refused() {
        // Truncated: the 16 bits of #1000 cut to one byte.
        let (bytes, _) = encoded(1000);
        assert!(matches!(
            ReplicationId::decode(&mut BitReader::new(&bytes[..1])),
            Err(DecodeError::UnexpectedEnd { .. })
        ));
        // Seven zero bits: a longer length prefix than any u64 needs.
        assert_eq!(
            ReplicationId::decode(&mut BitReader::new(&[0, 0])),
            Err(DecodeError::VarintOverlong { bit_offset: 0 })
        );
    }
}
