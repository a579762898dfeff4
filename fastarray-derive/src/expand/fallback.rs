//! What is emitted when the input was rejected: the errors, and stub impls
//! of both traits so that code using the type reports nothing else.

use super::impls::{self, BitCodecItems, ReplicateItems, Target};
use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt as _;

/// The compile errors in `errors`, followed by impls for `input` that
/// type-check whatever its fields are and never run (the build fails on
/// the errors). They need no model, so they also stand in for inputs that
/// have none (a union).
pub fn expand(input: &syn::DeriveInput, private: &TokenStream, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    let target = Target {
        private,
        ident: &input.ident,
        generics: &input.generics,
    };
    let stub = quote!(::core::panic!(
        "`#[derive(Replicate)]` failed: see its compile errors"
    ));
    let bit_codec = impls::bit_codec(
        &target,
        BitCodecItems {
            min_bits: quote!(0),
            type_hash: quote!(0),
            encode: stub.clone(),
            decode: stub.clone(),
            same: stub.clone(),
        },
    );
    let replicate = impls::replicate(
        &target,
        ReplicateItems {
            field_count: quote!(0),
            schema_hash: quote!(0),
            type_name: input.ident.unraw().to_string(),
            consts: TokenStream::new(),
            patch: quote!(()),
            extra: TokenStream::new(),
            diff_attrs: TokenStream::new(),
            diff: stub.clone(),
            encode_fields: stub.clone(),
            decode_fields: stub.clone(),
            into_patch: stub.clone(),
            retain_fields: stub.clone(),
            apply_patch: stub,
        },
    );
    quote! {
        #errors

        const _: () = {
            #bit_codec
            #replicate
        };
    }
}
