//! The server: [`ServerPlugin`], the [`Replicated`] marker, and
//! [`ReplicationServer`], the resource holding the transport and a
//! [`Connection`] per client with what each client sees ([`ClientView`]).

use std::any::Any;
use std::collections::BTreeMap;
use std::time::Instant;

use bevy_app::{App, Plugin, PostUpdate, PreUpdate};
use bevy_ecs::entity::{EntityHashMap, EntityHashSet};
use bevy_ecs::message::Message;
use bevy_ecs::prelude::*;
use fastarray::Replicated as Object;
use fastarray::{
    AckEvent, Connection, ConnectionError, FastArray, Outgoing, ReplicationId, SendError, SendState,
};

use crate::join::Join;
use crate::kind::{Networked, ReplicateAs};
use crate::transport::{ClientId, ServerEvent, ServerTransport};

/// Marks an entity whose registered components replicate to clients.
/// Removing it (or despawning the entity) removes them from the clients.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replicated;

/// The client that owns a [`Replicated`] entity: its components'
/// `#[replicate(owner_only)]` fields go to that client alone, their
/// `#[replicate(skip_owner)]` fields to every other client that sees the
/// entity (see `fastarray::attributes`). Inserting, changing or removing
/// it moves the ownership at the tick's commit, and each side is sent what
/// it may now see.
///
/// ```
/// use bevy_app::App;
/// use bevy_ecs::prelude::*;
/// use fastarray_bevy::{AppReplicationExt, Owner, Replicate, Replicated, ServerPlugin};
///
/// #[derive(Component, Replicate, Clone, PartialEq, Default)]
/// struct Weapon {
///     model: u8,
///     #[replicate(owner_only)]
///     ammo: u16, // the player's own client alone
/// }
///
/// let mut app = App::new();
/// app.add_plugins(ServerPlugin::default()).replicate::<Weapon>();
/// // The player of client 7.
/// app.world_mut().spawn((Replicated, Owner(7), Weapon { model: 2, ammo: 30 }));
/// app.update();
/// ```
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner(pub ClientId);

/// The server's systems, in order: [`Receive`](Self::Receive) in
/// `PreUpdate` (clients' packets, connections), then in `PostUpdate`
/// [`Capture`](Self::Capture) (the tick's component changes into the
/// arrays) and [`Send`](Self::Send) (commit, scope, a packet per client).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerSet {
    /// Reads the transport.
    Receive,
    /// Records the tick's changes.
    Capture,
    /// Writes to the clients.
    Send,
}

/// What a client sees: every replicated entity, or those its
/// [`ClientView`] shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VisibilityPolicy {
    /// Every replicated entity (no scope: the cheapest path).
    #[default]
    All,
    /// The entities [shown](ClientView::show) to the client, each at its
    /// priority and detail level.
    Explicit,
}

/// The server plugin: replicates the registered components of every
/// [`Replicated`] entity to the clients of the [`ReplicationServer`]
/// resource (insert it when the transport is up).
///
/// ```
/// use bevy_app::App;
/// use bevy_ecs::prelude::*;
/// use fastarray_bevy::{AppReplicationExt, Replicate, Replicated, ReplicationServer, ServerPlugin, UdpServerTransport};
///
/// #[derive(Component, Replicate, Clone, PartialEq)]
/// struct Health(u8);
///
/// let mut app = App::new();
/// app.add_plugins(ServerPlugin::default()).replicate::<Health>();
/// let udp = UdpServerTransport::bind("127.0.0.1:0").unwrap();
/// app.insert_resource(ReplicationServer::new(udp));
/// app.world_mut().spawn((Replicated, Health(100)));
/// app.update(); // captured, committed; sent to whoever connected
/// ```
#[derive(Clone, Debug)]
pub struct ServerPlugin {
    /// The most packets sent to one client in a tick: a joining client's
    /// world goes over several ticks at one packet a tick, faster with
    /// more. 4 unless set.
    pub packets_per_tick: usize,
}

impl Default for ServerPlugin {
    fn default() -> Self {
        Self {
            packets_per_tick: 4,
        }
    }
}

