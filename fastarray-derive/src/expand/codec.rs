//! How generated code writes, reads and compares one replicated field,
//! according to its encoding attribute.

use super::at_type;
use crate::ast::Field;
use crate::attr::Encoding;
use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens as _, quote, quote_spanned};

/// The code for one replicated field's encoding.
pub struct FieldCodec<'a> {
    ty: &'a syn::Type,
    encoding: &'a Encoding,
    private: TokenStream,
    /// Spans errors about the type (a missing impl) at the field's type.
    span: Span,
    /// The name of the field's `Quantizer` constant, if it has one.
    quantizer: syn::Ident,
    /// Whether the field's type mentions a generic parameter of the
    /// container (then what depends on it is checked per instance).
    generic: bool,
}

impl<'a> FieldCodec<'a> {
    /// The codec of replicated field `field`; `quantizer` names its
    /// `Quantizer` constant, if it needs one, and must be unique among the
    /// container's fields.
    pub fn new(
        field: &'a Field<'a>,
        quantizer: syn::Ident,
        private: &TokenStream,
        generic: bool,
    ) -> Self {
        FieldCodec {
            ty: field.ty,
            encoding: field.attrs.encoding(),
            private: private.clone(),
            span: at_type(field.ty),
            quantizer,
            generic,
        }
    }

