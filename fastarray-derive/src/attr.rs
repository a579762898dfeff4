//! Parsing of `#[replicate(...)]` attributes.
//!
//! Each place an attribute can be written (the type, a field) has a table
//! of the names it accepts and the function that parses each one. Adding an
//! attribute is adding a row and its parser; unknown names, names written
//! in the wrong place, duplicates and malformed values are reported with a
//! span on the offending tokens, and parsing carries on so that one build
//! shows every mistake.

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::{self, Display};
use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprLit, Lit, LitStr, Token};

/// A name that can appear in (or as) a `#[replicate(...)]` attribute.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Symbol(&'static str);

/// The attribute itself: `#[replicate(...)]`.
const REPLICATE: Symbol = Symbol("replicate");
/// `#[replicate(crate = "path")]` on the type: where the runtime is.
const CRATE: Symbol = Symbol("crate");
/// `#[replicate(skip)]` on a field: not replicated.
const SKIP: Symbol = Symbol("skip");

impl PartialEq<Symbol> for syn::Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl Display for Symbol {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.0)
    }
}

/// Parses the value (if any) of one attribute into the builder `B`.
type Parser<B> = fn(&Ctxt, &ParseNestedMeta, &mut B) -> syn::Result<()>;

/// Attributes accepted on the type, e.g. `#[replicate(crate = "...")]`.
const CONTAINER_ATTRS: &[(Symbol, Parser<Container>)] = &[(CRATE, parse_crate)];

/// Attributes accepted on a field, e.g. `#[replicate(skip)]`.
const FIELD_ATTRS: &[(Symbol, Parser<FieldBuilder>)] = &[(SKIP, parse_skip)];

/// Attributes of the deriving type.
pub struct Container {
    /// The path of the runtime crate, `::fastarray` unless overridden.
    crate_path: Option<syn::Path>,
}

impl Container {
    /// Reads the `#[replicate(...)]` attributes of the type, recording any
    /// error in `cx`.
    pub fn from_ast(cx: &Ctxt, input: &syn::DeriveInput) -> Self {
        let mut container = Container { crate_path: None };
        parse_attrs(
            cx,
            &input.attrs,
            CONTAINER_ATTRS,
            &mut container,
            Place::Container,
        );
        container
    }

    /// The path through which generated code names the runtime
    /// (`#path::__private::...`).
    pub fn crate_path(&self) -> syn::Path {
        self.crate_path
            .clone()
            .unwrap_or_else(|| syn::parse_quote!(::fastarray))
    }
}

/// How a field is written to the wire.
///
/// Today a field is either replicated with its type's own `BitCodec` or
/// skipped; sized integers, varints, quantized floats, user functions and
/// serde are further variants to come.
#[derive(PartialEq, Eq)]
pub enum Encoding {
    /// The field type's own `BitCodec` implementation.
    Natural,
    /// `#[replicate(skip)]`: no mask bit, never sent, `Default` when decoded.
    Skip,
}

/// Attributes of one field.
pub struct Field {
    /// `Natural` unless an attribute chose another encoding.
    encoding: Encoding,
}

impl Field {
    /// Reads the `#[replicate(...)]` attributes of a field, recording any
    /// error in `cx`.
    pub fn from_ast(cx: &Ctxt, field: &syn::Field) -> Self {
        let mut builder = FieldBuilder { encoding: None };
        parse_attrs(cx, &field.attrs, FIELD_ATTRS, &mut builder, Place::Field);
        Field {
            encoding: builder
                .encoding
                .map_or(Encoding::Natural, |(_, encoding)| encoding),
        }
    }

    /// How the field is written.
    pub fn encoding(&self) -> &Encoding {
        &self.encoding
    }
}

/// A field's attributes while they are being parsed.
struct FieldBuilder {
    /// The encoding and the attribute that chose it.
    encoding: Option<(Symbol, Encoding)>,
}

impl FieldBuilder {
    /// Chooses the field's encoding; a field has only one.
    fn set_encoding(
        &mut self,
        cx: &Ctxt,
        meta: &ParseNestedMeta,
        name: Symbol,
        encoding: Encoding,
    ) {
        match &self.encoding {
            None => self.encoding = Some((name, encoding)),
            Some((previous, _)) if *previous == name => {
                cx.error_spanned_by(
                    &meta.path,
                    format!("duplicate replicate attribute `{name}`"),
                );
            }
            Some((previous, _)) => cx.error_spanned_by(
                &meta.path,
                format!("`{name}` conflicts with `{previous}`: a field has only one encoding"),
            ),
        }
    }
}

