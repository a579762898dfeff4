//! Rules about the input as a whole, checked after its attributes are
//! parsed: what kind of type it is and how many fields it replicates.

use crate::ast::{Container, Data, Field, Variant, replicated};
use crate::attr::Encoding;
use crate::ctxt::Ctxt;
use crate::symbol::FLATTEN;

/// The most replicated fields a struct can have: one per bit of a `FieldMask`.
const MAX_FIELDS: usize = 64;

/// Records every rule `cont` breaks in `cx`.
pub fn check(cx: &Ctxt, cont: &Container) {
    check_has_variants(cx, cont);
    check_field_count(cx, cont);
    check_bit_widths(cx, cont);
    check_quantize_shapes(cx, cont);
    check_variant_field_attrs(cx, cont);
    check_details(cx, cont);
    check_audiences(cx, cont);
    check_default_baseline(cx, cont);
}

/// `default_baseline` writes a whole value as the fields in which it
/// differs from the type's `Default`: a struct's fields, each with its
/// mask bit (an enum's whole value starts with its variant, and its
/// fields depend on it), and none of them an `array` (a decoded value
/// starts as the default, whose arrays could hold items the sender's do
/// not).
fn check_default_baseline(cx: &Ctxt, cont: &Container) {
    let Some(path) = cont.attrs.default_baseline() else {
        return;
    };
    if matches!(cont.data, Data::Enum(_)) {
        cx.error_spanned_by(
            path,
            "`default_baseline` is for structs: an enum's whole value starts with its variant, whose fields differ from the default's",
        );
    } else if cont
        .all_fields()
        .any(|field| matches!(field.attrs.encoding(), Encoding::Array))
    {
        cx.error_spanned_by(
            path,
            "`default_baseline` is for types without `array` fields: an array's items go by id, not against a default's",
        );
    }
}

/// `owner_only`, `skip_owner` and `initial_only` say who is sent a field's
/// value and when: they need a field of the mask, in a struct (as
/// `detail`).
fn check_audiences(cx: &Ctxt, cont: &Container) {
    let in_enum = matches!(cont.data, Data::Enum(_));
    for field in cont.all_fields() {
        let written = [field.attrs.audience_written(), field.attrs.initial_only()];
        for path in written.into_iter().flatten() {
            let name = path
                .get_ident()
                .map_or_else(String::new, ToString::to_string);
            if in_enum {
                cx.error_spanned_by(
                    path,
                    format!("`{name}` is for the fields of a struct, not of an enum's variants (an enum's changes carry its variant)"),
                );
            } else if matches!(field.attrs.encoding(), Encoding::Skip | Encoding::Array) {
                cx.error_spanned_by(
                    path,
                    format!("`{name}` needs a replicated field: a `skip` field is never sent, and an `array` field's items are sent by their own audience attributes"),
                );
            }
        }
    }
}

/// `detail = N` withholds a field's changes from far connections: it needs
/// a field of the mask, in a struct (an enum's partial changes carry the
/// variant, and its fields move with it).
fn check_details(cx: &Ctxt, cont: &Container) {
    let in_enum = matches!(cont.data, Data::Enum(_));
    for field in cont.all_fields() {
        let Some((lit, _)) = field.attrs.detail() else {
            continue;
        };
        if in_enum {
            cx.error_spanned_by(
                lit,
                "`detail` is for the fields of a struct, not of an enum's variants (an enum's changes carry its variant)",
            );
        } else if matches!(field.attrs.encoding(), Encoding::Skip | Encoding::Array) {
            cx.error_spanned_by(
                lit,
                "`detail` needs a replicated field: a `skip` field is never sent, and an `array` field is sent by id",
            );
        }
    }
}

