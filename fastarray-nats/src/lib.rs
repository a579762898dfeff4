//! The bus between fastarray servers and their relays, on NATS.
//!
//! A relay ([`FastArray::relay`](fastarray_core::FastArray::relay)) follows
//! a server's array and serves its own clients as the server would, so
//! the server's cost does not grow with its players (UE5's multi-server
//! proxy, BigWorld's cells). The server writes its feed once a frame for
//! every relay; this crate carries it over NATS: [`FeedPublisher`] on the
//! server publishes each frame on the array's subject and answers relays'
//! requests for a snapshot, [`FeedFollower`] on a relay applies what
//! arrives and asks for a snapshot when it joins or falls behind.
//!
//! Shards ([`FastArray::shard`](fastarray_core::FastArray::shard)) hand
//! items that cross their borders to each other with [`HandoffPort`], by
//! request and reply; a relay follows every shard with a [`FeedFollower`]
//! per shard ([`FeedFollower::of_shard`]) on one relay array, and merges
//! them into one world. Each shard ghosts the items near a border to the
//! neighbour across it: a [`FeedPublisher`] publishes a [`GhostSource`],
//! and the neighbour follows it into a ghost array
//! ([`FastArray::ghost`](fastarray_core::FastArray::ghost)) with a
//! [`FeedFollower`].
//!
//! The bus is behind a small trait, [`Bus`]; [`NatsBus`] is the one
//! shipped, on `async-nats`, with a face that never waits for the
//! network: the game's loop calls plain methods, the I/O runs in tasks on
//! the caller's tokio runtime. [`dev::LocalCluster`] starts `nats-server`
//! processes on free ports of 127.0.0.1, for tests and demos.
//!
//! # Example
//!
//! A server and a relay on one NATS server (the test
//! `tests/relay.rs::the_crate_example_runs` runs this with a server it
//! starts):
//!
//! ```no_run
//! use std::time::Instant;
//!
//! use fastarray::{FastArray, Replicate, SendState};
//! use fastarray_nats::{Bus, FeedFollower, FeedPublisher, FollowConfig, NatsBus};
//!
//! #[derive(Replicate, Clone, Debug, PartialEq)]
//! struct Agent { x: i32 }
//!
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! let urls = ["nats://127.0.0.1:4222".to_string()];
//! let bus = NatsBus::connect(runtime.handle(), &urls, "example").unwrap();
//!
//! // The server: publish after each commit.
//! let mut agents = FastArray::new();
//! let a = agents.push(Agent { x: 0 });
//! let mut publisher = FeedPublisher::new(bus.clone(), "world.agents").unwrap();
//!
//! // A relay (another process, in a game): poll each tick, serve clients.
//! let mut relay = FastArray::<Agent>::relay();
//! let mut follower = FeedFollower::new(bus.clone(), "world.agents", FollowConfig::default()).unwrap();
//!
//! for tick in 0..100 {
//!     agents.get_mut(a).unwrap().x = tick;
//!     agents.commit();
//!     publisher.publish(&mut agents).unwrap();
//!     follower.poll(&mut relay, Instant::now()).unwrap();
//!     std::thread::sleep(std::time::Duration::from_millis(10));
//! }
//! // The relay writes deltas for its own clients as the server would.
//! let mut packet = Vec::new();
//! relay.write_delta(&mut SendState::new(), 0, &mut packet).unwrap();
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bus;
mod chunks;
pub mod dev;
mod feed;
mod ghost;
mod handoff;
mod nats;

pub use bus::{Bus, BusError, BusMessage, Subscription};
pub use feed::{
    FeedError, FeedFollower, FeedPublisher, FeedSink, FeedSource, FollowConfig, Followed,
    Published, feed_subject, snapshot_subject,
};
pub use ghost::GhostSource;
pub use handoff::{Handled, HandoffConfig, HandoffError, HandoffPort, handoff_subject};
pub use nats::{NatsBus, NatsSubscription, SUBSCRIPTION_CAPACITY};
