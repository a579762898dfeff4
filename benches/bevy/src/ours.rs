//! The fastarray-bevy side: each agent one component,
//! [`AgentState`](crate::ours::AgentState) (fastarray sends the changed
//! fields of a component, so one component is its best layout: an
//! entity's id goes once per component kind when it spawns, and nothing
//! per change is saved by splitting).

use std::collections::HashMap;

use bevy::MinimalPlugins;
use bevy_app::App;
use bevy_ecs::prelude::*;
use fastarray_bench::{Agent, Op, Script, Workload};
use fastarray_bevy::{
    AppReplicationExt, ClientPlugin, Replicate, Replicated, ReplicationClient, ReplicationServer,
    ServerPlugin,
};

use crate::memory::{MemoryClient, MemoryServer, deliver, server_transport};
use crate::{Side, Summary, assert_same, catch_up, moved};

/// An agent as a component: `fastarray-bench`'s `Agent`, its fields
/// flattened (position quantized to 16 bits a coordinate, velocity
/// 3 × f32, health u8, ammo u16, name); a spawn carries the fields in which
/// it differs from `Agent`'s default, a fresh agent.
#[derive(Component, Replicate, Clone, PartialEq, Default)]
#[replicate(default_baseline)]
pub struct AgentState {
    /// The agent.
    #[replicate(flatten)]
    pub agent: Agent,
}

/// The server app and its clients.
pub struct Ours {
    server: App,
    clients: Vec<App>,
    script: Script,
    entities: HashMap<u64, Entity>,
    ops: Vec<Op>,
}

fn protocol(app: &mut App) {
    app.replicate::<AgentState>();
}

impl Ours {
    fn summary(world: &mut World) -> Summary {
        let mut agents: Summary = world
            .query::<&AgentState>()
            .iter(world)
            .map(|a| {
                let a = &a.agent;
                (a.name.clone(), a.health, a.ammo, a.position)
            })
            .collect();
        agents.sort_by(|a, b| a.0.cmp(&b.0));
        agents
    }
}

impl Side for Ours {
    const NAME: &'static str = "fastarray-bevy";

    fn new(workload: Workload, items: usize, clients: usize, seed: u64) -> Self {
        let (script, agents) = Script::new(workload, items, seed);
        let mut server = App::new();
        server
            .add_plugins((MinimalPlugins, ServerPlugin::default()))
            .insert_resource(ReplicationServer::new(MemoryServer::default()));
        protocol(&mut server);
        let clients: Vec<App> = (0..clients)
            .map(|_| {
                let mut client = App::new();
                client
                    .add_plugins((MinimalPlugins, ClientPlugin))
                    .insert_resource(ReplicationClient::new(MemoryClient::default()));
                protocol(&mut client);
                client
            })
            .collect();
        let mut entities = HashMap::new();
        for (serial, agent) in (0..).zip(agents) {
            let entity = server
                .world_mut()
                .spawn((Replicated, AgentState { agent }))
                .id();
            entities.insert(serial, entity);
        }
        let mut side = Ours {
            server,
            clients,
            script,
            entities,
            ops: Vec::new(),
        };
        catch_up(&mut side, |side| {
            side.clients.iter_mut().all(|client| {
                let world = client.world_mut();
                world.query::<&AgentState>().iter(world).count() == items
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
                    let mut state = world.get_mut::<AgentState>(self.entities[serial]).unwrap();
                    state.agent.ammo = state.agent.ammo.wrapping_add(*by);
                }
                Op::Move { serial, by, .. } => {
                    let mut state = world.get_mut::<AgentState>(self.entities[serial]).unwrap();
                    for (p, b) in state.agent.position.iter_mut().zip(by) {
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
                    let entity = world
                        .spawn((
                            Replicated,
                            AgentState {
                                agent: agent.clone(),
                            },
                        ))
                        .id();
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
        server_transport(&mut self.server).pending_bytes()
    }

    fn deliver(&mut self) {
        deliver(&mut self.server, &mut self.clients);
    }

    fn check(&mut self) {
        let server = Self::summary(self.server.world_mut());
        for (i, client) in self.clients.iter_mut().enumerate() {
            let client = Self::summary(client.world_mut());
            assert_same(&server, &client, &format!("{} client {i}", Self::NAME));
        }
    }
}