/// Where an attribute is written, for error messages.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Place {
    /// On the deriving type.
    Container,
    /// On one of its fields.
    Field,
}

impl Place {
    /// The names accepted here.
    fn names(self) -> Vec<Symbol> {
        match self {
            Place::Container => CONTAINER_ATTRS.iter().map(|(name, _)| *name).collect(),
            Place::Field => FIELD_ATTRS.iter().map(|(name, _)| *name).collect(),
        }
    }

    /// The place, as error messages name it.
    fn describe(self) -> &'static str {
        match self {
            Place::Container => "the type",
            Place::Field => "a field",
        }
    }
}

/// Runs the parser of every name in every `#[replicate(...)]` of `attrs`.
fn parse_attrs<B>(
    cx: &Ctxt,
    attrs: &[syn::Attribute],
    table: &[(Symbol, Parser<B>)],
    builder: &mut B,
    place: Place,
) {
    for attr in attrs.iter().filter(|attr| *attr.path() == REPLICATE) {
        let parsed = attr.parse_nested_meta(|meta| {
            if let Some((_, parse)) = table.iter().find(|(name, _)| meta.path == *name) {
                parse(cx, &meta, builder)
            } else {
                cx.error_spanned_by(&meta.path, not_accepted(&meta.path, place));
                skip_value(&meta)
            }
        });
        if let Err(error) = parsed {
            cx.syn_error(error);
        }
    }
}

/// Why `path` is not accepted in `place`: it belongs elsewhere, or it is
/// not a replicate attribute at all.
fn not_accepted(path: &syn::Path, place: Place) -> String {
    let shown = path.to_token_stream().to_string().replace(' ', "");
    let other = match place {
        Place::Container => Place::Field,
        Place::Field => Place::Container,
    };
    if other.names().iter().any(|name| path == name) {
        return format!(
            "`{shown}` goes on {}, not on {}",
            other.describe(),
            place.describe()
        );
    }
    let expected = place
        .names()
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "unknown replicate attribute `{shown}` on {}; expected {expected}",
        place.describe()
    )
}

/// Consumes whatever value follows a name that is being rejected
/// (`= expr` or `(...)`), so the names after it are still parsed.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    take_value(meta).map(drop)
}

/// Consumes `= expr` or a parenthesized group after a name, if present.
fn take_value(meta: &ParseNestedMeta) -> syn::Result<Option<TokenStream>> {
    let input = meta.input;
    if input.peek(Token![=]) {
        let eq: Token![=] = input.parse()?;
        let value: Expr = input.parse()?;
        Ok(Some(quote::quote!(#eq #value)))
    } else if input.peek(syn::token::Paren) {
        let group: proc_macro2::TokenTree = input.parse()?;
        Ok(Some(group.into_token_stream()))
    } else {
        Ok(None)
    }
}

/// `skip`: a bare word.
fn parse_skip(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    if let Some(value) = take_value(meta)? {
        cx.error_spanned_by(value, "`skip` takes no value: write `#[replicate(skip)]`");
        return Ok(());
    }
    field.set_encoding(cx, meta, SKIP, Encoding::Skip);
    Ok(())
}

/// `crate = "path"`: a path, written as a string as in serde.
fn parse_crate(cx: &Ctxt, meta: &ParseNestedMeta, container: &mut Container) -> syn::Result<()> {
    let Some(lit) = string_value(cx, meta, CRATE, "path::to::fastarray")? else {
        return Ok(());
    };
    let Ok(path) = lit.parse_with(syn::Path::parse_mod_style) else {
        let message = format!("`{}` is not a path to a crate or module", lit.value());
        cx.error_spanned_by(&lit, message);
        return Ok(());
    };
    if container.crate_path.is_some() {
        cx.error_spanned_by(
            &meta.path,
            format!("duplicate replicate attribute `{CRATE}`"),
        );
    } else {
        container.crate_path = Some(path);
    }
    Ok(())
}

/// The string in `name = "..."`, or `None` after recording an error.
fn string_value(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    name: Symbol,
    example: &str,
) -> syn::Result<Option<LitStr>> {
    let expected = format!("expected `{name} = \"{example}\"`");
    if !meta.input.peek(Token![=]) {
        let span = take_value(meta)?.unwrap_or_else(|| meta.path.to_token_stream());
        cx.error_spanned_by(span, expected);
        return Ok(None);
    }
    meta.input.parse::<Token![=]>()?;
    match meta.input.parse::<Expr>()? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(Some(lit)),
        other => {
            cx.error_spanned_by(
                other,
                format!("{expected}: the value must be a string literal"),
            );
            Ok(None)
        }
    }
}
