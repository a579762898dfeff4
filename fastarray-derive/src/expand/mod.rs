//! Code generation: from a checked [`Container`] to the two impls, or to
//! the errors plus a stub impl when the input was rejected.

mod array_fields;
mod body;
mod bound;
mod codec;
mod deprecated;
mod enums;
mod fallback;
mod impls;
mod structs;

use crate::ast::{Container, Data};
use crate::attr;
use crate::check;
use crate::ctxt::Ctxt;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned as _;

/// Expands `#[derive(Replicate)]` on `input`.
///
/// Every mistake in the input is reported together. When there is one,
/// the output is the errors plus a stub implementation of both traits, so
/// the user's other uses of the type do not add a cascade of "trait not
/// implemented" errors on top of the real ones.
pub fn derive(input: &syn::DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let attrs = attr::Container::from_ast(&cx, input);
    let private = private_path(&attrs);
    let checked = match Container::from_ast(&cx, input, attrs) {
        Ok(cont) => {
            check::check(&cx, &cont);
            cx.check().map(|()| cont)
        }
        Err(rejected) => Err(cx.check_rejected(rejected)),
    };
    match checked {
        Ok(cont) => {
            let impls = match &cont.data {
                Data::Struct(style, fields) => structs::expand(&cont, *style, fields),
                Data::Enum(variants) => enums::expand(&cont, variants),
            };
            let warnings = deprecated::warnings(&cont);
            quote!(#impls #warnings)
        }
        Err(errors) => fallback::expand(input, &private, errors),
    }
}

/// The path through which generated code names the runtime:
/// `::fastarray::__private_0_1` unless the type says `#[replicate(crate = "...")]`.
fn private_path(attrs: &attr::Container) -> TokenStream {
    let krate = attrs.crate_path();
    quote!(#krate::__private_0_1)
}

/// A span located at a field's type, for errors about the type (a missing
/// `BitCodec` or `Default` impl), that still marks the code as generated
/// so lints about the user's own code do not fire on it.
fn at_type(ty: &syn::Type) -> Span {
    Span::call_site().located_at(ty.span())
}
