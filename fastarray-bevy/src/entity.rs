//! `Entity` fields on the wire: `#[replicate(with = fastarray_bevy::entity)]`.
//!
//! A field holding an [`Entity`] (or an `Option<Entity>`, or a
//! `Vec<Entity>`) travels as the server's entity, a varint of its bits
//! (the index and the generation: a despawned entity's successor at the
//! same index is a different value, so no reference can reach the wrong
//! entity). The client plugin turns it into the client's own entity
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

use bevy_ecs::entity::Entity;
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

/// The fewest bits a varint of an entity's bits takes.
const MIN_ENTITY_BITS: u64 = 1;

impl EntityField for Entity {
    fn __encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
        writer.write_varint(self.to_bits());
        Ok(())
    }

    fn __decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
        let bit_offset = reader.bit_offset();
        let bits = reader.read_varint()?;
        Entity::try_from_bits(bits).ok_or(DecodeError::Custom {
            bit_offset,
            message: "not the bits of an Entity",
        })
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