impl Plugin for ServerPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(ServerArrays {
            kinds: Vec::new(),
            packets_per_tick: self.packets_per_tick.max(1),
        })
        .add_message::<ClientConnected>()
        .add_message::<ClientDisconnected>()
        .add_message::<FromClient>()
        .configure_sets(PostUpdate, (ServerSet::Capture, ServerSet::Send).chain())
        .add_systems(
            PreUpdate,
            receive
                .in_set(ServerSet::Receive)
                .run_if(resource_exists::<ReplicationServer>),
        )
        .add_systems(PostUpdate, send.in_set(ServerSet::Send))
        .add_systems(
            PostUpdate,
            crate::interest::grid_interest
                .in_set(ServerSet::Capture)
                .run_if(resource_exists::<crate::interest::GridInterest>),
        );
    }
}

/// A client connected (its view is its [`VisibilityPolicy`]'s default:
/// set it up here).
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConnected {
    /// The client.
    pub client: ClientId,
}

/// A client disconnected: its connection is dropped.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientDisconnected {
    /// The client.
    pub client: ClientId,
}

/// The game's data a client put after its acknowledgements
/// ([`ReplicationClient::send`](crate::ReplicationClient::send)): inputs,
/// commands.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct FromClient {
    /// The client.
    pub client: ClientId,
    /// What it sent.
    pub data: Vec<u8>,
}

/// A change to a client's view, applied at the next send.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ViewChange {
    Show(Entity),
    Hide(Entity),
    Priority(Entity, f32),
    Detail(Entity, u8),
}

/// What one client sees, under [`VisibilityPolicy::Explicit`]: the
/// entities shown, each with a priority (a share of the packet's room
/// when not everything fits; 1.0 unless set) and a detail level (the
/// fields marked `#[replicate(detail = N)]` up to it; every field unless
/// set).
/// Changes apply at the next send, to every replicated component of the
/// entity, and to components it gets later.
#[derive(Debug, Default)]
pub struct ClientView {
    shown: EntityHashSet,
    priority: EntityHashMap<f32>,
    detail: EntityHashMap<u8>,
    changes: Vec<ViewChange>,
}

impl ClientView {
    /// Shows `entity` to the client; returns whether it was hidden.
    pub fn show(&mut self, entity: Entity) -> bool {
        let new = self.shown.insert(entity);
        if new {
            self.changes.push(ViewChange::Show(entity));
        }
        new
    }

    /// Hides `entity` from the client (it leaves the client's world as out
    /// of scope, not despawned); returns whether it was shown.
    pub fn hide(&mut self, entity: Entity) -> bool {
        let was = self.shown.remove(&entity);
        if was {
            self.changes.push(ViewChange::Hide(entity));
        }
        was
    }

    /// Whether `entity` is shown.
    pub fn is_shown(&self, entity: Entity) -> bool {
        self.shown.contains(&entity)
    }

    /// The entities shown.
    pub fn shown(&self) -> impl Iterator<Item = Entity> + '_ {
        self.shown.iter().copied()
    }

    /// Sets `entity`'s priority for this client.
    pub fn set_priority(&mut self, entity: Entity, priority: f32) {
        self.priority.insert(entity, priority);
        self.changes.push(ViewChange::Priority(entity, priority));
    }

    /// Sets `entity`'s detail level for this client (0 to
    /// [`MAX_DETAIL`](fastarray::MAX_DETAIL)): the fields marked
    /// `#[replicate(detail = N)]` above it are withheld from it.
    pub fn set_detail(&mut self, entity: Entity, level: u8) {
        self.detail.insert(entity, level);
        self.changes.push(ViewChange::Detail(entity, level));
    }

    /// Forgets a despawned entity.
    fn forget(&mut self, entity: Entity) {
        self.shown.remove(&entity);
        self.priority.remove(&entity);
        self.detail.remove(&entity);
    }
}

/// One client of the server.
#[derive(Debug)]
struct Client {
    connection: Connection,
    policy: VisibilityPolicy,
    view: ClientView,
    scoped: bool,
    bytes_sent: u64,
    packets_sent: u64,
    packets_lost: u64,
    last_error: Option<ConnectionError>,
}

