//! Parsing of `quantize(...)`: a range for every float
//! (`quantize(min = A, max = B, bits = N)`), a range per axis (any of the
//! three a list: `min = [A, B, C]`), or no range for a unit quaternion
//! (`quantize(bits = N)`, smallest-three).

use super::value::{float_of, skip_value, take_value};
use super::{AxisRange, Encoding, FieldBuilder};
use crate::ctxt::Ctxt;
use crate::symbol::{BITS, MAX, MIN, QUANTIZE};
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprLit, Lit, Token};

const EXAMPLE: &str = "expected `quantize(min = -100.0, max = 100.0, bits = 16)`";

/// The bits of a quaternion's three smallest components.
pub const ROTATION_BITS: std::ops::RangeInclusive<u32> = 4..=32;

/// One parameter as written: a value for every axis, or a list of one
/// value per axis. Each value keeps its tokens, for errors.
enum Param<T> {
    All(T, Expr),
    Each(Vec<(T, Expr)>, syn::ExprArray),
}

impl<T: Copy> Param<T> {
    /// The list's length, if it is one.
    fn list_len(&self) -> Option<usize> {
        match self {
            Param::All(..) => None,
            Param::Each(values, _) => Some(values.len()),
        }
    }

    /// The value of axis `axis` and its tokens.
    fn at(&self, axis: usize) -> (T, &Expr) {
        match self {
            Param::All(value, expr) => (*value, expr),
            Param::Each(values, _) => (values[axis].0, &values[axis].1),
        }
    }

    /// The tokens of the whole parameter.
    fn tokens(&self) -> TokenStream {
        match self {
            Param::All(_, expr) => expr.to_token_stream(),
            Param::Each(_, list) => list.to_token_stream(),
        }
    }
}

/// Parses `name = value` or `name = [value, ...]`, each value read by
/// `one`; `None` after recording an error.
fn param<T>(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    name: &str,
    one: impl Fn(&Expr) -> Option<T>,
) -> syn::Result<Option<Param<T>>> {
    if !meta.input.peek(Token![=]) {
        let span = take_value(meta)?.unwrap_or_else(|| meta.path.to_token_stream());
        cx.error_spanned_by(
            span,
            format!("expected `{name} = <value>` or `{name} = [<value>, ...]`"),
        );
        return Ok(None);
    }
    meta.input.parse::<Token![=]>()?;
    let expr: Expr = meta.input.parse()?;
    let Expr::Array(list) = expr else {
        return Ok(one(&expr).map(|value| Param::All(value, expr)));
    };
    if list.elems.is_empty() {
        cx.error_spanned_by(&list, format!("`{name}` needs at least one value"));
        return Ok(None);
    }
    let mut values = Vec::new();
    for elem in &list.elems {
        if let Some(value) = one(elem) {
            values.push((value, elem.clone()));
        }
    }
    // An element that failed has recorded its error.
    Ok((values.len() == list.elems.len()).then_some(Param::Each(values, list)))
}

/// Bits in 1..=32, as an integer literal.
fn bits_of(cx: &Ctxt, expr: &Expr) -> Option<u32> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(lit), ..
    }) = expr
    else {
        cx.error_spanned_by(
            expr,
            "expected `bits = 16`: the value must be an integer literal",
        );
        return None;
    };
    match lit.base10_parse::<u32>() {
        Ok(n @ 1..=32) => Some(n),
        _ => {
            cx.error_spanned_by(lit, "quantize `bits` must be between 1 and 32");
            None
        }
    }
}

