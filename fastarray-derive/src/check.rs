//! Rules about the input as a whole, checked after its attributes are
//! parsed: what kind of type it is and how many fields it replicates.

use crate::ast::Container;
use crate::ctxt::Ctxt;

/// The most replicated fields a struct can have: one per bit of a `FieldMask`.
const MAX_FIELDS: usize = 64;

/// Records every rule `cont` breaks in `cx`.
pub fn check(cx: &Ctxt, cont: &Container) {
    check_style(cx, cont);
    check_field_count(cx, cont);
}

/// Only structs can be replicated for now.
fn check_style(cx: &Ctxt, cont: &Container) {
    match &cont.original.data {
        syn::Data::Enum(data) => cx.error_spanned_by(
            data.enum_token,
            "`#[derive(Replicate)]` does not support enums yet; only structs can be replicated for now",
        ),
        syn::Data::Union(data) => cx.error_spanned_by(
            data.union_token,
            "`#[derive(Replicate)]` does not support unions",
        ),
        syn::Data::Struct(_) => {}
    }
}

/// A field mask has 64 bits.
fn check_field_count(cx: &Ctxt, cont: &Container) {
    let replicated = cont.replicated().count();
    if let Some(first_extra) = cont.replicated().nth(MAX_FIELDS) {
        cx.error_spanned_by(
            first_extra.span_tokens(),
            format!(
                "`{}` has {replicated} replicated fields; at most {MAX_FIELDS} are supported (a FieldMask has {MAX_FIELDS} bits) \
                 — group some into a nested `#[derive(Replicate)]` struct or mark some `#[replicate(skip)]`",
                cont.name(),
            ),
        );
    }
}