/// The server's transport and its clients, a [`Connection`] each. Insert
/// it as a resource; the [`ServerPlugin`]'s systems drive it.
#[derive(Resource)]
pub struct ReplicationServer {
    transport: Box<dyn ServerTransport>,
    clients: BTreeMap<ClientId, Client>,
    policy: VisibilityPolicy,
    join: Join,
    events: Vec<ServerEvent>,
    packet: Vec<u8>,
}

impl ReplicationServer {
    /// A server on `transport`, every client seeing every replicated
    /// entity.
    pub fn new(transport: impl ServerTransport) -> Self {
        Self {
            transport: Box::new(transport),
            clients: BTreeMap::new(),
            policy: VisibilityPolicy::All,
            join: Join::Delta,
            events: Vec::new(),
            packet: Vec::new(),
        }
    }

    /// The same server, new clients seeing what `policy` says.
    pub fn with_visibility(mut self, policy: VisibilityPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The same server, clients joining as `join` says. The clients
    /// follow: on a transport with a reliable channel the server tells
    /// each joining client how it joins.
    pub fn with_join(mut self, join: Join) -> Self {
        self.join = join;
        self
    }

    /// The connected clients, in order.
    pub fn clients(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.clients.keys().copied()
    }

    /// Client `client`'s view, to show and hide entities (under
    /// [`VisibilityPolicy::Explicit`]).
    pub fn view_mut(&mut self, client: ClientId) -> Option<&mut ClientView> {
        self.clients.get_mut(&client).map(|client| &mut client.view)
    }

    /// Client `client`'s view.
    pub fn view(&self, client: ClientId) -> Option<&ClientView> {
        self.clients.get(&client).map(|client| &client.view)
    }

    /// Client `client`'s connection: its link statistics, its channels'
    /// send states.
    pub fn connection(&self, client: ClientId) -> Option<&Connection> {
        self.clients.get(&client).map(|client| &client.connection)
    }

    /// The bytes sent to `client` so far.
    pub fn bytes_sent(&self, client: ClientId) -> u64 {
        self.clients
            .get(&client)
            .map_or(0, |client| client.bytes_sent)
    }

    /// Packets sent to `client` so far, and those of them lost.
    pub fn packets(&self, client: ClientId) -> (u64, u64) {
        self.clients
            .get(&client)
            .map_or((0, 0), |client| (client.packets_sent, client.packets_lost))
    }

    /// The last error writing to `client` (none if it never failed): a
    /// packet that could not be written is not sent, and its work stays
    /// due.
    pub fn last_error(&self, client: ClientId) -> Option<&ConnectionError> {
        self.clients.get(&client)?.last_error.as_ref()
    }

    /// The transport.
    pub fn transport(&self) -> &dyn ServerTransport {
        &*self.transport
    }

    /// The transport, as the type it is.
    pub fn transport_mut<T: ServerTransport>(&mut self) -> Option<&mut T> {
        let transport: &mut dyn Any = &mut *self.transport;
        transport.downcast_mut()
    }

    /// Connects `client` if it is new (and sends it the world, if it
    /// joins by snapshot).
    fn connect(&mut self, client: ClientId, kinds: &mut [Box<dyn ServerChannel>]) -> bool {
        if self.clients.contains_key(&client) {
            return false;
        }
        let channels = kinds.len();
        let mut connection = Connection::new(channels);
        connection
            .set_client(client)
            .expect("a new connection serves any client");
        self.clients.insert(
            client,
            Client {
                connection,
                policy: self.policy,
                view: ClientView::default(),
                scoped: false,
                bytes_sent: 0,
                packets_sent: 0,
                packets_lost: 0,
                last_error: None,
            },
        );
        // On a transport with a reliable channel every joining client is
        // told how it joins, so that it needs no setting of its own.
        if self.transport.has_reliable() {
            self.send_join(client, kinds);
        }
        true
    }

    /// Sends `client` its join message: a snapshot of every array, or,
    /// when it joins by delta, an empty one (deltas follow).
    fn send_join(&mut self, id: ClientId, kinds: &mut [Box<dyn ServerChannel>]) {
        let client = self.clients.get_mut(&id).expect("connected");
        let mut sections = Vec::new();
        if self.join == Join::Snapshot && client.policy == VisibilityPolicy::All {
            for (channel, kind) in kinds.iter_mut().enumerate() {
                let mut section = Vec::new();
                let state = client.connection.state_mut(channel);
                if let Err(error) = kind.snapshot_for(state, &mut section) {
                    // Committed arrays write snapshots; were one to fail,
                    // the whole join goes by delta.
                    client.last_error = Some(ConnectionError::Send { channel, error });
                    sections.clear();
                    for channel in 0..kinds.len() {
                        *client.connection.state_mut(channel) = SendState::new();
                    }
                    break;
                }
                sections.push(section);
            }
        }
        let mut message = Vec::new();
        crate::join::write(&sections, &mut message);
        self.transport.send_reliable(id, &message);
    }
}

/// A kind's array on the server, its type erased.
trait ServerChannel: Send + Sync {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn outgoing(&mut self) -> &mut dyn Outgoing;
    /// Commits the tick; pushes to `added`, if given, the entities whose
    /// items were added.
    fn commit(&mut self, added: Option<&mut Vec<Entity>>);
    /// Gives `state` an (empty) scope on this array.
    fn begin_scope(&mut self, state: &mut SendState) -> Result<(), SendError>;
    /// Applies view changes to `state`'s scope, those of entities with an
    /// item here.
    fn view(&mut self, state: &mut SendState, changes: &[ViewChange]) -> Result<(), SendError>;
    /// Readies `state` for this tick's write.
    fn prepare(&mut self, state: &mut SendState) {
        let _ = state;
    }
    /// Appends a snapshot for a joining client to `out`, and starts
    /// `state` from it; writes nothing for a channel that joins by delta.
    fn snapshot_for(&mut self, state: &mut SendState, out: &mut Vec<u8>) -> Result<(), SendError> {
        let _ = (state, out);
        Ok(())
    }
}

/// A kind's array on the server: the items, and each entity's item.
struct ServerKind<R: fastarray::Replicate> {
    array: FastArray<Networked<R>>,
    ids: EntityHashMap<ReplicationId>,
}

impl<R: fastarray::Replicate + Clone + Send + Sync + 'static> ServerChannel for ServerKind<R> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn outgoing(&mut self) -> &mut dyn Outgoing {
        &mut self.array
    }

    fn commit(&mut self, added: Option<&mut Vec<Entity>>) {
        self.array.commit();
        if let Some(added) = added {
            let array = &self.array;
            let arrived = array.last_changeset().added().iter();
            added.extend(
                arrived
                    .filter_map(|&id| array.get(id))
                    .map(|item| item.entity),
            );
        }
    }

    fn begin_scope(&mut self, state: &mut SendState) -> Result<(), SendError> {
        self.array.scope(state).map(drop)
    }

    fn snapshot_for(&mut self, state: &mut SendState, out: &mut Vec<u8>) -> Result<(), SendError> {
        self.array.write_snapshot_for(state, out).map(drop)
    }

    fn view(&mut self, state: &mut SendState, changes: &[ViewChange]) -> Result<(), SendError> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut scope = self.array.scope(state)?;
        for &change in changes {
            let entity = match change {
                ViewChange::Show(entity)
                | ViewChange::Hide(entity)
                | ViewChange::Priority(entity, _)
                | ViewChange::Detail(entity, _) => entity,
            };
            let Some(&id) = self.ids.get(&entity) else {
                continue;
            };
            match change {
                ViewChange::Show(_) => scope.include(id),
                ViewChange::Hide(_) => scope.exclude(id),
                ViewChange::Priority(_, priority) => scope.set_priority(id, priority),
                ViewChange::Detail(_, level) => scope.set_detail(id, level),
            };
        }
        Ok(())
    }
}

