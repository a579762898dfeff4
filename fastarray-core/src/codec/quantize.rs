//! Quantized floats (`#[replicate(quantize(min = A, max = B, bits = N))]`):
//! the [`Quantizer`] of one float, the [`Quantizers`] of a value's floats
//! (one range for all, or one per axis), and the [`Quantize`] trait of the
//! types whose floats can be quantized.
//!
//! The derive calls these through `__private_0_1`; they are public so that
//! hand-written codecs can use the same encodings.

use super::collections::filled;
use crate::bits::{BitReader, BitWriter};
use crate::error::DecodeError;
use crate::schema;

/// A float quantization: values are clamped into `[min, max]` and sent as
/// one of the `2^bits` evenly spaced values there (`SendPropFloat` with a
/// low value, a high value and a bit count). The receiver gets the
/// quantized value; the most it differs from the sender's value (once
/// clamped) is [`max_error`](Self::max_error) = (max − min) / (2^bits − 1) / 2.
/// `NaN` is sent as `min`.
///
/// What the receiver gets quantizes back to the step it was sent as, as an
/// `f64` and as an `f32` ([`read_f32`](Self::read_f32)), so a mirror's
/// value re-encodes to the server's bits: that is what
/// [`Replicate::wire_eq`](crate::Replicate::wire_eq) compares.
///
/// ```
/// use fastarray_core::Quantizer;
///
/// const Q: Quantizer = Quantizer::new(-100.0, 100.0, 12);
/// let sent = Q.dequantize(Q.quantize(12.3456));
/// assert!((sent - 12.3456).abs() <= Q.max_error());
/// assert_eq!(Q.dequantize(Q.quantize(1e9)), 100.0); // clamped
/// assert_eq!(Q.quantize(12.3456), Q.quantize(12.3456 + Q.max_error() / 10.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantizer {
    min: f64,
    max: f64,
    bits: u32,
    /// The last step, `2^bits − 1`.
    top: u64,
    /// Steps per unit, `(2^bits − 1) / (max − min)`, and its inverse, the
    /// width of a step: quantizing and dequantizing multiply by them rather
    /// than divide (a division is the slowest step of a commit's float
    /// compare and of a mirror's decode).
    scale: f64,
    step: f64,
    /// Whether every step's value, rounded to the nearest `f32`, quantizes
    /// back to that step (see [`f32_is_exact`]): then
    /// [`dequantize_f32`](Self::dequantize_f32) needs no search.
    exact_f32: bool,
}

impl Quantizer {
    /// A quantization of `[min, max]` (finite, `min < max`) in `bits` bits
    /// (1..=32).
    ///
    /// # Panics
    /// On a bad range or bit count; in a `const` this is a compile error.
    pub const fn new(min: f64, max: f64, bits: u32) -> Self {
        assert!(
            min.is_finite() && max.is_finite() && min < max,
            "quantize needs finite min < max"
        );
        assert!(bits >= 1 && bits <= 32, "quantize needs 1..=32 bits");
        let top = (1u64 << bits) - 1;
        let steps = top as f64;
        let scale = steps / (max - min);
        Self {
            min,
            max,
            bits,
            top,
            scale,
            step: (max - min) / steps,
            exact_f32: f32_is_exact(min, max, scale),
        }
    }

    /// Bits per value.
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// The largest difference between a value in `[min, max]` and what the
    /// receiver gets: half a step.
    pub fn max_error(&self) -> f64 {
        (self.max - self.min) / self.steps() / 2.0
    }

    fn steps(&self) -> f64 {
        self.top as f64
    }

    /// The step index of `value` (clamped; `NaN` is step 0).
    #[inline]
    pub fn quantize(&self, value: f64) -> u64 {
        let clamped = value.clamp(self.min, self.max);
        round_steps((clamped - self.min) * self.scale)
    }

