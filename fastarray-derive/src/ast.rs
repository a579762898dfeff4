//! The model of a `#[derive(Replicate)]` input: the parts of the syntax
//! tree the code generator needs, with attributes already parsed. Each node
//! keeps the syntax it came from (`original`) for error spans.

use crate::attr;
use crate::ctxt::Ctxt;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens as _;
use syn::ext::IdentExt as _;

/// The type being derived on.
pub struct Container<'a> {
    /// Its name.
    pub ident: &'a syn::Ident,
    /// Its generic parameters and where-clause, as written.
    pub generics: &'a syn::Generics,
    /// What kind of type it is.
    pub style: Style,
    /// Every field (replicated or skipped), in declaration order.
    pub fields: Vec<Field<'a>>,
    /// Its `#[replicate(...)]` attributes.
    pub attrs: attr::Container,
    /// The whole input.
    pub original: &'a syn::DeriveInput,
}

/// The shape of the input type.
#[derive(Copy, Clone)]
pub enum Style {
    /// `struct S { a: A }`.
    Named,
    /// `struct S(A);`.
    Tuple,
    /// `struct S;`.
    Unit,
    /// An enum: not supported yet, [`check`](crate::check) rejects it. No fields.
    Enum,
    /// A union: never supported, [`check`](crate::check) rejects it. No fields.
    Union,
}

/// One field of a struct.
pub struct Field<'a> {
    /// How generated code names it: `self.#member`.
    pub member: syn::Member,
    /// Its type.
    pub ty: &'a syn::Type,
    /// Its `#[replicate(...)]` attributes.
    pub attrs: attr::Field,
    /// The field as written.
    pub original: &'a syn::Field,
}

impl<'a> Container<'a> {
    /// Builds the model, recording attribute errors in `cx`. Always returns
    /// a container so that later checks still run and every error is shown.
    pub fn from_ast(cx: &Ctxt, input: &'a syn::DeriveInput) -> Self {
        let attrs = attr::Container::from_ast(cx, input);
        let (style, fields) = match &input.data {
            syn::Data::Struct(data) => match &data.fields {
                syn::Fields::Named(fields) => (Style::Named, fields_from_ast(cx, &fields.named)),
                syn::Fields::Unnamed(fields) => {
                    (Style::Tuple, fields_from_ast(cx, &fields.unnamed))
                }
                syn::Fields::Unit => (Style::Unit, Vec::new()),
            },
            syn::Data::Enum(_) => (Style::Enum, Vec::new()),
            syn::Data::Union(_) => (Style::Union, Vec::new()),
        };
        Container {
            ident: &input.ident,
            generics: &input.generics,
            style,
            fields,
            attrs,
            original: input,
        }
    }

    /// The type's name without any `r#`: its `TYPE_NAME`, and the start of
    /// its schema hash.
    pub fn name(&self) -> String {
        self.ident.unraw().to_string()
    }

    /// The fields that are sent, in mask-bit order.
    pub fn replicated(&self) -> impl Iterator<Item = &Field<'a>> {
        self.fields.iter().filter(|field| field.is_replicated())
    }

    /// Whether the field's type names a type or const parameter of the
    /// container (`T`, `Vec<T>`, `T::Assoc`, `[u8; N]`).
    pub fn is_generic(&self, field: &Field) -> bool {
        let generics = self.generics;
        mentions(&field.ty.to_token_stream(), &|ident| {
            generics.type_params().any(|param| param.ident == *ident)
                || generics.const_params().any(|param| param.ident == *ident)
        })
    }

    /// Whether the field's type names the container itself
    /// (`Vec<Node>`, `Option<Box<Self>>`).
    pub fn is_recursive(&self, field: &Field) -> bool {
        mentions(&field.ty.to_token_stream(), &|ident| {
            ident == self.ident || ident == "Self"
        })
    }

    /// The container's type parameters that the field's type names.
    pub fn type_params_in(&self, field: &Field) -> Vec<&'a syn::Ident> {
        let tokens = field.ty.to_token_stream();
        self.generics
            .type_params()
            .map(|param| &param.ident)
            .filter(|param| mentions(&tokens, &|ident| ident == *param))
            .collect()
    }
}

/// Whether any identifier in `tokens`, at any depth (so also the `T` of
/// `T::Assoc` or `Vec<T>`), satisfies `is_match`.
fn mentions(tokens: &TokenStream, is_match: &dyn Fn(&syn::Ident) -> bool) -> bool {
    tokens.clone().into_iter().any(|token| match token {
        TokenTree::Ident(ident) => is_match(&ident),
        TokenTree::Group(group) => mentions(&group.stream(), is_match),
        TokenTree::Punct(_) | TokenTree::Literal(_) => false,
    })
}

impl Field<'_> {
    /// Whether the field has a bit in the mask and is sent.
    pub fn is_replicated(&self) -> bool {
        !matches!(self.attrs.encoding(), attr::Encoding::Skip)
    }

    /// The name folded into the schema hash: the identifier (without `r#`)
    /// or the tuple index.
    pub fn schema_name(&self) -> String {
        match &self.member {
            syn::Member::Named(ident) => ident.unraw().to_string(),
            syn::Member::Unnamed(index) => index.index.to_string(),
        }
    }

    /// The tokens that best identify the field in an error message: its
    /// name, or its type for a tuple field.
    pub fn span_tokens(&self) -> &dyn quote::ToTokens {
        match &self.original.ident {
            Some(ident) => ident,
            None => self.ty,
        }
    }
}

/// The model of each field, in declaration order.
fn fields_from_ast<'a>(
    cx: &Ctxt,
    fields: &'a syn::punctuated::Punctuated<syn::Field, syn::Token![,]>,
) -> Vec<Field<'a>> {
    fields
        .iter()
        .enumerate()
        .map(|(index, field)| Field {
            member: match &field.ident {
                Some(ident) => syn::Member::Named(ident.clone()),
                None => syn::Member::Unnamed(index.into()),
            },
            ty: &field.ty,
            attrs: attr::Field::from_ast(cx, field),
            original: field,
        })
        .collect()
}
