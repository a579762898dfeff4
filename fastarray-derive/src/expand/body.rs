//! The rules of the generated bodies for one replicated field, written once
//! for the fields of a struct and those of an enum variant: full and masked
//! encode and decode, the change test, the patch slot with `into_patch`,
//! `retain_fields` and `apply_patch` (with the changed mask it returns),
//! the schema steps, and the depth guard that starts every encode and
//! decode.
//!
//! The caller says how a field is reached: a struct passes `&self.hp` and
//! `self.hp`, an enum arm the bindings of its `match` (`__self_0`,
//! `*__self_0`). A field takes the mask bits `offset..offset + width`: one
//! bit, or one per leaf of a flattened field's type (its own mask, moved up
//! to `offset`).

use super::at_type;
use super::codec::FieldCodec;
use crate::ast::{self, Container, Field, Style};
use proc_macro2::{Group, TokenStream, TokenTree};
use quote::{ToTokens as _, quote, quote_spanned};

/// One replicated field, with what every body needs.
pub struct Replicated<'a> {
    /// The field.
    pub field: &'a Field<'a>,
    /// How it is written, read and compared.
    pub codec: FieldCodec<'a>,
    /// Its position among the replicated fields of its struct or variant.
    pub index: u32,
    /// Its first mask bit: a `u32` literal, or, once a flattened field is
    /// among the fields, a constant sum of the widths before it.
    pub offset: TokenStream,
    /// How many mask bits it takes, a `u32` constant expression.
    pub width: TokenStream,
    /// Its `Option` in the patch, and the local it is decoded into.
    pub slot: syn::Ident,
    /// The path of the runtime's `__private_0_1` module.
    private: TokenStream,
}