/// Every kind's array on the server, in registration order (kind `n` is
/// channel `n`).
#[derive(Resource)]
pub(crate) struct ServerArrays {
    kinds: Vec<Box<dyn ServerChannel>>,
    packets_per_tick: usize,
}

impl ServerArrays {
    fn kind<R: fastarray::Replicate + 'static>(&mut self, index: usize) -> &mut ServerKind<R> {
        self.kinds[index]
            .as_any_mut()
            .downcast_mut()
            .expect("a kind's index names its own array")
    }
}

/// Registers kind `C` as `R` on a server app; `false` if the app has no
/// [`ServerPlugin`].
pub(crate) fn register<C: Component, R: ReplicateAs<C>>(app: &mut App) -> bool {
    let Some(mut arrays) = app.world_mut().get_resource_mut::<ServerArrays>() else {
        return false;
    };
    let index = arrays.kinds.len();
    arrays.kinds.push(Box::new(ServerKind::<R> {
        array: FastArray::new(),
        ids: EntityHashMap::default(),
    }));
    app.add_systems(
        PostUpdate,
        (move |mut arrays: ResMut<ServerArrays>,
               changed: Query<(Entity, &C), ChangedFilter<C>>,
               mut removed: RemovedComponents<C>,
               mut unmarked: RemovedComponents<Replicated>,
               present: Query<(), (With<C>, With<Replicated>)>,
               owners: Query<&Owner>,
               moved: Query<(Entity, &Owner), OwnerChanged<C>>,
               mut disowned: RemovedComponents<Owner>| {
            let kind = arrays.kind::<R>(index);
            let added = capture(
                kind,
                &changed,
                removed.read().chain(unmarked.read()),
                &present,
            );
            capture_owners::<C, R>(kind, &added, &owners, &moved, disowned.read());
        })
        .in_set(ServerSet::Capture),
    );
    true
}

