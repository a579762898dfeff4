//! Quantized rotations (`#[replicate(quantize(bits = N))]` on a unit
//! quaternion): the smallest-three encoding ([`SmallestThree`]) and the
//! [`QuantizeRotation`] trait of the quaternion types that take it.

use crate::bits::{BitReader, BitWriter};
use crate::error::DecodeError;
use crate::schema;

/// 1/√2: the largest magnitude of a component that is not the largest of a
/// unit quaternion.
const HALF_SQRT2: f64 = core::f64::consts::FRAC_1_SQRT_2;

/// The smallest-three encoding of a unit quaternion `(x, y, z, w)` in
/// `2 + 3·N` bits: the index of the component of largest magnitude (2
/// bits), then the other three in index order, each quantized to `N` bits
/// over `[−1/√2, 1/√2]` (no other component of a unit quaternion can be
/// larger). `q` and `−q` are the same rotation, so the sender negates the
/// quaternion when the largest component is negative; the receiver rebuilds
/// it as `√(1 − a² − b² − c²)`.
///
/// Each of the three is one of `2^N − 1` evenly spaced values, an odd
/// count, so `0` is exact: the identity (and any rotation about one axis by
/// a multiple of 180°) arrives exactly. The input is normalized first; a
/// zero, infinite or `NaN` quaternion is sent as the identity. The
/// receiver always gets a unit quaternion, whatever bits it reads.
///
/// # Error bound
///
/// With `e = 1 / (√2·(2^N − 2))` (half a step), each of the three sent
/// components is within `e` of the normalized input's, so they are within
/// `δ = √3·e` together; lifting them back onto the unit sphere stretches
/// that by at most `1 / √(1 − (√3/2 + δ)²)` (the rebuilt component is at
/// least 1/2). The code sent is then settled (see
/// [`quantize_as`](Self::quantize_as)), which may move it by a step on each
/// of the three: `√3·2e` more. [`max_error`](Self::max_error) is the sum: a
/// bound on the distance between the received quaternion and the
/// normalized input or its negation (the same rotation), as 4-vectors,
/// plus a few `f64` rounding errors. About `4·√3·e = 2·√6 / (2^N − 2)` for
/// `N` of 8 or more: `4.8e-3` at `N = 10`. The rotations then differ by an
/// angle of at most `4·asin(max_error / 2)` radians (0.55° at `N = 10`). An
/// `f32` quaternion adds the rounding of its components to `f32` and of
/// the settling through them: at most `2^−22` in all (measured over random
/// and edge-case rotations at every bit count, `tests/core/glam.rs`).
///
/// ```
/// use fastarray_core::SmallestThree;
///
/// const Q: SmallestThree = SmallestThree::new(10);
/// assert_eq!(Q.wire_bits(), 32);
/// let turn = [0.0, 0.0, 0.5f64.sqrt(), 0.5f64.sqrt()]; // 90° about z
/// let (largest, rest) = Q.quantize(turn);
/// let back = Q.dequantize(largest, rest);
/// let distance = turn.iter().zip(back).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
/// assert!(distance <= Q.max_error());
/// let identity = [0.0, 0.0, 0.0, 1.0];
/// let (largest, rest) = Q.quantize(identity);
/// assert_eq!(Q.dequantize(largest, rest), identity);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallestThree {
    bits: u32,
}

impl SmallestThree {
    /// The encoding with `bits` bits (4..=32) for each of the three smallest
    /// components.
    ///
    /// # Panics
    /// On a bit count outside 4..=32; in a `const` this is a compile error.
    pub const fn new(bits: u32) -> Self {
        assert!(
            bits >= 4 && bits <= 32,
            "quantize(bits = N) of a quaternion needs 4..=32 bits"
        );
        Self { bits }
    }

    /// Bits per component.
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// Bits per quaternion: `2 + 3·bits`.
    pub const fn wire_bits(&self) -> u32 {
        2 + 3 * self.bits
    }

    /// The highest step index: the steps are `0..=top`, `top` even.
    const fn top(&self) -> u64 {
        (1u64 << self.bits) - 2
    }

    /// The distance between steps.
    fn step(&self) -> f64 {
        2.0 * HALF_SQRT2 / self.top() as f64
    }

    /// The largest distance, as 4-vectors, between a normalized quaternion
    /// (with its largest component made positive) and what the receiver
    /// gets (see [Error bound](Self#error-bound)).
    pub fn max_error(&self) -> f64 {
        let delta = 3f64.sqrt() * self.step() / 2.0;
        let reach = 3f64.sqrt() / 2.0 + delta;
        // Settling (see `quantize_as`) may move the code by a step on
        // each of the three: one more `√3·step`.
        delta / (1.0 - reach * reach).sqrt() + 3f64.sqrt() * self.step() + 8.0 * f64::EPSILON
    }