/// The replicated fields of `fields`, laid out from mask bit `first` on;
/// `names(i)` gives the `i`-th one's patch slot and the name of its
/// quantizer constant (unique in the container).
pub fn lay_out<'a>(
    cont: &Container,
    fields: &'a [Field<'a>],
    first: u32,
    private: &TokenStream,
    names: impl Fn(u32) -> (syn::Ident, syn::Ident),
) -> Vec<Replicated<'a>> {
    let named: Vec<_> = ast::replicated(fields)
        .zip(0u32..)
        .map(|(field, index)| {
            let (slot, quantizer) = names(index);
            (
                field,
                index,
                slot,
                FieldCodec::new(field, quantizer, private, cont.is_generic(field)),
            )
        })
        .collect();
    let any_flattened = named.iter().any(|(_, _, _, codec)| codec.is_flattened());
    let widths: Vec<TokenStream> = named.iter().map(|(.., codec)| codec.width()).collect();
    named
        .into_iter()
        .map(|(field, index, slot, codec)| {
            let offset = if any_flattened {
                let before = &widths[..index as usize];
                quote!((#first #(+ #before)*))
            } else {
                let bit = first + index;
                quote!(#bit)
            };
            Replicated {
                field,
                codec,
                index,
                offset,
                width: widths[index as usize].clone(),
                slot,
                private: private.clone(),
            }
        })
        .collect()
}

impl Replicated<'_> {
    /// `<Ty as Replicate>`, spanned at the field's type.
    fn replicate(&self) -> TokenStream {
        let (ty, p) = (self.field.ty, &self.private);
        quote_spanned!(at_type(ty)=> <#ty as #p::Replicate>)
    }

    /// A statement writing the whole field (`value`: a `&T`) to `__writer`.
    pub fn encode(&self, value: TokenStream) -> TokenStream {
        let encode = self.codec.encode(value);
        quote!(#encode?;)
    }

    /// An expression reading the whole field from `__reader`.
    pub fn decode(&self) -> TokenStream {
        let decode = self.codec.decode();
        quote!(#decode?)
    }

    /// Statements adding the field's changed bits between `this` and
    /// `other` (both `&T`) to `__mask`.
    pub fn diff(&self, this: TokenStream, other: TokenStream) -> TokenStream {
        let (p, offset) = (&self.private, &self.offset);
        if self.codec.is_flattened() {
            let replicate = self.replicate();
            return quote! {
                __mask |= #p::FieldMask::shifted_up(#replicate::diff(#this, #other), #offset);
            };
        }
        let same = self.codec.same(this, other);
        quote! {
            if !#same {
                __mask = #p::FieldMask::with(__mask, #offset);
            }
        }
    }

    /// `then` as a statement run if `__mask` names the field: for a
    /// flattened field, if it names any of its leaves, which `then` finds
    /// in `__sub` (`flattened` is `then`'s text for such a field).
    fn if_named(&self, then: TokenStream, flattened: TokenStream) -> TokenStream {
        let (p, offset) = (&self.private, &self.offset);
        if self.codec.is_flattened() {
            let sub = self.window(quote!(__mask));
            quote! {
                let __sub = #sub;
                if !#p::FieldMask::is_empty(__sub) {
                    #flattened
                }
            }
        } else {
            quote! {
                if #p::FieldMask::contains(__mask, #offset) {
                    #then
                }
            }
        }
    }

    /// Statements writing the field (`value`: a `&T`) if `__mask` names it:
    /// for a flattened field, the leaves it names.
    pub fn encode_masked(&self, value: TokenStream) -> TokenStream {
        let (replicate, encode) = (self.replicate(), self.codec.encode(value.clone()));
        self.if_named(
            quote!(#encode?;),
            quote!(#replicate::encode_fields(#value, __sub, __writer)?;),
        )
    }

    /// A statement binding the field's slot to what `__reader` holds for
    /// it under `__mask`.
    pub fn decode_masked(&self) -> TokenStream {
        let (p, offset, slot) = (&self.private, &self.offset, &self.slot);
        if self.codec.is_flattened() {
            let (replicate, sub) = (self.replicate(), self.window(quote!(__mask)));
            return quote! {
                let __sub = #sub;
                let #slot = if #p::FieldMask::is_empty(__sub) {
                    #p::None
                } else {
                    #p::Some(#replicate::decode_fields(__sub, __reader)?)
                };
            };
        }
        let decode = self.codec.decode();
        quote! {
            let #slot = if #p::FieldMask::contains(__mask, #offset) {
                #p::Some(#decode?)
            } else {
                #p::None
            };
        }
    }

    /// Statements reading the field into `place`, a field of a value that
    /// holds the type's default, if `__mask` names it (for a flattened
    /// field, the leaves it names, over the default's): a value written
    /// against its default (`default_baseline`) is decoded in place, with
    /// no patch to compare.
    pub fn decode_into(&self, place: TokenStream) -> TokenStream {
        let (replicate, decode) = (self.replicate(), self.decode());
        self.if_named(
            quote!(#place = #decode;),
            quote! {
                let _ = #replicate::apply_patch(
                    &mut #place,
                    #replicate::decode_fields(__sub, __reader)?,
                );
            },
        )
    }

    /// An expression reading the field of a whole value of which only the
    /// fields in `__mask` (what one connection sees of the item) were
    /// written: a field a connection can be denied (`detail = N` with
    /// N > 0, `owner_only`, `skip_owner`) is its `Default` when `__mask`
    /// does not name it; a flattened field's type reads its own leaves so.
    /// The others are always written.
    pub fn decode_visible(&self) -> TokenStream {
        let p = &self.private;
        let withheld = self.field.attrs.can_be_withheld();
        let default = default(self.field.ty);
        if self.codec.is_flattened() {
            let (replicate, sub) = (self.replicate(), self.window(quote!(__mask)));
            let read = quote!(#replicate::decode_visible(__sub, __reader)?);
            return if withheld {
                quote!({
                    let __sub = #sub;
                    if #p::FieldMask::is_empty(__sub) { #default } else { #read }
                })
            } else {
                quote!({
                    let __sub = #sub;
                    #read
                })
            };
        }
        let decode = self.decode();
        if withheld {
            let named = self.named_in(quote!(__mask));
            quote!(if #named { #decode } else { #default })
        } else {
            decode
        }
    }

    /// The type of the field's slot in the patch: an `Option` of the field
    /// type (or of a flattened type's patch). `container` names the derived
    /// type, for the `Self` the field type may mention.
    pub fn slot_ty(&self, container: &TokenStream) -> TokenStream {
        let p = &self.private;
        let ty = self
            .codec
            .slot_ty(replace_self(self.field.ty.to_token_stream(), container));
        quote!(#p::Option<#ty>)
    }

    /// The slot's value in `into_patch`, from the field `value` (moved).
    pub fn slot_value(&self, value: TokenStream) -> TokenStream {
        let p = &self.private;
        if self.codec.is_flattened() {
            let replicate = self.replicate();
            quote!(#p::Some(#replicate::into_patch(#value)))
        } else {
            quote!(#p::Some(#value))
        }
    }

    /// Statements dropping what `__keep` does not name from `slot` (a
    /// place of the slot's type).
    pub fn retain(&self, slot: TokenStream) -> TokenStream {
        let (p, offset) = (&self.private, &self.offset);
        if self.codec.is_flattened() {
            let (replicate, sub) = (self.replicate(), self.window(quote!(__keep)));
            return quote! {
                let __sub = #sub;
                if #p::FieldMask::is_empty(__sub) {
                    #slot = #p::None;
                } else if let #p::Some(__inner) = &mut #slot {
                    #replicate::retain_fields(__inner, __sub);
                }
            };
        }
        quote! {
            if !#p::FieldMask::contains(__keep, #offset) {
                #slot = #p::None;
            }
        }
    }

    /// Statements storing `slot` (the slot's value, moved) into `place`
    /// (the field, a place of type `T`), and adding the bits whose value
    /// changed to `__changed`: what `diff` would name between the value
    /// before and after.
    pub fn apply(&self, slot: TokenStream, place: TokenStream) -> TokenStream {
        let (p, offset) = (&self.private, &self.offset);
        if self.codec.is_flattened() {
            let replicate = self.replicate();
            return quote! {
                if let #p::Some(__inner) = #slot {
                    __changed |= #p::FieldMask::shifted_up(
                        #replicate::apply_patch(&mut #place, __inner),
                        #offset,
                    );
                }
            };
        }
        let unchanged = self.codec.same(quote!(&#place), quote!(&__value));
        quote! {
            if let #p::Some(__value) = #slot {
                if !#unchanged {
                    __changed = #p::FieldMask::with(__changed, #offset);
                }
                #place = __value;
            }
        }
    }

    /// Statements reading past the field on `__reader` if `__mask` names
    /// it, checked as `decode_masked` would read it (for a flattened
    /// field, its type checks the leaves `__mask` names).
    pub fn check_masked(&self) -> TokenStream {
        let replicate = self.replicate();
        self.if_named(
            self.codec.check(),
            quote!(#replicate::check_fields(__sub, __reader)?;),
        )
    }

    /// Statements reading the field from `__reader` if `__mask` (the
    /// fields sent) names it and, if `__keep` names it too, storing it
    /// into `place` (the field, a place of type `T`) and adding its bit
    /// to `__changed` if the value changed: `decode_masked` and `apply`
    /// in one, with no patch between them. A flattened field's type does
    /// the same with its leaves.
    pub fn apply_read(&self, place: TokenStream) -> TokenStream {
        let (p, offset, replicate) = (&self.private, &self.offset, self.replicate());
        let (decode, keep) = (self.decode(), self.window(quote!(__keep)));
        let unchanged = self.codec.same_as_read(quote!(&#place), quote!(&__value));
        self.if_named(
            quote! {
                let __value = #decode;
                if #p::FieldMask::contains(__keep, #offset) {
                    if !#unchanged {
                        __changed = #p::FieldMask::with(__changed, #offset);
                    }
                    #place = __value;
                }
            },
            quote! {
                __changed |= #p::FieldMask::shifted_up(
                    #replicate::apply_fields(&mut #place, __sub, #keep, __reader)?,
                    #offset,
                );
            },
        )
    }

    /// An expression: whether `mask` names any of the field's leaves.
    pub fn named_in(&self, mask: TokenStream) -> TokenStream {
        let (p, offset) = (&self.private, &self.offset);
        if self.codec.is_flattened() {
            let sub = self.window(mask);
            quote!(!#p::FieldMask::is_empty(#sub))
        } else {
            quote!(#p::FieldMask::contains(#mask, #offset))
        }
    }

    /// The field's own bits of `mask`, moved down to bit 0.
    fn window(&self, mask: TokenStream) -> TokenStream {
        let (p, offset, width) = (&self.private, &self.offset, &self.width);
        quote!(#p::FieldMask::window(#mask, #offset, #width))
    }

    /// Statements folding the field into `__hash`: its name, then its
    /// type's `TYPE_HASH`.
    ///
    /// A type that names the container itself (`Vec<Node>`) cannot use its
    /// `TYPE_HASH`, which would be defined in terms of itself; it is folded
    /// in as written, followed by the hashes of the type parameters it uses.
    pub fn schema(&self, cont: &Container) -> TokenStream {
        let (p, field) = (&self.private, self.field);
        let name = field.schema_name();
        let name_step = quote!(__hash = #p::schema::str(__hash, #name););
        let natural = matches!(field.attrs.encoding(), crate::attr::Encoding::Natural);
        if !natural || !cont.is_recursive(field) {
            let type_hash = self.codec.type_hash();
            return quote! {
                #name_step
                __hash = #p::schema::u64(__hash, #type_hash);
            };
        }
        let written = field.ty.to_token_stream().to_string();
        let params = cont.type_params_in(field);
        quote! {
            #name_step
            __hash = #p::schema::str(__hash, #written);
            #(__hash = #p::schema::u64(__hash, <#params as #p::BitCodec>::TYPE_HASH);)*
        }
    }
}

/// A `u64` constant expression: the fewest bits the fields take in all.
pub fn min_bits(fields: &[Replicated]) -> TokenStream {
    let each = fields.iter().map(|field| field.codec.min_bits());
    quote!(0u64 #(.saturating_add(#each))*)
}

/// An expression building `path` (`Self`, `Self::Variant`) of the given
/// style from `value(field)` for each of `fields`, in declaration order.
pub fn construct<'f, 'a: 'f>(
    path: TokenStream,
    style: Style,
    fields: &'f [Field<'a>],
    value: impl FnMut(&'f Field<'a>) -> TokenStream,
) -> TokenStream {
    let values = fields.iter().map(value);
    match style {
        Style::Named => {
            let members = fields.iter().map(|field| &field.member);
            quote!(#path { #(#members: #values,)* })
        }
        Style::Tuple => quote!(#path(#(#values,)*)),
        Style::Unit => quote!(#path),
    }
}

/// [`construct`] from the replicated fields `replicated` (`sent(field)`)
/// and the default of every other field.
pub fn construct_sent<'f, 'a: 'f>(
    path: TokenStream,
    style: Style,
    fields: &'f [Field<'a>],
    replicated: &[Replicated],
    sent: impl Fn(&Replicated) -> TokenStream,
) -> TokenStream {
    let mut replicated = replicated.iter();
    construct(path, style, fields, |field| {
        match field.is_replicated().then(|| replicated.next()).flatten() {
            Some(field) => sent(field),
            None => default(field.ty),
        }
    })
}

/// `<Ty as Default>::default()`, spanned at the type.
pub fn default(ty: &syn::Type) -> TokenStream {
    quote_spanned!(at_type(ty)=> <#ty as ::core::default::Default>::default())
}

/// What a patch type declared beside the impls needs of the container's
/// generics.
pub struct PatchGenerics {
    /// The container's type, to write instead of `Self` (which in the patch
    /// would name the patch).
    pub container: TokenStream,
    /// The container's where-clause, `Self` so replaced.
    pub where_clause: TokenStream,
    /// A `PhantomData` that uses every lifetime and type parameter, since
    /// some may appear only in skipped fields.
    pub marker: TokenStream,
}

impl PatchGenerics {
    /// The patch generics of `cont`.
    pub fn new(cont: &Container) -> Self {
        let (generics, ident) = (cont.generics, cont.ident);
        let (_, ty_generics, where_clause) = generics.split_for_impl();
        let container = quote!(#ident #ty_generics);
        let where_clause = replace_self(where_clause.to_token_stream(), &container);
        let lifetimes = generics.lifetimes().map(|param| &param.lifetime);
        let type_params = generics.type_params().map(|param| &param.ident);
        let marker = quote! {
            ::core::marker::PhantomData<(
                #(fn() -> &#lifetimes (),)*
                #(fn() -> #type_params,)*
            )>
        };
        PatchGenerics {
            container,
            where_clause,
            marker,
        }
    }
}

/// `tokens` with every `Self` replaced by `container`.
fn replace_self(tokens: TokenStream, container: &TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Ident(ident) if ident == "Self" => container.clone(),
            TokenTree::Group(group) => {
                let mut replaced =
                    Group::new(group.delimiter(), replace_self(group.stream(), container));
                replaced.set_span(group.span());
                TokenTree::Group(replaced).into()
            }
            other => other.into(),
        })
        .collect()
}

/// The first statements of a derived `decode` or `decode_fields`: enter one
/// more level of derived value (an error past `MAX_DEPTH`, so a recursive
/// type cannot recurse without bound on a hostile message) and read through
/// the guard, which leaves the level on every return path.
///
/// `counts` is a `bool` expression: whether the level counts (see
/// [`counts`]).
pub fn nest_reader(private: &TokenStream, counts: &TokenStream) -> TokenStream {
    quote! {
        let mut __nested = #private::BitReader::nest(__reader, #counts)?;
        let __reader: &mut #private::BitReader<'_> = &mut __nested;
    }
}

/// The first statements of a derived `encode` or `encode_fields`: the
/// writer's side of [`nest_reader`], so a sender refuses what a receiver
/// would.
pub fn nest_writer(private: &TokenStream, counts: &TokenStream) -> TokenStream {
    quote! {
        let mut __nested = #private::BitWriter::nest(__writer, #counts)?;
        let __writer: &mut #private::BitWriter<'_> = &mut __nested;
    }
}

/// Whether a struct's level of nesting counts: a `bool` constant
/// expression, `true` when one of its `fields` can reach derived code
/// (`BitCodec::NESTS`), and so recurse. A struct made of numbers, strings
/// and quantized floats cannot be on a cycle of recursion: its guard then
/// neither checks nor counts, on the writer's side and the reader's alike.
pub fn counts(private: &TokenStream, fields: &[Replicated]) -> TokenStream {
    let nests = fields.iter().filter_map(|field| field.codec.nests(private));
    quote!(false #(|| #nests)*)
}