    /// Whether `a` and `b` quantize to the same step: what comparing
    /// their [`quantize`](Self::quantize)s says, and the change test of a
    /// commit's diff and a mirror's apply. Values two or more steps apart
    /// once clamped (far more than the error of computing either step)
    /// cannot round to one step, and most changed values are: one
    /// subtraction tells them apart.
    #[inline]
    pub(crate) fn same_step(&self, a: f64, b: f64) -> bool {
        let (a, b) = (a.clamp(self.min, self.max), b.clamp(self.min, self.max));
        if (a - b).abs() * self.scale >= 2.0 {
            return false;
        }
        round_steps((a - self.min) * self.scale) == round_steps((b - self.min) * self.scale)
    }

    /// The value of step index `step`. It quantizes back to `step`
    /// whenever an `f64` does (`tests/suite/wire_eq.rs` searches for
    /// counter-examples).
    #[inline]
    pub fn dequantize(&self, step: u64) -> f64 {
        if step >= self.top {
            self.max
        } else {
            // Below 2^32: through `i64` the conversion is one instruction.
            self.min + step as i64 as f64 * self.step
        }
    }

    /// The value of step index `step` as an `f32` that quantizes back to
    /// `step`: the nearest one to [`dequantize`](Self::dequantize)'s, or a
    /// neighbour when rounding to `f32` crossed into another step (the
    /// range's ends need not be `f32` values, and a fine quantization's
    /// steps are narrower than the `f32`s around them).
    #[inline]
    pub fn dequantize_f32(&self, step: u64) -> f32 {
        let value = self.dequantize(step) as f32;
        if self.exact_f32 {
            return value;
        }
        settle(value, step, |v| self.quantize(f64::from(v)))
    }

    /// The schema hash of this quantization of a type with hash `type_hash`.
    pub const fn type_hash(&self, type_hash: u64) -> u64 {
        schema::named(
            "quantize",
            &[
                type_hash,
                self.min.to_bits(),
                self.max.to_bits(),
                self.bits as u64,
            ],
        )
    }

    /// Writes `value` as its step index.
    #[inline]
    pub fn write(&self, value: f64, writer: &mut BitWriter<'_>) {
        writer.write_bits(self.quantize(value), self.bits);
    }

    /// Reads a value written by [`write`](Self::write).
    #[inline]
    pub fn read(&self, reader: &mut BitReader<'_>) -> Result<f64, DecodeError> {
        Ok(self.dequantize(reader.read_bits(self.bits)?))
    }

    /// Reads a value written by [`write`](Self::write) as an `f32` that
    /// [`write`](Self::write)s the same bits again
    /// ([`dequantize_f32`](Self::dequantize_f32)).
    #[inline]
    pub fn read_f32(&self, reader: &mut BitReader<'_>) -> Result<f32, DecodeError> {
        Ok(self.dequantize_f32(reader.read_bits(self.bits)?))
    }
}

/// Whether rounding any value in `[min, max]` to the nearest `f32` moves
/// it less than a quarter of a step (`1 / scale`): then a step's value, so
/// rounded, quantizes back to the step (rounding to the nearest step
/// forgives up to half a step; the other quarter covers the `f64` error of
/// computing the value, which is many orders of magnitude smaller).
///
/// Rounding to `f32` moves a finite value `x` by at most half the spacing
/// of the `f32`s around it: at most `|x| · 2^-23` for a normal `f32`, and
/// `2^-149` among the subnormals; the ends of the range bound `|x|`.
/// Values beyond `f32::MAX` round to infinity: never exact.
const fn f32_is_exact(min: f64, max: f64, scale: f64) -> bool {
    let low = if min < 0.0 { -min } else { min };
    let high = if max < 0.0 { -max } else { max };
    let magnitude = if low > high { low } else { high };
    // Half of each spacing bound, added: 2^-150 is half the subnormals'.
    let half_spacing =
        magnitude / (1u64 << 24) as f64 + f32::MIN_POSITIVE as f64 / (1u64 << 24) as f64;
    magnitude <= f32::MAX as f64 && half_spacing * scale <= 0.25
}

/// How many neighbouring `f32`s [`settle`] tries: one is enough wherever
/// a sender's value can land in the step (`tests/suite/wire_eq.rs` searches for
/// counter-examples); the rest is margin.
const SETTLE_TRIES: u32 = 4;

