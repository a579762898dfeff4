//! `BitCodec` and `Replicate` for an enum.
//!
//! Wire: the variant's index in ⌈log2 variants⌉ bits, then the variant's
//! replicated fields. Mask: bit 0 is the variant, bit `1 + i` the current
//! variant's `i`-th replicated field. When the variant differs, `diff`
//! returns bit 0 and every field of the new variant (the whole value);
//! otherwise the changed fields. `apply_patch` returns the same as `diff`
//! would for the value before and after. Partial encodings still start with the
//! variant index, so a decoder always knows the field types it reads.
//!
//! In a `match` arm, replicated field `i` of the variant is bound to
//! `__self_i` (and to `__other_i` for the other value in `diff`); its
//! `Option` in the patch is `__patch_i`.

use super::body::{self, PatchGenerics, Replicated, nest_reader, nest_writer};
use super::impls::{self, BitCodecItems, ReplicateItems, Target};
use super::{bound, private_path};
use crate::ast::{Container, Style, Variant};
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

/// One variant with what every impl item needs.
struct Arm<'a> {
    variant: &'a Variant<'a>,
    /// The variant's index on the wire.
    tag: u64,
    /// Its replicated fields, at mask bits `1..`.
    fields: Vec<Replicated<'a>>,
    /// The patch enum's variant for it.
    patch_variant: syn::Ident,
}

/// `__self_i`: replicated field `i` of the variant `self` holds.
fn binding(field: &Replicated) -> syn::Ident {
    format_ident!("__self_{}", field.index)
}

