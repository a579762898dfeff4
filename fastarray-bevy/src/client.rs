//! The client: [`ClientPlugin`] and [`ReplicationClient`], the resource
//! holding the transport and the [`MirrorConnection`]; the messages the
//! game hears ([`ReplicaSpawned`], [`ReplicaChanged`], [`ReplicaLeftScope`],
//! [`ReplicaDespawned`]).

use std::any::Any;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::time::Instant;

use bevy_app::{App, Plugin, PostUpdate, PreUpdate};
use bevy_ecs::entity::{EntityHashMap, EntityMapper};
use bevy_ecs::message::Message;
use bevy_ecs::prelude::*;
use fastarray::Replicated as Object;
use fastarray::{
    Callbacks, ConnectionError, DecodeError, FastArray, FieldMask, Incoming, MirrorConnection,
    ReplicationId, WithCallbacks,
};

use crate::join::Join;
use crate::kind::{Networked, ReplicateAs, component_fields};
use crate::transport::ClientTransport;

/// The client's systems: [`Receive`](Self::Receive) in `PreUpdate`
/// (packets applied to the World, messages written), [`Reply`](Self::Reply)
/// in `PostUpdate` (acknowledgements and the game's data to the server).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientSet {
    /// Applies what arrived.
    Receive,
    /// Answers the server.
    Reply,
}

/// The client plugin: turns what the server of the [`ReplicationClient`]
/// resource sends into entities and components of this World (insert the
/// resource when the transport is up).
///
/// An entity of the server is an entity here from its first replicated
/// component on; its `Entity` fields (`#[entities]`) name this World's
/// entities. A component the server changed is replaced whole (Bevy's
/// change detection sees it); which fields changed is in
/// [`ReplicaChanged`].
///
/// ```
/// use bevy_app::App;
/// use bevy_ecs::prelude::*;
/// use fastarray_bevy::{AppReplicationExt, ClientPlugin, Replicate, ReplicationClient, UdpClientTransport};
///
/// #[derive(Component, Replicate, Clone, PartialEq)]
/// struct Health(u8);
///
/// let mut app = App::new();
/// app.add_plugins(ClientPlugin).replicate::<Health>();
/// let udp = UdpClientTransport::connect("127.0.0.1:5000".parse().unwrap()).unwrap();
/// app.insert_resource(ReplicationClient::new(udp));
/// app.update(); // applies what arrived, acknowledges it
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientPlugin;

impl Plugin for ClientPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(ClientArrays { kinds: Vec::new() })
            .init_resource::<ReplicaEntities>()
            .add_message::<ReplicaSpawned>()
            .add_message::<ReplicaLeftScope>()
            .add_message::<ReplicaDespawned>()
            .add_systems(
                PreUpdate,
                receive
                    .in_set(ClientSet::Receive)
                    .run_if(resource_exists::<ReplicationClient>),
            )
            .add_systems(
                PostUpdate,
                reply
                    .in_set(ClientSet::Reply)
                    .run_if(resource_exists::<ReplicationClient>),
            );
    }
}

/// An entity of the server got its first replicated component here (or
/// got one again after leaving the client's scope).
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaSpawned {
    /// This World's entity.
    pub entity: Entity,
}

/// A replicated component arrived or changed.
#[derive(Message, Debug)]
pub struct ReplicaChanged<C> {
    /// This World's entity.
    pub entity: Entity,
    /// The component's fields that changed (all of them when it arrived):
    /// the derive's constants name them (`Unit::HEALTH`).
    pub fields: FieldMask,
    /// Whether the component arrived (rather than changed).
    pub arrived: bool,
    marker: PhantomData<fn() -> C>,
}

impl<C> Clone for ReplicaChanged<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for ReplicaChanged<C> {}

/// An entity left the client's scope: its replicated components are
/// removed, the entity stays (references to it still resolve, and it
/// gets its components back when it comes into scope again). Despawn it
/// here if the game would rather not keep it.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaLeftScope {
    /// This World's entity.
    pub entity: Entity,
}

/// The server despawned an entity (or stopped replicating it): the
/// entity is despawned here too.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaDespawned {
    /// The entity, now despawned.
    pub entity: Entity,
}

