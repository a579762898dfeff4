//! `BitCodec`, `Quantize` and `QuantizeRotation` for glam's vectors and
//! quaternions, for each glam version whose feature is on (`glam-0_32`,
//! `glam-0_33`, `glam-0_34`; `glam` is `glam-0_34`). The versions' types
//! encode alike and have the same schema hashes: a server built on one
//! glam and a client on another understand each other.
//!
//! | type | plain field | `quantize(min = .., max = .., bits = ..)` | `quantize(bits = N)` |
//! |---|---|---|---|
//! | `Vec2`, `Vec3`, `Vec3A`, `Vec4` | the axes as `f32`, raw bits | like `[f32; N]`: one range, or one per axis | — |
//! | `DVec2`, `DVec3`, `DVec4` | the axes as `f64`, raw bits | like `[f64; N]` | — |
//! | `Quat`, `DQuat` | `x, y, z, w`, raw bits | — | [`SmallestThree`](super::rotation::SmallestThree): `2 + 3·N` bits |
//!
//! A plain field is sent at full precision and compared by bits, like the
//! floats it holds (so `-0.0 ≠ 0.0` and a `NaN` is stable). `Vec3A` is
//! written as three floats, like `Vec3`, and has the same schema hash.

use super::BitCodec;
use super::quantize::{Quantize, Quantizers};
use super::rotation::QuantizeRotation;
use crate::bits::{BitReader, BitWriter};
use crate::error::{DecodeError, EncodeError};
use crate::schema;

/// `BitCodec` and `Quantize` for a glam vector or quaternion through the
/// array of its components (`to_array`, `from_array`).
macro_rules! glam_codec {
    ($ty:ty, $float:ty, $n:literal, $name:literal) => {
        impl BitCodec for $ty {
            const MIN_BITS: u64 = <[$float; $n] as BitCodec>::MIN_BITS;
            const TYPE_HASH: u64 = schema::named($name, &[]);
            const NESTS: bool = false;
            const FIXED_BITS: Option<u64> = <[$float; $n] as BitCodec>::FIXED_BITS;

            #[inline]
            fn encode(&self, writer: &mut BitWriter<'_>) -> Result<(), EncodeError> {
                self.to_array().encode(writer)
            }

            #[inline]
            fn decode(reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
                <[$float; $n]>::decode(reader).map(<$ty>::from_array)
            }

            #[inline]
            fn same(&self, other: &Self) -> bool {
                self.to_array().same(&other.to_array())
            }
        }
    };
}

macro_rules! glam_vector {
    ($ty:ty, $float:ty, $n:literal, $name:literal) => {
        glam_codec!($ty, $float, $n, $name);

        impl Quantize for $ty {
            const FLOATS: u32 = $n;
            const TYPE_HASH: u64 = schema::named($name, &[]);
            const EVERY_STEP_DECODES: bool = true;

            fn write_quantized(&self, axes: Quantizers<'_>, writer: &mut BitWriter<'_>) {
                self.to_array().write_quantized(axes, writer);
            }

            fn read_quantized(
                axes: Quantizers<'_>,
                reader: &mut BitReader<'_>,
            ) -> Result<Self, DecodeError> {
                <[$float; $n]>::read_quantized(axes, reader).map(<$ty>::from_array)
            }

            fn same_quantized(&self, other: &Self, axes: Quantizers<'_>) -> bool {
                self.to_array().same_quantized(&other.to_array(), axes)
            }

            fn same_as_read(&self, read: &Self, axes: Quantizers<'_>) -> bool {
                self.to_array().same_as_read(&read.to_array(), axes)
            }
        }
    };
}

/// Every codec above for the types of the glam crate `$glam`.
macro_rules! glam_types {
    ($glam:ident) => {
        glam_vector!($glam::Vec2, f32, 2, "Vec2");
        glam_vector!($glam::Vec3, f32, 3, "Vec3");
        glam_vector!($glam::Vec3A, f32, 3, "Vec3");
        glam_vector!($glam::Vec4, f32, 4, "Vec4");
        glam_vector!($glam::DVec2, f64, 2, "DVec2");
        glam_vector!($glam::DVec3, f64, 3, "DVec3");
        glam_vector!($glam::DVec4, f64, 4, "DVec4");

        glam_codec!($glam::Quat, f32, 4, "Quat");
        glam_codec!($glam::DQuat, f64, 4, "DQuat");

        impl QuantizeRotation for $glam::Quat {
            const TYPE_HASH: u64 = schema::named("Quat", &[]);

            fn to_xyzw(&self) -> [f64; 4] {
                self.to_array().map(f64::from)
            }

            fn from_xyzw(q: [f64; 4]) -> Self {
                $glam::Quat::from_array(q.map(|c| c as f32))
            }
        }

        impl QuantizeRotation for $glam::DQuat {
            const TYPE_HASH: u64 = schema::named("DQuat", &[]);

            fn to_xyzw(&self) -> [f64; 4] {
                self.to_array()
            }

            fn from_xyzw(q: [f64; 4]) -> Self {
                $glam::DQuat::from_array(q)
            }
        }
    };
}

#[cfg(feature = "glam-0_32")]
glam_types!(glam_0_32);
#[cfg(feature = "glam-0_33")]
glam_types!(glam_0_33);
#[cfg(feature = "glam-0_34")]
glam_types!(glam);