    /// Items the impls need beside them (a quantizer constant).
    pub fn items(&self) -> TokenStream {
        let p = &self.private;
        match self.encoding {
            Encoding::Quantize { axes, .. } => {
                let count = axes.len();
                let axes = axes.iter().map(|axis| {
                    let (min, max) = (
                        Literal::f64_suffixed(axis.min),
                        Literal::f64_suffixed(axis.max),
                    );
                    let bits = axis.bits;
                    quote!(#p::Quantizer::new(#min, #max, #bits))
                });
                let name = &self.quantizer;
                let constant = quote!(const #name: [#p::Quantizer; #count] = [#(#axes),*];);
                if count == 1 || self.generic {
                    // One range fits any value; a generic type is checked
                    // in `encode`, once it is known.
                    return constant;
                }
                let (ty, span) = (self.ty, self.span);
                let check = quote_spanned! {span=>
                    const _: () = ::core::assert!(
                        #p::Quantizers::new(&#name).fits(<#ty as #p::Quantize>::FLOATS),
                        "the field's float count is not a multiple of the number of per-axis `quantize` ranges"
                    );
                };
                quote!(#constant #check)
            }
            Encoding::Rotation { bits } => {
                let name = &self.quantizer;
                quote!(const #name: #p::SmallestThree = #p::SmallestThree::new(#bits);)
            }
            _ => TokenStream::new(),
        }
    }

    /// An expression writing `*#value` to `__writer`, of type `Result<(), EncodeError>`.
    pub fn encode(&self, value: TokenStream) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        match self.encoding {
            Encoding::Natural | Encoding::Skip | Encoding::Flatten | Encoding::Array => {
                quote_spanned!(span=> <#ty as #p::BitCodec>::encode(#value, __writer))
            }
            Encoding::Bits(_, bits) => quote_spanned! {span=> {
                // Checked again here for generic types, once they are known.
                const { ::core::assert!(#bits <= <#ty as #p::FixedBits>::WIDTH, "`bits` exceeds the width of the field's type") };
                #p::encode_bits::<#ty>(#value, #bits, __writer)
            }},
            Encoding::Varint => quote_spanned!(span=> #p::encode_varint::<#ty>(#value, __writer)),
            Encoding::Quantize { axes, .. } if self.generic && axes.len() > 1 => {
                let q = &self.quantizer;
                // Checked in `items` for a concrete type.
                quote_spanned! {span=> {
                    const {
                        ::core::assert!(
                            #p::Quantizers::new(&#q).fits(<#ty as #p::Quantize>::FLOATS),
                            "the field's float count is not a multiple of the number of per-axis `quantize` ranges"
                        )
                    };
                    <#ty as #p::Quantize>::write_quantized(#value, #p::Quantizers::new(&#q), __writer);
                    #p::Ok(())
                }}
            }
            Encoding::Quantize { .. } => {
                let q = &self.quantizer;
                // Through the trait, like every other use, so that a type
                // that is not `Quantize` gets one error, not one per use.
                quote_spanned! {span=> {
                    <#ty as #p::Quantize>::write_quantized(#value, #p::Quantizers::new(&#q), __writer);
                    #p::Ok(())
                }}
            }
            Encoding::Rotation { .. } => {
                let q = &self.quantizer;
                quote_spanned! {span=> {
                    <#ty as #p::QuantizeRotation>::write_rotation(#value, &#q, __writer);
                    #p::Ok(())
                }}
            }
            Encoding::With(path) => quote_spanned!(span=> #path::encode(#value, __writer)),
            Encoding::Serde => quote_spanned!(span=> #p::serde_encode::<#ty>(#value, __writer)),
        }
    }

    /// An expression reading a value from `__reader`, of type `Result<Ty, DecodeError>`.
    pub fn decode(&self) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        match self.encoding {
            Encoding::Natural | Encoding::Skip | Encoding::Flatten | Encoding::Array => {
                quote_spanned!(span=> <#ty as #p::BitCodec>::decode(__reader))
            }
            Encoding::Bits(_, bits) => {
                quote_spanned!(span=> #p::decode_bits::<#ty>(#bits, __reader))
            }
            Encoding::Varint => quote_spanned!(span=> #p::decode_varint::<#ty>(__reader)),
            Encoding::Quantize { .. } => {
                let q = &self.quantizer;
                quote_spanned!(span=> <#ty as #p::Quantize>::read_quantized(#p::Quantizers::new(&#q), __reader))
            }
            Encoding::Rotation { .. } => {
                let q = &self.quantizer;
                quote_spanned!(span=> <#ty as #p::QuantizeRotation>::read_rotation(&#q, __reader))
            }
            Encoding::With(path) => quote_spanned!(span=> #path::decode(__reader)),
            Encoding::Serde => quote_spanned!(span=> #p::serde_decode::<#ty>(__reader)),
        }
    }

    /// A statement reading past a value on `__reader`, checked as
    /// [`decode`](Self::decode) checks it: skipping its bits when every
    /// pattern of them decodes and the input holds them, decoding it
    /// otherwise (the errors are then `decode`'s own).
    pub fn check(&self) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        // Typed: a `with` module's `decode` is generic over what it returns.
        let decode = {
            let decode = self.decode();
            quote_spanned!(span=> let _: #ty = #decode?;)
        };
        let width = match self.encoding {
            Encoding::Natural | Encoding::Skip | Encoding::Flatten | Encoding::Array => {
                quote_spanned!(span=> <#ty as #p::BitCodec>::FIXED_BITS)
            }
            Encoding::Quantize { .. } => {
                let q = &self.quantizer;
                quote_spanned! {span=>
                    if <#ty as #p::Quantize>::EVERY_STEP_DECODES {
                        #p::Some(#p::Quantizers::new(&#q).bits_for(<#ty as #p::Quantize>::FLOATS))
                    } else {
                        #p::None
                    }
                }
            }
            _ => return decode,
        };
        quote! {
            let __skipped = match #width {
                #p::Some(__bits) => #p::BitReader::skip_bits(__reader, __bits),
                #p::None => false,
            };
            if !__skipped {
                #decode
            }
        }
    }

    /// A `bool` expression: whether `*#a` and `*#b` would be sent the same.
    pub fn same(&self, a: TokenStream, b: TokenStream) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        match self.encoding {
            Encoding::Natural | Encoding::Skip | Encoding::Flatten | Encoding::Array => {
                quote_spanned!(span=> <#ty as #p::BitCodec>::same(#a, #b))
            }
            Encoding::Quantize { .. } => {
                let q = &self.quantizer;
                quote_spanned!(span=> <#ty as #p::Quantize>::same_quantized(#a, #b, #p::Quantizers::new(&#q)))
            }
            Encoding::Rotation { .. } => {
                let q = &self.quantizer;
                quote_spanned!(span=> <#ty as #p::QuantizeRotation>::same_rotation(#a, #b, &#q))
            }
            Encoding::Bits(..) | Encoding::Varint | Encoding::With(_) | Encoding::Serde => {
                quote_spanned!(span=> <#ty as ::core::cmp::PartialEq>::eq(#a, #b))
            }
        }
    }

    /// An expression: whether `held`, a mirror's value, is `read`, the
    /// value just read into it ([`same`](Self::same), but a quantized
    /// value compares as read: `Quantize::same_as_read`).
    pub fn same_as_read(&self, held: TokenStream, read: TokenStream) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        match self.encoding {
            Encoding::Quantize { .. } => {
                let q = &self.quantizer;
                quote_spanned!(span=> <#ty as #p::Quantize>::same_as_read(#held, #read, #p::Quantizers::new(&#q)))
            }
            _ => self.same(held, read),
        }
    }

    /// A `u64` constant expression: the fewest bits a value takes.
    pub fn min_bits(&self) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        match self.encoding {
            Encoding::Natural | Encoding::Skip | Encoding::Flatten | Encoding::Array => {
                quote_spanned!(span=> <#ty as #p::BitCodec>::MIN_BITS)
            }
            Encoding::Bits(_, bits) => quote!(#bits as ::core::primitive::u64),
            Encoding::Varint => quote!(1u64),
            Encoding::Quantize { .. } => {
                let q = &self.quantizer;
                quote_spanned! {span=>
                    #p::Quantizers::new(&#q).bits_for(<#ty as #p::Quantize>::FLOATS)
                }
            }
            Encoding::Rotation { bits } => quote!((2 + 3 * #bits) as ::core::primitive::u64),
            // Unknown: zero is the safe lower bound.
            Encoding::With(_) | Encoding::Serde => quote!(0u64),
        }
    }

    /// A `u64` constant expression: the field's wire type in the schema hash.
    pub fn type_hash(&self) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        match self.encoding {
            Encoding::Natural | Encoding::Skip | Encoding::Flatten | Encoding::Array => {
                quote_spanned!(span=> <#ty as #p::BitCodec>::TYPE_HASH)
            }
            Encoding::Bits(_, bits) => quote_spanned! {span=>
                #p::bits_type_hash(#p::schema::str(#p::schema::START, <#ty as #p::FixedBits>::NAME), #bits)
            },
            Encoding::Varint => quote_spanned! {span=>
                #p::varint_type_hash(#p::schema::str(#p::schema::START, <#ty as #p::VarInt>::NAME))
            },
            Encoding::Quantize { .. } => {
                let q = &self.quantizer;
                quote_spanned!(span=> #p::Quantizers::new(&#q).type_hash(<#ty as #p::Quantize>::TYPE_HASH))
            }
            Encoding::Rotation { .. } => {
                let q = &self.quantizer;
                quote_spanned!(span=> #q.type_hash(<#ty as #p::QuantizeRotation>::TYPE_HASH))
            }
            Encoding::With(path) => {
                let written = format!("with {}", path.to_token_stream()).replace(' ', "");
                let ty = ty.to_token_stream().to_string().replace(' ', "");
                quote!(#p::schema::str(#p::schema::str(#p::schema::START, #written), #ty))
            }
            Encoding::Serde => {
                let ty = ty.to_token_stream().to_string().replace(' ', "");
                quote!(#p::schema::str(#p::schema::str(#p::schema::START, "serde"), #ty))
            }
        }
    }

    /// Whether writing or reading the field can reach derived code, as a
    /// `bool` constant expression; `None` when it cannot (numbers in bits
    /// or varints, quantized floats, a skipped field).
    pub fn nests(&self, p: &TokenStream) -> Option<TokenStream> {
        let (ty, span) = (self.ty, self.span);
        match self.encoding {
            Encoding::Natural => Some(quote_spanned!(span=> <#ty as #p::BitCodec>::NESTS)),
            Encoding::Skip
            | Encoding::Bits(..)
            | Encoding::Varint
            | Encoding::Quantize { .. }
            | Encoding::Rotation { .. } => None,
            Encoding::Flatten | Encoding::Array | Encoding::With(_) | Encoding::Serde => {
                Some(quote!(true))
            }
        }
    }

    /// Whether the field's own fields are leaves of the parent's mask.
    pub fn is_flattened(&self) -> bool {
        matches!(self.encoding, Encoding::Flatten)
    }

    /// A `u32` constant expression: how many mask bits the field takes
    /// (its leaves: 1, or a flattened type's `FIELD_COUNT`).
    pub fn width(&self) -> TokenStream {
        let (p, ty, span) = (&self.private, self.ty, self.span);
        if self.is_flattened() {
            quote_spanned!(span=> <#ty as #p::Replicate>::FIELD_COUNT)
        } else {
            quote!(1u32)
        }
    }

    /// The type of the field's slot in the parent's patch (inside `Option`).
    pub fn slot_ty(&self, ty: TokenStream) -> TokenStream {
        let (p, span) = (&self.private, self.span);
        if self.is_flattened() {
            quote_spanned!(span=> <#ty as #p::Replicate>::Patch)
        } else {
            ty
        }
    }
}

/// The trait a generic field type must implement for `encoding`.
pub fn bound(encoding: &Encoding, p: &TokenStream) -> TokenStream {
    match encoding {
        Encoding::Natural | Encoding::Skip | Encoding::Array => quote!(#p::BitCodec),
        Encoding::Flatten => quote!(#p::Replicate),
        Encoding::Bits(..) => quote!(#p::FixedBits),
        Encoding::Varint => quote!(#p::VarInt),
        Encoding::Quantize { .. } => quote!(#p::Quantize),
        Encoding::Rotation { .. } => quote!(#p::QuantizeRotation),
        Encoding::With(_) | Encoding::Serde => quote!(::core::cmp::PartialEq),
    }
}