/// `value`, or the nearest `f32` to it that quantizes to `step`: a value
/// on the wrong side of a step boundary moves one `f32` at a time toward
/// the step (quantizing is monotonic). If none within [`SETTLE_TRIES`]
/// does (a step no `f32` reaches), `value` as it was.
fn settle(value: f32, step: u64, quantize: impl Fn(f32) -> u64) -> f32 {
    let mut candidate = value;
    for _ in 0..SETTLE_TRIES {
        let got = quantize(candidate);
        if got == step {
            return candidate;
        }
        candidate = next_f32(candidate, got < step);
    }
    value
}

/// `x.round() as u64` for `x` in `[0, 2^52)` or `NaN` (0), without the
/// call to libm's `round` that `f64::round` compiles to on a target
/// without SSE4.1: the whole part by truncation, plus one if the fraction
/// (exact: `x - trunc(x)` loses nothing below 2^52) is at least a half,
/// as `round` rounds halves away from zero.
#[inline]
fn round_steps(x: f64) -> u64 {
    // `as` saturates, and maps NaN to 0; through `i64`, both conversions
    // are one instruction (`x` is never negative here).
    let whole = x as i64;
    (whole + i64::from(x - whole as f64 >= 0.5)) as u64
}

/// `index % len`, without the division when `index < len` (one quantizer
/// for every float, or the first axes of a list: the usual cases).
#[inline]
fn wrap(index: usize, len: usize) -> usize {
    if index < len { index } else { index % len }
}

/// The next `f32` above (`up`) or below a finite `value`.
fn next_f32(value: f32, up: bool) -> f32 {
    if value == 0.0 {
        let tiny = f32::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let bits = value.to_bits();
    // Away from zero is one more in the magnitude's bits.
    let away = (value > 0.0) == up;
    f32::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// The quantizers of the floats of one value, in order: a single
/// [`Quantizer`] for every float, or a list that gives each axis its own
/// range and bits and starts over when it runs out, so three quantizers
/// serve a `Vec3` (x, y, z) and every point of a `[Vec3; 8]` alike.
///
/// What `#[replicate(quantize(min = [..], max = [..], bits = [..]))]`
/// builds; a value's float count must be a multiple of the list's length
/// ([`fits`](Self::fits), checked at compile time by the derive).
///
/// ```
/// use fastarray_core::{Quantizer, Quantizers};
///
/// const XYZ: [Quantizer; 3] = [
///     Quantizer::new(-512.0, 512.0, 16),
///     Quantizer::new(0.0, 64.0, 10), // height: a smaller range, fewer bits
///     Quantizer::new(-512.0, 512.0, 16),
/// ];
/// let axes = Quantizers::new(&XYZ);
/// assert_eq!(axes.at(1).bits(), 10);
/// assert_eq!(axes.at(4).bits(), 10); // the second point's y
/// assert_eq!(axes.bits_for(6), 2 * (16 + 10 + 16));
/// assert!(axes.fits(6) && !axes.fits(4));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Quantizers<'a> {
    list: &'a [Quantizer],
    /// Which quantizer the value's first float takes.
    first: usize,
}

impl<'a> Quantizers<'a> {
    /// The quantizers `list`, the first for the first float.
    ///
    /// # Panics
    /// On an empty list; in a `const` this is a compile error.
    #[inline]
    pub const fn new(list: &'a [Quantizer]) -> Self {
        assert!(!list.is_empty(), "quantize needs at least one range");
        Self { list, first: 0 }
    }

    /// The quantizer of float `index` of the value.
    #[inline]
    pub fn at(&self, index: usize) -> &'a Quantizer {
        &self.list[wrap(self.first + index, self.list.len())]
    }

    /// The quantizers of what follows the first `floats` floats: what an
    /// array or tuple hands its next element.
    #[inline]
    #[must_use]
    pub fn skip(&self, floats: usize) -> Self {
        Self {
            list: self.list,
            first: wrap(self.first + floats, self.list.len()),
        }
    }

    /// Whether a value of `floats` floats takes the list a whole number of
    /// times (a single quantizer fits anything).
    pub const fn fits(&self, floats: u32) -> bool {
        floats as usize % self.list.len() == 0
    }

    /// The bits `floats` floats take, from the first.
    pub const fn bits_for(&self, floats: u32) -> u64 {
        let mut total = 0u64;
        let mut i = 0;
        while i < floats as usize {
            total += self.list[(self.first + i) % self.list.len()].bits as u64;
            i += 1;
        }
        total
    }

    /// The schema hash of this quantization of a type with hash
    /// `type_hash`; for a single quantizer, [`Quantizer::type_hash`].
    pub const fn type_hash(&self, type_hash: u64) -> u64 {
        if self.list.len() == 1 {
            return self.list[0].type_hash(type_hash);
        }
        let mut hash = schema::u64(schema::str(schema::START, "quantize axes"), type_hash);
        let mut i = 0;
        while i < self.list.len() {
            hash = schema::u64(hash, self.list[i].type_hash(0));
            i += 1;
        }
        hash
    }
}

