//! `BitCodec` and `Replicate` for a struct (named, tuple or unit).
//!
//! Replicated field `i` (declaration order, skipped fields not counted) is
//! field `__field{i}` of the patch and takes the mask bits from its offset:
//! bit `i` when no field is flattened, otherwise the leaves of the fields
//! before it. Every runtime item is named through `#private`
//! (`::fastarray::__private_0_1` by default) and every std item through
//! `::core`, so the output compiles whatever the caller has in scope.

use super::body::{self, PatchGenerics, Replicated, nest_reader, nest_writer};
use super::impls::{self, BitCodecItems, ReplicateItems, Target};
use super::{array_fields, at_type, bound, private_path};
use crate::ast::{Container, Field, Style};
use crate::attr::Audience;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;

/// Both impls, in an anonymous const so that nothing leaks into the caller's namespace.
pub fn expand(cont: &Container, style: Style, all_fields: &[Field]) -> TokenStream {
    let private = private_path(&cont.attrs);
    let fields = body::lay_out(cont, all_fields, 0, &private, |i| {
        (
            format_ident!("__field{}", i),
            format_ident!("__QUANTIZER_{}", i),
        )
    });
    let patch_ident = format_ident!("__{}Patch", cont.ident);
    let patch = patch_struct(cont, &fields, &patch_ident);
    let generics = bound::with_bounds(cont, &private);
    let target = Target {
        private: &private,
        ident: cont.ident,
        generics: &generics,
    };
    let bit_codec = impls::bit_codec(&target, {
        let plain = bit_codec_items(&private, style, all_fields, &fields);
        match cont.attrs.default_baseline() {
            Some(baseline) => baseline_codec_items(&private, baseline, &fields, plain),
            None => plain,
        }
    });
    let items = fields.iter().map(|field| field.codec.items());
    let array_items = array_fields::expand(&target, style, all_fields);
    let replicate = impls::replicate(
        &target,
        replicate_items(
            cont,
            style,
            &private,
            all_fields,
            &fields,
            &patch_ident,
            array_items,
        ),
    );
    let consts = field_consts(cont, &private, &fields, &generics);
    quote! {
        const _: () = {
            #(#items)*
            #patch
            #bit_codec
            #replicate
            #consts
        };
    }
}

