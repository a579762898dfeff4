//! The values of attributes: `= expr` after a name, read as an integer,
//! a number, a string or an expression, each reporting what was expected
//! when something else is written.

use crate::ctxt::Ctxt;
use crate::symbol::Symbol;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprLit, Lit, LitStr, Token};

/// Consumes whatever value follows a name that is being rejected
/// (`= expr` or `(...)`), so the names after it are still parsed.
pub fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    take_value(meta).map(drop)
}

/// Consumes `= expr` or a parenthesized group after a name, if present.
pub fn take_value(meta: &ParseNestedMeta) -> syn::Result<Option<TokenStream>> {
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

/// The expression after `name =`, or `None` after recording `expected`
/// (and skipping whatever value was written instead).
pub fn assigned_value(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    expected: &str,
) -> syn::Result<Option<Expr>> {
    if !meta.input.peek(Token![=]) {
        let span = take_value(meta)?.unwrap_or_else(|| meta.path.to_token_stream());
        cx.error_spanned_by(span, expected);
        return Ok(None);
    }
    meta.input.parse::<Token![=]>()?;
    meta.input.parse().map(Some)
}

/// The integer in `name = N`, or `None` after recording an error.
pub fn int_value(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    name: Symbol,
    example: &str,
) -> syn::Result<Option<syn::LitInt>> {
    let expected = format!("expected `{name} = {example}`");
    let Some(value) = assigned_value(cx, meta, &expected)? else {
        return Ok(None);
    };
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => Ok(Some(lit)),
        other => {
            cx.error_spanned_by(
                other,
                format!("{expected}: the value must be an integer literal"),
            );
            Ok(None)
        }
    }
}

/// The finite number `expr` spells (a float or integer literal, optionally
/// negated), or `None` after recording `expected` with what is wrong.
pub fn float_of(cx: &Ctxt, expr: &Expr, expected: &str) -> Option<f64> {
    let (negative, lit) = match expr {
        Expr::Lit(ExprLit { lit, .. }) => (false, lit),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr: inner,
            ..
        }) => match &**inner {
            Expr::Lit(ExprLit { lit, .. }) => (true, lit),
            _ => {
                cx.error_spanned_by(
                    expr,
                    format!("{expected}: the value must be a number literal"),
                );
                return None;
            }
        },
        _ => {
            cx.error_spanned_by(
                expr,
                format!("{expected}: the value must be a number literal"),
            );
            return None;
        }
    };
    let value = match lit {
        Lit::Float(f) => f.base10_parse::<f64>().ok(),
        Lit::Int(i) => i.base10_parse::<f64>().ok(),
        _ => None,
    };
    match value {
        Some(v) if v.is_finite() => Some(if negative { -v } else { v }),
        _ => {
            cx.error_spanned_by(
                expr,
                format!("{expected}: the value must be a finite number literal"),
            );
            None
        }
    }
}

/// The string in `name = "..."`, or `None` after recording an error.
pub fn string_value(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    name: Symbol,
    example: &str,
) -> syn::Result<Option<LitStr>> {
    let expected = format!("expected `{name} = \"{example}\"`");
    let Some(value) = assigned_value(cx, meta, &expected)? else {
        return Ok(None);
    };
    match value {
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