    /// The index of the largest component and the step indices of the
    /// other three, in index order, of `q = [x, y, z, w]`, for a receiver
    /// that keeps `f64` components (see [`quantize_as`](Self::quantize_as)).
    pub fn quantize(&self, q: [f64; 4]) -> (usize, [u64; 3]) {
        self.quantize_as(q, |q| q)
    }

    /// The code of `q` for a receiver that stores what it decodes through
    /// `store` (an `f32` quaternion rounds each component): the code whose
    /// stored value re-encodes to that same code, so a mirror's quaternion
    /// compares with its server's ([`Replicate::wire_eq`](crate::Replicate::wire_eq))
    /// and is not a change when sent back.
    ///
    /// The nearest code does not always have that property: near ties the
    /// rebuilt largest component can come out below a small one, the
    /// rescaling moves the small ones, and an `f32` cannot hold steps finer
    /// than its own spacing. So the code settles: from the nearest code, go
    /// to the nearest code of what the receiver would store, until it
    /// repeats; a cycle settles on its smallest code, which every member of
    /// the cycle reaches too. Each move is within the encoding's resolution
    /// of the last (see [Error bound](Self#error-bound)).
    pub fn quantize_as(
        &self,
        q: [f64; 4],
        store: impl Fn([f64; 4]) -> [f64; 4],
    ) -> (usize, [u64; 3]) {
        self.settle(self.quantize_nearest(q), store)
    }

    /// Whether `a` and `b` are sent alike by a receiver that stores through
    /// `store`: equal nearest codes settle alike, so only codes that differ
    /// are settled (the common unchanged value costs one quantization each).
    pub fn same_as(&self, a: [f64; 4], b: [f64; 4], store: impl Fn([f64; 4]) -> [f64; 4]) -> bool {
        let (a, b) = (self.quantize_nearest(a), self.quantize_nearest(b));
        a == b || self.settle(a, &store) == self.settle(b, &store)
    }

    /// The settled code reached from the nearest code `start` (see
    /// [`quantize_as`](Self::quantize_as)): a code that is its own next
    /// code, or the smallest code of the cycle the walk enters (found with
    /// Brent's method, without storing the walk).
    fn settle(
        &self,
        start: (usize, [u64; 3]),
        store: impl Fn([f64; 4]) -> [f64; 4],
    ) -> (usize, [u64; 3]) {
        /// Moves before giving up on settling: `f32` quaternions at 24 to 30
        /// bits can take dozens; none in the tests takes more.
        const MOVES: usize = 64;
        let next =
            |code: (usize, [u64; 3])| self.quantize_nearest(store(self.dequantize(code.0, code.1)));
        let mut hare = next(start);
        if hare == start {
            return start;
        }
        // Brent: the tortoise waits at powers of two until the hare meets it.
        let (mut tortoise, mut power, mut length) = (start, 1usize, 1usize);
        for _ in 0..MOVES {
            if tortoise == hare {
                // `hare` is on a cycle of `length` codes: take its smallest.
                let mut best = hare;
                let mut code = next(hare);
                while code != hare {
                    best = best.min(code);
                    code = next(code);
                }
                return best;
            }
            if power == length {
                tortoise = hare;
                power *= 2;
                length = 0;
            }
            hare = next(hare);
            length += 1;
        }
        hare
    }

    /// The nearest code of `q`, before settling.
    fn quantize_nearest(&self, q: [f64; 4]) -> (usize, [u64; 3]) {
        let q = normalize(q).unwrap_or([0.0, 0.0, 0.0, 1.0]);
        let mut largest = 0;
        for i in 1..4 {
            if q[i].abs() > q[largest].abs() {
                largest = i;
            }
        }
        let sign = if q[largest] < 0.0 { -1.0 } else { 1.0 };
        let center = self.top() / 2;
        let mut rest = [0u64; 3];
        for (slot, i) in rest.iter_mut().zip((0..4).filter(|&i| i != largest)) {
            let offset = (sign * q[i] / self.step()).round();
            // Within ±center for a normalized input; clamped against rounding.
            let offset = offset.clamp(-(center as f64), center as f64);
            *slot = (center as f64 + offset) as u64;
        }
        (largest, rest)
    }

