//! A struct with `#[replicate(array)]` fields: the `Replicate` items that
//! expose its arrays and make its cheap pre-image, and the arrays' part of
//! the schema hash. Nothing for any other struct.

use super::at_type;
use super::body::{construct, default};
use super::impls::Target;
use crate::ast::{Field, Style};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

/// The `Replicate` items for the arrays (their count, the pre-image with
/// the plain fields cloned and the arrays left empty, visitors), or nothing
/// if no field is an array.
pub fn expand(target: &Target, style: Style, fields: &[Field]) -> TokenStream {
    let arrays: Vec<&Field> = fields.iter().filter(|field| field.is_array()).collect();
    if arrays.is_empty() {
        return TokenStream::new();
    }
    let private = &target.private;
    let captured = construct(quote!(Self), style, fields, |field| {
        let (member, ty) = (&field.member, field.ty);
        if field.is_replicated() {
            quote_spanned!(at_type(ty)=> <#ty as ::core::clone::Clone>::clone(&self.#member))
        } else if field.is_array() {
            quote_spanned!(at_type(ty)=> <#ty as #private::ArrayField>::empty_like(&self.#member))
        } else {
            default(ty)
        }
    });
    let count = arrays.len() as u32;
    // Every use of an array field names it as an `ArrayField`: a field of
    // another type is that one error, at the field's type.
    let visits = arrays.iter().map(|field| {
        let (member, ty) = (&field.member, field.ty);
        quote_spanned!(at_type(ty)=> __visit(<#ty as #private::ArrayField>::as_inner(&self.#member));)
    });
    let visits_mut = arrays.iter().map(|field| {
        let (member, ty) = (&field.member, field.ty);
        quote_spanned!(at_type(ty)=> __visit(<#ty as #private::ArrayField>::as_inner_mut(&mut self.#member));)
    });
    let empties = arrays.iter().map(|field| {
        let ty = field.ty;
        quote_spanned!(at_type(ty)=> __visit(<#ty as #private::ArrayField>::as_inner(&<#ty as #private::ArrayField>::empty()));)
    });
    let names = arrays.iter().map(|field| field.schema_name());
    quote! {
        const ARRAY_FIELDS: ::core::primitive::u32 = #count;
        const ARRAY_FIELD_NAMES: &'static [&'static ::core::primitive::str] = &[#(#names),*];

        fn pre_image(&self) -> #private::Option<Self> {
            #private::Some(#captured)
        }

        fn for_each_array(&self, __visit: &mut dyn ::core::ops::FnMut(&dyn #private::InnerArray)) {
            #(#visits)*
        }

        fn for_each_array_mut(
            &mut self,
            __visit: &mut dyn ::core::ops::FnMut(&mut dyn #private::InnerArray),
        ) {
            #(#visits_mut)*
        }

        fn for_each_empty_array(__visit: &mut dyn ::core::ops::FnMut(&dyn #private::InnerArray)) {
            #(#empties)*
        }
    }
}

/// Statements folding each array field into `__hash`: its name, then the
/// schema of its items.
pub fn schema_steps(fields: &[Field], private: &TokenStream) -> Vec<TokenStream> {
    fields
        .iter()
        .filter(|field| field.is_array())
        .map(|field| {
            let (name, ty) = (field.schema_name(), field.ty);
            quote_spanned! {at_type(ty)=>
                __hash = #private::schema::str(__hash, #name);
                __hash = #private::schema::u64(__hash, #private::schema::named("array", &[<#ty as #private::ArrayField>::ELEMENT_SCHEMA_HASH]));
            }
        })
        .collect()
}
