//! `BitCodec` and `Replicate` for an enum.
//!
//! Wire: the variant's index in ⌈log2 variants⌉ bits, then the variant's
//! replicated fields. Mask: bit 0 is the variant, bit `1 + i` the current
//! variant's `i`-th replicated field. When the variant differs, `diff`
//! returns bit 0 and every field of the new variant (the whole value);
//! otherwise the changed fields. `apply_patch` returns the same as `diff`
//! would for the value before and after. Partial encodings still start with the
//! variant index, so a decoder always knows the field types it reads.

use super::codec::FieldCodec;
use super::structs::{replace_self, schema_steps};
use super::{at_type, bound, nest_reader, nest_writer, private_path};
use crate::ast::{Container, Field, Style, Variant};
use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};

/// One variant with what every impl item needs.
struct Arm<'a> {
    variant: &'a Variant<'a>,
    /// The variant's index on the wire.
    tag: u64,
    /// Its replicated fields: (field, codec, mask bit, binding, patch slot).
    fields: Vec<ArmField<'a>>,
    /// The patch enum's variant for it.
    patch_variant: syn::Ident,
}

/// One replicated field of a variant.
struct ArmField<'a> {
    field: &'a Field<'a>,
    codec: FieldCodec<'a>,
    bit: u32,
    /// `__self_i`: the field bound by a `match` on `self`.
    binding: syn::Ident,
    /// `__other_i`: the same field of the other value in `diff`.
    other: syn::Ident,
    /// `__patch_i`: its `Option` in the patch.
    slot: syn::Ident,
}

/// Both impls for an enum.
pub fn expand(cont: &Container, variants: &[Variant]) -> TokenStream {
    let private = private_path(&cont.attrs);
    let variant_count = variants.len() as u64;
    let tag_bits = 64 - (variant_count - 1).leading_zeros();
    let arms: Vec<Arm> = variants
        .iter()
        .zip(0u64..)
        .map(|(variant, tag)| Arm {
            variant,
            tag,
            patch_variant: format_ident!("__V{}", tag),
            fields: variant
                .replicated()
                .zip(1u32..)
                .map(|(field, bit)| {
                    let index = bit - 1;
                    ArmField {
                        field,
                        codec: FieldCodec::new(
                            field,
                            format_ident!("__QUANTIZER_{}_{}", tag, bit),
                            &private,
                        ),
                        bit,
                        binding: format_ident!("__self_{}", index),
                        other: format_ident!("__other_{}", index),
                        slot: format_ident!("__patch_{}", index),
                    }
                })
                .collect(),
        })
        .collect();

    let generics = bound::with_bounds(cont, &private);
    let items = arms
        .iter()
        .flat_map(|arm| arm.fields.iter().map(|f| f.codec.items()));
    let patch_ident = format_ident!("__{}Patch", cont.ident);
    let patch = patch_types(cont, &private, &arms, &patch_ident);
    let bit_codec = bit_codec_impl(cont, &private, &generics, &arms, tag_bits);
    let replicate = replicate_impl(cont, &private, &generics, &arms, tag_bits, &patch_ident);
    quote! {
        const _: () = {
            #(#items)*
            #patch
            #bit_codec
            #replicate
        };
    }
}