/// `flatten` makes a field's own fields leaves of its parent's mask; inside
/// an enum variant their mask positions would depend on the variant. An
/// `array` field belongs to a replicated object, which an enum is not.
fn check_variant_field_attrs(cx: &Ctxt, cont: &Container) {
    let Data::Enum(variants) = &cont.data else {
        return;
    };
    for field in variants.iter().flat_map(|variant| &variant.fields) {
        if matches!(field.attrs.encoding(), Encoding::Array) {
            cx.error_spanned_by(
                field.span_tokens(),
                "`#[replicate(array)]` is not supported on enum variant fields; use it on a struct held in a `Replicated`",
            );
        }
        if matches!(field.attrs.encoding(), Encoding::Flatten) {
            let written = field.attrs.written(FLATTEN);
            cx.error_spanned_by(
                field.span_tokens(),
                format!(
                    "`#[replicate({written})]` is not supported on enum variant fields; the field is sent whole when it changes (remove `{written}`)"
                ),
            );
        }
    }
}

/// `bits = N` must fit the field's integer type. Checked here for the
/// primitive integer types, with an error at `N`; for any other type (an
/// alias, a generic) the generated code asserts it at compile time.
fn check_bit_widths(cx: &Ctxt, cont: &Container) {
    for field in cont.all_fields() {
        let Encoding::Bits(lit, bits) = field.attrs.encoding() else {
            continue;
        };
        let syn::Type::Path(path) = field.ty else {
            continue;
        };
        let Some(ident) = path.path.get_ident().filter(|_| path.qself.is_none()) else {
            continue;
        };
        let width = match ident.to_string().as_str() {
            "u8" | "i8" => 8,
            "u16" | "i16" => 16,
            "u32" | "i32" => 32,
            "u64" | "i64" => 64,
            "f32" | "f64" | "bool" | "char" | "String" | "usize" | "isize" | "u128" | "i128" => {
                cx.error_spanned_by(
                    lit,
                    format!(
                        "`bits` needs a fixed-width integer type of at most 64 bits (u8..u64, i8..i64), not `{ident}`"
                    ),
                );
                continue;
            }
            _ => continue,
        };
        if *bits > width {
            cx.error_spanned_by(
                lit,
                format!("`bits = {bits}` does not fit in `{ident}`, which has {width} bits"),
            );
        }
    }
}

/// What a field type is, as far as `quantize` cares, when its spelling
/// says so: a number of floats, or a quaternion.
enum Shape {
    Floats(u32),
    Quaternion,
}

