//! `BitCodec` and `Replicate` for a struct (named, tuple or unit).
//!
//! Replicated field `i` (declaration order, skipped fields not counted) is
//! bit `i` of the `FieldMask` and field `__field{i}` of the patch. Every
//! runtime item is named through `#private` (`::fastarray::__private` by
//! default) and every std item through `::core`, so the output compiles
//! whatever the caller has in scope.

use super::codec::FieldCodec;
use super::{at_type, bound, private_path};
use crate::ast::{Container, Field, Style};
use proc_macro2::{Group, TokenStream, TokenTree};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};

/// One replicated field, with the tokens every impl item needs.
struct Replicated<'a> {
    /// `self.#member`.
    member: &'a syn::Member,
    /// The field type.
    ty: &'a syn::Type,
    /// How it is written, read and compared.
    codec: FieldCodec<'a>,
    /// The field's mask bit.
    bit: u32,
    /// The field's name in the patch struct and as a local: `__field{bit}`.
    local: syn::Ident,
    /// Statements folding the field's name and wire type into `__hash`.
    schema: TokenStream,
}

/// Both impls, in an anonymous const so that nothing leaks into the
/// caller's namespace.
pub fn expand(cont: &Container) -> TokenStream {
    let private = private_path(cont);
    let fields: Vec<Replicated> = cont
        .replicated()
        .zip(0u32..)
        .map(|(field, bit)| {
            let codec = FieldCodec::new(field, bit, &private);
            Replicated {
                member: &field.member,
                ty: field.ty,
                schema: schema_steps(cont, field, &codec, &private),
                codec,
                bit,
                local: format_ident!("__field{}", bit),
            }
        })
        .collect();

    let patch_ident = format_ident!("__{}Patch", cont.ident);
    let patch = patch_struct(cont, &private, &fields, &patch_ident);
    let generics = bound::with_bounds(cont, &private);
    let bit_codec = bit_codec_impl(cont, &private, &generics, &fields);
    let replicate = replicate_impl(cont, &private, &generics, &fields, &patch_ident);
    let items = fields.iter().map(|field| field.codec.items());
    quote! {
        const _: () = {
            #(#items)*
            #patch
            #bit_codec
            #replicate
        };
    }
}

/// Folds one field into the schema hash: its name, then its type's
/// `TYPE_HASH`.
///
/// A type that names the struct itself (`Vec<Node>`) cannot use its
/// `TYPE_HASH`, which would be defined in terms of itself; it is folded in
/// as written, followed by the hashes of the type parameters it uses.
fn schema_steps(
    cont: &Container,
    field: &Field,
    codec: &FieldCodec,
    private: &TokenStream,
) -> TokenStream {
    let name = field.schema_name();
    let name_step = quote!(__hash = #private::schema::str(__hash, #name););
    let natural = matches!(field.attrs.encoding(), crate::attr::Encoding::Natural);
    if !natural || !cont.is_recursive(field) {
        let type_hash = codec.type_hash();
        return quote! {
            #name_step
            __hash = #private::schema::u64(__hash, #type_hash);
        };
    }
    let written = field.ty.to_token_stream().to_string();
    let params = cont.type_params_in(field);
    quote! {
        #name_step
        __hash = #private::schema::str(__hash, #written);
        #(__hash = #private::schema::u64(__hash, <#params as #private::BitCodec>::TYPE_HASH);)*
    }
}

/// The `Patch` type: one `Option` per replicated field.
///
/// It is a struct rather than a tuple of the field types because the
/// associated type of a public impl must not name a private type, and a
/// public struct may well have fields of private types. Its fields are
/// private, and it takes the container's generics (with a marker, since
/// some parameters may only appear in skipped fields).
fn patch_struct(
    cont: &Container,
    private: &TokenStream,
    fields: &[Replicated],
    patch_ident: &syn::Ident,
) -> TokenStream {
    let generics = cont.generics;
    // `Self` in the patch struct would be the patch itself.
    let ident = cont.ident;
    let (_, ty_generics, where_clause) = generics.split_for_impl();
    let container = quote!(#ident #ty_generics);
    let where_clause = replace_self(where_clause.to_token_stream(), &container);
    let locals = fields.iter().map(|field| &field.local);
    let tys = fields
        .iter()
        .map(|field| replace_self(field.ty.to_token_stream(), &container));
    let lifetimes = generics.lifetimes().map(|param| &param.lifetime);
    let type_params = generics.type_params().map(|param| &param.ident);
    quote! {
        #[doc(hidden)]
        pub struct #patch_ident #generics #where_clause {
            #(#locals: #private::Option<#tys>,)*
            __marker: ::core::marker::PhantomData<(
                #(fn() -> &#lifetimes (),)*
                #(fn() -> #type_params,)*
            )>,
        }
    }
}

/// `tokens` with every `Self` replaced by `container`.
pub(super) fn replace_self(tokens: TokenStream, container: &TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Ident(ident) if ident == "Self" => container.clone(),
            TokenTree::Group(group) => {
                let mut replaced =
                    Group::new(group.delimiter(), replace_self(group.stream(), container));
                replaced.set_span(group.span());
                TokenTree::Group(replaced).into()
            }
            other => other.into(),
        })
        .collect()
}

