//! The names `#[replicate(...)]` attributes are made of.

use std::fmt::{self, Display};

/// A name that can appear in (or as) a `#[replicate(...)]` attribute.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Symbol(&'static str);

/// The attribute itself: `#[replicate(...)]`.
pub const REPLICATE: Symbol = Symbol("replicate");
/// `#[replicate(crate = "path")]` on the type: where the runtime is.
pub const CRATE: Symbol = Symbol("crate");
/// `#[replicate(skip)]` on a field: not replicated.
pub const SKIP: Symbol = Symbol("skip");
/// `#[replicate(bits = N)]` on an integer field.
pub const BITS: Symbol = Symbol("bits");
/// `#[replicate(varint)]` on an integer field.
pub const VARINT: Symbol = Symbol("varint");
/// `#[replicate(quantize(min = A, max = B, bits = N))]` on a float field.
pub const QUANTIZE: Symbol = Symbol("quantize");
/// `min = A` inside `quantize(...)`.
pub const MIN: Symbol = Symbol("min");
/// `max = B` inside `quantize(...)`.
pub const MAX: Symbol = Symbol("max");
/// `#[replicate(with = path)]`: user encode/decode functions.
pub const WITH: Symbol = Symbol("with");
/// `#[replicate(serde)]`: through serde.
pub const SERDE: Symbol = Symbol("serde");
/// `#[replicate(flatten)]`: a `Replicate` field whose own fields are
/// leaves of its parent's mask.
pub const FLATTEN: Symbol = Symbol("flatten");
/// The old name of `flatten`, deprecated.
pub const NESTED: Symbol = Symbol("nested");
/// `#[replicate(array)]`: a `FastArray` field of a replicated object.
pub const ARRAY: Symbol = Symbol("array");
/// `#[replicate(detail = N)]`: the field goes only to connections that see
/// its item at detail level `N` or more.
pub const DETAIL: Symbol = Symbol("detail");
/// `#[replicate(owner_only)]`: the field goes only to the connection that
/// owns its item.
pub const OWNER_ONLY: Symbol = Symbol("owner_only");
/// `#[replicate(skip_owner)]`: the field goes to every connection that sees
/// its item but the one that owns it.
pub const SKIP_OWNER: Symbol = Symbol("skip_owner");
/// `#[replicate(initial_only)]`: the field goes with the whole value when
/// its item enters a connection's view, never as a change.
pub const INITIAL_ONLY: Symbol = Symbol("initial_only");
/// `#[replicate(default_baseline)]`: a whole value carries only the fields
/// in which it differs from the type's `Default`.
pub const DEFAULT_BASELINE: Symbol = Symbol("default_baseline");

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
