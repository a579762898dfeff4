//! `#[derive(Replicate)]`, the derive macro of
//! [fastarray](https://docs.rs/fastarray). Use it through the `fastarray`
//! crate, which re-exports it next to the runtime it generates code for;
//! runnable examples live there.
//!
//! The derive implements `BitCodec` (the full encoding: every replicated
//! field in declaration order) and `Replicate` (per-field diff, encode,
//! decode and patch) for a struct with named fields, a tuple struct, a
//! unit struct, or an enum with unit, tuple and struct variants, generic or
//! not. An enum is written as its variant index in ⌈log2 variants⌉ bits,
//! then the variant's fields; its mask bit 0 is the variant and bit `1 + i`
//! the variant's `i`-th field, so a change within a variant sends only the
//! changed fields and a change of variant sends the whole value.
//!
//! ```ignore
//! use fastarray::Replicate;
//!
//! #[derive(Replicate)]
//! struct Player<T> {
//!     hp: u8,       // mask bit 0
//!     position: T,  // mask bit 1
//!     #[replicate(skip)]
//!     cache: u32,   // not sent; `Default::default()` on the receiver
//! }
//! ```
//!
//! # Attributes
//!
//! | where | attribute | meaning |
//! |---|---|---|
//! | field | `#[replicate(skip)]` | not replicated: no mask bit, never sent, `Default::default()` when decoded (the field type must implement `Default`) |
//! | field | `#[replicate(bits = N)]` | an integer in `N` bits (1..=64, at most its width); a value that does not fit is an encode error |
//! | field | `#[replicate(varint)]` | an integer as a varint (zig-zag for signed) |
//! | field | `#[replicate(quantize(min = A, max = B, bits = N))]` | `f32`/`f64` (or arrays and tuples of them) clamped to `[A, B]` in `N` bits (1..=32); the change test compares quantized values |
//! | field | `#[replicate(with = path)]` | `path::encode(&T, &mut BitWriter)` and `path::decode(&mut BitReader)`; change test `==` |
//! | field | `#[replicate(serde)]` | through serde (feature `serde` of fastarray); change test `==` |
//! | field | `#[replicate(nested)]` | a `Replicate` type whose fields become leaves of this type's mask (depth-first, at most 64 leaves in all): a change sends only the changed leaves; not in enum variants |
//! | type | `#[replicate(crate = "path")]` | generated code names the runtime as `path::__private::…` instead of `::fastarray::__private::…` |
//!
//! The `crate` path is resolved where the type is defined, like any path
//! written there: `"fastarray_core"` when depending on the runtime crate
//! directly, or `"crate::rt"` for a module `rt` that contains
//! `pub use fastarray::__private;` (a re-exporting crate does the same).
//!
//! Replicated field `i` (declaration order, skipped fields not counted) is
//! bit `i` of the `FieldMask`, so a struct replicates at most 64 fields.
//! Every replicated field type must implement `BitCodec` and every skipped
//! one `Default`. For a field whose type mentions a generic parameter the
//! impls carry that as a where-clause bound (`Vec<T>: BitCodec`); for any
//! other field a missing impl is an error pointing at the field's type.
//! `Replicate::Patch` is a hidden generated struct with one `Option` per
//! replicated field.
//!
//! Mistakes are compile errors pointing at the offending token, all of them
//! reported in one build: unknown, misplaced, duplicate or malformed
//! attributes, two encodings on one field, `bits` out of range, an empty
//! `quantize` range, more than 64 replicated fields (63 per enum variant),
//! empty enums and unions.

mod ast;
mod attr;
mod check;
mod ctxt;
mod expand;
mod symbol;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Implements `BitCodec` and `Replicate` for a struct; see the
/// [crate documentation](crate) for the attributes it takes.
#[proc_macro_derive(Replicate, attributes(replicate))]
pub fn derive_replicate(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
