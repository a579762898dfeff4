//! What is emitted when the input was rejected: the errors, and stub impls
//! of both traits so that code using the type reports nothing else.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt as _;

/// The compile errors in `errors`, followed by impls for `input` that
/// type-check whatever its fields are and never run. It needs no model, so
/// it also stands in for inputs that have none (a union).
pub fn expand(input: &syn::DeriveInput, private: &TokenStream, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    let ident = &input.ident;
    let name = ident.unraw().to_string();
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();

    quote! {
        #errors

        const _: () = {
            #[automatically_derived]
            impl #impl_generics #private::BitCodec for #ident #ty_generics #where_clause {
                const MIN_BITS: ::core::primitive::u64 = 0;
                const TYPE_HASH: ::core::primitive::u64 = 0;

                fn encode(
                    &self,
                    __writer: &mut #private::BitWriter<'_>,
                ) -> #private::Result<(), #private::EncodeError> {
                    ::core::unreachable!()
                }

                fn decode(
                    __reader: &mut #private::BitReader<'_>,
                ) -> #private::Result<Self, #private::DecodeError> {
                    ::core::unreachable!()
                }

                fn same(&self, __other: &Self) -> ::core::primitive::bool {
                    ::core::unreachable!()
                }
            }

            #[automatically_derived]
            impl #impl_generics #private::Replicate for #ident #ty_generics #where_clause {
                const FIELD_COUNT: ::core::primitive::u32 = 0;
                const SCHEMA_HASH: ::core::primitive::u64 = 0;
                const TYPE_NAME: &'static ::core::primitive::str = #name;
                type Patch = ();

                fn diff(&self, __other: &Self) -> #private::FieldMask {
                    ::core::unreachable!()
                }

                fn encode_fields(
                    &self,
                    __mask: #private::FieldMask,
                    __writer: &mut #private::BitWriter<'_>,
                ) -> #private::Result<(), #private::EncodeError> {
                    ::core::unreachable!()
                }

                fn decode_fields(
                    __mask: #private::FieldMask,
                    __reader: &mut #private::BitReader<'_>,
                ) -> #private::Result<(), #private::DecodeError> {
                    ::core::unreachable!()
                }

                fn into_patch(self) {
                    ::core::unreachable!()
                }

                fn retain_fields(__patch: &mut (), __keep: #private::FieldMask) {
                    ::core::unreachable!()
                }

                fn apply_patch(&mut self, __patch: ()) -> #private::FieldMask {
                    ::core::unreachable!()
                }
            }
        };
    }
}