/// A float, or a fixed group of floats, that can be quantized
/// (`#[replicate(quantize(...))]` on `f32`, `f64`, `[f32; N]`, tuples of
/// floats, and with a glam feature glam's vectors). Float `i` of the
/// value uses [`Quantizers::at`]`(i)`.
#[diagnostic::on_unimplemented(
    message = "`#[replicate(quantize(min = .., max = .., bits = ..))]` needs `f32`, `f64`, a glam vector, or an array or tuple of them, not `{Self}`",
    label = "cannot be quantized over a range",
    note = "a glam `Quat` takes `quantize(bits = N)` without `min` and `max`"
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
pub trait Quantize: Sized {
    /// How many floats the value holds.
    const FLOATS: u32;
    /// The schema hash of the unquantized type.
    const TYPE_HASH: u64;

    /// Writes every float as its step index.
    fn write_quantized(&self, axes: Quantizers<'_>, writer: &mut BitWriter<'_>);

    /// Reads the quantized values.
    fn read_quantized(
        axes: Quantizers<'_>,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError>;

    /// Whether both quantize to the same steps: the change test, so jitter
    /// below the resolution is not a change.
    fn same_quantized(&self, other: &Self, axes: Quantizers<'_>) -> bool;

    /// Whether `self`, the value a mirror holds, is `read`, a value
    /// [`read_quantized`](Self::read_quantized) just read: a mirror's
    /// apply reports the field changed if not. The default asks
    /// [`same_quantized`](Self::same_quantized). The impls of this crate
    /// compare the floats' bits, which says the same for a value the
    /// mirror read too (a step reads as one value, and each value as the
    /// step it was read from), and calls a value the mirror did not read
    /// (a default its detail level withheld) changed when the read one
    /// differs from it at all.
    #[doc(hidden)]
    #[inline]
    fn same_as_read(&self, read: &Self, axes: Quantizers<'_>) -> bool {
        self.same_quantized(read, axes)
    }

    /// Whether [`read_quantized`](Self::read_quantized) reads any
    /// pattern of its quantizers' bits as a value, as the impls of this
    /// crate do (a step past a range's last reads as its end): checking a
    /// sent value is then skipping its bits
    /// ([`Quantizers::bits_for`]). `false`, the default, is always
    /// correct.
    #[doc(hidden)]
    const EVERY_STEP_DECODES: bool = false;
}

impl Quantize for f32 {
    const FLOATS: u32 = 1;
    const TYPE_HASH: u64 = schema::named("f32", &[]);
    const EVERY_STEP_DECODES: bool = true;

    // In line, always, as the arrays' (see there).
    #[inline(always)]
    fn write_quantized(&self, axes: Quantizers<'_>, writer: &mut BitWriter<'_>) {
        axes.at(0).write(f64::from(*self), writer);
    }

    #[inline]
    fn read_quantized(
        axes: Quantizers<'_>,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError> {
        axes.at(0).read_f32(reader)
    }

    #[inline]
    fn same_quantized(&self, other: &Self, axes: Quantizers<'_>) -> bool {
        // Most values a commit compares did not change at all.
        self.to_bits() == other.to_bits()
            || axes.at(0).same_step(f64::from(*self), f64::from(*other))
    }

    #[inline]
    fn same_as_read(&self, read: &Self, _: Quantizers<'_>) -> bool {
        self.to_bits() == read.to_bits()
    }
}

impl Quantize for f64 {
    const FLOATS: u32 = 1;
    const TYPE_HASH: u64 = schema::named("f64", &[]);
    const EVERY_STEP_DECODES: bool = true;

    fn write_quantized(&self, axes: Quantizers<'_>, writer: &mut BitWriter<'_>) {
        axes.at(0).write(*self, writer);
    }

    fn read_quantized(
        axes: Quantizers<'_>,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError> {
        axes.at(0).read(reader)
    }

    fn same_quantized(&self, other: &Self, axes: Quantizers<'_>) -> bool {
        self.to_bits() == other.to_bits() || axes.at(0).same_step(*self, *other)
    }

    #[inline]
    fn same_as_read(&self, read: &Self, _: Quantizers<'_>) -> bool {
        self.to_bits() == read.to_bits()
    }
}

impl<T: Quantize, const N: usize> Quantize for [T; N] {
    const FLOATS: u32 = T::FLOATS * N as u32;
    const TYPE_HASH: u64 = schema::named("array", &[T::TYPE_HASH, N as u64]);
    const EVERY_STEP_DECODES: bool = T::EVERY_STEP_DECODES;

    // In line, always: the loop over a position's axes, written for every
    // moved item by a commit, which a compiler left as a call once the
    // encoding around it was put in line (18% more instructions a commit
    // of the hot workload).
    #[inline(always)]
    fn write_quantized(&self, axes: Quantizers<'_>, writer: &mut BitWriter<'_>) {
        let each = T::FLOATS as usize;
        for (i, item) in self.iter().enumerate() {
            item.write_quantized(axes.skip(i * each), writer);
        }
    }

    // In line, always, and each element read in the loop itself rather
    // than in a closure: a mirror's apply reads a position's axes for
    // every moved item, and where the compiler left the read (or the
    // closure `try_array` takes) as a call, the quantizers were no longer
    // constants, each axis cost about 90 instructions, and a hot tick's
    // apply took a fifth to a third more time (ab, 6 to 8 pairs of
    // `apply 10 hot`).
    #[inline(always)]
    fn read_quantized(
        axes: Quantizers<'_>,
        reader: &mut BitReader<'_>,
    ) -> Result<Self, DecodeError> {
        let each = T::FLOATS as usize;
        let mut items: [Option<T>; N] = [const { None }; N];
        for (i, item) in items.iter_mut().enumerate() {
            *item = Some(T::read_quantized(axes.skip(i * each), reader)?);
        }
        Ok(filled(items))
    }

    #[inline]
    fn same_quantized(&self, other: &Self, axes: Quantizers<'_>) -> bool {
        every_element(self, other, axes, T::same_quantized)
    }

    #[inline]
    fn same_as_read(&self, read: &Self, axes: Quantizers<'_>) -> bool {
        every_element(self, read, axes, T::same_as_read)
    }
}

/// Whether `same` says so of every pair of elements of `a` and `b`, each
/// with its own quantizers.
#[inline]
fn every_element<T: Quantize, const N: usize>(
    a: &[T; N],
    b: &[T; N],
    axes: Quantizers<'_>,
    same: impl Fn(&T, &T, Quantizers<'_>) -> bool,
) -> bool {
    let each = T::FLOATS as usize;
    a.iter()
        .zip(b)
        .enumerate()
        .all(|(i, (a, b))| same(a, b, axes.skip(i * each)))
}

/// Whether `$a.$same(&$b, ..)` says so of every part of two tuples, each
/// with its own quantizers (the first part that differs ends it).
macro_rules! every_part {
    ($a:ident, $b:ident, $axes:ident, $same:ident; $($name:ident $index:tt),+) => {{
        let mut axes = $axes;
        $(
            if !$a.$index.$same(&$b.$index, axes) {
                return false;
            }
            #[allow(unused_assignments)]
            {
                axes = axes.skip($name::FLOATS as usize);
            }
        )+
        true
    }};
}

macro_rules! quantize_tuple {
    ($($name:ident $index:tt),+) => {
        impl<$($name: Quantize),+> Quantize for ($($name,)+) {
            const FLOATS: u32 = 0 $(+ $name::FLOATS)+;
            const TYPE_HASH: u64 = schema::named("tuple", &[$($name::TYPE_HASH),+]);
            const EVERY_STEP_DECODES: bool = true $(&& $name::EVERY_STEP_DECODES)+;

            #[allow(unused_assignments)]
            fn write_quantized(&self, axes: Quantizers<'_>, writer: &mut BitWriter<'_>) {
                let mut axes = axes;
                $(
                    self.$index.write_quantized(axes, writer);
                    axes = axes.skip($name::FLOATS as usize);
                )+
            }

            #[allow(unused_assignments)]
            fn read_quantized(axes: Quantizers<'_>, reader: &mut BitReader<'_>) -> Result<Self, DecodeError> {
                let mut axes = axes;
                Ok(($({
                    let item = $name::read_quantized(axes, reader)?;
                    axes = axes.skip($name::FLOATS as usize);
                    item
                },)+))
            }

            fn same_quantized(&self, other: &Self, axes: Quantizers<'_>) -> bool {
                every_part!(self, other, axes, same_quantized; $($name $index),+)
            }

            fn same_as_read(&self, read: &Self, axes: Quantizers<'_>) -> bool {
                every_part!(self, read, axes, same_as_read; $($name $index),+)
            }
        }
    };
}

quantize_tuple!(A 0, B 1);
quantize_tuple!(A 0, B 1, C 2);
quantize_tuple!(A 0, B 1, C 2, D 3);

#[cfg(test)]
mod tests {
    use super::*;

    /// `round_steps` is `round` over every value a quantization can make:
    /// halves, the floats on either side of them, and a spread of others
    /// up to the most steps (2^32 − 1).
    #[test]
    fn round_steps_is_round() {
        let mut values = vec![0.0, f64::NAN, 0.49999999999999994, 4294967295.0];
        for whole in [0u64, 1, 2, 7, 1 << 20, (1 << 32) - 2, (1 << 32) - 1] {
            let half = whole as f64 + 0.5;
            // The floats either side of the half (all positive here).
            let below = f64::from_bits(half.to_bits() - 1);
            let above = f64::from_bits(half.to_bits() + 1);
            values.extend([half, below, above, whole as f64]);
        }
        let mut x = 1e-9_f64;
        while x < 4294967295.0 {
            values.push(x);
            x = x * 1.37 + 0.11;
        }
        for x in values {
            let expected = if x.is_nan() { 0 } else { x.round() as u64 };
            assert_eq!(round_steps(x), expected, "{x:e}");
        }
    }

    /// Where [`f32_is_exact`] lets `dequantize_f32` skip the search, the
    /// plain rounding already lands in the step: every step of small
    /// quantizations, and the ends plus a spread of steps of large ones,
    /// over ranges from subnormal to huge; and the flag is set for the
    /// usual game ranges, or the shortcut would never be taken.
    #[test]
    fn exact_quantizers_need_no_settling() {
        let mut exact = 0;
        for (min, max) in [
            (-1000.0, 1000.0),
            (0.0, 1.0),
            (-1.0, 1.0),
            (0.1, 0.7),
            (1e6, 1e6 + 1.0),
            (-1e-40, 1e-40),
            (0.0, 1e-44),
            (-3e38, 3e38),
            (-1e39, 1e39),
            (1e12, 1e12 + 1.0),
        ] {
            for bits in 1..=32 {
                let q = Quantizer::new(min, max, bits);
                if !q.exact_f32 {
                    continue;
                }
                exact += 1;
                let top = (1u64 << bits) - 1;
                let stride = (top / 4096).max(1);
                let steps = (0..=top).step_by(stride as usize).chain([top - 1, top]);
                for step in steps {
                    let value = q.dequantize(step) as f32;
                    assert_eq!(q.quantize(f64::from(value)), step, "{q:?}: step {step}");
                }
            }
        }
        assert!(Quantizer::new(-1000.0, 1000.0, 16).exact_f32);
        assert!(Quantizer::new(0.0, 1.0, 20).exact_f32);
        assert!(!Quantizer::new(-1e-40, 1e-40, 20).exact_f32);
        assert!(!Quantizer::new(0.1, 0.7, 32).exact_f32);
        assert!(exact > 40, "{exact}");
    }

    /// `same_step` says what comparing the two steps says: for pairs a
    /// step or less apart (its exact test), pairs apart by about the
    /// shortcut's threshold, far apart, out of range on one or both sides,
    /// and with `NaN` or infinities, over coarse to fine quantizations.
    /// Dropping the clamp, or taking the shortcut under one step, fails it.
    #[test]
    fn same_step_is_comparing_steps() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0];
        for (min, max) in [(-1024.0, 1024.0), (0.0, 1.0), (-3.0, 5.0), (1e6, 1e6 + 1.0)] {
            for bits in [1, 2, 3, 8, 16, 24, 32] {
                let q = Quantizer::new(min, max, bits);
                let step = (max - min) / q.steps();
                for _ in 0..4_000 {
                    // Around and beyond the range.
                    let a = rng.random_range(min - (max - min)..max + (max - min));
                    let apart = [
                        0.0,
                        0.5,
                        1.0,
                        1.99,
                        2.0,
                        2.01,
                        1e3,
                        rng.random_range(0.0..3.0),
                    ][rng.random_range(0..8)]
                        * step
                        * if rng.random_bool(0.5) { 1.0 } else { -1.0 };
                    let jitter = rng.random_range(-1e-9..1e-9) * step;
                    let b = a + apart + jitter;
                    let pairs = [(a, b), (b, a), (a, max + 1.0), (min - 1.0, b)];
                    for (x, y) in pairs {
                        assert_eq!(
                            q.same_step(x, y),
                            q.quantize(x) == q.quantize(y),
                            "{q:?}: {x} {y}"
                        );
                    }
                }
                for x in specials {
                    for y in specials
                        .iter()
                        .copied()
                        .chain([min, max, (min + max) / 2.0])
                    {
                        assert_eq!(q.same_step(x, y), q.quantize(x) == q.quantize(y));
                    }
                }
            }
        }
    }

    #[test]
    fn quantizer_endpoints_are_exact() {
        let q = Quantizer::new(-2.0, 6.0, 3);
        assert_eq!(q.quantize(-2.0), 0);
        assert_eq!(q.quantize(6.0), 7);
        assert_eq!(q.dequantize(0), -2.0);
        assert_eq!(q.dequantize(7), 6.0);
        assert_eq!(q.quantize(f64::NAN), 0);
        assert_eq!(q.quantize(f64::INFINITY), 7);
        assert_eq!(q.max_error(), 8.0 / 7.0 / 2.0);
    }

    #[test]
    fn axes_repeat_over_nested_values() {
        const AXES: [Quantizer; 2] = [Quantizer::new(0.0, 1.0, 3), Quantizer::new(0.0, 100.0, 9)];
        let axes = Quantizers::new(&AXES);
        // [(x, y); 3]: every x in 3 bits, every y in 9.
        let value = [(0.5f32, 50.0f32), (1.0, 100.0), (0.0, 0.0)];
        let mut bytes = Vec::new();
        let mut writer = BitWriter::new(&mut bytes);
        value.write_quantized(axes, &mut writer);
        assert_eq!(writer.finish(), 3 * (3 + 9));
        assert_eq!(axes.bits_for(6), 3 * (3 + 9));
        let back = <[(f32, f32); 3]>::read_quantized(axes, &mut BitReader::new(&bytes)).unwrap();
        // Half a step, and the f32 rounding of what arrives.
        let close =
            |a: f32, b: f32, q: &Quantizer| f64::from((a - b).abs()) <= q.max_error() + 1e-5;
        for ((x, y), (bx, by)) in value.iter().zip(back) {
            assert!(close(*x, bx, &AXES[0]) && close(*y, by, &AXES[1]));
        }
        assert_eq!(back[1..], value[1..]); // the ends of the ranges are exact
        // 0.01 more on an x (half a step: 1 / 7 / 2) is no change; 0.3
        // more on a y from 0 (half a step: 100 / 511 / 2) is one.
        let mut moved = value;
        moved[2].0 += 0.01;
        assert!(value.same_quantized(&moved, axes));
        moved[2].1 += 0.3;
        assert!(!value.same_quantized(&moved, axes));
        assert_ne!(axes.type_hash(1), Quantizers::new(&AXES[..1]).type_hash(1));
        assert_eq!(
            Quantizers::new(&AXES[..1]).type_hash(1),
            AXES[0].type_hash(1)
        );
    }

    /// What a mirror reads compares by bits as it does by steps: over
    /// coarse to fine quantizations of `f32` and `f64` axes, pairs of
    /// values read from random steps, neighbours and equal ones included,
    /// are `same_as_read` exactly when `same_quantized` says so, and when
    /// their steps are equal unless the steps are finer than the floats
    /// there (an `f32` around a million is a sixteenth apart from the
    /// next, and a 32-bit step over one unit is far less: neighbouring
    /// steps then read as one float, which both call the same).
    #[test]
    fn values_read_are_the_same_as_read_exactly_when_their_steps_are() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        const LISTS: [[Quantizer; 1]; 5] = [
            [Quantizer::new(-1024.0, 1024.0, 16)],
            [Quantizer::new(0.0, 1.0, 3)],
            [Quantizer::new(-3.0, 5.0, 24)],
            [Quantizer::new(1e6, 1e6 + 1.0, 32)],
            [Quantizer::new(-0.1, 1e7, 32)],
        ];
        fn read<T: Quantize>(axes: Quantizers<'_>, step: u64, bits: u32) -> T {
            let mut bytes = Vec::new();
            let mut writer = BitWriter::new(&mut bytes);
            for _ in 0..T::FLOATS {
                writer.write_bits(step, bits);
            }
            writer.finish();
            T::read_quantized(axes, &mut BitReader::new(&bytes)).unwrap()
        }
        let mut f32_checked = 0;
        for list in &LISTS {
            let (axes, q) = (Quantizers::new(list), list[0]);
            let bits = q.bits();
            let top = q.steps() as u64;
            for _ in 0..2_000 {
                let a = rng.random_range(0..=top);
                let b = match rng.random_range(0..3) {
                    0 => a,
                    1 => (a + 1).min(top),
                    _ => rng.random_range(0..=top),
                };
                let context = format!("{q:?}: steps {a} {b}");
                let (x, y): (f32, f32) = (read(axes, a, bits), read(axes, b, bits));
                let same = x.same_as_read(&y, axes);
                assert_eq!(same, x.same_quantized(&y, axes), "{context}");
                // Finer than the f32s: steps apart may read as one.
                if q.exact_f32 || a == b {
                    assert_eq!(same, a == b, "{context}");
                }
                let (x, y): (f64, f64) = (read(axes, a, bits), read(axes, b, bits));
                assert_eq!(x.same_as_read(&y, axes), a == b, "{context}");
                assert_eq!(x.same_as_read(&y, axes), x.same_quantized(&y, axes));
                let (x, y): ([f32; 3], [f32; 3]) = (read(axes, a, bits), read(axes, b, bits));
                let same = x.same_as_read(&y, axes);
                assert_eq!(same, x.same_quantized(&y, axes), "{context}");
                if q.exact_f32 || a == b {
                    assert_eq!(same, a == b, "{context}");
                }
                f32_checked += usize::from(q.exact_f32);
            }
        }
        // Most of the lists' steps are wider than their f32s.
        assert!(f32_checked >= 4_000, "{f32_checked}");
    }
}
