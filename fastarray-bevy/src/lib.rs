//! Bevy plugins for fastarray: a Bevy World replicated to clients with
//! per-field, per-entity deltas, interest and priorities.
#![forbid(unsafe_code)]

mod client;
pub mod entity;
mod interest;
mod kind;
mod server;
mod transform;
mod transport;

pub use client::{
    ClientPlugin, ClientSet, DESPAWNED_KEPT, ReplicaChanged, ReplicaDespawned, ReplicaEntities,
    ReplicaLeftScope, ReplicaSpawned, ReplicationClient,
};
pub use fastarray::{FieldMask, Replicate};

pub use interest::{GridInterest, GroundPlane, Viewer};
pub use kind::{AppReplicationExt, ReplicateAs};
pub use server::{
    ClientConnected, ClientDisconnected, ClientView, FromClient, Replicated, ReplicationServer,
    ServerPlugin, ServerSet, VisibilityPolicy,
};
pub use transform::TransformRep;
pub use transport::{
    ClientId, ClientTransport, Conditioned, DEFAULT_MAX_PACKET, LinkConditioner, ServerEvent,
    ServerTransport, UdpClientTransport, UdpServerTransport,
};
