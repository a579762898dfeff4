//! The where-clause of the generated impls.

use super::at_type;
use super::codec;
use crate::ast::Container;
use proc_macro2::TokenStream;
use syn::parse_quote_spanned;

/// The user's generics plus, for every field whose type mentions a generic
/// parameter, the trait its encoding needs (`BitCodec`, `FixedBits`,
/// `VarInt`, `Quantize`, `PartialEq`) or `Default` (skipped).
///
/// A field of a concrete type gets no bound: it would hold or fail the same
/// for every instance, and when it fails the error is clearer where the
/// generated code uses the type (spanned at the field) than on the impl
/// header. That also lets a struct contain itself (`children: Vec<Node>`).
///
/// A replicated field whose type names the struct itself
/// (`children: Vec<Tree<T>>`) is bounded through its type parameters
/// instead (`T: BitCodec`): bounding it whole would make `Tree<T>: BitCodec`
/// require itself.
pub fn with_bounds(cont: &Container, private: &TokenStream) -> syn::Generics {
    let mut predicates: Vec<syn::WherePredicate> = Vec::new();
    for field in cont.all_fields().filter(|field| cont.is_generic(field)) {
        let ty = field.ty;
        let span = at_type(ty);
        if !field.is_replicated() {
            predicates.push(parse_quote_spanned!(span=> #ty: ::core::default::Default));
        } else if cont.is_recursive(field) {
            for param in cont.type_params_in(field) {
                predicates.push(parse_quote_spanned!(span=> #param: #private::BitCodec));
            }
        } else {
            let bound = codec::bound(field.attrs.encoding(), private);
            predicates.push(parse_quote_spanned!(span=> #ty: #bound));
        }
    }

    // A generic type written against its default needs one.
    if let Some(baseline) = cont.attrs.default_baseline()
        && cont.generics.type_params().next().is_some()
    {
        let (ident, (_, ty_generics, _)) = (cont.ident, cont.generics.split_for_impl());
        let span = proc_macro2::Span::call_site().located_at(syn::spanned::Spanned::span(baseline));
        predicates.push(parse_quote_spanned!(span=> #ident #ty_generics: ::core::default::Default));
    }
    let mut generics = cont.generics.clone();
    generics.make_where_clause().predicates.extend(predicates);
    generics
}
