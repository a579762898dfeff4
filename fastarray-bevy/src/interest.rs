//! Area of interest from the World: each client sees the replicated
//! entities near its [`Viewer`], through an
//! [`InterestGrid`](fastarray::InterestGrid) ([`GridInterest`]).

use std::collections::HashSet;

use bevy_ecs::entity::EntityHashMap;
use bevy_ecs::prelude::*;
use bevy_transform::components::Transform;
use fastarray::{InterestGrid, Relevance, ReplicationId};

use crate::server::{Replicated, ReplicationServer};
use crate::transport::ClientId;

/// Which plane of a [`Transform`]'s translation is the ground.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroundPlane {
    /// `x` and `z`: a y-up 3D world.
    #[default]
    XZ,
    /// `x` and `y`: a 2D world.
    XY,
}

/// Interest on a grid, as a resource of the server: every [`Replicated`]
/// entity with a [`Transform`] is an item at its position, every
/// [`Viewer`] a client's area, and the server shows each client the
/// entities entering its area and hides those leaving it, in work
/// proportional to what moved. Needs [`VisibilityPolicy::Explicit`]
/// (under `All`, every client sees everything anyway). Entities without
/// a `Transform` are not on the grid: show them yourself
/// ([`ClientView::show`]); the grid never hides them.
///
/// [`VisibilityPolicy::Explicit`]: crate::VisibilityPolicy::Explicit
/// [`ClientView::show`]: crate::ClientView::show
///
/// ```
/// use bevy_app::App;
/// use bevy_ecs::prelude::*;
/// use bevy_transform::components::Transform;
/// use fastarray_bevy::{GridInterest, ServerPlugin, Viewer};
///
/// let mut app = App::new();
/// app.add_plugins(ServerPlugin::default())
///     .insert_resource(GridInterest::new(50.0));
/// // Client 7's player: it sees what is within 60 of it.
/// app.world_mut().spawn((Transform::from_xyz(0.0, 0.0, 0.0), Viewer { client: 7, radius: 60.0 }));
/// ```
#[derive(Resource)]
pub struct GridInterest {
    grid: InterestGrid,
    plane: GroundPlane,
    viewers: EntityHashMap<ClientId>,
    /// The connected clients whose views follow the grid.
    synced: HashSet<ClientId>,
}

impl GridInterest {
    /// A grid of cells `cell_size` wide (choose near half the viewers' radius),
    /// on the x–z plane.
    pub fn new(cell_size: f32) -> Self {
        Self {
            grid: InterestGrid::new(cell_size),
            plane: GroundPlane::XZ,
            viewers: EntityHashMap::default(),
            synced: HashSet::new(),
        }
    }

    /// The same grid on `plane`.
    pub fn with_plane(mut self, plane: GroundPlane) -> Self {
        self.plane = plane;
        self
    }

    /// The grid, to tune ([`InterestGrid::set_leave_margin`]).
    pub fn grid_mut(&mut self) -> &mut InterestGrid {
        &mut self.grid
    }

    /// Whether client `client`'s viewer sees `entity`.
    pub fn is_visible(&self, client: ClientId, entity: Entity) -> bool {
        self.grid.is_visible(client, item(entity))
    }

    fn ground(&self, transform: &Transform) -> [f32; 2] {
        let at = transform.translation;
        match self.plane {
            GroundPlane::XZ => [at.x, at.z],
            GroundPlane::XY => [at.x, at.y],
        }
    }
}

/// A client's eyes: the entity's [`Transform`] is the centre of the
/// client's area of interest on the [`GridInterest`], of radius `radius`.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Viewer {
    /// The client who sees.
    pub client: ClientId,
    /// How far it sees.
    pub radius: f32,
}

/// An entity as an item of the grid.
fn item(entity: Entity) -> ReplicationId {
    ReplicationId::from_raw(entity.to_bits())
}

type Moved = (
    With<Replicated>,
    Or<(Changed<Transform>, Added<Replicated>)>,
);
type Looked = Or<(Changed<Viewer>, Changed<Transform>)>;

/// Moves the grid's items and viewers, and turns what entered and left
/// each area into the clients' views.
#[allow(clippy::too_many_arguments)]
pub(crate) fn grid_interest(
    mut interest: ResMut<GridInterest>,
    server: Option<ResMut<ReplicationServer>>,
    moved: Query<(Entity, &Transform), Moved>,
    mut unreplicated: RemovedComponents<Replicated>,
    replicated: Query<(), With<Replicated>>,
    viewers: Query<(Entity, &Viewer, &Transform), Looked>,
    mut blind: RemovedComponents<Viewer>,
    still_viewers: Query<(), With<Viewer>>,
) {
    let interest = &mut *interest;
    for entity in unreplicated.read() {
        if !replicated.contains(entity) {
            interest.grid.remove_item(item(entity));
        }
    }
    for (entity, transform) in &moved {
        let at = interest.ground(transform);
        interest.grid.set_item(item(entity), at);
    }
    for entity in blind.read() {
        if !still_viewers.contains(entity)
            && let Some(client) = interest.viewers.remove(&entity)
        {
            interest.grid.remove_viewer(client);
        }
    }
    for (entity, viewer, transform) in &viewers {
        if let Some(old) = interest.viewers.insert(entity, viewer.client)
            && old != viewer.client
        {
            interest.grid.remove_viewer(old);
        }
        let at = interest.ground(transform);
        interest.grid.set_viewer(viewer.client, at, viewer.radius);
    }
    let Some(mut server) = server else {
        return;
    };
    let synced = &interest.synced;
    interest.grid.update(|client, id, relevance| {
        if !synced.contains(&client) {
            return;
        }
        let Some(view) = server.view_mut(client) else {
            return;
        };
        let entity = Entity::from_bits(id.to_raw());
        match relevance {
            Relevance::Enter => view.show(entity),
            Relevance::Leave => view.hide(entity),
        };
    });
    // A client that connected after its viewer was placed (or a viewer
    // placed for a client now connected) is shown the whole area once.
    interest
        .synced
        .retain(|&client| server.view(client).is_some());
    for &client in interest.viewers.values() {
        if interest.synced.contains(&client) {
            continue;
        }
        let Some(view) = server.view_mut(client) else {
            continue;
        };
        for id in interest.grid.visible(client) {
            view.show(Entity::from_bits(id.to_raw()));
        }
        interest.synced.insert(client);
    }
}
