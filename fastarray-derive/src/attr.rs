//! Parsing of `#[replicate(...)]` attributes.
//!
//! Each place an attribute can be written (the type, a field) has a table
//! of the names it accepts and the function that parses each one. Adding an
//! attribute is adding a row and its parser; unknown names, names written
//! in the wrong place, duplicates and malformed values are reported with a
//! span on the offending tokens, and parsing carries on so that one build
//! shows every mistake.

mod quantize;
mod value;

use crate::ctxt::Ctxt;
use crate::symbol::*;
use quantize::parse_quantize;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprLit, Lit};
use value::{assigned_value, int_value, skip_value, string_value, take_value};

/// Parses the value (if any) of one attribute into the builder `B`.
type Parser<B> = fn(&Ctxt, &ParseNestedMeta, &mut B) -> syn::Result<()>;

/// Attributes accepted on the type, e.g. `#[replicate(crate = "...")]`.
const CONTAINER_ATTRS: &[(Symbol, Parser<Container>)] = &[
    (CRATE, parse_crate),
    (DEFAULT_BASELINE, parse_default_baseline),
];

/// Attributes accepted on a field, e.g. `#[replicate(skip)]`.
const FIELD_ATTRS: &[(Symbol, Parser<FieldBuilder>)] = &[
    (SKIP, parse_skip),
    (BITS, parse_bits),
    (VARINT, parse_varint),
    (QUANTIZE, parse_quantize),
    (WITH, parse_with),
    (SERDE, parse_serde),
    (FLATTEN, parse_flatten),
    (ARRAY, parse_array),
    (DETAIL, parse_detail),
    (OWNER_ONLY, parse_owner_only),
    (SKIP_OWNER, parse_skip_owner),
    (INITIAL_ONLY, parse_initial_only),
];

/// The highest detail level (the runtime's `MAX_DETAIL`).
const MAX_DETAIL: u8 = 7;

/// Old names of field attributes, each with the name it has now: an old
/// name parses as the new one, and the expansion makes it a deprecation
/// warning at the old name.
const RENAMED_FIELD_ATTRS: &[(Symbol, Symbol)] = &[(NESTED, FLATTEN)];

/// An attribute written with its old name.
pub struct Renamed {
    /// The old name, as written (the warning points at it).
    pub old: syn::Ident,
    /// The name it has now.
    pub new: Symbol,
}

/// Attributes of the deriving type.
pub struct Container {
    /// The path of the runtime crate, `::fastarray` unless overridden.
    crate_path: Option<syn::Path>,
    /// `default_baseline`, as written, if it is.
    default_baseline: Option<syn::Path>,
}

impl Container {
    /// Reads the `#[replicate(...)]` attributes of the type, recording any
    /// error in `cx`.
    pub fn from_ast(cx: &Ctxt, input: &syn::DeriveInput) -> Self {
        let mut container = Container {
            crate_path: None,
            default_baseline: None,
        };
        // No container attribute has been renamed, so nothing is returned.
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
    /// (`#path::__private_0_1::...`).
    pub fn crate_path(&self) -> syn::Path {
        self.crate_path
            .clone()
            .unwrap_or_else(|| syn::parse_quote!(::fastarray))
    }

    /// `default_baseline`, as written, if it is: whole values are written
    /// against the type's `Default`.
    pub fn default_baseline(&self) -> Option<&syn::Path> {
        self.default_baseline.as_ref()
    }
}

/// How a field is written to the wire.
pub enum Encoding {
    /// The field type's own `BitCodec` implementation.
    Natural,
    /// `#[replicate(skip)]`: no mask bit, never sent, `Default` when decoded.
    Skip,
    /// `#[replicate(bits = N)]`: an integer in `N` bits (checked).
    Bits(syn::LitInt, u32),
    /// `#[replicate(varint)]`: an integer as a (zig-zag) varint.
    Varint,
    /// `#[replicate(quantize(min = .., max = .., bits = ..))]`: floats
    /// quantized over a range, one for all or one per axis.
    Quantize {
        /// The range of each axis, in order (one: every float's); a value's
        /// floats take them in turn, starting over when they run out.
        axes: Vec<AxisRange>,
        /// The first per-axis list as written, if any (for errors).
        list: Option<proc_macro2::TokenStream>,
    },
    /// `#[replicate(quantize(bits = N))]`: a unit quaternion in
    /// smallest-three, `N` bits per component.
    Rotation {
        /// Bits per component (4..=32).
        bits: u32,
    },
    /// `#[replicate(with = path)]`: `path::encode` and `path::decode`.
    With(syn::Path),
    /// `#[replicate(serde)]`: any `Serialize + DeserializeOwned` type.
    Serde,
    /// `#[replicate(flatten)]`: a `Replicate` type whose fields are leaves
    /// of the parent's mask, so a change sends only the changed leaves.
    Flatten,
    /// `#[replicate(array)]`: a `FastArray` field, replicated by id as part
    /// of a `Replicated` object rather than as a field of the mask.
    Array,
}

/// The range and bits of one axis of a quantized value.
pub struct AxisRange {
    /// Lower bound.
    pub min: f64,
    /// Upper bound, above `min`.
    pub max: f64,
    /// Bits per float (1..=32).
    pub bits: u32,
}

/// Which connections that see a field's item are sent the field, by
/// ownership of the item.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Audience {
    /// Every connection that sees the item (at the field's detail level).
    Everyone,
    /// `owner_only`: the connection that owns the item.
    OwnerOnly,
    /// `skip_owner`: every connection that sees the item but its owner.
    SkipOwner,
}

