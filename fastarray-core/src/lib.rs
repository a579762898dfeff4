//! The runtime of [fastarray](https://docs.rs/fastarray): replication ids,
//! the [`FastArray`] container with automatic change capture, the bit codec
//! and full snapshots.
//!
//! Most users depend on the `fastarray` crate, which re-exports everything
//! here together with `#[derive(Replicate)]`.
//!
//! ```
//! use fastarray_core::{BitReader, BitWriter, BitCodec};
//!
//! let mut bytes = Vec::new();
//! let mut writer = BitWriter::new(&mut bytes);
//! (true, 300u16, Some("hi".to_string())).encode(&mut writer).unwrap();
//! writer.finish();
//!
//! let mut reader = BitReader::new(&bytes);
//! let value = <(bool, u16, Option<String>)>::decode(&mut reader).unwrap();
//! assert_eq!(value, (true, 300, Some("hi".to_string())));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The modules, by name. Each uses only modules of its own layer or lower
// ones: the layers, bottom up, are `tests/layers.rs`'s, which checks it.
pub mod ack;
mod array;
mod bits;
#[cfg(feature = "bitstream-io")]
pub mod bitstream;
mod changeset;
mod codec;
mod connection;
mod dense_order;
mod error;
mod feed_message;
mod field_costs;
mod handshake;
mod history;
mod id;
mod id_map;
mod inner_array;
mod interest_grid;
mod iter;
mod limits;
mod mask;
#[cfg(feature = "serde")]
mod persist;
mod pre_image;
mod receive;
mod receive_state;
mod replicate;
mod replicated;
#[doc(hidden)]
pub mod schema;
mod secure;
mod send;
mod send_state;
#[cfg(not(feature = "serde"))]
mod serde_disabled;
mod shard;
mod snapshot_message;
mod store;
mod wire;

pub use ack::{AckConfig, AckError, AckEvent, AckHeader, Acks, LinkStats};
pub use array::{FastArray, FeedReport, ScopeMut};
pub use bits::{BitReader, BitWriter, MAX_DEPTH, zigzag_decode, zigzag_encode};
#[cfg(feature = "bitstream-io")]
pub use bitstream::{BitstreamError, MAX_MESSAGE_BITS};
pub use changeset::Changeset;
pub use codec::BitCodec;
pub use codec::encodings::{FixedBits, VarInt};
pub use codec::quantize::{Quantize, Quantizer, Quantizers};
pub use codec::rotation::{QuantizeRotation, SmallestThree};
#[cfg(feature = "serde")]
pub use codec::{serde_decode, serde_encode};
pub use connection::{
    ChannelStats, Connection, ConnectionError, Delivery, Incoming, MAX_PACKET, MAX_VERDICTS,
    MirrorConnection, Outgoing, PacketReport, PacketStats, WithCallbacks,
};
pub use error::{DecodeError, EncodeError, Limit, SendError};
pub use field_costs::{FieldCost, FieldCosts};
/// glam 0.34, whose types have codecs here (feature `glam-0_34`, or
/// `glam`): name them through this path to use the same version.
#[cfg(feature = "glam-0_34")]
pub use glam;
/// glam 0.32 (Bevy 0.19's), whose types have codecs here with the feature
/// `glam-0_32`.
#[cfg(feature = "glam-0_32")]
pub use glam_0_32;
/// glam 0.33 (Bevy 0.20's), whose types have codecs here with the feature
/// `glam-0_33`.
#[cfg(feature = "glam-0_33")]
pub use glam_0_33;
pub use handshake::SchemaMismatch;
pub use history::HISTORY_LEN;
pub use id::{ReplicationId, ReplicationKey};
pub use interest_grid::{InterestGrid, Relevance};
pub use iter::{Ids, Iter, IterMut};
pub use limits::MirrorLimits;
pub use mask::FieldMask;
pub use receive_state::{
    ApplyReport, ArrayOwner, Callbacks, FeedStats, InnerChange, InnerEvent, MirrorState,
};
pub use replicate::Replicate;
pub use replicated::{ObjectMut, Replicated};
#[cfg(feature = "encryption")]
pub use secure::SessionKeys;
pub use secure::{
    ClientHandshake, HandshakeError, PacketError, PacketKind, Protection, ServerHandshake, Session,
};
pub use send::delta_bytes::DeltaBytes;
pub use send::sender::DeltaWrite;
pub use send_state::{DeltaStats, GhostFeed, MAX_DETAIL, Oversized, ScopeExit, SendState};
pub use shard::ShardId;
pub use store::ItemMut;

// Lets the derive's generated code (which names `::fastarray::__private_0_1`)
// compile inside this crate's own tests.
#[cfg(test)]
extern crate self as fastarray;

/// What `#[derive(Replicate)]` expands to refers to; not a public API. Its
/// name carries the version, so a derive of another version fails to
/// compile instead of calling into a runtime it was not written for.
#[doc(hidden)]
pub mod __private_0_1 {
    pub use crate::bits::{BitReader, BitWriter};
    pub use crate::codec::BitCodec;
    pub use crate::codec::encodings::{
        FixedBits, VarInt, bits_type_hash, decode_bits, decode_varint, encode_bits, encode_varint,
        varint_type_hash,
    };
    pub use crate::codec::quantize::{Quantize, Quantizer, Quantizers};
    pub use crate::codec::rotation::{QuantizeRotation, SmallestThree};
    pub use crate::error::{DecodeError, EncodeError};
    pub use crate::inner_array::{ArrayField, InnerArray};
    pub use crate::mask::FieldMask;
    pub use crate::pre_image::{ByClone, CloneField, NotClone};
    pub use crate::replicate::{Replicate, fold_baseline};
    pub use crate::schema;
    #[cfg(not(feature = "serde"))]
    pub use crate::serde_disabled::{serde_decode, serde_encode};
    pub use crate::wire::baseline::{baseline_min_bits, read_baseline_form, write_baseline_form};
    #[cfg(feature = "serde")]
    pub use crate::{serde_decode, serde_encode};
    pub use ::core::default::Default;
    pub use ::core::option::Option::{self, None, Some};
    pub use ::core::result::Result::{self, Err, Ok};
    pub use ::std::vec::Vec;
}
