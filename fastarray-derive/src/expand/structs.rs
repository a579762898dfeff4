//! `BitCodec` and `Replicate` for a struct (named, tuple or unit).
//!
//! Replicated field `i` (declaration order, skipped fields not counted) is
//! bit `i` of the `FieldMask` and field `__field{i}` of the patch. Every
//! runtime item is named through `#private` (`::fastarray::__private` by
//! default) and every std item through `::core`, so the output compiles
//! whatever the caller has in scope.

use super::codec::FieldCodec;
use super::{at_type, bound, nest_reader, nest_writer, private_path};
use crate::ast::{Container, Field, Style, replicated};
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
pub fn expand(cont: &Container, style: Style, all_fields: &[Field]) -> TokenStream {
    let private = private_path(&cont.attrs);
    let fields: Vec<Replicated> = replicated(all_fields)
        .zip(0u32..)
        .map(|(field, bit)| {
            let codec = FieldCodec::new(field, format_ident!("__QUANTIZER_{}", bit), &private);
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
    let bit_codec = bit_codec_impl(cont, &private, &generics, style, all_fields, &fields);
    let items = fields.iter().map(|field| field.codec.items());
    let (object, array_items) = object_impl(cont, &private, &generics, style, all_fields);
    let replicate = replicate_impl(
        cont,
        &private,
        &generics,
        all_fields,
        &fields,
        &patch_ident,
        array_items,
    );
    quote! {
        const _: () = {
            #(#items)*
            #patch
            #bit_codec
            #replicate
            #object
        };
    }
}

/// For a struct with `#[replicate(array)]` fields: the `Object` impl (a
/// cheap pre-image: plain fields cloned, arrays left empty), and the
/// `Replicate` items that expose the arrays (their count, the pre-image,
/// visitors). Nothing for other structs.
fn object_impl(
    cont: &Container,
    private: &TokenStream,
    generics: &syn::Generics,
    style: Style,
    all_fields: &[Field],
) -> (TokenStream, TokenStream) {
    let arrays: Vec<&Field> = all_fields.iter().filter(|field| field.is_array()).collect();
    if arrays.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let values: Vec<TokenStream> = all_fields
        .iter()
        .map(|field| {
            let (member, ty) = (&field.member, field.ty);
            if field.is_replicated() {
                quote_spanned!(at_type(ty)=> <#ty as ::core::clone::Clone>::clone(&self.#member))
            } else if field.is_array() {
                quote_spanned!(at_type(ty)=> <#ty as #private::ArrayField>::empty_like(&self.#member))
            } else {
                quote_spanned!(at_type(ty)=> <#ty as ::core::default::Default>::default())
            }
        })
        .collect();
    let captured = match style {
        Style::Named => {
            let members = all_fields.iter().map(|field| &field.member);
            quote!(Self { #(#members: #values,)* })
        }
        Style::Tuple => quote!(Self(#(#values,)*)),
        Style::Unit => quote!(Self),
    };
    let count = arrays.len() as u32;
    let members: Vec<_> = arrays.iter().map(|field| &field.member).collect();
    let spans: Vec<_> = arrays.iter().map(|field| at_type(field.ty)).collect();
    let visits = members
        .iter()
        .zip(&spans)
        .map(|(member, span)| quote_spanned!(*span=> __visit(&self.#member);));
    let visits_mut = members
        .iter()
        .zip(&spans)
        .map(|(member, span)| quote_spanned!(*span=> __visit(&mut self.#member);));
    let empties = arrays.iter().zip(&spans).map(|(field, span)| {
        let ty = field.ty;
        quote_spanned!(*span=> __visit(&<#ty as ::core::default::Default>::default());)
    });
    let object = quote! {
        #[automatically_derived]
        impl #impl_generics #private::Object for #ident #ty_generics #where_clause {
            fn capture(&self) -> Self {
                #captured
            }
        }
    };
    let replicate_items = quote! {
        const ARRAY_FIELDS: ::core::primitive::u32 = #count;

        fn pre_image(&self) -> #private::Option<Self> {
            #private::Some(<Self as #private::Object>::capture(self))
        }

        fn for_each_array(&self, __visit: &mut dyn ::core::ops::FnMut(&dyn #private::ArrayField)) {
            #(#visits)*
        }

        fn for_each_array_mut(
            &mut self,
            __visit: &mut dyn ::core::ops::FnMut(&mut dyn #private::ArrayField),
        ) {
            #(#visits_mut)*
        }

        fn for_each_empty_array(__visit: &mut dyn ::core::ops::FnMut(&dyn #private::ArrayField)) {
            #(#empties)*
        }
    };
    (object, replicate_items)
}

/// Folds one field into the schema hash: its name, then its type's
/// `TYPE_HASH`.
///
/// A type that names the struct itself (`Vec<Node>`) cannot use its
/// `TYPE_HASH`, which would be defined in terms of itself; it is folded in
/// as written, followed by the hashes of the type parameters it uses.
pub(super) fn schema_steps(
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
    let tys = fields.iter().map(|field| {
        field
            .codec
            .slot_ty(replace_self(field.ty.to_token_stream(), &container))
    });
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
    style: Style,
    all_fields: &[Field],
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
    let values: Vec<TokenStream> = all_fields
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
    let decoded = match style {
        Style::Named => {
            let members = all_fields.iter().map(|field| &field.member);
            quote!(Self { #(#members: #values,)* })
        }
        Style::Tuple => quote!(Self(#(#values,)*)),
        Style::Unit => quote!(Self),
    };

    let (nest_writer, nest_reader) = (nest_writer(private), nest_reader(private));
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
                #nest_writer
                #(#encodes?;)*
                #private::Ok(())
            }

            fn decode(
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<Self, #private::DecodeError> {
                #nest_reader
                #private::Ok(#decoded)
            }

            fn same(&self, __other: &Self) -> ::core::primitive::bool {
                #private::FieldMask::is_empty(<Self as #private::Replicate>::diff(self, __other))
            }
        }
    }
}

/// `Replicate`: per-field diff, encode, decode and patch.
///
/// A field takes the mask bits `offset..offset + width`: one bit, or, for a
/// `nested` field, one per leaf of the nested type (its own mask, moved up
/// to `offset`). Without nested fields the offsets are literals.
fn replicate_impl(
    cont: &Container,
    private: &TokenStream,
    generics: &syn::Generics,
    all_fields: &[Field],
    fields: &[Replicated],
    patch_ident: &syn::Ident,
    array_items: TokenStream,
) -> TokenStream {
    let ident = cont.ident;
    let name = cont.name();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let any_nested = fields.iter().any(|field| field.codec.is_nested());
    let widths: Vec<TokenStream> = fields.iter().map(|field| field.codec.width()).collect();
    let offsets: Vec<TokenStream> = (0..fields.len())
        .map(|i| {
            if any_nested {
                let before = &widths[..i];
                quote!((0u32 #(+ #before)*))
            } else {
                let bit = fields[i].bit;
                quote!(#bit)
            }
        })
        .collect();

    let flat = fields.iter().filter(|f| f.codec.is_nested()).map(|f| {
        let ty = f.ty;
        quote_spanned! {at_type(ty)=>
            ::core::assert!(
                <#ty as #private::Replicate>::ARRAY_FIELDS == 0,
                "a `#[replicate(nested)]` field's type cannot have `#[replicate(array)]` fields: hold it in a `FastArray` instead"
            );
        }
    });
    let field_count = if any_nested {
        quote!({
            #(#flat)*
            let __leaves = 0u32 #(+ #widths)*;
            ::core::assert!(__leaves <= 64, "a replicated type has at most 64 leaves (fields, counting those of nested fields)");
            __leaves
        })
    } else {
        let count = fields.len() as u32;
        quote!(#count)
    };
    let structure = any_nested.then(|| {
        let parts = fields.iter().zip(&offsets).filter(|(f, _)| f.codec.is_nested()).map(|(f, o)| {
            let ty = f.ty;
            quote_spanned!(at_type(ty)=> #private::FieldMask::bits(#private::FieldMask::shifted_up(<#ty as #private::Replicate>::STRUCTURE, #o)))
        });
        quote!(const STRUCTURE: #private::FieldMask = #private::FieldMask::from_bits(0u64 #(| #parts)*);)
    });

    let array_steps: Vec<TokenStream> = all_fields
        .iter()
        .filter(|field| field.is_array())
        .map(|field| {
            let (name, ty) = (field.schema_name(), field.ty);
            quote_spanned! {at_type(ty)=>
                __hash = #private::schema::str(__hash, #name);
                __hash = #private::schema::u64(__hash, #private::schema::named("array", &[<#ty>::ELEMENT_SCHEMA_HASH]));
            }
        })
        .collect();
    let schema_hash = if fields.is_empty() && array_steps.is_empty() {
        quote!(#private::schema::str(#private::schema::START, #name))
    } else {
        let steps = fields.iter().map(|field| &field.schema).chain(&array_steps);
        quote!({
            let mut __hash = #private::schema::str(#private::schema::START, #name);
            #(#steps)*
            __hash
        })
    };

    let mut diff = Vec::new();
    let mut encode = Vec::new();
    let mut decode = Vec::new();
    let mut into = Vec::new();
    let mut retain = Vec::new();
    let mut apply = Vec::new();
    for ((field, offset), width) in fields.iter().zip(&offsets).zip(&widths) {
        let (member, local, ty) = (field.member, &field.local, field.ty);
        let replicate = quote_spanned!(at_type(ty)=> <#ty as #private::Replicate>);
        if field.codec.is_nested() {
            let window =
                |mask: TokenStream| quote!(#private::FieldMask::window(#mask, #offset, #width));
            let (sub_mask, sub_keep) = (window(quote!(__mask)), window(quote!(__keep)));
            diff.push(quote! {
                __mask |= #private::FieldMask::shifted_up(#replicate::diff(&self.#member, &__other.#member), #offset);
            });
            encode.push(quote! {
                let __sub = #sub_mask;
                if !#private::FieldMask::is_empty(__sub) {
                    #replicate::encode_fields(&self.#member, __sub, __writer)?;
                }
            });
            decode.push(quote! {
                let __sub = #sub_mask;
                let #local = if #private::FieldMask::is_empty(__sub) {
                    #private::None
                } else {
                    #private::Some(#replicate::decode_fields(__sub, __reader)?)
                };
            });
            into.push(quote!(#local: #private::Some(#replicate::into_patch(self.#member))));
            retain.push(quote! {
                let __sub = #sub_keep;
                if #private::FieldMask::is_empty(__sub) {
                    __patch.#local = #private::None;
                } else if let #private::Some(__inner) = &mut __patch.#local {
                    #replicate::retain_fields(__inner, __sub);
                }
            });
            apply.push(quote! {
                if let #private::Some(__inner) = __patch.#local {
                    __changed |= #private::FieldMask::shifted_up(
                        #replicate::apply_patch(&mut self.#member, __inner),
                        #offset,
                    );
                }
            });
        } else {
            let same = field
                .codec
                .same(quote!(&self.#member), quote!(&__other.#member));
            let encode_one = field.codec.encode(quote!(&self.#member));
            let decode_one = field.codec.decode();
            diff.push(quote! {
                if !#same {
                    __mask = #private::FieldMask::with(__mask, #offset);
                }
            });
            encode.push(quote! {
                if #private::FieldMask::contains(__mask, #offset) {
                    #encode_one?;
                }
            });
            decode.push(quote! {
                let #local = if #private::FieldMask::contains(__mask, #offset) {
                    #private::Some(#decode_one?)
                } else {
                    #private::None
                };
            });
            into.push(quote!(#local: #private::Some(self.#member)));
            retain.push(quote! {
                if !#private::FieldMask::contains(__keep, #offset) {
                    __patch.#local = #private::None;
                }
            });
            let unchanged = field.codec.same(quote!(&self.#member), quote!(&__value));
            apply.push(quote! {
                if let #private::Some(__value) = __patch.#local {
                    if !#unchanged {
                        __changed = #private::FieldMask::with(__changed, #offset);
                    }
                    self.#member = __value;
                }
            });
        }
    }
    let locals = fields.iter().map(|field| &field.local);
    let (nest_writer, nest_reader) = (nest_writer(private), nest_reader(private));

    quote! {
        #[automatically_derived]
        impl #impl_generics #private::Replicate for #ident #ty_generics #where_clause {
            const FIELD_COUNT: ::core::primitive::u32 = #field_count;
            const SCHEMA_HASH: ::core::primitive::u64 = #schema_hash;
            const TYPE_NAME: &'static ::core::primitive::str = #name;
            #structure
            type Patch = #patch_ident #ty_generics;
            #array_items

            fn diff(&self, __other: &Self) -> #private::FieldMask {
                #[allow(unused_mut)]
                let mut __mask = #private::FieldMask::EMPTY;
                #(#diff)*
                __mask
            }

            fn encode_fields(
                &self,
                __mask: #private::FieldMask,
                __writer: &mut #private::BitWriter<'_>,
            ) -> #private::Result<(), #private::EncodeError> {
                #nest_writer
                #(#encode)*
                #private::Ok(())
            }

            fn decode_fields(
                __mask: #private::FieldMask,
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<<Self as #private::Replicate>::Patch, #private::DecodeError> {
                #nest_reader
                #(#decode)*
                #private::Ok(#patch_ident {
                    #(#locals,)*
                    __marker: ::core::marker::PhantomData,
                })
            }

            fn into_patch(self) -> <Self as #private::Replicate>::Patch {
                #patch_ident {
                    #(#into,)*
                    __marker: ::core::marker::PhantomData,
                }
            }

            fn retain_fields(
                __patch: &mut <Self as #private::Replicate>::Patch,
                __keep: #private::FieldMask,
            ) {
                let _ = &__keep;
                #(#retain)*
            }

            fn apply_patch(
                &mut self,
                __patch: <Self as #private::Replicate>::Patch,
            ) -> #private::FieldMask {
                #[allow(unused_mut)]
                let mut __changed = #private::FieldMask::EMPTY;
                #(#apply)*
                __changed
            }
        }
    }
}