/// The entities whose component `C` a tick must record: it changed (or
/// arrived), or the entity became [`Replicated`].
type ChangedFilter<C> = (With<Replicated>, Or<(Changed<C>, Added<Replicated>)>);

/// The entities with component `C` whose [`Owner`] a tick must record:
/// inserted or changed.
type OwnerChanged<C> = (With<C>, With<Replicated>, Changed<Owner>);

/// A replicated resource on the server: one object, sent to every client.
struct ServerObject<R> {
    object: Object<R>,
    /// Whether the resource was ever there to send.
    present: bool,
}

impl<R: fastarray::Replicate + Clone + Send + Sync + 'static> ServerChannel for ServerObject<R> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn outgoing(&mut self) -> &mut dyn Outgoing {
        &mut self.object
    }

    fn commit(&mut self, _: Option<&mut Vec<Entity>>) {
        self.object.commit();
    }

    /// The object is hidden from every client until the server's World
    /// has the resource.
    fn prepare(&mut self, state: &mut SendState) {
        if self.object.is_visible(state) != self.present {
            let _ = self.object.set_visible(state, self.present);
        }
    }

    fn begin_scope(&mut self, _: &mut SendState) -> Result<(), SendError> {
        Ok(())
    }

    fn view(&mut self, _: &mut SendState, _: &[ViewChange]) -> Result<(), SendError> {
        Ok(())
    }
}

/// Registers resource `R` on a server app; `false` if the app has no
/// [`ServerPlugin`].
pub(crate) fn register_resource<R>(app: &mut App) -> bool
where
    R: Resource + fastarray::Replicate + Clone + Default,
{
    let Some(mut arrays) = app.world_mut().get_resource_mut::<ServerArrays>() else {
        return false;
    };
    let index = arrays.kinds.len();
    arrays.kinds.push(Box::new(ServerObject::<R> {
        object: Object::new(R::default()),
        present: false,
    }));
    app.add_systems(
        PostUpdate,
        (move |mut arrays: ResMut<ServerArrays>, resource: Option<Res<R>>| {
            let Some(resource) = resource.filter(|resource| resource.is_changed()) else {
                return;
            };
            let channel: &mut ServerObject<R> = arrays.kinds[index]
                .as_any_mut()
                .downcast_mut()
                .expect("a kind's index names its own object");
            *channel.object.get_mut() = resource.clone();
            channel.present = true;
        })
        .in_set(ServerSet::Capture),
    );
    true
}

