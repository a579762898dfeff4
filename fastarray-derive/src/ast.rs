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
    /// Its fields, or its variants and their fields.
    pub data: Data<'a>,
    /// Its `#[replicate(...)]` attributes.
    pub attrs: attr::Container,
    /// The whole input.
    pub original: &'a syn::DeriveInput,
}

/// What the type holds: a struct's fields or an enum's variants. A union
/// has no model: [`Container::from_ast`] rejects it.
pub enum Data<'a> {
    /// A struct of the given shape, with every field (replicated or
    /// skipped) in declaration order.
    Struct(Style, Vec<Field<'a>>),
    /// An enum's variants, in declaration order.
    Enum(Vec<Variant<'a>>),
}

/// How the fields of a struct or variant are written.
#[derive(Copy, Clone)]
pub enum Style {
    /// `{ a: A }`.
    Named,
    /// `(A)`.
    Tuple,
    /// No fields and no brackets.
    Unit,
}

/// One variant of an enum.
pub struct Variant<'a> {
    /// Its name.
    pub ident: &'a syn::Ident,
    /// `Named` (`V { a: A }`), `Tuple` (`V(A)`) or `Unit` (`V`).
    pub style: Style,
    /// Every field, in declaration order.
    pub fields: Vec<Field<'a>>,
}

impl<'a> Variant<'a> {
    /// The fields that are sent, in mask-bit order (bit `1 + i`).
    pub fn replicated(&self) -> impl Iterator<Item = &Field<'a>> {
        replicated(&self.fields)
    }
}

/// The fields of `fields` that are sent, in mask-bit order.
pub fn replicated<'b, 'a>(fields: &'b [Field<'a>]) -> impl Iterator<Item = &'b Field<'a>> {
    fields.iter().filter(|field| field.is_replicated())
}

/// One field of a struct or variant.
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
    /// Builds the model, recording attribute errors in `cx`: a model with
    /// attribute errors is still returned, so that later checks run and
    /// every mistake is shown at once. A union has no model: the error
    /// saying so is returned, for the caller to report after those in `cx`.
    pub fn from_ast(
        cx: &Ctxt,
        input: &'a syn::DeriveInput,
        attrs: attr::Container,
    ) -> Result<Self, syn::Error> {
        let data = match &input.data {
            syn::Data::Struct(data) => {
                let (style, fields) = style_and_fields(cx, &data.fields);
                Data::Struct(style, fields)
            }
            syn::Data::Enum(data) => Data::Enum(
                data.variants
                    .iter()
                    .map(|variant| {
                        let (style, fields) = style_and_fields(cx, &variant.fields);
                        Variant {
                            ident: &variant.ident,
                            style,
                            fields,
                        }
                    })
                    .collect(),
            ),
            syn::Data::Union(data) => {
                return Err(syn::Error::new_spanned(
                    data.union_token,
                    "`#[derive(Replicate)]` does not support unions",
                ));
            }
        };
        Ok(Container {
            ident: &input.ident,
            generics: &input.generics,
            data,
            attrs,
            original: input,
        })
    }

    /// The type's name without any `r#`: its `TYPE_NAME`, and the start of
    /// its schema hash.
    pub fn name(&self) -> String {
        self.ident.unraw().to_string()
    }

    /// Every field of the struct, or of every variant of the enum.
    pub fn all_fields(&self) -> impl Iterator<Item = &Field<'a>> {
        let (fields, variants): (&[Field<'a>], &[Variant<'a>]) = match &self.data {
            Data::Struct(_, fields) => (fields, &[]),
            Data::Enum(variants) => (&[], variants),
        };
        fields
            .iter()
            .chain(variants.iter().flat_map(|variant| &variant.fields))
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
        !matches!(
            self.attrs.encoding(),
            attr::Encoding::Skip | attr::Encoding::Array
        )
    }

    /// Whether the field is a `FastArray` of a replicated object.
    pub fn is_array(&self) -> bool {
        matches!(self.attrs.encoding(), attr::Encoding::Array)
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

/// The shape and fields of a struct body or variant.
fn style_and_fields<'a>(cx: &Ctxt, fields: &'a syn::Fields) -> (Style, Vec<Field<'a>>) {
    match fields {
        syn::Fields::Named(fields) => (Style::Named, fields_from_ast(cx, &fields.named)),
        syn::Fields::Unnamed(fields) => (Style::Tuple, fields_from_ast(cx, &fields.unnamed)),
        syn::Fields::Unit => (Style::Unit, Vec::new()),
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