/// The client's transport and its connection to the server. Insert it as
/// a resource; the [`ClientPlugin`]'s systems drive it.
#[derive(Resource)]
pub struct ReplicationClient {
    transport: Box<dyn ClientTransport>,
    connection: Option<MirrorConnection>,
    packets: Vec<Vec<u8>>,
    data: Vec<u8>,
    reply: Vec<u8>,
    /// Whether the server said how this client joins (and sent the
    /// snapshot, if by snapshot); always, on a transport without a
    /// reliable channel, where every join is by delta.
    joined: bool,
    messages: Vec<Vec<u8>>,
    applied: u64,
    ignored: u64,
    rejected: u64,
    last_error: Option<ConnectionError>,
}

impl ReplicationClient {
    /// A client on `transport`.
    pub fn new(transport: impl ClientTransport) -> Self {
        // On a transport with a reliable channel, the server's first
        // message says how the client joins: until it comes, the packets
        // are dropped (unacknowledged, they come again).
        let joined = !transport.has_reliable();
        Self {
            transport: Box::new(transport),
            connection: None,
            packets: Vec::new(),
            data: Vec::new(),
            reply: Vec::new(),
            joined,
            messages: Vec::new(),
            applied: 0,
            ignored: 0,
            rejected: 0,
            last_error: None,
        }
    }

    /// The same client: it joins as its server says
    /// ([`ReplicationServer::with_join`](crate::ReplicationServer::with_join)),
    /// whatever `join` is.
    #[deprecated(
        since = "0.1.0",
        note = "a client joins as its server says: set `Join` on the `ReplicationServer` only"
    )]
    pub fn with_join(self, join: Join) -> Self {
        let _ = join;
        self
    }

    /// Whether the world arrived: on a transport with a reliable channel,
    /// whether the server's join message came (with the snapshot, joining
    /// by snapshot); always, on a transport without one.
    pub fn joined(&self) -> bool {
        self.joined
    }

    /// Puts `data` (inputs, commands) after the acknowledgements of the
    /// next packet to the server, which hears it as a
    /// [`FromClient`](crate::FromClient) message. Unreliable: send again
    /// what must arrive.
    pub fn send(&mut self, data: &[u8]) {
        self.data.extend_from_slice(data);
    }

    /// The connection to the server (once the first tick ran): its link
    /// statistics.
    pub fn connection(&self) -> Option<&MirrorConnection> {
        self.connection.as_ref()
    }

    /// Packets applied so far.
    pub fn packets_applied(&self) -> u64 {
        self.applied
    }

    /// Packets read past because they were harmless to drop: duplicates,
    /// and packets older than the link's window.
    pub fn packets_ignored(&self) -> u64 {
        self.ignored
    }

    /// Packets refused: broken, not from this server's protocol, or
    /// hostile. Each changed nothing in the World.
    pub fn packets_rejected(&self) -> u64 {
        self.rejected
    }

    /// Why the last packet was refused.
    pub fn last_error(&self) -> Option<&ConnectionError> {
        self.last_error.as_ref()
    }

    /// The transport.
    pub fn transport(&self) -> &dyn ClientTransport {
        &*self.transport
    }

    /// The transport, as the type it is.
    pub fn transport_mut<T: ClientTransport>(&mut self) -> Option<&mut T> {
        let transport: &mut dyn Any = &mut *self.transport;
        transport.downcast_mut()
    }
}

/// The server's entities known to this client, and this World's entity
/// for each (a resource of the [`ClientPlugin`]). An entity referred to
/// before it arrived (or while out of scope) has one too: it gets the
/// components when they come.
///
/// A reference to an entity the server despawned names the entity this
/// World had for it, despawned too, as on the server; the last
/// [`DESPAWNED_KEPT`] despawned entities are remembered for that.
#[derive(Resource, Default)]
pub struct ReplicaEntities {
    by_server: EntityHashMap<Held>,
    despawned: VecDeque<Entity>,
}

/// How many despawned entities of the server a client remembers, so that
/// a reference to one arriving after its despawn names a despawned entity
/// rather than a new empty one.
pub const DESPAWNED_KEPT: usize = 65_536;

type EntityMap = ReplicaEntities;

