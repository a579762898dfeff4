//! Bevy's `Transform`, replicable: [`TransformRep`].

use bevy_math::{Quat, Vec3};
use bevy_transform::components::Transform;
use fastarray::Replicate;

use crate::kind::ReplicateAs;

/// What a [`Transform`] travels as, with
/// `app.replicate_as::<Transform, TransformRep>()`: the translation
/// quantized to 24 bits an axis over ±16 384 (a step under 2 mm), the
/// rotation in smallest-three form at 12 bits a component (38 bits,
/// within 0.035°), the scale whole (`f32`s: it rarely changes, and
/// `1.0` stays exact). A change sends only what changed of the three.
///
/// For other ranges or precisions, write your own type the same way
/// (see [`ReplicateAs`]).
///
/// ```
/// use bevy_math::{Quat, Vec3};
/// use bevy_transform::components::Transform;
/// use fastarray_bevy::{ReplicateAs, TransformRep};
///
/// let transform = Transform::from_xyz(12.5, 0.0, -3.25).with_rotation(Quat::from_rotation_y(1.0));
/// let back = TransformRep::from_component(&transform).to_component();
/// assert!(back.translation.distance(transform.translation) < 0.002);
/// assert!(back.rotation.angle_between(transform.rotation) < 0.001);
/// assert_eq!(back.scale, Vec3::ONE);
/// ```
#[derive(Replicate, Clone, Copy, Debug, PartialEq)]
pub struct TransformRep {
    /// The position.
    #[replicate(quantize(min = -16384.0, max = 16384.0, bits = 24))]
    pub translation: Vec3,
    /// The rotation.
    #[replicate(quantize(bits = 12))]
    pub rotation: Quat,
    /// The scale.
    pub scale: Vec3,
}

impl ReplicateAs<Transform> for TransformRep {
    fn from_component(transform: &Transform) -> Self {
        Self {
            translation: transform.translation,
            rotation: transform.rotation,
            scale: transform.scale,
        }
    }

    fn to_component(&self) -> Transform {
        Transform {
            translation: self.translation,
            rotation: self.rotation,
            scale: self.scale,
        }
    }
}
