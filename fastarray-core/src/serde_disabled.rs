//! Stand-ins for the serde bridge when the `serde` feature is off, so that
//! `#[replicate(serde)]` fails to compile with a message naming the feature
//! instead of an unresolved function.

use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError};

/// Implemented by nothing: a field marked `#[replicate(serde)]` names this
/// bound while the feature is off.
#[diagnostic::on_unimplemented(
    message = "`#[replicate(serde)]` needs the `serde` feature of fastarray",
    label = "replicated through serde",
    note = "enable it in Cargo.toml: `fastarray = {{ version = \"0.1\", features = [\"serde\"] }}`"
)]
pub trait SerdeFeatureEnabled {}

/// Never callable: no type implements `SerdeFeatureEnabled`.
pub fn serde_encode<T: SerdeFeatureEnabled + ?Sized>(
    _value: &T,
    _writer: &mut BitWriter<'_>,
) -> Result<(), EncodeError> {
    Err(EncodeError::Custom {
        message: "the serde feature is off",
    })
}

/// Never callable: no type implements `SerdeFeatureEnabled`.
pub fn serde_decode<T: SerdeFeatureEnabled>(reader: &mut BitReader<'_>) -> Result<T, DecodeError> {
    Err(DecodeError::Custom {
        bit_offset: reader.bit_offset(),
        message: "the serde feature is off",
    })
}