#[derive(Clone, Copy)]
struct Held {
    entity: Entity,
    components: u32,
    despawned: bool,
}

impl ReplicaEntities {
    /// This World's entity for the server's entity `server`, if it has
    /// one.
    pub fn get(&self, server: Entity) -> Option<Entity> {
        self.by_server
            .get(&server)
            .filter(|held| !held.despawned)
            .map(|held| held.entity)
    }

    /// The server's entities known here, with this World's entity for
    /// each.
    pub fn iter(&self) -> impl Iterator<Item = (Entity, Entity)> + '_ {
        self.by_server
            .iter()
            .filter(|(_, held)| !held.despawned)
            .map(|(&server, held)| (server, held.entity))
    }

    /// This World's entity for the server's `entity`, spawned empty if
    /// there is none yet.
    fn entity(&mut self, world: &mut World, server: Entity) -> Entity {
        if let Some(held) = self.by_server.get(&server) {
            // A despawned one stays despawned; one the game despawned
            // itself is replaced.
            if held.despawned || world.get_entity(held.entity).is_ok() {
                return held.entity;
            }
        }
        let entity = world.spawn_empty().id();
        self.by_server.insert(
            server,
            Held {
                entity,
                components: 0,
                despawned: false,
            },
        );
        entity
    }

    /// The server despawned `server`: remembered as such for a while.
    fn despawned(&mut self, server: Entity) {
        if let Some(held) = self.by_server.get_mut(&server) {
            held.despawned = true;
            held.components = 0;
            self.despawned.push_back(server);
        }
        while self.despawned.len() > DESPAWNED_KEPT {
            if let Some(oldest) = self.despawned.pop_front() {
                self.by_server.remove(&oldest);
            }
        }
    }
}

/// Maps the server's entities in a component to this World's.
struct Mapper<'a> {
    world: &'a mut World,
    entities: &'a mut EntityMap,
}

impl EntityMapper for Mapper<'_> {
    fn get_mapped(&mut self, source: Entity) -> Entity {
        self.entities.entity(self.world, source)
    }

    fn set_mapped(&mut self, source: Entity, target: Entity) {
        self.entities.by_server.insert(
            source,
            Held {
                entity: target,
                components: 0,
                despawned: false,
            },
        );
    }
}

/// What a kind's mirror heard while a packet was applied.
enum Heard {
    Arrived(ReplicationId),
    Changed(ReplicationId, FieldMask),
    Removed(Entity),
    Left(Entity),
}

#[derive(Default)]
struct Recorder {
    heard: Vec<Heard>,
}

impl<R: fastarray::Replicate> Callbacks<Networked<R>> for Recorder {
    fn pre_remove(&mut self, _: ReplicationId, item: &Networked<R>) {
        self.heard.push(Heard::Removed(item.entity));
    }

    fn pre_leave_scope(&mut self, _: ReplicationId, item: &Networked<R>) {
        self.heard.push(Heard::Left(item.entity));
    }

    fn post_add(&mut self, id: ReplicationId, _: &Networked<R>) {
        self.heard.push(Heard::Arrived(id));
    }

    fn post_change(&mut self, id: ReplicationId, _: &Networked<R>, changed: FieldMask) {
        self.heard.push(Heard::Changed(id, changed));
    }

    fn post_change_whole(&mut self, id: ReplicationId, _: &Networked<R>, changed: FieldMask) {
        self.heard.push(Heard::Changed(id, changed));
    }
}

/// A kind's mirror on the client, its type erased.
trait ClientChannel: Send + Sync {
    fn incoming(&mut self) -> Box<dyn Incoming + '_>;
    /// Whether `snapshot` is one this mirror would take.
    fn check_snapshot(&self, snapshot: &[u8]) -> Result<(), DecodeError>;
    /// Applies a snapshot, heard as a delta would be (then [`flush`](Self::flush)).
    fn apply_snapshot(&mut self, snapshot: &[u8]) -> Result<(), DecodeError>;
    /// Carries what the last packet did into the World.
    fn flush(&mut self, world: &mut World, entities: &mut EntityMap);
}

struct ClientKind<C, R: fastarray::Replicate> {
    mirror: FastArray<Networked<R>>,
    recorder: Recorder,
    marker: PhantomData<fn() -> C>,
}

