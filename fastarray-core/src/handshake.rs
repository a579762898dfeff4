//! The schema handshake: the first thing peers exchange, so a client built
//! with a different definition of a replicated type is refused with a
//! message naming the type, instead of decoding garbage.

use core::fmt;

use crate::array::FastArray;
use crate::bits::{BitReader, BitWriter};
use crate::error::DecodeError;
use crate::replicate::{Replicate, wire_schema};

/// Why a peer's handshake was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaMismatch {
    /// The peer's type differs from this build's.
    Different {
        /// This build's type name.
        local: &'static str,
        /// The peer's type name.
        remote: String,
        /// This build's schema: its `SCHEMA_HASH`, with the bits of the
        /// defaults its whole values are written against
        /// (`#[replicate(default_baseline)]`) folded in.
        local_hash: u64,
        /// The peer's schema, as `local_hash`.
        remote_hash: u64,
    },
    /// The bytes are not a handshake.
    Malformed {
        /// This build's type name.
        local: &'static str,
        /// What was wrong.
        error: DecodeError,
    },
}

impl fmt::Display for SchemaMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Different {
                local,
                remote,
                local_hash,
                remote_hash,
            } => write!(
                f,
                "the peer's `{remote}` (schema {remote_hash:#018x}) is not this build's `{local}` \
                 (schema {local_hash:#018x}): fields, types, attributes, their order or the \
                 type's default baseline differ; \
                 build both sides from the same definition"
            ),
            Self::Malformed { local, error } => {
                write!(f, "not a schema handshake for `{local}`: {error}")
            }
        }
    }
}

impl std::error::Error for SchemaMismatch {}

/// The longest type name a handshake carries (longer names are cut).
const MAX_NAME: usize = 256;

impl<T: Replicate> FastArray<T> {
    /// The bytes that announce this build's item type: its name and
    /// `SCHEMA_HASH`, with, for a type with `#[replicate(default_baseline)]`
    /// (or flattened fields of such types), the bits of those defaults
    /// folded in (whole values leave out what equals them, so both sides
    /// must build the same ones). Send them when a connection starts; the
    /// peer checks them with [`check_schema`](Self::check_schema).
    ///
    /// ```
    /// use fastarray_core::{FastArray, SchemaMismatch};
    /// use fastarray_derive::Replicate;
    ///
    /// mod server {
    ///     #[derive(fastarray_derive::Replicate)]
    ///     #[replicate(crate = "fastarray_core")]
    ///     pub struct Unit { pub hp: u16, pub team: u8 }
    /// }
    /// mod old_client {
    ///     #[derive(fastarray_derive::Replicate)]
    ///     #[replicate(crate = "fastarray_core")]
    ///     pub struct Unit { pub team: u8, pub hp: u16 } // reordered
    /// }
    ///
    /// let hello = FastArray::<server::Unit>::schema_handshake();
    /// assert_eq!(FastArray::<server::Unit>::check_schema(&hello), Ok(()));
    /// let refused = FastArray::<old_client::Unit>::check_schema(&hello).unwrap_err();
    /// assert!(matches!(refused, SchemaMismatch::Different { local: "Unit", .. }));
    /// assert!(refused.to_string().contains("`Unit`"));
    /// ```
    pub fn schema_handshake() -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        let name = truncated(T::TYPE_NAME);
        writer.write_varint(name.len() as u64);
        writer.write_bytes(name.as_bytes());
        writer.write_bits(wire_schema::<T>(), 64);
        writer.finish();
        bytes
    }

    /// Checks a peer's [`schema_handshake`](Self::schema_handshake) against
    /// this build's item type.
    pub fn check_schema(bytes: &[u8]) -> Result<(), SchemaMismatch> {
        let malformed = |error| SchemaMismatch::Malformed {
            local: T::TYPE_NAME,
            error,
        };
        let mut reader = BitReader::new(bytes);
        let claimed = reader.read_varint().map_err(malformed)?;
        let len = reader.check_len(claimed, 8).map_err(malformed)?;
        let bit_offset = reader.bit_offset();
        let mut name = Vec::new();
        reader.read_bytes_into(len, &mut name).map_err(malformed)?;
        let remote = String::from_utf8(name)
            .map_err(|_| malformed(DecodeError::InvalidUtf8 { bit_offset }))?;
        let remote_hash = reader.read_bits(64).map_err(malformed)?;
        reader.expect_end().map_err(malformed)?;
        let local_hash = wire_schema::<T>();
        if remote_hash == local_hash && remote == truncated(T::TYPE_NAME) {
            Ok(())
        } else {
            Err(SchemaMismatch::Different {
                local: T::TYPE_NAME,
                remote,
                local_hash,
                remote_hash,
            })
        }
    }
}

/// `name`, cut to at most [`MAX_NAME`] bytes on a character boundary.
fn truncated(name: &str) -> &str {
    if name.len() <= MAX_NAME {
        return name;
    }
    let mut end = MAX_NAME;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}