/// Attributes of one field.
pub struct Field {
    /// `Natural` unless an attribute chose another encoding.
    encoding: Encoding,
    /// `detail = N`, as written and its value.
    detail: Option<(syn::LitInt, u8)>,
    /// `owner_only` or `skip_owner`, as written, if either is.
    audience: Option<(syn::Path, Audience)>,
    /// `initial_only`, as written, if it is.
    initial_only: Option<syn::Path>,
    /// The attributes written with an old name.
    renamed: Vec<Renamed>,
}

impl Field {
    /// Reads the `#[replicate(...)]` attributes of a field, recording any
    /// error in `cx`.
    pub fn from_ast(cx: &Ctxt, field: &syn::Field) -> Self {
        let mut builder = FieldBuilder {
            encoding: None,
            detail: None,
            audience: None,
            initial_only: None,
        };
        let renamed = parse_attrs(cx, &field.attrs, FIELD_ATTRS, &mut builder, Place::Field);
        Field {
            encoding: builder
                .encoding
                .map_or(Encoding::Natural, |(_, encoding)| encoding),
            detail: builder.detail,
            audience: builder.audience,
            initial_only: builder.initial_only,
            renamed,
        }
    }

    /// Who is sent the field, by ownership of its item.
    pub fn audience(&self) -> Audience {
        self.audience
            .as_ref()
            .map_or(Audience::Everyone, |(_, audience)| *audience)
    }

    /// The `owner_only` or `skip_owner` attribute as written, if any.
    pub fn audience_written(&self) -> Option<&syn::Path> {
        self.audience.as_ref().map(|(path, _)| path)
    }

    /// The `initial_only` attribute as written, if any.
    pub fn initial_only(&self) -> Option<&syn::Path> {
        self.initial_only.as_ref()
    }

    /// Whether a connection that sees the item may be sent its whole value
    /// without this field: a detail level above 0, or an audience.
    pub fn can_be_withheld(&self) -> bool {
        self.detail.as_ref().is_some_and(|&(_, level)| level > 0)
            || self.audience() != Audience::Everyone
    }

    /// The field's detail level, and the literal it was written as, if
    /// it has `detail = N`.
    pub fn detail(&self) -> Option<&(syn::LitInt, u8)> {
        self.detail.as_ref()
    }

    /// How the field is written.
    pub fn encoding(&self) -> &Encoding {
        &self.encoding
    }

    /// The attributes written with an old name, in the order written.
    pub fn renamed(&self) -> &[Renamed] {
        &self.renamed
    }

    /// How the user wrote the attribute now called `name`: its old name
    /// if that is what they wrote.
    pub fn written(&self, name: Symbol) -> String {
        self.renamed
            .iter()
            .find(|renamed| renamed.new == name)
            .map_or_else(|| name.to_string(), |renamed| renamed.old.to_string())
    }
}