impl<C: Component, R: ReplicateAs<C>> ClientChannel for ClientKind<C, R> {
    fn incoming(&mut self) -> Box<dyn Incoming + '_> {
        Box::new(WithCallbacks::new(&mut self.mirror, &mut self.recorder))
    }

    fn check_snapshot(&self, snapshot: &[u8]) -> Result<(), DecodeError> {
        FastArray::<Networked<R>>::from_snapshot_with_limits(snapshot, self.mirror.limits())
            .map(drop)
    }

    fn apply_snapshot(&mut self, snapshot: &[u8]) -> Result<(), DecodeError> {
        self.mirror
            .apply_snapshot_with(snapshot, &mut self.recorder)
            .map(drop)
    }

    fn flush(&mut self, world: &mut World, entities: &mut EntityMap) {
        for heard in self.recorder.heard.drain(..) {
            match heard {
                Heard::Arrived(id) => insert::<C, R>(&self.mirror, id, None, world, entities),
                Heard::Changed(id, mask) => {
                    insert::<C, R>(&self.mirror, id, Some(mask), world, entities);
                }
                Heard::Removed(server) => remove::<C>(server, true, world, entities),
                Heard::Left(server) => remove::<C>(server, false, world, entities),
            }
        }
    }
}

/// Puts item `id`'s component on its entity: arrived (`changed` is
/// `None`) or changed.
fn insert<C: Component, R: ReplicateAs<C>>(
    mirror: &FastArray<Networked<R>>,
    id: ReplicationId,
    changed: Option<FieldMask>,
    world: &mut World,
    entities: &mut EntityMap,
) {
    // An item removed later in the same packet has nothing to show.
    let Some(item) = mirror.get(id) else {
        return;
    };
    let entity = entities.entity(world, item.entity);
    let mut component = item.component.to_component();
    C::map_entities(&mut component, &mut Mapper { world, entities });
    // An entity the server despawned stays despawned: a component for it
    // (which only a broken or hostile server sends) goes nowhere.
    let Ok(mut entity_mut) = world.get_entity_mut(entity) else {
        return;
    };
    entity_mut.insert(component);
    let fields = match changed {
        Some(mask) => component_fields::<R>(mask),
        None => FieldMask::all(R::FIELD_COUNT),
    };
    if changed.is_none()
        && let Some(held) = entities.by_server.get_mut(&item.entity)
    {
        held.components += 1;
        if held.components == 1 {
            world.write_message(ReplicaSpawned { entity });
        }
    }
    world.write_message(ReplicaChanged::<C> {
        entity,
        fields,
        arrived: changed.is_none(),
        marker: PhantomData,
    });
}

/// Takes a component of the server's entity `server` off its entity:
/// removed by the server (`despawned`) or out of scope.
fn remove<C: Component>(
    server: Entity,
    despawned: bool,
    world: &mut World,
    entities: &mut EntityMap,
) {
    let Some(held) = entities
        .by_server
        .get_mut(&server)
        .filter(|held| !held.despawned)
    else {
        return;
    };
    let entity = held.entity;
    held.components = held.components.saturating_sub(1);
    let last = held.components == 0;
    if let Ok(mut entity_mut) = world.get_entity_mut(entity) {
        entity_mut.remove::<C>();
    }
    if !last {
        return;
    }
    if despawned {
        entities.despawned(server);
        world.despawn(entity);
        world.write_message(ReplicaDespawned { entity });
    } else {
        world.write_message(ReplicaLeftScope { entity });
    }
}

/// A replicated resource's mirror on the client.
struct ClientObject<R> {
    mirror: Object<R>,
    heard: ObjectHeard,
}

/// Whether a resource's object arrived or changed in a packet.
#[derive(Default)]
struct ObjectHeard(bool);

impl<R> Callbacks<R> for ObjectHeard {
    fn post_add(&mut self, _: ReplicationId, _: &R) {
        self.0 = true;
    }

    fn post_change(&mut self, _: ReplicationId, _: &R, _: FieldMask) {
        self.0 = true;
    }

    fn post_change_whole(&mut self, _: ReplicationId, _: &R, _: FieldMask) {
        self.0 = true;
    }
}