/// Records one kind's changes of the tick: removals first (an entity
/// whose component went and came back in the tick keeps its item), then
/// additions and changes, the item's fields diffed once by the array.
/// Returns the entities whose items it added.
fn capture<C: Component, R: ReplicateAs<C>>(
    kind: &mut ServerKind<R>,
    changed: &Query<(Entity, &C), ChangedFilter<C>>,
    gone: impl Iterator<Item = Entity>,
    present: &Query<(), (With<C>, With<Replicated>)>,
) -> Vec<Entity> {
    let mut added = Vec::new();
    for entity in gone {
        if present.contains(entity) {
            continue;
        }
        if let Some(id) = kind.ids.remove(&entity) {
            kind.array.remove(id);
        }
    }
    for (entity, component) in changed {
        let value = R::from_component(component);
        match kind.ids.get(&entity) {
            Some(&id) => {
                if let Some(mut item) = kind.array.get_mut(id) {
                    item.component = value;
                }
            }
            None => {
                let id = kind.array.push(Networked {
                    entity,
                    component: value,
                });
                kind.ids.insert(entity, id);
                added.push(entity);
            }
        }
    }
    added
}

/// Records one kind's ownership changes of the tick: the owners of the
/// entities whose items [`capture`] just added (`added`), and of those
/// whose [`Owner`] was inserted or changed (`moved`) or removed
/// (`disowned`).
fn capture_owners<C: Component, R: fastarray::Replicate>(
    kind: &mut ServerKind<R>,
    added: &[Entity],
    owners: &Query<&Owner>,
    moved: &Query<(Entity, &Owner), OwnerChanged<C>>,
    disowned: impl Iterator<Item = Entity>,
) {
    let mut set = |entity: Entity, owner: Option<ClientId>| {
        if let Some(&id) = kind.ids.get(&entity) {
            // A server's array holds the ids it lists.
            let _ = kind.array.set_owner(id, owner);
        }
    };
    for &entity in added {
        if let Ok(owner) = owners.get(entity) {
            set(entity, Some(owner.0));
        }
    }
    for (entity, owner) in moved {
        set(entity, Some(owner.0));
    }
    for entity in disowned {
        if owners.get(entity).is_err() {
            set(entity, None);
        }
    }
}

/// `PreUpdate`: the transport's news. A packet from a client the server
/// does not know connects it.
fn receive(
    mut server: ResMut<ReplicationServer>,
    mut arrays: ResMut<ServerArrays>,
    mut connected: MessageWriter<ClientConnected>,
    mut disconnected: MessageWriter<ClientDisconnected>,
    mut from_client: MessageWriter<FromClient>,
) {
    let now = Instant::now();
    let server = &mut *server;
    let mut events = std::mem::take(&mut server.events);
    server.transport.poll(now, &mut events);
    for event in events.drain(..) {
        match event {
            ServerEvent::Connected { client } => {
                if server.connect(client, &mut arrays.kinds) {
                    connected.write(ClientConnected { client });
                }
            }
            ServerEvent::Disconnected { client } => {
                if server.clients.remove(&client).is_some() {
                    disconnected.write(ClientDisconnected { client });
                }
            }
            ServerEvent::Packet { client, packet } => {
                if server.connect(client, &mut arrays.kinds) {
                    connected.write(ClientConnected { client });
                }
                let Some(state) = server.clients.get_mut(&client) else {
                    continue;
                };
                // A duplicate, a stale or a broken packet changes nothing.
                if let Ok((_, data)) = state.connection.receive(now, &packet)
                    && !data.is_empty()
                {
                    from_client.write(FromClient {
                        client,
                        data: data.to_vec(),
                    });
                }
            }
        }
    }
    server.events = events;
    // Clients that see only what they are shown get their (empty) scopes
    // before their first packet, so they are never sent the whole world.
    for client in server.clients.values_mut() {
        if client.policy == VisibilityPolicy::Explicit && !client.scoped {
            for (channel, kind) in arrays.kinds.iter_mut().enumerate() {
                // A fresh connection has no scope elsewhere.
                let _ = kind.begin_scope(client.connection.state_mut(channel));
            }
            client.scoped = true;
        }
    }
}