    /// The unit quaternion `[x, y, z, w]` of a largest-component index and
    /// three step indices (any values: steps past the highest count as the
    /// highest, and the result is normalized).
    pub fn dequantize(&self, largest: usize, rest: [u64; 3]) -> [f64; 4] {
        let center = (self.top() / 2) as f64;
        let step = self.step();
        let small = rest.map(|s| (s.min(self.top()) as f64 - center) * step);
        let sum: f64 = small.iter().map(|c| c * c).sum();
        let mut q = [0.0; 4];
        let mut others = small.into_iter();
        for (i, slot) in q.iter_mut().enumerate() {
            *slot = if i == largest % 4 {
                (1.0 - sum).max(0.0).sqrt()
            } else {
                others.next().unwrap_or(0.0)
            };
        }
        let norm = q.iter().map(|c| c * c).sum::<f64>().sqrt();
        if (norm - 1.0).abs() > f64::EPSILON {
            q = q.map(|c| c / norm);
        }
        q
    }

    /// Writes `q = [x, y, z, w]`.
    pub fn write(&self, q: [f64; 4], writer: &mut BitWriter<'_>) {
        self.write_code(self.quantize(q), writer);
    }

    /// Writes a code of [`quantize`](Self::quantize) or
    /// [`quantize_as`](Self::quantize_as).
    pub fn write_code(&self, (largest, rest): (usize, [u64; 3]), writer: &mut BitWriter<'_>) {
        writer.write_bits(largest as u64, 2);
        for step in rest {
            writer.write_bits(step, self.bits);
        }
    }

    /// Reads a quaternion written by [`write`](Self::write). Any bits
    /// decode to a unit quaternion; only the end of the input is an error.
    pub fn read(&self, reader: &mut BitReader<'_>) -> Result<[f64; 4], DecodeError> {
        let largest = reader.read_bits(2)? as usize;
        let mut rest = [0u64; 3];
        for step in &mut rest {
            *step = reader.read_bits(self.bits)?;
        }
        Ok(self.dequantize(largest, rest))
    }

    /// Whether `a` and `b` are sent alike: the change test, so jitter below
    /// the resolution (and `q` against `−q`) is not a change.
    pub fn same(&self, a: [f64; 4], b: [f64; 4]) -> bool {
        self.same_as(a, b, |q| q)
    }

    /// The schema hash of this encoding of a type with hash `type_hash`.
    pub const fn type_hash(&self, type_hash: u64) -> u64 {
        schema::named("smallest three", &[type_hash, self.bits as u64])
    }
}

/// `q` scaled to length 1, or `None` if it has no direction (zero, or a
/// component infinite or `NaN`). Scaled by its largest component first, so
/// that neither tiny nor huge components underflow or overflow on squaring.
fn normalize(q: [f64; 4]) -> Option<[f64; 4]> {
    let scale = q.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    if !(scale.is_finite() && scale > 0.0) || q.iter().any(|c| c.is_nan()) {
        return None;
    }
    let q = q.map(|c| c / scale);
    let norm = q.iter().map(|c| c * c).sum::<f64>().sqrt();
    Some(q.map(|c| c / norm))
}

/// A unit quaternion that can be sent as [`SmallestThree`]
/// (`#[replicate(quantize(bits = N))]`, without `min` and `max`): glam's
/// `Quat` and `DQuat` with a glam feature (`glam-0_32`, `glam-0_33`, `glam-0_34`).
#[diagnostic::on_unimplemented(
    message = "`#[replicate(quantize(bits = N))]` without `min` and `max` is for unit quaternions (glam `Quat`, `DQuat`), not `{Self}`",
    label = "not a quaternion",
    note = "give other floats a range: `quantize(min = -100.0, max = 100.0, bits = 16)`"
)]
#[cfg_attr(
    not(any(feature = "glam-0_32", feature = "glam-0_33", feature = "glam-0_34")),
    diagnostic::on_unimplemented(
        note = "glam's vectors and quaternions need fastarray's feature for the glam version they come from: `glam-0_32` (Bevy 0.19), `glam-0_33` (Bevy 0.20) or `glam-0_34`"
    )
)]
#[cfg_attr(
    any(feature = "glam-0_32", feature = "glam-0_33", feature = "glam-0_34"),
    diagnostic::on_unimplemented(
        note = "if `{Self}` is a glam type, it comes from a glam version whose fastarray feature is off (this build has those below): `cargo tree -i glam` lists the versions in your build, and `glam-0_32` (Bevy 0.19), `glam-0_33` (Bevy 0.20) and `glam-0_34` turn them on"
    )
)]
#[cfg_attr(
    feature = "glam-0_32",
    diagnostic::on_unimplemented(note = "glam 0.32's types are encoded (feature `glam-0_32`)")
)]
#[cfg_attr(
    feature = "glam-0_33",
    diagnostic::on_unimplemented(note = "glam 0.33's types are encoded (feature `glam-0_33`)")
)]
#[cfg_attr(
    feature = "glam-0_34",
    diagnostic::on_unimplemented(note = "glam 0.34's types are encoded (feature `glam-0_34`)")
)]
pub trait QuantizeRotation: Sized {
    /// The schema hash of the unquantized type.
    const TYPE_HASH: u64;