/// A field's attributes while they are being parsed.
struct FieldBuilder {
    /// The encoding and the attribute that chose it.
    encoding: Option<(Symbol, Encoding)>,
    /// `detail = N`: not an encoding, so it combines with any.
    detail: Option<(syn::LitInt, u8)>,
    /// `owner_only` or `skip_owner`: not an encoding either.
    audience: Option<(syn::Path, Audience)>,
    /// `initial_only`: combines with any encoding and audience.
    initial_only: Option<syn::Path>,
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
                let written = meta.path.to_token_stream().to_string();
                let message = if written == name.to_string() {
                    format!("duplicate replicate attribute `{name}`")
                } else {
                    format!("duplicate replicate attribute `{name}` (`{written}` is its old name)")
                };
                cx.error_spanned_by(&meta.path, message);
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
    /// The names accepted here (old names aside).
    fn names(self) -> Vec<Symbol> {
        match self {
            Place::Container => CONTAINER_ATTRS.iter().map(|(name, _)| *name).collect(),
            Place::Field => FIELD_ATTRS.iter().map(|(name, _)| *name).collect(),
        }
    }

    /// The old names accepted here, each with its new name.
    fn renamed(self) -> &'static [(Symbol, Symbol)] {
        match self {
            Place::Container => &[],
            Place::Field => RENAMED_FIELD_ATTRS,
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

/// Runs the parser of every name in every `#[replicate(...)]` of `attrs`
/// (an old name runs the parser of its new name), and returns the names
/// written with an old name.
fn parse_attrs<B>(
    cx: &Ctxt,
    attrs: &[syn::Attribute],
    table: &[(Symbol, Parser<B>)],
    builder: &mut B,
    place: Place,
) -> Vec<Renamed> {
    let mut renamed = Vec::new();
    for attr in attrs.iter().filter(|attr| *attr.path() == REPLICATE) {
        let parsed = attr.parse_nested_meta(|meta| {
            let rename = place.renamed().iter().find(|(old, _)| meta.path == *old);
            if let (Some(&(_, new)), Some(old)) = (rename, meta.path.get_ident()) {
                renamed.push(Renamed {
                    old: old.clone(),
                    new,
                });
            }
            let row = table.iter().find(|(name, _)| match rename {
                Some((_, new)) => name == new,
                None => meta.path == *name,
            });
            if let Some((_, parse)) = row {
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
    renamed
}

/// Why `path` is not accepted in `place`: it belongs elsewhere, or it is
/// not a replicate attribute at all.
fn not_accepted(path: &syn::Path, place: Place) -> String {
    let shown = path.to_token_stream().to_string().replace(' ', "");
    let other = match place {
        Place::Container => Place::Field,
        Place::Field => Place::Container,
    };
    let elsewhere = other.names().iter().any(|name| path == name)
        || other.renamed().iter().any(|(old, _)| path == old);
    if elsewhere {
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

/// `skip`: a bare word.
fn parse_skip(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    if let Some(value) = take_value(meta)? {
        cx.error_spanned_by(value, "`skip` takes no value: write `#[replicate(skip)]`");
        return Ok(());
    }
    field.set_encoding(cx, meta, SKIP, Encoding::Skip);
    Ok(())
}

/// A bare word attribute (`varint`, `serde`) that sets an encoding.
fn parse_word(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    field: &mut FieldBuilder,
    name: Symbol,
    encoding: Encoding,
) -> syn::Result<()> {
    if let Some(value) = take_value(meta)? {
        cx.error_spanned_by(
            value,
            format!("`{name}` takes no value: write `#[replicate({name})]`"),
        );
        return Ok(());
    }
    field.set_encoding(cx, meta, name, encoding);
    Ok(())
}

/// `varint`: a bare word.
fn parse_varint(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    parse_word(cx, meta, field, VARINT, Encoding::Varint)
}

/// `flatten` (or its old name `nested`): a bare word.
fn parse_flatten(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    parse_word(cx, meta, field, FLATTEN, Encoding::Flatten)
}

/// `array`: a bare word.
fn parse_array(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    parse_word(cx, meta, field, ARRAY, Encoding::Array)
}

/// `serde`: a bare word.
fn parse_serde(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    parse_word(cx, meta, field, SERDE, Encoding::Serde)
}

/// `bits = N` with `N` in 1..=64.
fn parse_bits(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    let Some(lit) = int_value(cx, meta, BITS, "16")? else {
        return Ok(());
    };
    match lit.base10_parse::<u32>() {
        Ok(bits @ 1..=64) => field.set_encoding(cx, meta, BITS, Encoding::Bits(lit, bits)),
        _ => cx.error_spanned_by(&lit, "`bits` must be between 1 and 64"),
    }
    Ok(())
}

/// `detail = N`: a detail level, 0 to `MAX_DETAIL`.
fn parse_detail(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    let Some(lit) = int_value(cx, meta, DETAIL, "2")? else {
        return Ok(());
    };
    if field.detail.is_some() {
        cx.error_spanned_by(&meta.path, "duplicate replicate attribute `detail`");
        return Ok(());
    }
    match lit.base10_parse::<u8>() {
        Ok(level) if level <= MAX_DETAIL => field.detail = Some((lit, level)),
        _ => cx.error_spanned_by(
            &lit,
            format!("`detail` is a level from 0 to {MAX_DETAIL} (`fastarray::MAX_DETAIL`)"),
        ),
    }
    Ok(())
}

/// `owner_only`: a bare word.
fn parse_owner_only(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    field: &mut FieldBuilder,
) -> syn::Result<()> {
    parse_audience(cx, meta, field, OWNER_ONLY, Audience::OwnerOnly)
}

/// `skip_owner`: a bare word.
fn parse_skip_owner(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    field: &mut FieldBuilder,
) -> syn::Result<()> {
    parse_audience(cx, meta, field, SKIP_OWNER, Audience::SkipOwner)
}

/// Whether attribute `name` was written as the bare word it is; reports
/// it if it was given a value.
fn bare_word(cx: &Ctxt, meta: &ParseNestedMeta, name: Symbol) -> syn::Result<bool> {
    let Some(value) = take_value(meta)? else {
        return Ok(true);
    };
    cx.error_spanned_by(
        value,
        format!("`{name}` takes no value: write `#[replicate({name})]`"),
    );
    Ok(false)
}

/// `owner_only` or `skip_owner`: a field has at most one audience.
fn parse_audience(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    field: &mut FieldBuilder,
    name: Symbol,
    audience: Audience,
) -> syn::Result<()> {
    if !bare_word(cx, meta, name)? {
        return Ok(());
    }
    match &field.audience {
        Some((_, had)) if *had == audience => {
            cx.error_spanned_by(&meta.path, format!("duplicate replicate attribute `{name}`"));
        }
        Some(_) => cx.error_spanned_by(
            &meta.path,
            "a field is either `owner_only` (its owner alone is sent it) or `skip_owner` (everyone but its owner is), not both",
        ),
        None => field.audience = Some((meta.path.clone(), audience)),
    }
    Ok(())
}

/// `initial_only`: a bare word.
fn parse_initial_only(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    field: &mut FieldBuilder,
) -> syn::Result<()> {
    flag_once(cx, meta, INITIAL_ONLY, &mut field.initial_only)
}

/// A bare word written at most once: `slot` takes it as written, or a
/// second one is reported.
fn flag_once(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    name: Symbol,
    slot: &mut Option<syn::Path>,
) -> syn::Result<()> {
    if !bare_word(cx, meta, name)? {
        return Ok(());
    }
    if slot.is_some() {
        cx.error_spanned_by(
            &meta.path,
            format!("duplicate replicate attribute `{name}`"),
        );
    } else {
        *slot = Some(meta.path.clone());
    }
    Ok(())
}

/// `with = path` (or `with = "path"`): a module with `encode` and `decode`.
fn parse_with(cx: &Ctxt, meta: &ParseNestedMeta, field: &mut FieldBuilder) -> syn::Result<()> {
    const EXPECTED: &str = "expected `with = path::to::module`";
    let Some(value) = assigned_value(cx, meta, EXPECTED)? else {
        return Ok(());
    };
    let path = match value {
        Expr::Path(path) if path.qself.is_none() => path.path,
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => match lit.parse::<syn::Path>() {
            Ok(path) => path,
            Err(_) => {
                cx.error_spanned_by(&lit, format!("`{}` is not a path", lit.value()));
                return Ok(());
            }
        },
        other => {
            cx.error_spanned_by(other, EXPECTED);
            return Ok(());
        }
    };
    field.set_encoding(cx, meta, WITH, Encoding::With(path));
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

/// `default_baseline`: a whole value carries only the fields in which it
/// differs from the type's `Default`.
fn parse_default_baseline(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    container: &mut Container,
) -> syn::Result<()> {
    flag_once(cx, meta, DEFAULT_BASELINE, &mut container.default_baseline)
}
