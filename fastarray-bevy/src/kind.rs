//! What replicates: a component type per [`FastArray`](fastarray::FastArray)
//! (a *kind*), registered with [`AppReplicationExt::replicate`], and how a
//! component turns into what travels ([`ReplicateAs`]).

use bevy_app::App;
use bevy_ecs::component::Component;
use bevy_ecs::entity::Entity;
use bevy_ecs::resource::Resource;
use fastarray::{FieldMask, Replicate};

/// What a component of type `C` travels as: `C` itself when it derives
/// [`Replicate`](trait@fastarray::Replicate) (every such component is
/// its own `ReplicateAs<C>`), or a type of yours standing for a component
/// you do not own, as [`TransformRep`](crate::TransformRep) stands for
/// Bevy's `Transform`.
///
/// ```
/// use bevy_ecs::prelude::*;
/// use fastarray_bevy::{ReplicateAs, Replicate};
///
/// #[derive(Component)]
/// struct Score(u64); // from a crate of someone else's
///
/// #[derive(Replicate, Clone, PartialEq)]
/// struct ScoreRep(#[replicate(varint)] u64);
///
/// impl ReplicateAs<Score> for ScoreRep {
///     fn from_component(score: &Score) -> Self {
///         ScoreRep(score.0)
///     }
///     fn to_component(&self) -> Score {
///         Score(self.0)
///     }
/// }
/// // app.replicate_as::<Score, ScoreRep>();
/// ```
pub trait ReplicateAs<C>: Replicate + Clone + Send + Sync + 'static {
    /// What the server sends for `component`.
    fn from_component(component: &C) -> Self;
    /// The component the client holds for what arrived.
    fn to_component(&self) -> C;
}

impl<C: Component + Replicate + Clone> ReplicateAs<C> for C {
    fn from_component(component: &C) -> Self {
        component.clone()
    }

    fn to_component(&self) -> C {
        self.clone()
    }
}

/// An item of a kind's array: the server's entity (sent once, when the
/// item is added: it never changes) and the component's fields, flattened
/// behind it (bit 0 of the item's mask is the entity, bits 1.. the
/// component's fields).
#[derive(Replicate, Clone, PartialEq)]
pub(crate) struct Networked<R: Replicate> {
    #[replicate(with = crate::entity)]
    pub(crate) entity: Entity,
    #[replicate(flatten)]
    pub(crate) component: R,
}

/// The component's own fields in an item's change mask.
pub(crate) fn component_fields<R: Replicate>(item_mask: FieldMask) -> FieldMask {
    item_mask.window(1, R::FIELD_COUNT)
}

/// What a kind is called in errors and logs.
pub(crate) fn kind_name<C>() -> &'static str {
    core::any::type_name::<C>()
}

/// Registration of replicated components on an [`App`].
///
/// Register the same kinds in the same order on the server and on its
/// clients: kind `n` is channel `n` of every connection (a client whose
/// kinds differ refuses the server's packets). Register them all before
/// the first update: a connection's channels are counted when it opens.
/// Add
/// [`ServerPlugin`](crate::ServerPlugin) or
/// [`ClientPlugin`](crate::ClientPlugin) (or both, for a listen server)
/// first.
pub trait AppReplicationExt {
    /// Replicates every component `C` of the entities marked
    /// [`Replicated`](crate::Replicated): one array of `C`s, with per-field
    /// deltas.
    fn replicate<C>(&mut self) -> &mut Self
    where
        C: Component + Replicate + Clone,
    {
        self.replicate_as::<C, C>()
    }

    /// Replicates components `C` as `R` (see [`ReplicateAs`]).
    fn replicate_as<C: Component, R: ReplicateAs<C>>(&mut self) -> &mut Self;

    /// Replicates resource `R` (game rules, a match's score) as one object
    /// with per-field deltas: the client's World gets the resource when
    /// it first arrives, and it is replaced whenever the server's changes.
    /// Until the server inserts it, clients hold nothing.
    fn replicate_resource<R>(&mut self) -> &mut Self
    where
        R: Resource + Replicate + Clone + Default;
}

impl AppReplicationExt for App {
    fn replicate_as<C: Component, R: ReplicateAs<C>>(&mut self) -> &mut Self {
        let server = crate::server::register::<C, R>(self);
        let client = crate::client::register::<C, R>(self);
        assert!(
            server || client,
            "replicate::<{}>(): add fastarray_bevy::ServerPlugin or ClientPlugin to the App first",
            kind_name::<C>()
        );
        self
    }

    fn replicate_resource<R>(&mut self) -> &mut Self
    where
        R: Resource + Replicate + Clone + Default,
    {
        let server = crate::server::register_resource::<R>(self);
        let client = crate::client::register_resource::<R>(self);
        assert!(
            server || client,
            "replicate_resource::<{}>(): add fastarray_bevy::ServerPlugin or ClientPlugin to the App first",
            kind_name::<R>()
        );
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(fastarray::Replicate, Clone, PartialEq)]
    struct Stats {
        armour: u8,
        #[replicate(detail = 1)]
        ammo: u16,
    }

    #[test]
    fn an_item_withholds_what_its_component_withholds() {
        const { assert!(Networked::<Stats>::WITHHOLDS) };
        assert_eq!(
            component_fields::<Stats>(Networked::<Stats>::detail_mask(0)),
            Stats::ARMOUR
        );
        assert_eq!(
            component_fields::<Stats>(Networked::<Stats>::detail_mask(1)),
            Stats::ARMOUR | Stats::AMMO
        );
    }
}
