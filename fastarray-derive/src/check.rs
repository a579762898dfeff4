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
    check_variant_field_attrs(cx, cont);
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