/// One `FieldMask` constant per replicated field, named after it in upper
/// case (`health` → `HEALTH`, a tuple struct's `0` → `FIELD_0`): its mask
/// bit, or for a flattened field the bits of its leaves. Names, not
/// numbers: reordering the fields moves the bits, and the constants with
/// them.
fn field_consts(
    cont: &Container,
    private: &TokenStream,
    fields: &[Replicated],
    generics: &syn::Generics,
) -> TokenStream {
    if fields.is_empty() {
        return TokenStream::new();
    }
    let ident = cont.ident;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let consts = fields.iter().map(|field| {
        let (name, shown) = match &field.field.member {
            syn::Member::Named(named) => {
                let name = named.to_string();
                let name = name.strip_prefix("r#").unwrap_or(&name).to_string();
                (name.to_uppercase(), name)
            }
            syn::Member::Unnamed(index) => {
                (format!("FIELD_{}", index.index), index.index.to_string())
            }
        };
        let name = syn::Ident::new(&name, syn::spanned::Spanned::span(&field.field.member));
        let (offset, width) = (&field.offset, &field.width);
        let (value, doc) = if field.codec.is_flattened() {
            (
                quote!(#private::FieldMask::shifted_up(#private::FieldMask::all(#width), #offset)),
                format!("The mask bits of the leaves of the flattened field `{shown}`."),
            )
        } else {
            (
                quote!(#private::FieldMask::single(#offset)),
                format!("The mask bit of the replicated field `{shown}`."),
            )
        };
        quote! {
            #[doc = #doc]
            #[allow(dead_code)]
            pub const #name: #private::FieldMask = #value;
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#consts)*
        }
    }
}

/// The `Patch` type: one `Option` per replicated field.
///
/// It is a struct rather than a tuple of the field types because the
/// associated type of a public impl must not name a private type, and a
/// public struct may well have fields of private types. Its fields are
/// private, and it takes the container's generics.
fn patch_struct(cont: &Container, fields: &[Replicated], patch_ident: &syn::Ident) -> TokenStream {
    let generics = cont.generics;
    let PatchGenerics {
        container,
        where_clause,
        marker,
    } = PatchGenerics::new(cont);
    let slots = fields.iter().map(|field| &field.slot);
    let tys = fields.iter().map(|field| field.slot_ty(&container));
    quote! {
        #[doc(hidden)]
        pub struct #patch_ident #generics #where_clause {
            #(#slots: #tys,)*
            __marker: #marker,
        }
    }
}

/// `BitCodec`: the full encoding, every replicated field in order.
fn bit_codec_items(
    private: &TokenStream,
    style: Style,
    all_fields: &[Field],
    fields: &[Replicated],
) -> BitCodecItems {
    let encodes = fields.iter().map(|field| {
        let member = &field.field.member;
        field.encode(quote!(&self.#member))
    });
    // Every field, in declaration order: replicated ones from the reader,
    // skipped ones with their default.
    let decoded = body::construct_sent(quote!(Self), style, all_fields, fields, |field| {
        field.decode()
    });
    let (nest_writer, nest_reader) = {
        let counts = body::counts(private, fields);
        (nest_writer(private, &counts), nest_reader(private, &counts))
    };
    BitCodecItems {
        min_bits: body::min_bits(fields),
        type_hash: quote!(<Self as #private::Replicate>::SCHEMA_HASH),
        encode: quote! {
            #nest_writer
            #(#encodes)*
            #private::Ok(())
        },
        decode: quote! {
            #nest_reader
            #private::Ok(#decoded)
        },
        same: quote! {
            #private::FieldMask::is_empty(<Self as #private::Replicate>::diff(self, __other))
        },
    }
}

/// `Self::default()`, for a type with `#[replicate(default_baseline)]`
/// (`baseline`, the attribute as written: a type without `Default` is
/// reported there).
fn default_value(baseline: &syn::Path) -> TokenStream {
    let span = Span::call_site().located_at(baseline.span());
    quote_spanned!(span=> <Self as ::core::default::Default>::default())
}

/// `BitCodec` for a type with `#[replicate(default_baseline)]`, from its
/// `plain` items: whether every field follows or only those in which the
/// value differs from the type's `Default` (`write_baseline_form`), then
/// those fields as `encode_fields` writes them. A decoded value starts as
/// the default and the fields that follow are read into it, so its
/// skipped fields are the default's too.
fn baseline_codec_items(
    private: &TokenStream,
    baseline: &syn::Path,
    fields: &[Replicated],
    plain: BitCodecItems,
) -> BitCodecItems {
    let default = default_value(baseline);
    let encodes = fields.iter().map(|field| {
        let member = &field.field.member;
        field.encode_masked(quote!(&self.#member))
    });
    let decodes = fields.iter().map(|field| {
        let member = &field.field.member;
        field.decode_into(quote!(__value.#member))
    });
    let (nest_writer, nest_reader) = {
        let counts = body::counts(private, fields);
        (nest_writer(private, &counts), nest_reader(private, &counts))
    };
    let field_count = quote!(<Self as #private::Replicate>::FIELD_COUNT);
    let plain_min = plain.min_bits.clone();
    BitCodecItems {
        min_bits: quote!(#private::baseline_min_bits(#plain_min)),
        encode: quote! {
            #nest_writer
            let __differs = <Self as #private::Replicate>::diff(self, &#default);
            let __mask = if #private::write_baseline_form(__writer, __differs, #field_count) {
                __differs
            } else {
                #private::FieldMask::all(#field_count)
            };
            #(#encodes)*
            #private::Ok(())
        },
        decode: quote! {
            #nest_reader
            let __mask = match #private::read_baseline_form(__reader, #field_count)? {
                #private::Some(__differs) => __differs,
                #private::None => #private::FieldMask::all(#field_count),
            };
            let mut __value: Self = #default;
            #(#decodes)*
            #private::Ok(__value)
        },
        ..plain
    }
}

/// `Replicate::OWNER_ONLY`, `SKIP_OWNER` and `INITIAL_ONLY`: the leaves of
/// the fields with the attribute (all of a flattened field's leaves), and
/// those a flattened field's type marks itself. Unlike detail levels, the
/// schema hash covers the first two: a snapshot's items carry the fields
/// they allow an owner or everyone else, so both sides must agree on them.
fn audience_masks(private: &TokenStream, fields: &[Replicated]) -> TokenStream {
    let mask = |name: TokenStream, marked: &dyn Fn(&Replicated) -> bool| {
        let parts = fields.iter().map(|f| {
            let offset = &f.offset;
            let own = marked(f);
            let leaves = if f.codec.is_flattened() {
                let ty = f.field.ty;
                if own {
                    quote_spanned!(at_type(ty)=> #private::FieldMask::all(<#ty as #private::Replicate>::FIELD_COUNT))
                } else {
                    quote_spanned!(at_type(ty)=> <#ty as #private::Replicate>::#name)
                }
            } else if own {
                quote!(#private::FieldMask::single(0))
            } else {
                return quote!(0u64);
            };
            quote!(#private::FieldMask::bits(#private::FieldMask::shifted_up(#leaves, #offset)))
        });
        quote! {
            const #name: #private::FieldMask = #private::FieldMask::from_bits(0u64 #(| #parts)*);
        }
    };
    let owner_only = mask(quote!(OWNER_ONLY), &|f| {
        f.field.attrs.audience() == Audience::OwnerOnly
    });
    let skip_owner = mask(quote!(SKIP_OWNER), &|f| {
        f.field.attrs.audience() == Audience::SkipOwner
    });
    let initial_only = mask(quote!(INITIAL_ONLY), &|f| {
        f.field.attrs.initial_only().is_some()
    });
    quote!(#owner_only #skip_owner #initial_only)
}

/// `Replicate::detail_mask`, when a field has `detail = N` or is flattened
/// (its type may have details of its own): the leaves whose detail is at
/// most the level. A flattened field's leaves go when it does and its type
/// sends them. Nothing otherwise: the trait's default sends every field.
/// Detail is a sending policy, not a wire format: the schema hash ignores
/// it.
fn detail_mask(
    private: &TokenStream,
    style: Style,
    all_fields: &[Field],
    fields: &[Replicated],
) -> TokenStream {
    let needed = fields.iter().any(|f| {
        f.field.attrs.detail().is_some()
            || f.field.attrs.can_be_withheld()
            || f.field.attrs.initial_only().is_some()
            || f.codec.is_flattened()
    });
    if !needed {
        return TokenStream::new();
    }
    let parts = fields.iter().map(|f| {
        let offset = &f.offset;
        let leaves = if f.codec.is_flattened() {
            let ty = f.field.ty;
            quote_spanned!(at_type(ty)=> <#ty as #private::Replicate>::detail_mask(__level))
        } else {
            quote!(#private::FieldMask::single(0))
        };
        let add = quote! {
            __bits |= #private::FieldMask::bits(#private::FieldMask::shifted_up(#leaves, #offset));
        };
        match f.field.attrs.detail() {
            Some(&(_, level)) if level > 0 => quote!(if __level >= #level { #add }),
            _ => add,
        }
    });
    let withholds = fields.iter().map(|f| {
        let own = f.field.attrs.can_be_withheld();
        if f.codec.is_flattened() {
            let ty = f.field.ty;
            quote_spanned!(at_type(ty)=> (#own || <#ty as #private::Replicate>::WITHHOLDS))
        } else {
            quote!(#own)
        }
    });
    // A whole value with withheld fields: every field is read as it is, or
    // as its `Default` when withheld (skipped and array fields as ever).
    let visible = body::construct_sent(quote!(Self), style, all_fields, fields, |field| {
        field.decode_visible()
    });
    let nest_reader = nest_reader(private, &body::counts(private, fields));
    let audience = audience_masks(private, fields);
    quote! {
        fn detail_mask(__level: ::core::primitive::u8) -> #private::FieldMask {
            let mut __bits = 0u64;
            #(#parts)*
            #private::FieldMask::from_bits(__bits)
        }

        const WITHHOLDS: ::core::primitive::bool = false #(|| #withholds)*;

        #audience

        fn decode_visible(
            __mask: #private::FieldMask,
            __reader: &mut #private::BitReader<'_>,
        ) -> #private::Result<Self, #private::DecodeError> {
            #nest_reader
            let _ = &__mask;
            #private::Ok(#visible)
        }
    }
}

/// `Replicate::field_path`: the field that has the bit, by name, and for
/// a flattened field's leaf, the leaf's path within its type.
fn field_path(private: &TokenStream, fields: &[Replicated]) -> TokenStream {
    let arms = fields.iter().map(|field| {
        let name = match &field.field.member {
            syn::Member::Named(named) => {
                let name = named.to_string();
                name.strip_prefix("r#").unwrap_or(&name).to_string()
            }
            syn::Member::Unnamed(index) => index.index.to_string(),
        };
        let (offset, width) = (&field.offset, &field.width);
        let inner = if field.codec.is_flattened() {
            let ty = field.field.ty;
            quote_spanned! {at_type(ty)=>
                let _ = <#ty as #private::Replicate>::field_path(__index - (#offset), __path);
            }
        } else {
            TokenStream::new()
        };
        quote! {
            // One comparison: below the offset wraps to a large number.
            if __index.wrapping_sub(#offset) < (#width) {
                __path.push(#name);
                #inner
                return true;
            }
        }
    });
    quote! {
        fn field_path(
            __index: ::core::primitive::u32,
            __path: &mut #private::Vec<&'static ::core::primitive::str>,
        ) -> ::core::primitive::bool {
            #(#arms)*
            let _ = (__index, __path);
            false
        }
    }
}

/// `Replicate::capture_into`: each replicated field copied with
/// `Clone::clone_from` into the earlier pre-image's, reusing what it owns;
/// and `Replicate::capture_fields_into`, the same for the fields a mask
/// names.
/// A field whose type is not `Clone` (or, in a generic struct, not known
/// to be) makes it return `false`, and the guard clones the whole value
/// (autoref picks `ByClone` when it applies, else `NotClone`).
fn capture_into(private: &TokenStream, fields: &[Replicated]) -> TokenStream {
    let copies = fields.iter().map(|field| {
        let member = &field.field.member;
        quote!(&& (&&#private::CloneField(&self.#member)).capture_field(&mut __into.#member))
    });
    // The same copies, of the fields `__fields` names only.
    let named = fields.iter().map(|field| {
        let member = &field.field.member;
        let named = field.named_in(quote!(__fields));
        quote!(&& (!(#named) || (&&#private::CloneField(&self.#member)).capture_field(&mut __into.#member)))
    });
    quote! {
        #[inline]
        fn capture_into(&self, __into: &mut Self) -> ::core::primitive::bool {
            #[allow(unused_imports)]
            use #private::{ByClone as _, NotClone as _};
            true #(#copies)*
        }

        #[inline]
        fn capture_fields_into(
            &self,
            __into: &mut Self,
            __fields: #private::FieldMask,
        ) -> ::core::primitive::bool {
            #[allow(unused_imports)]
            use #private::{ByClone as _, NotClone as _};
            let _ = &__fields;
            true #(#named)*
        }
    }
}

/// `Replicate`: per-field diff, encode, decode and patch.
fn replicate_items(
    cont: &Container,
    style: Style,
    private: &TokenStream,
    all_fields: &[Field],
    fields: &[Replicated],
    patch_ident: &syn::Ident,
    array_items: TokenStream,
) -> ReplicateItems {
    let name = cont.name();
    let (_, ty_generics, _) = cont.generics.split_for_impl();
    let flattened: Vec<&Replicated> = fields.iter().filter(|f| f.codec.is_flattened()).collect();
    let field_count = if flattened.is_empty() {
        let count = fields.len() as u32;
        quote!(#count)
    } else {
        let no_arrays = flattened.iter().map(|f| {
            let ty = f.field.ty;
            quote_spanned! {at_type(ty)=>
                ::core::assert!(
                    <#ty as #private::Replicate>::ARRAY_FIELDS == 0,
                    "a `#[replicate(flatten)]` field's type cannot have `#[replicate(array)]` fields: hold it in a `FastArray` instead"
                );
            }
        });
        let widths = fields.iter().map(|field| &field.width);
        quote!({
            #(#no_arrays)*
            let __leaves = 0u32 #(+ #widths)*;
            ::core::assert!(__leaves <= 64, "a replicated type has at most 64 leaves (fields, counting those of flattened fields)");
            __leaves
        })
    };
    let structure = (!flattened.is_empty()).then(|| {
        let parts = flattened.iter().map(|f| {
            let (ty, offset) = (f.field.ty, &f.offset);
            quote_spanned!(at_type(ty)=> #private::FieldMask::bits(#private::FieldMask::shifted_up(<#ty as #private::Replicate>::STRUCTURE, #offset)))
        });
        quote!(const STRUCTURE: #private::FieldMask = #private::FieldMask::from_bits(0u64 #(| #parts)*);)
    });

    let detail = detail_mask(private, style, all_fields, fields);
    let path = field_path(private, fields);
    let array_steps = array_fields::schema_steps(all_fields, private);
    // Whole values say how they relate to the default (the default's own
    // bits are compared at run time: `wire_schema`).
    let baseline_step = cont
        .attrs
        .default_baseline()
        .map(|_| quote!(__hash = #private::schema::str(__hash, "default_baseline");));
    let schema_hash = if fields.is_empty() && array_steps.is_empty() && baseline_step.is_none() {
        quote!(#private::schema::str(#private::schema::START, #name))
    } else {
        let steps = fields.iter().map(|field| field.schema(cont));
        quote!({
            let mut __hash = #private::schema::str(#private::schema::START, #name);
            #(#steps)*
            #(#array_steps)*
            #baseline_step
            // Whole entries of a type that can withhold fields say which
            // they carry.
            if <Self as #private::Replicate>::WITHHOLDS {
                __hash = #private::schema::str(__hash, "withholds");
            }
            // A snapshot's items carry the fields the audience rule gives
            // an owner or everyone else: both sides must draw the line
            // alike.
            let __owner_only = #private::FieldMask::bits(<Self as #private::Replicate>::OWNER_ONLY);
            let __skip_owner = #private::FieldMask::bits(<Self as #private::Replicate>::SKIP_OWNER);
            if __owner_only | __skip_owner != 0 {
                __hash = #private::schema::u64(__hash, __owner_only);
                __hash = #private::schema::u64(__hash, __skip_owner);
            }
            __hash
        })
    };

    let member = |field: &Replicated| field.field.member.clone();
    let diff = fields.iter().map(|field| {
        let member = member(field);
        field.diff(quote!(&self.#member), quote!(&__other.#member))
    });
    let encode = fields.iter().map(|field| {
        let member = member(field);
        field.encode_masked(quote!(&self.#member))
    });
    let decode = fields.iter().map(Replicated::decode_masked);
    let into = fields.iter().map(|field| {
        let (member, slot) = (member(field), &field.slot);
        let value = field.slot_value(quote!(self.#member));
        quote!(#slot: #value)
    });
    let retain = fields.iter().map(|field| {
        let slot = &field.slot;
        field.retain(quote!(__patch.#slot))
    });
    let apply = fields.iter().map(|field| {
        let (member, slot) = (member(field), &field.slot);
        field.apply(quote!(__patch.#slot), quote!(self.#member))
    });
    let checks = fields.iter().map(Replicated::check_masked);
    let apply_read = fields.iter().map(|field| {
        let member = member(field);
        field.apply_read(quote!(self.#member))
    });
    let slots = fields.iter().map(|field| &field.slot);
    let (nest_writer, nest_reader) = {
        let counts = body::counts(private, fields);
        (nest_writer(private, &counts), nest_reader(private, &counts))
    };
    // The defaults its whole values are written against: its own, then
    // its flattened fields' types'.
    let own_default = cont.attrs.default_baseline().map(|baseline| {
        let default = default_value(baseline);
        quote!(__hash = #private::fold_baseline::<Self>(__hash, &#default);)
    });
    let flattened_defaults: Vec<TokenStream> = fields
        .iter()
        .filter(|f| f.codec.is_flattened())
        .map(|f| {
            let ty = f.field.ty;
            quote_spanned!(at_type(ty)=> __hash = <#ty as #private::Replicate>::fold_baselines(__hash);)
        })
        .collect();
    // A type with neither keeps the trait's, which folds nothing.
    let baseline = (own_default.is_some() || !flattened_defaults.is_empty()).then(|| {
        quote! {
            fn fold_baselines(__hash: ::core::primitive::u64) -> ::core::primitive::u64 {
                let mut __hash = __hash;
                #own_default
                #(#flattened_defaults)*
                __hash
            }
        }
    });
    // Each sent field checked without its value where its bits are enough
    // (`Replicate::check_fields`), then read where it lives
    // (`Replicate::apply_fields`).
    let apply_fields = quote! {
        #[inline]
        fn check_fields(
            __mask: #private::FieldMask,
            __reader: &mut #private::BitReader<'_>,
        ) -> #private::Result<(), #private::DecodeError> {
            #nest_reader
            let _ = (&__mask, &__reader);
            #(#checks)*
            #private::Ok(())
        }

        #[inline]
        fn apply_fields(
            &mut self,
            __mask: #private::FieldMask,
            __keep: #private::FieldMask,
            __reader: &mut #private::BitReader<'_>,
        ) -> #private::Result<#private::FieldMask, #private::DecodeError> {
            #nest_reader
            let _ = (&__mask, &__keep, &__reader);
            #[allow(unused_mut)]
            let mut __changed = #private::FieldMask::EMPTY;
            #(#apply_read)*
            #private::Ok(__changed)
        }
    };
    // A type with array fields makes its own pre-image (`array_fields.rs`).
    let capture = if array_items.is_empty() {
        capture_into(private, fields)
    } else {
        TokenStream::new()
    };

    ReplicateItems {
        field_count,
        schema_hash,
        type_name: name,
        consts: structure.unwrap_or_default(),
        patch: quote!(#patch_ident #ty_generics),
        extra: quote!(#array_items #capture #detail #path #baseline #apply_fields),
        diff_attrs: TokenStream::new(),
        diff: quote! {
            #[allow(unused_mut)]
            let mut __mask = #private::FieldMask::EMPTY;
            #(#diff)*
            __mask
        },
        encode_fields: quote! {
            #nest_writer
            #(#encode)*
            #private::Ok(())
        },
        decode_fields: quote! {
            #nest_reader
            #(#decode)*
            #private::Ok(#patch_ident {
                #(#slots,)*
                __marker: ::core::marker::PhantomData,
            })
        },
        into_patch: quote! {
            #patch_ident {
                #(#into,)*
                __marker: ::core::marker::PhantomData,
            }
        },
        retain_fields: quote! {
            let _ = &__keep;
            #(#retain)*
        },
        apply_patch: quote! {
            #[allow(unused_mut)]
            let mut __changed = #private::FieldMask::EMPTY;
            #(#apply)*
            __changed
        },
    }
}
