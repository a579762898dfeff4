//! The two trait impls every expansion emits, written once: the items and
//! method signatures of `BitCodec` and `Replicate` as the runtime defines
//! them, around the bodies that the struct, enum and fallback expansions
//! provide. This is the generated code's whole interface to the runtime's
//! traits.

use proc_macro2::TokenStream;
use quote::quote;

/// The type the impls are for.
pub struct Target<'a> {
    /// The path of the runtime's `__private_0_1` module.
    pub private: &'a TokenStream,
    /// The type's name.
    pub ident: &'a syn::Ident,
    /// Its generics, with whatever bounds the impls need.
    pub generics: &'a syn::Generics,
}

/// The items of a `BitCodec` impl: constant expressions and fn bodies.
pub struct BitCodecItems {
    /// `MIN_BITS`.
    pub min_bits: TokenStream,
    /// `TYPE_HASH`.
    pub type_hash: TokenStream,
    /// `encode(&self, __writer)`.
    pub encode: TokenStream,
    /// `decode(__reader)`.
    pub decode: TokenStream,
    /// `same(&self, __other)`.
    pub same: TokenStream,
}

/// `impl BitCodec for Target`.
pub fn bit_codec(target: &Target, items: BitCodecItems) -> TokenStream {
    let Target { private, ident, .. } = target;
    let (impl_generics, ty_generics, where_clause) = target.generics.split_for_impl();
    let BitCodecItems {
        min_bits,
        type_hash,
        encode,
        decode,
        same,
    } = items;
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::BitCodec for #ident #ty_generics #where_clause {
            const MIN_BITS: ::core::primitive::u64 = #min_bits;
            const TYPE_HASH: ::core::primitive::u64 = #type_hash;

            fn encode(
                &self,
                __writer: &mut #private::BitWriter<'_>,
            ) -> #private::Result<(), #private::EncodeError> {
                #encode
            }

            fn decode(
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<Self, #private::DecodeError> {
                #decode
            }

            fn same(&self, __other: &Self) -> ::core::primitive::bool {
                #same
            }
        }
    }
}

/// The items of a `Replicate` impl: constant expressions, extra items and
/// fn bodies.
pub struct ReplicateItems {
    /// `FIELD_COUNT`.
    pub field_count: TokenStream,
    /// `SCHEMA_HASH`.
    pub schema_hash: TokenStream,
    /// `TYPE_NAME`.
    pub type_name: String,
    /// More associated items before `Patch` (`STRUCTURE`), if any.
    pub consts: TokenStream,
    /// `type Patch`.
    pub patch: TokenStream,
    /// More items after `Patch` (those of array fields), if any.
    pub extra: TokenStream,
    /// Attributes of `diff`.
    pub diff_attrs: TokenStream,
    /// `diff(&self, __other)`.
    pub diff: TokenStream,
    /// `encode_fields(&self, __mask, __writer)`.
    pub encode_fields: TokenStream,
    /// `decode_fields(__mask, __reader)`.
    pub decode_fields: TokenStream,
    /// `into_patch(self)`.
    pub into_patch: TokenStream,
    /// `retain_fields(__patch, __keep)`.
    pub retain_fields: TokenStream,
    /// `apply_patch(&mut self, __patch)`.
    pub apply_patch: TokenStream,
}

/// `impl Replicate for Target`.
pub fn replicate(target: &Target, items: ReplicateItems) -> TokenStream {
    let Target { private, ident, .. } = target;
    let (impl_generics, ty_generics, where_clause) = target.generics.split_for_impl();
    let ReplicateItems {
        field_count,
        schema_hash,
        type_name,
        consts,
        patch,
        extra,
        diff_attrs,
        diff,
        encode_fields,
        decode_fields,
        into_patch,
        retain_fields,
        apply_patch,
    } = items;
    quote! {
        #[automatically_derived]
        impl #impl_generics #private::Replicate for #ident #ty_generics #where_clause {
            const FIELD_COUNT: ::core::primitive::u32 = #field_count;
            const SCHEMA_HASH: ::core::primitive::u64 = #schema_hash;
            const TYPE_NAME: &'static ::core::primitive::str = #type_name;
            #consts
            type Patch = #patch;
            #extra

            #diff_attrs
            fn diff(&self, __other: &Self) -> #private::FieldMask {
                #diff
            }

            // In line, always: a commit writes the entries of every
            // changed item through it (`send::frame_body`), and a call per
            // item cost a dense frame 7% of its instructions. A plain
            // `#[inline]` is a hint the compiler weighs against how the
            // crate's code is split, which an unrelated change can move
            // (it was taken, then dropped: 4.9% more instructions a dense
            // commit).
            #[inline(always)]
            fn encode_fields(
                &self,
                __mask: #private::FieldMask,
                __writer: &mut #private::BitWriter<'_>,
            ) -> #private::Result<(), #private::EncodeError> {
                #encode_fields
            }

            #[inline]
            fn decode_fields(
                __mask: #private::FieldMask,
                __reader: &mut #private::BitReader<'_>,
            ) -> #private::Result<<Self as #private::Replicate>::Patch, #private::DecodeError> {
                #decode_fields
            }

            fn into_patch(self) -> <Self as #private::Replicate>::Patch {
                #into_patch
            }

            fn retain_fields(
                __patch: &mut <Self as #private::Replicate>::Patch,
                __keep: #private::FieldMask,
            ) {
                #retain_fields
            }

            #[inline]
            fn apply_patch(
                &mut self,
                __patch: <Self as #private::Replicate>::Patch,
            ) -> #private::FieldMask {
                #apply_patch
            }
        }
    }
}
