//! The bevy_replicon side, in its best layout for these workloads: an
//! agent is five components (position, velocity, health, ammo, name), as
//! replicon sends a changed component whole: a change of ammo sends the
//! ammo alone, a move the position alone. Position goes quantized to 16
//! bits a coordinate and ammo as two fixed bytes (`replicate_as`, the way
//! replicon's docs quantize), the precision and widths of our `Agent`;
//! velocity, health and name go as postcard writes them.
//!
//! The apps are those of replicon's own tests: `MinimalPlugins`,
//! `StatesPlugin` and `RepliconPlugins` ticking every update, connected
//! by its test harness (`ServerTestAppExt`), which moves `ServerMessages`
//! and `ClientMessages` between the apps.

use std::collections::HashMap;

use bevy::MinimalPlugins;
use bevy::state::app::StatesPlugin;
use bevy_app::{App, PluginGroup, PostUpdate};
use bevy_ecs::prelude::*;
use bevy_replicon::prelude::{
    AppRuleExt, Replicated, RepliconPlugins, ServerMessages, ServerPlugin,
};
use bevy_replicon::test_app::ServerTestAppExt;
use fastarray_bench::{Agent, Op, Script, Workload};
use serde::{Deserialize, Serialize};

use crate::{Side, Summary, assert_same, catch_up, moved};

/// Where an agent is.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Position(pub [f32; 3]);

/// A position on the wire: 3 × 16 bits over `[-1024, 1024]`, fixed width.
#[derive(Serialize, Deserialize)]
pub struct QuantizedPosition([u8; 6]);

const STEPS: f32 = u16::MAX as f32;

impl From<Position> for QuantizedPosition {
    fn from(position: Position) -> Self {
        let mut bytes = [0; 6];
        for (chunk, p) in bytes.chunks_exact_mut(2).zip(position.0) {
            let q = ((p + 1024.0) / 2048.0 * STEPS).round().clamp(0.0, STEPS) as u16;
            chunk.copy_from_slice(&q.to_le_bytes());
        }
        QuantizedPosition(bytes)
    }
}

impl From<QuantizedPosition> for Position {
    fn from(position: QuantizedPosition) -> Self {
        let mut p = [0.0; 3];
        for (p, chunk) in p.iter_mut().zip(position.0.chunks_exact(2)) {
            let q = u16::from_le_bytes([chunk[0], chunk[1]]);
            *p = f32::from(q) / STEPS * 2048.0 - 1024.0;
        }
        Position(p)
    }
}

/// Where an agent is going.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Velocity(pub [f32; 3]);

/// Hit points.
#[derive(Component, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Health(pub u8);

/// Rounds left.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Ammo(pub u16);

/// Ammo on the wire: two fixed bytes (postcard's varint takes three for
/// most random `u16`s).
#[derive(Serialize, Deserialize)]
pub struct AmmoBytes([u8; 2]);

impl From<Ammo> for AmmoBytes {
    fn from(ammo: Ammo) -> Self {
        AmmoBytes(ammo.0.to_le_bytes())
    }
}

impl From<AmmoBytes> for Ammo {
    fn from(ammo: AmmoBytes) -> Self {
        Ammo(u16::from_le_bytes(ammo.0))
    }
}

/// A short display name.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentName(pub String);

/// The server app and its clients.
pub struct Replicon {
    server: App,
    clients: Vec<App>,
    script: Script,
    entities: HashMap<u64, Entity>,
    ops: Vec<Op>,
}

/// An app as replicon's tests make them, with the components registered.
fn app() -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        StatesPlugin,
        RepliconPlugins.set(ServerPlugin::new(PostUpdate)),
    ))
    .replicate_as::<Position, QuantizedPosition>()
    .replicate::<Velocity>()
    .replicate::<Health>()
    .replicate_as::<Ammo, AmmoBytes>()
    .replicate::<AgentName>()
    .finish();
    app
}

fn spawn(world: &mut World, agent: &Agent) -> Entity {
    world
        .spawn((
            Replicated,
            Position(agent.position),
            Velocity(agent.velocity),
            Health(agent.health),
            Ammo(agent.ammo),
            AgentName(agent.name.clone()),
        ))
        .id()
}

impl Replicon {
    fn summary(world: &mut World) -> Summary {
        let mut agents: Summary = world
            .query::<(&AgentName, &Health, &Ammo, &Position)>()
            .iter(world)
            .map(|(name, health, ammo, position)| (name.0.clone(), health.0, ammo.0, position.0))
            .collect();
        agents.sort_by(|a, b| a.0.cmp(&b.0));
        agents
    }
}

impl Side for Replicon {
    const NAME: &'static str = "bevy_replicon";

    fn new(workload: Workload, items: usize, clients: usize, seed: u64) -> Self {
        let (script, agents) = Script::new(workload, items, seed);
        let mut server = app();
        let mut clients: Vec<App> = (0..clients).map(|_| app()).collect();
        for client in &mut clients {
            server.connect_client(client);
        }
        let mut entities = HashMap::new();
        for (serial, agent) in (0..).zip(&agents) {
            entities.insert(serial, spawn(server.world_mut(), agent));
        }
        let mut side = Replicon {
            server,
            clients,
            script,
            entities,
            ops: Vec::new(),
        };
        catch_up(&mut side, |side| {
            side.clients.iter_mut().all(|client| {
                let world = client.world_mut();
                world.query::<&AgentName>().iter(world).count() == items
            })
        });
        side
    }

    fn mutate(&mut self) {
        self.script.tick(&mut self.ops);
        let world = self.server.world_mut();
        for op in &self.ops {
            match op {
                Op::Ammo { serial, by, .. } => {
                    let mut ammo = world.get_mut::<Ammo>(self.entities[serial]).unwrap();
                    ammo.0 = ammo.0.wrapping_add(*by);
                }
                Op::Move { serial, by, .. } => {
                    let mut position = world.get_mut::<Position>(self.entities[serial]).unwrap();
                    for (p, b) in position.0.iter_mut().zip(by) {
                        *p = moved(*p, *b);
                    }
                }
                Op::Remove { serials, .. } => {
                    for serial in serials {
                        let entity = self.entities.remove(serial).unwrap();
                        world.despawn(entity);
                    }
                }
                Op::Add { serial, agent } => {
                    let entity = spawn(world, agent);
                    self.entities.insert(*serial, entity);
                }
                Op::Swap { .. } => unreachable!("no shuffle workload inside Bevy"),
            }
        }
    }

    fn server_update(&mut self) {
        self.server.update();
    }

    fn sent_bytes(&mut self) -> u64 {
        self.server
            .world()
            .resource::<ServerMessages>()
            .iter_sent()
            .map(|(_, _, message)| message.len() as u64)
            .sum()
    }

    fn deliver(&mut self) {
        for client in &mut self.clients {
            // The server's messages to the client (and the client's last
            // replies, none: they went below), the client's update, its
            // replies (acknowledgements) to the server.
            self.server.exchange_with_client(client);
            client.update();
            self.server.exchange_with_client(client);
        }
    }

    fn check(&mut self) {
        let server = Self::summary(self.server.world_mut());
        for (i, client) in self.clients.iter_mut().enumerate() {
            let client = Self::summary(client.world_mut());
            assert_same(&server, &client, &format!("{} client {i}", Self::NAME));
        }
    }
}