/// `BitCodec`: the full encoding, every replicated field in order.
fn bit_codec_impl(
    cont: &Container,
    private: &TokenStream,
    generics: &syn::Generics,
    fields: &[Replicated],
) -> TokenStream {
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let min_bits = fields.iter().map(|field| field.codec.min_bits());
    let encodes = fields.iter().map(|field| {
        let member = field.member;
        field.codec.encode(quote!(&self.#member))
    });

    // Fill every field, in declaration order: replicated ones from the
    // reader, skipped ones with their default.
    let mut replicated = fields.iter();
    let values: Vec<TokenStream> = cont
        .fields
        .iter()
        .map(|field| {
            let ty = field.ty;
            let codec_field = if field.is_replicated() {
                replicated.next()
            } else {
                None
            };
            match codec_field {
                Some(codec_field) => {
                    let decode = codec_field.codec.decode();
                    quote!(#decode?)
                }
                None => quote_spanned!(at_type(ty)=> <#ty as ::core::default::Default>::default()),
            }
        })
        .collect();
    let decoded = match cont.style {
        Style::Named => {
            let members = cont.fields.iter().map(|field| &field.member);
            quote!(Self { #(#members: #values,)* })
        }
        Style::Tuple => quote!(Self(#(#values,)*)),
        Style::Unit => quote!(Self),
        Style::Enum | Style::Union => unreachable!("only structs are expanded here"),
    };

    quote! {
        #[automatically_derived]
        impl #impl_generics #private::BitCodec for #ident #ty_generics #where_clause {
            const MIN_BITS: ::core::primitive::u64 =
                0u64 #(.saturating_add(#min_bits))*;
            const TYPE_HASH: ::core::primitive::u64 = <Self as #private::Replicate>::SCHEMA_HASH;

            fn encode(
                &self,
                __writer: &mut #private::BitWriter<'_>,
            ) -> #private::Result<(), #private::EncodeError> {
                #(#encodes?;)*
                #private::Ok(())
            }

            fn decode(
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<Self, #private::DecodeError> {
                #private::Ok(#decoded)
            }

            fn same(&self, __other: &Self) -> ::core::primitive::bool {
                #private::FieldMask::is_empty(<Self as #private::Replicate>::diff(self, __other))
            }
        }
    }
}

/// `Replicate`: per-field diff, encode, decode and patch.
fn replicate_impl(
    cont: &Container,
    private: &TokenStream,
    generics: &syn::Generics,
    fields: &[Replicated],
    patch_ident: &syn::Ident,
) -> TokenStream {
    let ident = cont.ident;
    let name = cont.name();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let field_count = fields.last().map_or(0, |field| field.bit + 1);
    let members: Vec<_> = fields.iter().map(|field| field.member).collect();
    let sames: Vec<_> = fields
        .iter()
        .map(|field| {
            let member = field.member;
            field
                .codec
                .same(quote!(&self.#member), quote!(&__other.#member))
        })
        .collect();
    let encodes: Vec<_> = fields
        .iter()
        .map(|field| {
            let member = field.member;
            field.codec.encode(quote!(&self.#member))
        })
        .collect();
    let decodes: Vec<_> = fields.iter().map(|field| field.codec.decode()).collect();
    let bits: Vec<_> = fields.iter().map(|field| field.bit).collect();
    let locals: Vec<_> = fields.iter().map(|field| &field.local).collect();

    let schema_hash = if fields.is_empty() {
        quote!(#private::schema::str(#private::schema::START, #name))
    } else {
        let steps = fields.iter().map(|field| &field.schema);
        quote!({
            let mut __hash = #private::schema::str(#private::schema::START, #name);
            #(#steps)*
            __hash
        })
    };

    let diff = if fields.is_empty() {
        quote!(#private::FieldMask::EMPTY)
    } else {
        quote! {
            let mut __mask = #private::FieldMask::EMPTY;
            #(
                if !#sames {
                    __mask = #private::FieldMask::with(__mask, #bits);
                }
            )*
            __mask
        }
    };

    quote! {
        #[automatically_derived]
        impl #impl_generics #private::Replicate for #ident #ty_generics #where_clause {
            const FIELD_COUNT: ::core::primitive::u32 = #field_count;
            const SCHEMA_HASH: ::core::primitive::u64 = #schema_hash;
            const TYPE_NAME: &'static ::core::primitive::str = #name;
            type Patch = #patch_ident #ty_generics;

            fn diff(&self, __other: &Self) -> #private::FieldMask {
                #diff
            }

            fn encode_fields(
                &self,
                __mask: #private::FieldMask,
                __writer: &mut #private::BitWriter<'_>,
            ) -> #private::Result<(), #private::EncodeError> {
                #(
                    if #private::FieldMask::contains(__mask, #bits) {
                        #encodes?;
                    }
                )*
                #private::Ok(())
            }

            fn decode_fields(
                __mask: #private::FieldMask,
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<<Self as #private::Replicate>::Patch, #private::DecodeError> {
                #(
                    let #locals = if #private::FieldMask::contains(__mask, #bits) {
                        #private::Some(#decodes?)
                    } else {
                        #private::None
                    };
                )*
                #private::Ok(#patch_ident {
                    #(#locals,)*
                    __marker: ::core::marker::PhantomData,
                })
            }

            fn into_patch(self) -> <Self as #private::Replicate>::Patch {
                #patch_ident {
                    #(#locals: #private::Some(self.#members),)*
                    __marker: ::core::marker::PhantomData,
                }
            }

            fn retain_fields(
                __patch: &mut <Self as #private::Replicate>::Patch,
                __keep: #private::FieldMask,
            ) {
                let _ = &__keep;
                #(
                    if !#private::FieldMask::contains(__keep, #bits) {
                        __patch.#locals = #private::None;
                    }
                )*
            }

            fn apply_patch(&mut self, __patch: <Self as #private::Replicate>::Patch) {
                #(
                    if let #private::Some(__value) = __patch.#locals {
                        self.#members = __value;
                    }
                )*
            }
        }
    }
}
