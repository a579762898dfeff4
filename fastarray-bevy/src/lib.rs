//! Bevy plugins for fastarray: a Bevy World replicated to clients with
//! per-field, per-entity deltas, interest, priorities and detail levels.
//!
//! - [`ServerPlugin`] and [`ClientPlugin`]; [`AppReplicationExt`] says
//!   what replicates: a component that derives [`Replicate`]
//!   ([`replicate`](AppReplicationExt::replicate)), one you do not own as
//!   a type of yours ([`replicate_as`](AppReplicationExt::replicate_as):
//!   Bevy's `Transform` as [`TransformRep`]), a resource
//!   ([`replicate_resource`](AppReplicationExt::replicate_resource)). The
//!   entities marked [`Replicated`] go out.
//! - `Entity` fields travel with [`entity`] and are mapped to the client's
//!   entities ([`ReplicaEntities`]).
//! - A component with `#[replicate(default_baseline)]` spawns on clients
//!   with only the fields in which it differs from its `Default`
//!   (`fastarray::attributes`).
//! - The client's game hears [`ReplicaSpawned`], [`ReplicaChanged`],
//!   [`ReplicaLeftScope`], [`ReplicaDespawned`]; the server's
//!   [`ClientConnected`], [`ClientDisconnected`], [`FromClient`].
//! - Each client sees everything, or what its [`ClientView`] shows
//!   ([`VisibilityPolicy::Explicit`]), by hand or from a [`GridInterest`]
//!   of [`Viewer`]s.
//! - The transport is yours ([`ServerTransport`], [`ClientTransport`]) or
//!   the built-in UDP one; [`Conditioned`] makes any of them lossy.
//!
//! A server and a client in one process, over UDP on 127.0.0.1:
//!
//! ```
//! use std::{thread::sleep, time::Duration};
//! use bevy_app::App;
//! use bevy_ecs::prelude::*;
//! use fastarray_bevy::*;
//!
//! #[derive(Component, Replicate, Clone, PartialEq, Debug)]
//! struct Health(u8);
//!
//! let udp = UdpServerTransport::bind("127.0.0.1:0").unwrap();
//! let address = udp.local_addr().unwrap();
//! let mut server = App::new();
//! server.add_plugins(ServerPlugin::default()).replicate::<Health>();
//! server.insert_resource(ReplicationServer::new(udp));
//! server.world_mut().spawn((Replicated, Health(100)));
//!
//! let mut client = App::new();
//! client.add_plugins(ClientPlugin).replicate::<Health>();
//! client.insert_resource(ReplicationClient::new(UdpClientTransport::connect(address).unwrap()));
//!
//! let mut arrived = Vec::new();
//! for _ in 0..500 {
//!     server.update();
//!     client.update();
//!     let world = client.world_mut();
//!     arrived = world.query::<&Health>().iter(world).cloned().collect();
//!     if !arrived.is_empty() {
//!         break;
//!     }
//!     sleep(Duration::from_millis(1));
//! }
//! assert_eq!(arrived, [Health(100)]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod client;
pub mod entity;
mod interest;
mod join;
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
pub use join::Join;
pub use kind::{AppReplicationExt, ReplicateAs};
pub use server::{
    ClientConnected, ClientDisconnected, ClientView, FromClient, Owner, Replicated,
    ReplicationServer, ServerPlugin, ServerSet, VisibilityPolicy,
};
pub use transform::TransformRep;
pub use transport::{
    ClientId, ClientTransport, Conditioned, DEFAULT_MAX_PACKET, LinkConditioner, ServerEvent,
    ServerTransport, UdpClientTransport, UdpServerTransport,
};
