//! `#[derive(Replicate)]`, the derive macro of
//! [fastarray](https://docs.rs/fastarray). Use it through the `fastarray`
//! crate, which re-exports it next to the runtime it generates code for.
//!
//! The attributes it takes, the mask layout, the bounds on generic fields
//! and the mistakes it reports are described once, with an example of each
//! attribute, in the [`attributes` module of
//! fastarray](https://docs.rs/fastarray/latest/fastarray/attributes/index.html).
//!
//! Inside, as in serde_derive: `ast` is the model of the input, `attr`
//! parses the attributes (their names are in `symbol`), `check` holds the
//! rules that span fields, `ctxt` collects every error, and `expand`
//! generates the impls.

mod ast;
mod attr;
mod check;
mod ctxt;
mod expand;
mod symbol;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// The code it generates calls into the runtime of the `fastarray` crate,
/// which re-exports this derive as `fastarray::Replicate` and documents
/// its attributes.
#[proc_macro_derive(Replicate, attributes(replicate))]
pub fn derive_replicate(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