/// A pattern binding the replicated fields of `arm` to `name(field)`;
/// skipped fields are ignored.
fn pattern(arm: &Arm, name: impl Fn(&ArmField) -> syn::Ident) -> TokenStream {
    let ident = arm.variant.ident;
    let mut replicated = arm.fields.iter();
    match arm.variant.style {
        Style::Unit => quote!(Self::#ident),
        Style::Named => {
            let binds = arm.variant.fields.iter().filter_map(|field| {
                if !field.is_replicated() {
                    return None;
                }
                let f = replicated.next()?;
                let member = &field.member;
                let local = name(f);
                Some(quote!(#member: #local))
            });
            quote!(Self::#ident { #(#binds,)* .. })
        }
        Style::Tuple => {
            let binds = arm.variant.fields.iter().map(|field| {
                if field.is_replicated() {
                    let local = replicated.next().map(&name);
                    quote!(#local)
                } else {
                    quote!(_)
                }
            });
            quote!(Self::#ident(#(#binds),*))
        }
    }
}

/// An expression building `arm`'s variant from `value(field)` for each
/// replicated field and `Default` for each skipped one.
fn construct(arm: &Arm, value: impl Fn(&ArmField) -> TokenStream) -> TokenStream {
    let ident = arm.variant.ident;
    let mut replicated = arm.fields.iter();
    let values: Vec<TokenStream> = arm
        .variant
        .fields
        .iter()
        .map(|field| {
            let next = if field.is_replicated() {
                replicated.next()
            } else {
                None
            };
            match next {
                Some(f) => value(f),
                None => {
                    let ty = field.ty;
                    quote_spanned!(at_type(ty)=> <#ty as ::core::default::Default>::default())
                }
            }
        })
        .collect();
    match arm.variant.style {
        Style::Unit => quote!(Self::#ident),
        Style::Named => {
            let members = arm.variant.fields.iter().map(|field| &field.member);
            quote!(Self::#ident { #(#members: #values,)* })
        }
        Style::Tuple => quote!(Self::#ident(#(#values,)*)),
    }
}

/// The patch: a public struct around a private enum with one variant per
/// enum variant, holding an `Option` per replicated field.
fn patch_types(
    cont: &Container,
    private: &TokenStream,
    arms: &[Arm],
    patch_ident: &syn::Ident,
) -> TokenStream {
    let generics = cont.generics;
    let ident = cont.ident;
    let (_, ty_generics, where_clause) = generics.split_for_impl();
    let container = quote!(#ident #ty_generics);
    let where_clause = replace_self(where_clause.to_token_stream(), &container);
    let inner_ident = format_ident!("{}Inner", patch_ident);
    let variants = arms.iter().map(|arm| {
        let name = &arm.patch_variant;
        let tys = arm
            .fields
            .iter()
            .map(|f| replace_self(f.field.ty.to_token_stream(), &container));
        quote!(#name(#(#private::Option<#tys>,)*))
    });
    let lifetimes = generics.lifetimes().map(|param| &param.lifetime);
    let type_params = generics.type_params().map(|param| &param.ident);
    quote! {
        #[allow(non_camel_case_types)]
        enum #inner_ident #generics #where_clause {
            #(#variants,)*
            #[allow(dead_code)]
            __Marker(
                ::core::convert::Infallible,
                ::core::marker::PhantomData<(
                    #(fn() -> &#lifetimes (),)*
                    #(fn() -> #type_params,)*
                )>,
            ),
        }

        #[doc(hidden)]
        pub struct #patch_ident #generics #where_clause {
            __inner: #inner_ident #ty_generics,
        }
    }
}

/// `BitCodec`: the variant index, then the variant's fields.
fn bit_codec_impl(
    cont: &Container,
    private: &TokenStream,
    generics: &syn::Generics,
    arms: &[Arm],
    tag_bits: u32,
) -> TokenStream {
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let variant_count = arms.len() as u32;

    let encode_arms = arms.iter().map(|arm| {
        let pat = pattern(arm, |f| f.binding.clone());
        let tag = Literal::u64_suffixed(arm.tag);
        let encodes = arm.fields.iter().map(|f| {
            let binding = &f.binding;
            f.codec.encode(quote!(#binding))
        });
        quote!(#pat => {
            __writer.write_bits(#tag, #tag_bits);
            #(#encodes?;)*
        })
    });
    let decode_arms = arms.iter().map(|arm| {
        let tag = Literal::u64_suffixed(arm.tag);
        let value = construct(arm, |f| {
            let decode = f.codec.decode();
            quote!(#decode?)
        });
        quote!(#tag => #value,)
    });
    let min_bits = arms
        .iter()
        .map(|arm| {
            let each = arm.fields.iter().map(|f| f.codec.min_bits());
            quote!(0u64 #(.saturating_add(#each))*)
        })
        .reduce(|a, b| quote!(#private::schema::min_bits(#a, #b)))
        .unwrap_or_else(|| quote!(0u64));

    let (nest_writer, nest_reader) = (nest_writer(private), nest_reader(private));
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::BitCodec for #ident #ty_generics #where_clause {
            const MIN_BITS: ::core::primitive::u64 = (#tag_bits as ::core::primitive::u64).saturating_add(#min_bits);
            const TYPE_HASH: ::core::primitive::u64 = <Self as #private::Replicate>::SCHEMA_HASH;

            fn encode(
                &self,
                __writer: &mut #private::BitWriter<'_>,
            ) -> #private::Result<(), #private::EncodeError> {
                #nest_writer
                match self {
                    #(#encode_arms)*
                }
                #private::Ok(())
            }

            fn decode(
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<Self, #private::DecodeError> {
                #nest_reader
                let __bit_offset = __reader.bit_offset();
                let __tag = __reader.read_bits(#tag_bits)?;
                #private::Ok(match __tag {
                    #(#decode_arms)*
                    _ => {
                        return #private::Err(#private::DecodeError::InvalidVariant {
                            bit_offset: __bit_offset,
                            tag: __tag,
                            variants: #variant_count as ::core::primitive::u32,
                        });
                    }
                })
            }

            fn same(&self, __other: &Self) -> ::core::primitive::bool {
                #private::FieldMask::is_empty(<Self as #private::Replicate>::diff(self, __other))
            }
        }
    }
}

/// `Replicate`: bit 0 is the variant, bit `1 + i` the variant's fields.
fn replicate_impl(
    cont: &Container,
    private: &TokenStream,
    generics: &syn::Generics,
    arms: &[Arm],
    tag_bits: u32,
    patch_ident: &syn::Ident,
) -> TokenStream {
    let ident = cont.ident;
    let name = cont.name();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let inner_ident = format_ident!("{}Inner", patch_ident);
    let variant_count = arms.len() as u32;
    let field_count = 1 + arms
        .iter()
        .map(|arm| arm.fields.len() as u32)
        .max()
        .unwrap_or(0);

    let schema = arms.iter().map(|arm| {
        let variant = arm.variant.ident.to_string();
        let fields = arm
            .fields
            .iter()
            .map(|f| schema_steps(cont, f.field, &f.codec, private));
        quote! {
            __hash = #private::schema::str(__hash, #variant);
            #(#fields)*
        }
    });

    let diff_arms = arms.iter().map(|arm| {
        let mine = pattern(arm, |f| f.binding.clone());
        let theirs = pattern(arm, |f| f.other.clone());
        let checks = arm.fields.iter().map(|f| {
            let (a, b, bit) = (&f.binding, &f.other, f.bit);
            let same = f.codec.same(quote!(#a), quote!(#b));
            quote!(if !#same { __mask = #private::FieldMask::with(__mask, #bit); })
        });
        quote!((#mine, #theirs) => {
            let mut __mask = #private::FieldMask::EMPTY;
            #(#checks)*
            __mask
        })
    });
    let whole_arms = arms.iter().map(|arm| {
        let pat = pattern(arm, |f| f.binding.clone());
        let count = 1 + arm.fields.len() as u32;
        quote!(#pat => #private::FieldMask::all(#count),)
    });

    let encode_arms = arms.iter().map(|arm| {
        let pat = pattern(arm, |f| f.binding.clone());
        let tag = Literal::u64_suffixed(arm.tag);
        let encodes = arm.fields.iter().map(|f| {
            let (binding, bit) = (&f.binding, f.bit);
            let encode = f.codec.encode(quote!(#binding));
            quote!(if #private::FieldMask::contains(__mask, #bit) { #encode?; })
        });
        quote!(#pat => {
            __writer.write_bits(#tag, #tag_bits);
            #(#encodes)*
        })
    });

    let decode_arms = arms.iter().map(|arm| {
        let tag = Literal::u64_suffixed(arm.tag);
        let count = 1 + arm.fields.len() as u32;
        let variant = &arm.patch_variant;
        let slots: Vec<_> = arm.fields.iter().map(|f| &f.slot).collect();
        let reads = arm.fields.iter().map(|f| {
            let (slot, bit) = (&f.slot, f.bit);
            let decode = f.codec.decode();
            quote! {
                let #slot = if #private::FieldMask::contains(__mask, #bit) {
                    #private::Some(#decode?)
                } else {
                    #private::None
                };
            }
        });
        quote!(#tag => {
            if !#private::FieldMask::covers(#private::FieldMask::all(#count), __mask) {
                return #private::Err(#private::DecodeError::InvalidFieldSet {
                    bit_offset: __bit_offset,
                    field_count: #count,
                });
            }
            #(#reads)*
            #inner_ident::#variant(#(#slots,)*)
        })
    });

    let into_arms = arms.iter().map(|arm| {
        let pat = pattern(arm, |f| f.binding.clone());
        let variant = &arm.patch_variant;
        let somes = arm.fields.iter().map(|f| {
            let binding = &f.binding;
            quote!(#private::Some(#binding))
        });
        quote!(#pat => #inner_ident::#variant(#(#somes,)*),)
    });

    let retain_arms = arms.iter().map(|arm| {
        let variant = &arm.patch_variant;
        let slots: Vec<_> = arm.fields.iter().map(|f| &f.slot).collect();
        let clears = arm.fields.iter().map(|f| {
            let (slot, bit) = (&f.slot, f.bit);
            quote!(if !#private::FieldMask::contains(__keep, #bit) { *#slot = #private::None; })
        });
        quote!(#inner_ident::#variant(#(#slots,)*) => { #(#clears)* })
    });

    let apply_arms = arms.iter().map(|arm| {
        let variant = &arm.patch_variant;
        let mine = pattern(arm, |f| f.binding.clone());
        let slots: Vec<_> = arm.fields.iter().map(|f| &f.slot).collect();
        let assigns = arm.fields.iter().map(|f| {
            let (slot, binding, bit) = (&f.slot, &f.binding, f.bit);
            let unchanged = f.codec.same(quote!(&*#binding), quote!(&__value));
            quote! {
                if let #private::Some(__value) = #slot {
                    if !#unchanged {
                        __changed = #private::FieldMask::with(__changed, #bit);
                    }
                    *#binding = __value;
                }
            }
        });
        let all_present = arm.fields.iter().map(|f| {
            let slot = &f.slot;
            quote!(#private::Option::is_some(&#slot))
        });
        let rebuilt = construct(arm, |f| {
            let slot = &f.slot;
            quote! {
                match #slot {
                    #private::Some(__value) => __value,
                    #private::None => return #private::FieldMask::EMPTY,
                }
            }
        });
        let whole = 1 + arm.fields.len() as u32;
        quote!(#inner_ident::#variant(#(#slots,)*) => {
            if let #mine = self {
                #[allow(unused_mut)]
                let mut __changed = #private::FieldMask::EMPTY;
                #(#assigns)*
                __changed
            } else if true #(&& #all_present)* {
                // A whole value of another variant replaces this one: what
                // `diff` names for a change of variant, the whole new value.
                *self = #rebuilt;
                #private::FieldMask::all(#whole)
            } else {
                // A partial change for another variant cannot apply (the
                // sender never sends one while the receiver may hold
                // another variant).
                #private::FieldMask::EMPTY
            }
        })
    });

    let (nest_writer, nest_reader) = (nest_writer(private), nest_reader(private));
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::Replicate for #ident #ty_generics #where_clause {
            const FIELD_COUNT: ::core::primitive::u32 = #field_count;
            const SCHEMA_HASH: ::core::primitive::u64 = {
                let mut __hash = #private::schema::str(#private::schema::START, #name);
                __hash = #private::schema::str(__hash, "enum");
                #(#schema)*
                __hash
            };
            const TYPE_NAME: &'static ::core::primitive::str = #name;
            const STRUCTURE: #private::FieldMask = #private::FieldMask::single(0);
            type Patch = #patch_ident #ty_generics;

            #[allow(unreachable_patterns)]
            fn diff(&self, __other: &Self) -> #private::FieldMask {
                match (self, __other) {
                    #(#diff_arms)*
                    _ => match self {
                        #(#whole_arms)*
                    },
                }
            }

            fn encode_fields(
                &self,
                __mask: #private::FieldMask,
                __writer: &mut #private::BitWriter<'_>,
            ) -> #private::Result<(), #private::EncodeError> {
                #nest_writer
                match self {
                    #(#encode_arms)*
                }
                #private::Ok(())
            }

            fn decode_fields(
                __mask: #private::FieldMask,
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<<Self as #private::Replicate>::Patch, #private::DecodeError> {
                #nest_reader
                let __bit_offset = __reader.bit_offset();
                let __tag = __reader.read_bits(#tag_bits)?;
                let __inner = match __tag {
                    #(#decode_arms)*
                    _ => {
                        return #private::Err(#private::DecodeError::InvalidVariant {
                            bit_offset: __bit_offset,
                            tag: __tag,
                            variants: #variant_count,
                        });
                    }
                };
                #private::Ok(#patch_ident { __inner })
            }

            fn into_patch(self) -> <Self as #private::Replicate>::Patch {
                let __inner = match self {
                    #(#into_arms)*
                };
                #patch_ident { __inner }
            }

            fn retain_fields(
                __patch: &mut <Self as #private::Replicate>::Patch,
                __keep: #private::FieldMask,
            ) {
                match &mut __patch.__inner {
                    #(#retain_arms)*
                    #inner_ident::__Marker(__never, _) => match *__never {},
                }
            }

            fn apply_patch(
                &mut self,
                __patch: <Self as #private::Replicate>::Patch,
            ) -> #private::FieldMask {
                match __patch.__inner {
                    #(#apply_arms)*
                    #inner_ident::__Marker(__never, _) => match __never {},
                }
            }
        }
    }
}