impl<R: Resource + fastarray::Replicate + Clone> ClientChannel for ClientObject<R> {
    fn incoming(&mut self) -> Box<dyn Incoming + '_> {
        Box::new(WithCallbacks::new(&mut self.mirror, &mut self.heard))
    }

    fn check_snapshot(&self, snapshot: &[u8]) -> Result<(), DecodeError> {
        Object::<R>::from_snapshot_with_limits(snapshot, self.mirror.limits()).map(drop)
    }

    fn apply_snapshot(&mut self, snapshot: &[u8]) -> Result<(), DecodeError> {
        self.mirror
            .apply_snapshot_with(snapshot, &mut self.heard)
            .map(drop)
    }

    fn flush(&mut self, world: &mut World, _: &mut EntityMap) {
        if std::mem::take(&mut self.heard.0) {
            world.insert_resource(self.mirror.get().clone());
        }
    }
}

/// Registers resource `R` on a client app; `false` if the app has no
/// [`ClientPlugin`].
pub(crate) fn register_resource<R>(app: &mut App) -> bool
where
    R: Resource + fastarray::Replicate + Clone + Default,
{
    let Some(mut arrays) = app.world_mut().get_resource_mut::<ClientArrays>() else {
        return false;
    };
    arrays.kinds.push(Box::new(ClientObject::<R> {
        mirror: Object::mirror(),
        heard: ObjectHeard::default(),
    }));
    true
}

/// Every kind's mirror on the client, in registration order.
#[derive(Resource)]
pub(crate) struct ClientArrays {
    kinds: Vec<Box<dyn ClientChannel>>,
}

/// Registers kind `C` as `R` on a client app; `false` if the app has no
/// [`ClientPlugin`].
pub(crate) fn register<C: Component, R: ReplicateAs<C>>(app: &mut App) -> bool {
    let Some(mut arrays) = app.world_mut().get_resource_mut::<ClientArrays>() else {
        return false;
    };
    arrays.kinds.push(Box::new(ClientKind::<C, R> {
        mirror: FastArray::mirror(),
        recorder: Recorder::default(),
        marker: PhantomData,
    }));
    app.add_message::<ReplicaChanged<C>>();
    true
}

/// `PreUpdate`: applies the server's packets to the mirrors, then to the
/// World, one packet at a time.
fn receive(world: &mut World) {
    world.resource_scope(|world, mut client: Mut<ReplicationClient>| {
        world.resource_scope(|world, mut arrays: Mut<ClientArrays>| {
            world.resource_scope(|world, mut entities: Mut<ReplicaEntities>| {
                receive_into(&mut client, &mut arrays.kinds, world, &mut entities);
            });
        });
    });
}

/// What [`receive`] does, its resources taken out of the World.
fn receive_into(
    client: &mut ReplicationClient,
    kinds: &mut [Box<dyn ClientChannel>],
    world: &mut World,
    entities: &mut EntityMap,
) {
    let now = Instant::now();
    let mut messages = std::mem::take(&mut client.messages);
    client.transport.poll_reliable(now, &mut messages);
    for message in messages.drain(..) {
        if client.joined {
            // Only a transport that says it has no reliable channel, yet
            // delivers the server's join message, gets here: its snapshot
            // cannot be applied over the deltas already applied.
            client.rejected += 1;
            client.last_error = Some(ConnectionError::Decode {
                channel: usize::MAX,
                error: DecodeError::Custom {
                    bit_offset: 0,
                    message: "a join message after the client joined: its transport delivers \
                              reliable messages but its has_reliable() says false",
                },
            });
            continue;
        }
        match join_by_snapshot(&message, kinds, world, entities) {
            Ok(()) => client.joined = true,
            Err(error) => {
                client.rejected += 1;
                client.last_error = Some(error);
            }
        }
    }
    client.messages = messages;

    let mut packets = std::mem::take(&mut client.packets);
    client.transport.poll(now, &mut packets);
    if !client.joined {
        // Before the snapshot, the deltas that follow it mean nothing:
        // unacknowledged, they come again.
        client.ignored += packets.len() as u64;
        packets.clear();
    }
    let connection = connection_for(&mut client.connection, kinds.len());
    for packet in packets.drain(..) {
        let mut incoming: Vec<Box<dyn Incoming + '_>> =
            kinds.iter_mut().map(|kind| kind.incoming()).collect();
        let mut mirrors: Vec<&mut dyn Incoming> = incoming
            .iter_mut()
            .map(|mirror| -> &mut dyn Incoming { &mut **mirror })
            .collect();
        let result = connection.apply(now, &packet, &mut mirrors);
        drop(mirrors);
        drop(incoming);
        match result {
            Ok(_) => {
                client.applied += 1;
                for kind in kinds.iter_mut() {
                    kind.flush(world, entities);
                }
            }
            Err(error) if error.is_harmless() => client.ignored += 1,
            Err(error) => {
                client.rejected += 1;
                client.last_error = Some(error);
            }
        }
    }
    client.packets = packets;
}

