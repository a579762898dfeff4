//! Attributes written with an old name (`nested`, now `flatten`) work as
//! the new one, with a deprecation warning at the old name.
//!
//! Stable Rust has no way for a proc macro to emit a warning, so the
//! expansion defines a `#[deprecated]` constant and uses it through an
//! identifier spanned at the old name: rustc's `deprecated` lint then
//! fires there. `#[allow(deprecated)]` on the type (copied onto the
//! constant) or around it silences it like any other deprecation.

use crate::ast::Container;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// One anonymous const per attribute written with an old name, whose use
/// of a deprecated constant warns at that name.
pub fn warnings(cont: &Container) -> TokenStream {
    let allows: Vec<_> = cont
        .original
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("allow"))
        .collect();
    cont.all_fields()
        .flat_map(|field| field.attrs.renamed())
        .map(|renamed| {
            let (old, new) = (&renamed.old, renamed.new);
            let note = format!("`{old}` is now spelled `{new}`: write `#[replicate({new})]`");
            let name = format_ident!("replicate_{}", old.to_string());
            let used = syn::Ident::new(&name.to_string(), old.span());
            quote! {
                #(#allows)*
                const _: () = {
                    #[deprecated(note = #note)]
                    #[allow(non_upper_case_globals)]
                    const #name: () = ();
                    #used
                };
            }
        })
        .collect()
}