/// `quantize(...)` on a field.
pub fn parse_quantize(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    field: &mut FieldBuilder,
) -> syn::Result<()> {
    if !meta.input.peek(syn::token::Paren) {
        let span = take_value(meta)?.unwrap_or_else(|| meta.path.to_token_stream());
        cx.error_spanned_by(span, EXAMPLE);
        return Ok(());
    }
    let (mut min, mut max, mut bits) = (None, None, None);
    let errors_before = cx.error_count();
    let parsed = meta.parse_nested_meta(|inner| {
        let (slot, name) = if inner.path == MIN {
            (&mut min, "min")
        } else if inner.path == MAX {
            (&mut max, "max")
        } else if inner.path == BITS {
            let value = param(cx, &inner, "bits", |expr| bits_of(cx, expr))?;
            if bits.is_some() {
                cx.error_spanned_by(&inner.path, "duplicate `bits` in `quantize`");
            } else {
                bits = value;
            }
            return Ok(());
        } else {
            let shown = inner.path.to_token_stream().to_string();
            cx.error_spanned_by(
                &inner.path,
                format!("unknown `quantize` parameter `{shown}`; expected `min`, `max`, `bits`"),
            );
            return skip_value(&inner);
        };
        let expected = format!("expected `{name} = <number>`");
        let value = param(cx, &inner, name, |expr| float_of(cx, expr, &expected))?;
        if slot.is_some() {
            cx.error_spanned_by(&inner.path, format!("duplicate `{name}` in `quantize`"));
        } else {
            *slot = value;
        }
        Ok(())
    });
    if let Err(error) = parsed {
        cx.syn_error(error);
        return Ok(());
    }
    if cx.error_count() != errors_before {
        return Ok(());
    }
    let encoding = match (min, max, bits) {
        (None, None, Some(bits)) => rotation(cx, &bits),
        (Some(min), Some(max), Some(bits)) => ranges(cx, &min, &max, &bits),
        (None, None, None) | (Some(_), Some(_), None) => {
            cx.error_spanned_by(&meta.path, format!("`quantize` needs `bits`; {EXAMPLE}"));
            None
        }
        _ => {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "`quantize` needs both `min` and `max` (or neither, on a quaternion: `quantize(bits = 12)`); {EXAMPLE}"
                ),
            );
            None
        }
    };
    if let Some(encoding) = encoding {
        field.set_encoding(cx, meta, QUANTIZE, encoding);
    }
    Ok(())
}

/// `quantize(bits = N)`: a unit quaternion in smallest-three.
fn rotation(cx: &Ctxt, bits: &Param<u32>) -> Option<Encoding> {
    match bits {
        Param::All(n, _) if ROTATION_BITS.contains(n) => Some(Encoding::Rotation { bits: *n }),
        Param::All(_, expr) => {
            cx.error_spanned_by(
                expr,
                "a quaternion's `quantize(bits = N)` needs `N` between 4 and 32 (bits per component; the quaternion takes 2 + 3·N)",
            );
            None
        }
        Param::Each(_, list) => {
            cx.error_spanned_by(
                list,
                "a quaternion's `quantize(bits = N)` takes one bit count, not a list (without `min` and `max` there are no axes)",
            );
            None
        }
    }
}

/// `quantize(min = .., max = .., bits = ..)`: one range per axis, the
/// lists as long as each other.
fn ranges(cx: &Ctxt, min: &Param<f64>, max: &Param<f64>, bits: &Param<u32>) -> Option<Encoding> {
    let lists = [
        ("min", min.list_len(), min.tokens()),
        ("max", max.list_len(), max.tokens()),
        ("bits", bits.list_len(), bits.tokens()),
    ];
    let mut axes_count: Option<(&str, usize)> = None;
    let mut ok = true;
    for (name, len, tokens) in &lists {
        let Some(len) = *len else { continue };
        match axes_count {
            None => axes_count = Some((name, len)),
            Some((first, first_len)) if first_len != len => {
                cx.error_spanned_by(
                    tokens,
                    format!(
                        "`{name}` has {len} values but `{first}` has {first_len}: per-axis lists must be as long as each other"
                    ),
                );
                ok = false;
            }
            Some(_) => {}
        }
    }
    if !ok {
        return None;
    }
    let count = axes_count.map_or(1, |(_, len)| len);
    let mut axes = Vec::with_capacity(count);
    for axis in 0..count {
        let ((lo, _), (hi, hi_expr), (n, _)) = (min.at(axis), max.at(axis), bits.at(axis));
        if lo < hi {
            axes.push(AxisRange {
                min: lo,
                max: hi,
                bits: n,
            });
        } else {
            let which = if count > 1 {
                format!(" of axis {axis}")
            } else {
                String::new()
            };
            cx.error_spanned_by(
                hi_expr,
                format!(
                    "quantize range{which} is empty: `max` ({hi}) must be greater than `min` ({lo})"
                ),
            );
            ok = false;
        }
    }
    let list_tokens = lists
        .into_iter()
        .find(|(_, len, _)| len.is_some())
        .map(|(_, _, tokens)| tokens);
    ok.then_some(Encoding::Quantize {
        axes,
        list: list_tokens,
    })
}