/// Applies a snapshot message: every channel's snapshot checked first,
/// then all applied and heard as a delta would be.
fn join_by_snapshot(
    message: &[u8],
    kinds: &mut [Box<dyn ClientChannel>],
    world: &mut World,
    entities: &mut EntityMap,
) -> Result<(), ConnectionError> {
    let framing = |error| ConnectionError::Decode {
        channel: usize::MAX,
        error,
    };
    let sections = crate::join::read(message, kinds.len()).ok_or_else(|| {
        framing(DecodeError::Custom {
            bit_offset: 0,
            message: "not a snapshot message of this protocol",
        })
    })?;
    for (channel, (kind, section)) in kinds.iter().zip(&sections).enumerate() {
        if !section.is_empty() {
            kind.check_snapshot(section)
                .map_err(|error| ConnectionError::Decode { channel, error })?;
        }
    }
    for (channel, (kind, section)) in kinds.iter_mut().zip(&sections).enumerate() {
        if !section.is_empty() {
            // Checked above: the same bytes decode the same way.
            kind.apply_snapshot(section)
                .map_err(|error| ConnectionError::Decode { channel, error })?;
        }
    }
    for kind in kinds.iter_mut() {
        kind.flush(world, entities);
    }
    Ok(())
}

/// The connection to the server, made at first use with one channel a
/// kind (every kind is registered by then).
fn connection_for(
    connection: &mut Option<MirrorConnection>,
    channels: usize,
) -> &mut MirrorConnection {
    connection.get_or_insert_with(|| MirrorConnection::new(channels))
}

/// `PostUpdate`: the client's packet of the tick: acknowledgements, then
/// the game's data.
fn reply(mut client: ResMut<ReplicationClient>, arrays: Res<ClientArrays>) {
    let client = &mut *client;
    client.reply.clear();
    let connection = connection_for(&mut client.connection, arrays.kinds.len());
    if connection
        .write_reply(Instant::now(), &client.data, &mut client.reply)
        .is_ok()
    {
        client.transport.send(&client.reply);
    }
    client.transport.flush();
    client.data.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use fastarray::SendState;

    #[derive(Component, fastarray::Replicate, Clone, Debug, PartialEq)]
    struct Health(u8);

    /// A component for an entity the server said it despawned (a broken
    /// or hostile server) changes nothing, and panics nothing.
    #[test]
    fn a_component_for_a_despawned_entity_goes_nowhere() {
        let mut world = World::new();
        let mut entities = ReplicaEntities::default();
        let ghost = Entity::from_bits(7);
        let here = entities.entity(&mut world, ghost);
        world.despawn(here);
        entities.despawned(ghost);

        let mut server = FastArray::new();
        server.push(Networked {
            entity: ghost,
            component: Health(3),
        });
        server.commit();
        let mut packet = Vec::new();
        server
            .write_delta(&mut SendState::new(), 0, &mut packet)
            .unwrap();
        let mut kind = ClientKind::<Health, Health> {
            mirror: FastArray::mirror(),
            recorder: Recorder::default(),
            marker: PhantomData,
        };
        kind.mirror
            .apply_delta(&packet, &mut kind.recorder)
            .unwrap();
        let before = world.entities().len();
        kind.flush(&mut world, &mut entities);
        assert_eq!(world.entities().len(), before);
        assert!(world.query::<&Health>().iter(&world).next().is_none());
        assert_eq!(entities.get(ghost), None);
    }
}