/// `PostUpdate`: commits the tick, applies the views, and writes each
/// client's packets.
fn send(
    server: Option<ResMut<ReplicationServer>>,
    mut arrays: ResMut<ServerArrays>,
    mut despawned: RemovedComponents<Replicated>,
    alive: Query<(), With<Replicated>>,
) {
    let arrays = &mut *arrays;
    let mut server = server;
    // The entities whose items were added concern only clients that see
    // what they are shown.
    let explicit = server.as_ref().is_some_and(|server| {
        server
            .clients
            .values()
            .any(|client| client.policy == VisibilityPolicy::Explicit)
    });
    let mut added = Vec::new();
    for kind in &mut arrays.kinds {
        kind.commit(explicit.then_some(&mut added));
    }
    let Some(server) = server.as_deref_mut() else {
        return;
    };
    let gone: Vec<Entity> = despawned
        .read()
        .filter(|&entity| !alive.contains(entity))
        .collect();
    for client in server.clients.values_mut() {
        if client.policy == VisibilityPolicy::Explicit {
            apply_view(client, &mut arrays.kinds, &added);
            for &entity in &gone {
                client.view.forget(entity);
            }
        }
        for (channel, kind) in arrays.kinds.iter_mut().enumerate() {
            kind.prepare(client.connection.state_mut(channel));
        }
    }
    let now = Instant::now();
    let mut sources: Vec<&mut dyn Outgoing> = arrays
        .kinds
        .iter_mut()
        .map(|kind| kind.outgoing())
        .collect();
    for (&id, client) in server.clients.iter_mut() {
        write_packets(
            id,
            client,
            &mut sources,
            arrays.packets_per_tick,
            &mut *server.transport,
            &mut server.packet,
            now,
        );
    }
    server.transport.flush();
}

/// Applies a client's view changes, and shows it the new items of the
/// entities it sees.
fn apply_view(client: &mut Client, kinds: &mut [Box<dyn ServerChannel>], added: &[Entity]) {
    let mut changes = std::mem::take(&mut client.view.changes);
    for &entity in added {
        if client.view.shown.contains(&entity) {
            changes.push(ViewChange::Show(entity));
            if let Some(&priority) = client.view.priority.get(&entity) {
                changes.push(ViewChange::Priority(entity, priority));
            }
            if let Some(&level) = client.view.detail.get(&entity) {
                changes.push(ViewChange::Detail(entity, level));
            }
        }
    }
    for (channel, kind) in kinds.iter_mut().enumerate() {
        // Each channel's state is scoped on its own array only.
        let _ = kind.view(client.connection.state_mut(channel), &changes);
    }
    // The list's room serves the next tick's changes.
    changes.clear();
    client.view.changes = changes;
}

/// Writes up to `budget` packets to one client: always one (its header
/// acknowledges the client's packets), more while work is deferred.
fn write_packets(
    id: ClientId,
    client: &mut Client,
    sources: &mut [&mut dyn Outgoing],
    budget: usize,
    transport: &mut dyn ServerTransport,
    packet: &mut Vec<u8>,
    now: Instant,
) {
    let mtu = transport.max_packet(id);
    for _ in 0..budget {
        packet.clear();
        match client.connection.write_packet(now, mtu, sources, packet) {
            Ok(stats) => {
                transport.send(id, packet);
                client.bytes_sent += packet.len() as u64;
                client.packets_sent += 1;
                if stats.totals.deferred == 0 {
                    break;
                }
            }
            Err(error) => {
                client.last_error = Some(error);
                break;
            }
        }
    }
    while let Some(verdict) = client.connection.poll_verdict() {
        if let AckEvent::Lost(_) = verdict {
            client.packets_lost += 1;
        }
    }
}
