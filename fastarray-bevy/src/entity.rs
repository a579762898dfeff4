//! `Entity` fields on the wire: `#[replicate(with = fastarray_bevy::entity)]`.
//!
//! A field holding an [`Entity`] (or an `Option<Entity>`, or a
//! `Vec<Entity>`) travels as the server's entity: its index and its
//! generation, a varint each (a despawned entity's successor at the same
//! index is a different value, so no reference can reach the wrong
//! entity). An entity among the first thousand, not yet reused, takes at
//! most 17 bits. The client plugin turns it into the client's own entity
//! through Bevy's entity mapping: mark the field `#[entities]` too, as for
//! any mapped component.
//!
//! ```
//! use bevy_ecs::prelude::*;
//! use fastarray_bevy::Replicate;
//!
//! #[derive(Component, Replicate, Clone, Debug, PartialEq)]
//! struct Target {
//!     #[entities]
//!     #[replicate(with = fastarray_bevy::entity)]
//!     of: Option<Entity>,
//! }
//! ```
//!
//! A reference to an entity the client has not received (not yet arrived,
//! or out of its scope) maps to an empty entity that the client keeps for
//! it: when the entity arrives, its components land on that one, so the
//! reference resolves without being sent again.

use bevy_ecs::entity::{Entity, EntityGeneration, EntityIndex};
use fastarray::{BitReader, BitWriter, DecodeError, EncodeError};

/// The types an `Entity` field may have: `Entity`, `Option<Entity>`,
/// `Vec<Entity>`.
pub trait EntityField: Sized {
    #[doc(hidden)]
    fn __encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError>;
    #[doc(hidden)]
    fn __decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError>;
}

/// Writes `value` (for `#[replicate(with = fastarray_bevy::entity)]`).
pub fn encode<T: EntityField>(value: &T, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
    value.__encode(writer)
}

/// Reads a value written by [`encode`]; never panics, and allocates no
/// more than the input holds.
pub fn decode<T: EntityField>(reader: &mut BitReader<'_>) -> Result<T, DecodeError> {
    T::__decode(reader)
}

/// The fewest bits an entity takes: two varints.
const MIN_ENTITY_BITS: u64 = 2;

impl EntityField for Entity {
    fn __encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint(u64::from(self.index_u32()));
        writer.write_varint(u64::from(self.generation().to_bits()));
        Ok(())
    }

    fn __decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let bit_offset = reader.bit_offset();
        let not_an_entity = || DecodeError::Custom {
            bit_offset,
            message: "not the index and generation of an Entity",
        };
        let index = u32::try_from(reader.read_varint()?).map_err(|_| not_an_entity())?;
        let index = EntityIndex::from_raw_u32(index).ok_or_else(not_an_entity)?;
        let generation = u32::try_from(reader.read_varint()?).map_err(|_| not_an_entity())?;
        Ok(Entity::from_index_and_generation(
            index,
            EntityGeneration::from_bits(generation),
        ))
    }
}

impl EntityField for Option<Entity> {
    fn __encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_bool(self.is_some());
        match self {
            Some(entity) => entity.__encode(writer),
            None => Ok(()),
        }
    }

    fn __decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        if reader.read_bool()? {
            Entity::__decode(reader).map(Some)
        } else {
            Ok(None)
        }
    }
}

impl EntityField for Vec<Entity> {
    fn __encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint(self.len() as u64);
        self.iter().try_for_each(|entity| entity.__encode(writer))
    }

    fn __decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let claimed = reader.read_varint()?;
        // A count the rest of the input cannot hold is refused before
        // anything is allocated.
        let len = reader.check_len(claimed, MIN_ENTITY_BITS)?;
        let mut entities = Vec::with_capacity(len);
        for _ in 0..len {
            entities.push(Entity::__decode(reader)?);
        }
        Ok(entities)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits_of<T: EntityField>(value: &T) -> (Vec<u8>, u64) {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        encode(value, &mut writer).unwrap();
        let bits = writer.finish();
        (bytes, bits)
    }

    fn entity(index: u32, generation: u32) -> Entity {
        Entity::from_index_and_generation(
            EntityIndex::from_raw_u32(index).unwrap(),
            EntityGeneration::from_bits(generation),
        )
    }

    #[test]
    fn entities_read_back_in_a_few_bits() {
        // Elias-delta varints of the index and of the generation.
        let cases = [
            (entity(0, 0), 1 + 1),
            (entity(999, 0), 16 + 1),
            (entity(999, 3), 16 + 5),
            (entity(u32::MAX - 1, u32::MAX), 42 + 43),
        ];
        for (value, expected) in cases {
            let (bytes, bits) = bits_of(&value);
            assert_eq!(bits, expected, "{value:?}");
            let mut reader = BitReader::new(&bytes);
            assert_eq!(decode::<Entity>(&mut reader).unwrap(), value);
        }
        let list = vec![entity(5, 1), entity(6, 0)];
        let (bytes, _) = bits_of(&list);
        assert_eq!(
            decode::<Vec<Entity>>(&mut BitReader::new(&bytes)).unwrap(),
            list
        );
        let (bytes, _) = bits_of(&Some(entity(7, 2)));
        assert_eq!(
            decode::<Option<Entity>>(&mut BitReader::new(&bytes)).unwrap(),
            Some(entity(7, 2))
        );
    }

    #[test]
    fn what_is_no_entity_is_refused() {
        for (index, generation) in [(u64::from(u32::MAX), 0), (1u64 << 32, 0), (1, 1u64 << 32)] {
            let mut bytes = Vec::new();
            let mut writer = BitWriter::new(&mut bytes);
            writer.write_varint(index);
            writer.write_varint(generation);
            writer.finish();
            assert!(matches!(
                decode::<Entity>(&mut BitReader::new(&bytes)),
                Err(DecodeError::Custom { bit_offset: 0, .. })
            ));
        }
        // Cut short: an error, not a panic.
        let (bytes, _) = bits_of(&entity(999, 3));
        assert!(decode::<Entity>(&mut BitReader::new(&bytes[..1])).is_err());
    }
}