    /// The components `[x, y, z, w]`.
    fn to_xyzw(&self) -> [f64; 4];

    /// The quaternion of unit components `[x, y, z, w]`.
    fn from_xyzw(q: [f64; 4]) -> Self;

    /// Writes the quaternion as `encoding`.
    fn write_rotation(&self, encoding: &SmallestThree, writer: &mut BitWriter<'_>) {
        encoding.write_code(self.rotation_code(encoding), writer);
    }

    /// The code sent for `self`: settled for what this type stores of a
    /// decoded quaternion ([`SmallestThree::quantize_as`]).
    fn rotation_code(&self, encoding: &SmallestThree) -> (usize, [u64; 3]) {
        encoding.quantize_as(self.to_xyzw(), |q| Self::from_xyzw(q).to_xyzw())
    }

    /// Reads a quaternion written by [`write_rotation`](Self::write_rotation).
    fn read_rotation(
        encoding: &SmallestThree,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError> {
        encoding.read(reader).map(Self::from_xyzw)
    }

    /// Whether `self` and `other` are sent alike: the change test.
    fn same_rotation(&self, other: &Self, encoding: &SmallestThree) -> bool {
        encoding.same_as(self.to_xyzw(), other.to_xyzw(), |q| {
            Self::from_xyzw(q).to_xyzw()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_and_half_turns_are_exact() {
        for bits in [4, 7, 10, 16, 32] {
            let q = SmallestThree::new(bits);
            for exact in [
                [0.0, 0.0, 0.0, 1.0],
                [0.0, 0.0, 0.0, -1.0], // the same rotation: arrives as +w
                [1.0, 0.0, 0.0, 0.0],
                [0.0, -1.0, 0.0, 0.0],
            ] {
                let (largest, rest) = q.quantize(exact);
                let back = q.dequantize(largest, rest);
                let sign = if exact[largest] < 0.0 { -1.0 } else { 1.0 };
                assert_eq!(back, exact.map(|c| sign * c + 0.0), "{bits} bits");
            }
        }
    }

    #[test]
    fn the_documented_numbers_hold() {
        let q = SmallestThree::new(10);
        assert_eq!(q.wire_bits(), 32);
        // About 2·√6 / (2^N − 2), as the docs say: 4.8e-3 at N = 10, and
        // an angle of 0.55°.
        assert!((q.max_error() / (2.0 * 6f64.sqrt() / 1022.0) - 1.0).abs() < 0.01);
        assert!((q.max_error() - 4.8e-3).abs() < 1e-4);
        let degrees = (4.0 * (q.max_error() / 2.0).asin()).to_degrees();
        assert!((degrees - 0.55).abs() < 0.005, "{degrees}");
    }

    #[test]
    fn bad_input_is_the_identity_and_any_bits_decode_to_a_unit() {
        let q = SmallestThree::new(6);
        for bad in [
            [0.0; 4],
            [f64::NAN, 0.0, 0.0, 1.0],
            [f64::INFINITY, 0.0, 0.0, 0.0],
        ] {
            let (largest, rest) = q.quantize(bad);
            assert_eq!(q.dequantize(largest, rest), [0.0, 0.0, 0.0, 1.0]);
        }
        for largest in 0..4 {
            for rest in [[0, 0, 0], [63, 63, 63], [62, 0, 62], [31, 31, 31]] {
                let back = q.dequantize(largest, rest);
                let norm = back.iter().map(|c| c * c).sum::<f64>().sqrt();
                assert!((norm - 1.0).abs() < 1e-12, "{back:?}");
            }
        }
    }

    /// The change test agrees with comparing the codes sent, for values a
    /// step apart and near ties, where settling moves codes.
    #[test]
    fn same_as_agrees_with_the_settled_codes() {
        let as_f32 = |q: [f64; 4]| q.map(|c| f64::from(c as f32));
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let (mut equal, mut moved) = (0, 0);
        for bits in [4, 5, 10] {
            let q = SmallestThree::new(bits);
            for _ in 0..20_000 {
                let mut a: [f64; 4] = core::array::from_fn(|_| random());
                a[1] = a[0] * (1.0 + random() * 1e-3); // near a tie
                let b = a.map(|c| c + random() * q.step());
                let settled = q.quantize_as(a, as_f32) == q.quantize_as(b, as_f32);
                assert_eq!(q.same_as(a, b, as_f32), settled, "{bits} bits: {a:?} {b:?}");
                equal += usize::from(settled);
                moved += usize::from(q.quantize_as(a, as_f32) != q.quantize_nearest(a));
            }
        }
        // Both answers occur, and settling is exercised.
        assert!(equal > 0 && equal < 60_000 && moved > 0, "{equal} {moved}");
    }
}