/// The shape of `ty` if it is spelled as a float, a glam vector or
/// quaternion (`Vec3`, `glam::Vec3`), or an array (of literal length) or
/// tuple of those; `None` for anything else (an alias, a generic), which
/// the trait bounds and the generated assertion check instead.
fn shape(ty: &syn::Type) -> Option<Shape> {
    match ty {
        syn::Type::Paren(inner) => shape(&inner.elem),
        syn::Type::Group(inner) => shape(&inner.elem),
        syn::Type::Array(array) => {
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(len),
                ..
            }) = &array.len
            else {
                return None;
            };
            let len = len.base10_parse::<u32>().ok()?;
            match shape(&array.elem)? {
                Shape::Floats(n) => n.checked_mul(len).map(Shape::Floats),
                Shape::Quaternion => None,
            }
        }
        syn::Type::Tuple(tuple) => {
            let mut total = 0u32;
            for elem in &tuple.elems {
                match shape(elem)? {
                    Shape::Floats(n) => total = total.checked_add(n)?,
                    Shape::Quaternion => return None,
                }
            }
            Some(Shape::Floats(total))
        }
        syn::Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            if !last.arguments.is_none() {
                return None;
            }
            let segments = path.path.segments.len();
            // `Vec3`, `glam::Vec3`, `glam_0_33::Vec3` (a renamed glam),
            // `bevy::math::Vec3`, `bevy_math::Vec3`.
            let in_glam = segments == 1 || {
                let module = path.path.segments[segments - 2].ident.to_string();
                module.starts_with("glam") || module == "math" || module == "bevy_math"
            };
            let name = last.ident.to_string();
            match name.as_str() {
                "f32" | "f64" if segments == 1 => Some(Shape::Floats(1)),
                "Vec2" | "DVec2" if in_glam => Some(Shape::Floats(2)),
                "Vec3" | "Vec3A" | "DVec3" if in_glam => Some(Shape::Floats(3)),
                "Vec4" | "DVec4" if in_glam => Some(Shape::Floats(4)),
                "Quat" | "DQuat" if in_glam => Some(Shape::Quaternion),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `quantize` must suit the field's type where its spelling shows it: a
/// quaternion takes `quantize(bits = N)`, other floats a range, and
/// per-axis lists must divide the floats evenly.
fn check_quantize_shapes(cx: &Ctxt, cont: &Container) {
    for field in cont.all_fields() {
        let shown = || {
            quote::ToTokens::to_token_stream(field.ty)
                .to_string()
                .replace(' ', "")
        };
        match (field.attrs.encoding(), shape(field.ty)) {
            (Encoding::Quantize { .. }, Some(Shape::Quaternion)) => cx.error_spanned_by(
                field.ty,
                format!(
                    "a quaternion is quantized with `quantize(bits = N)` (smallest-three: 2 + 3·N bits), without `min` and `max`; `{}` has no axes to give ranges to",
                    shown()
                ),
            ),
            (Encoding::Quantize { axes, list: Some(list) }, Some(Shape::Floats(floats)))
                if floats as usize % axes.len() != 0 =>
            {
                cx.error_spanned_by(
                    list,
                    format!(
                        "`{}` holds {floats} float(s), not a multiple of the {} per-axis ranges: give one range per axis, or one for all",
                        shown(),
                        axes.len()
                    ),
                );
            }
            (Encoding::Rotation { .. }, Some(Shape::Floats(_))) => cx.error_spanned_by(
                field.ty,
                format!(
                    "`quantize(bits = N)` without `min` and `max` is for quaternions; `{}` needs a range: `quantize(min = -100.0, max = 100.0, bits = 16)`",
                    shown()
                ),
            ),
            _ => {}
        }
    }
}

/// An enum needs a variant: a value of an empty enum cannot exist.
fn check_has_variants(cx: &Ctxt, cont: &Container) {
    if let (Data::Enum(variants), syn::Data::Enum(data)) = (&cont.data, &cont.original.data) {
        if variants.is_empty() {
            cx.error_spanned_by(
                data.enum_token,
                "`#[derive(Replicate)]` needs an enum with at least one variant: a value of an empty enum cannot exist",
            );
        }
    }
}

/// A field mask has 64 bits; an enum's bit 0 is its variant.
fn check_field_count(cx: &Ctxt, cont: &Container) {
    match &cont.data {
        Data::Struct(_, fields) => check_struct_field_count(cx, cont, fields),
        Data::Enum(variants) => check_variant_field_counts(cx, variants),
    }
}

/// A variant's replicated fields are bits `1..64` of the enum's mask.
fn check_variant_field_counts(cx: &Ctxt, variants: &[Variant]) {
    for variant in variants {
        let replicated = variant.replicated().count();
        if let Some(first_extra) = variant.replicated().nth(MAX_FIELDS - 1) {
            cx.error_spanned_by(
                first_extra.span_tokens(),
                format!(
                    "variant `{}` has {replicated} replicated fields; at most {} are supported (a FieldMask has {MAX_FIELDS} bits and bit 0 is the variant)",
                    variant.ident,
                    MAX_FIELDS - 1,
                ),
            );
        }
    }
}

/// A struct's replicated fields are bits `0..64` of its mask.
fn check_struct_field_count(cx: &Ctxt, cont: &Container, fields: &[Field]) {
    if let Some(first_extra) = replicated(fields).nth(MAX_FIELDS) {
        let replicated = replicated(fields).count();
        cx.error_spanned_by(
            first_extra.span_tokens(),
            format!(
                "`{}` has {replicated} replicated fields; at most {MAX_FIELDS} are supported (a FieldMask has {MAX_FIELDS} bits) \
                 — move some into a field of another `#[derive(Replicate)]` type (sent whole when it changes) or mark some `#[replicate(skip)]`",
                cont.name(),
            ),
        );
    }
}