/// `__other_i`: the same field of the other value in `diff`.
fn other(field: &Replicated) -> syn::Ident {
    format_ident!("__other_{}", field.index)
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
            fields: body::lay_out(cont, &variant.fields, 1, &private, |i| {
                (
                    format_ident!("__patch_{}", i),
                    format_ident!("__QUANTIZER_{}_{}", tag, 1 + i),
                )
            }),
        })
        .collect();

    let generics = bound::with_bounds(cont, &private);
    let target = Target {
        private: &private,
        ident: cont.ident,
        generics: &generics,
    };
    let items = arms
        .iter()
        .flat_map(|arm| arm.fields.iter().map(|f| f.codec.items()));
    let patch_ident = format_ident!("__{}Patch", cont.ident);
    let patch = patch_types(cont, &arms, &patch_ident);
    let bit_codec = impls::bit_codec(&target, bit_codec_items(&private, &arms, tag_bits));
    let replicate = impls::replicate(
        &target,
        replicate_items(cont, &private, &arms, tag_bits, &patch_ident),
    );
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
fn pattern(arm: &Arm, name: impl Fn(&Replicated) -> syn::Ident) -> TokenStream {
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
fn construct(arm: &Arm, value: impl Fn(&Replicated) -> TokenStream) -> TokenStream {
    let (ident, variant) = (arm.variant.ident, arm.variant);
    body::construct_sent(
        quote!(Self::#ident),
        variant.style,
        &variant.fields,
        &arm.fields,
        value,
    )
}

/// The patch: a public struct around a private enum with one variant per
/// enum variant, holding an `Option` per replicated field.
fn patch_types(cont: &Container, arms: &[Arm], patch_ident: &syn::Ident) -> TokenStream {
    let generics = cont.generics;
    let (_, ty_generics, _) = generics.split_for_impl();
    let PatchGenerics {
        container,
        where_clause,
        marker,
    } = PatchGenerics::new(cont);
    let inner_ident = format_ident!("{}Inner", patch_ident);
    let variants = arms.iter().map(|arm| {
        let name = &arm.patch_variant;
        let tys = arm.fields.iter().map(|f| f.slot_ty(&container));
        quote!(#name(#(#tys,)*))
    });
    quote! {
        #[allow(non_camel_case_types)]
        enum #inner_ident #generics #where_clause {
            #(#variants,)*
            #[allow(dead_code)]
            __Marker(
                ::core::convert::Infallible,
                #marker,
            ),
        }

        #[doc(hidden)]
        pub struct #patch_ident #generics #where_clause {
            __inner: #inner_ident #ty_generics,
        }
    }
}

/// `BitCodec`: the variant index, then the variant's fields.
fn bit_codec_items(private: &TokenStream, arms: &[Arm], tag_bits: u32) -> BitCodecItems {
    let variant_count = arms.len() as u32;
    let encode_arms = arms.iter().map(|arm| {
        let pat = pattern(arm, binding);
        let tag = Literal::u64_suffixed(arm.tag);
        let encodes = arm.fields.iter().map(|f| {
            let binding = binding(f);
            f.encode(quote!(#binding))
        });
        quote!(#pat => {
            __writer.write_bits(#tag, #tag_bits);
            #(#encodes)*
        })
    });
    let decode_arms = arms.iter().map(|arm| {
        let tag = Literal::u64_suffixed(arm.tag);
        let value = construct(arm, |f| f.decode());
        quote!(#tag => #value,)
    });
    let min_bits = arms
        .iter()
        .map(|arm| body::min_bits(&arm.fields))
        .reduce(|a, b| quote!(#private::schema::min_bits(#a, #b)))
        .unwrap_or_else(|| quote!(0u64));

    let (nest_writer, nest_reader) = (
        nest_writer(private, &quote!(true)),
        nest_reader(private, &quote!(true)),
    );
    BitCodecItems {
        min_bits: quote!((#tag_bits as ::core::primitive::u64).saturating_add(#min_bits)),
        type_hash: quote!(<Self as #private::Replicate>::SCHEMA_HASH),
        encode: quote! {
            #nest_writer
            match self {
                #(#encode_arms)*
            }
            #private::Ok(())
        },
        decode: quote! {
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
        },
        same: quote! {
            #private::FieldMask::is_empty(<Self as #private::Replicate>::diff(self, __other))
        },
    }
}

/// `Replicate`: bit 0 is the variant, bit `1 + i` the variant's fields.
fn replicate_items(
    cont: &Container,
    private: &TokenStream,
    arms: &[Arm],
    tag_bits: u32,
    patch_ident: &syn::Ident,
) -> ReplicateItems {
    let name = cont.name();
    let (_, ty_generics, _) = cont.generics.split_for_impl();
    let inner_ident = format_ident!("{}Inner", patch_ident);
    let variant_count = arms.len() as u32;
    let field_count = 1 + arms
        .iter()
        .map(|arm| arm.fields.len() as u32)
        .max()
        .unwrap_or(0);

    let schema = arms.iter().map(|arm| {
        let variant = arm.variant.ident.to_string();
        let fields = arm.fields.iter().map(|f| f.schema(cont));
        quote! {
            __hash = #private::schema::str(__hash, #variant);
            #(#fields)*
        }
    });

    let diff_arms = arms.iter().map(|arm| {
        let mine = pattern(arm, binding);
        let theirs = pattern(arm, other);
        let checks = arm.fields.iter().map(|f| {
            let (a, b) = (binding(f), other(f));
            f.diff(quote!(#a), quote!(#b))
        });
        quote!((#mine, #theirs) => {
            let mut __mask = #private::FieldMask::EMPTY;
            #(#checks)*
            __mask
        })
    });
    let whole_arms = arms.iter().map(|arm| {
        let pat = pattern(arm, binding);
        let count = 1 + arm.fields.len() as u32;
        quote!(#pat => #private::FieldMask::all(#count),)
    });

    let encode_arms = arms.iter().map(|arm| {
        let pat = pattern(arm, binding);
        let tag = Literal::u64_suffixed(arm.tag);
        let encodes = arm.fields.iter().map(|f| {
            let binding = binding(f);
            f.encode_masked(quote!(#binding))
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
        let slots = arm.fields.iter().map(|f| &f.slot);
        let reads = arm.fields.iter().map(Replicated::decode_masked);
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
        let pat = pattern(arm, binding);
        let variant = &arm.patch_variant;
        let values = arm.fields.iter().map(|f| {
            let binding = binding(f);
            f.slot_value(quote!(#binding))
        });
        quote!(#pat => #inner_ident::#variant(#(#values,)*),)
    });

    let retain_arms = arms.iter().map(|arm| {
        let variant = &arm.patch_variant;
        let slots = arm.fields.iter().map(|f| &f.slot);
        let clears = arm.fields.iter().map(|f| {
            let slot = &f.slot;
            f.retain(quote!(*#slot))
        });
        quote!(#inner_ident::#variant(#(#slots,)*) => { #(#clears)* })
    });

    let apply_arms = arms.iter().map(|arm| {
        let variant = &arm.patch_variant;
        let mine = pattern(arm, binding);
        let slots: Vec<_> = arm.fields.iter().map(|f| &f.slot).collect();
        let assigns = arm.fields.iter().map(|f| {
            let (slot, binding) = (&f.slot, binding(f));
            f.apply(quote!(#slot), quote!(*#binding))
        });
        let all_present = slots
            .iter()
            .map(|slot| quote!(#private::Option::is_some(&#slot)));
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

    let (nest_writer, nest_reader) = (
        nest_writer(private, &quote!(true)),
        nest_reader(private, &quote!(true)),
    );
    ReplicateItems {
        field_count: quote!(#field_count),
        schema_hash: quote!({
            let mut __hash = #private::schema::str(#private::schema::START, #name);
            __hash = #private::schema::str(__hash, "enum");
            #(#schema)*
            __hash
        }),
        type_name: name,
        consts: quote!(const STRUCTURE: #private::FieldMask = #private::FieldMask::single(0);),
        patch: quote!(#patch_ident #ty_generics),
        extra: TokenStream::new(),
        diff_attrs: quote!(#[allow(unreachable_patterns)]),
        diff: quote! {
            match (self, __other) {
                #(#diff_arms)*
                _ => match self {
                    #(#whole_arms)*
                },
            }
        },
        encode_fields: quote! {
            #nest_writer
            match self {
                #(#encode_arms)*
            }
            #private::Ok(())
        },
        decode_fields: quote! {
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
        },
        into_patch: quote! {
            let __inner = match self {
                #(#into_arms)*
            };
            #patch_ident { __inner }
        },
        retain_fields: quote! {
            match &mut __patch.__inner {
                #(#retain_arms)*
                #inner_ident::__Marker(__never, _) => match *__never {},
            }
        },
        apply_patch: quote! {
            match __patch.__inner {
                #(#apply_arms)*
                #inner_ident::__Marker(__never, _) => match __never {},
            }
        },
    }
}
