//! `#[derive(NativeType)]`: a `#[repr(C)]` struct with a C++ twin.
//!
//! ```ignore
//! #[derive(Clone, Copy, NativeType)]
//! #[repr(C)]
//! #[native(name = "my_addon::Color", initializer = "aggregate")]
//! struct Color { r: f32, g: f32, b: f32 }
//!
//! #[derive(Clone, Copy, NativeType)]
//! #[repr(C)]
//! #[native(name = "my_addon::ImageHandle", opaque)]
//! struct ImageHandle(u64);
//! ```
//!
//! Rules, each a spanned compile error:
//! - a non-generic struct with `#[repr(C)]` (`align(N)` may be added; `packed` may not);
//! - `name` is a qualified C++ identifier (Warp's rule and wording);
//! - `initializer` is `"aggregate"` or absent; `opaque` has no initializer;
//! - exposed (not opaque) types have named fields: C++ sees fields by name. A tuple struct can
//!   only be opaque;
//! - `#[native(skip)]` keeps a field out of C++'s view (it still counts in the layout); an
//!   aggregate initializer needs every field in declaration order, so it allows no skip;
//! - every exposed field's type is [`NativeField`] (scalars, halves, native types, fixed arrays),
//!   checked by rustc with a message at the field's type.
//!
//! Expansion: `unsafe impl NativeType` with a const schema built from rustc's layout
//! (`size_of`, `align_of`, `offset_of!`), a type code computed once at run time (std has no const
//! SHA-256), `impl NativeField` so the type nests, const asserts on the layout, and an inventory
//! registration.

use crate::errors::Errors;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr};

use opbox_codegen::native::validate_native_name;

pub fn expand(input: TokenStream) -> TokenStream {
    match syn::parse2::<DeriveInput>(input) {
        Ok(input) => match try_expand(&input) {
            Ok(tokens) => tokens,
            Err(e) => e.to_compile_error(),
        },
        Err(e) => e.to_compile_error(),
    }
}

struct TypeArgs {
    name: Option<LitStr>,
    /// `initializer = "aggregate"`, the only initializer there is.
    aggregate: Option<Span>,
    opaque: Option<Span>,
}

fn try_expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let ident = &input.ident;
    let mut errors = Errors::default();

    let data =
        match &input.data {
            Data::Struct(s) => s,
            Data::Enum(e) => return Err(syn::Error::new(
                e.enum_token.span,
                "#[derive(NativeType)] needs a #[repr(C)] struct; an enum has no C++ struct twin",
            )),
            Data::Union(u) => {
                return Err(syn::Error::new(
                    u.union_token.span,
                    "#[derive(NativeType)] needs a #[repr(C)] struct, not a union",
                ))
            }
        };
    if !input.generics.params.is_empty() {
        errors.at(
            input.generics.span(),
            format!("a native type cannot be generic: a C++ name names one layout; write one #[derive(NativeType)] struct per instantiation of `{ident}`"),
        );
    }
    check_repr(input, &mut errors);
    let args = type_args(input, &mut errors);

    if let Some(name) = &args.name {
        if let Err(e) = validate_native_name(&name.value()) {
            errors.at(name.span(), e);
        }
    } else {
        errors.at(
            ident.span(),
            format!("#[derive(NativeType)] on `{ident}` needs the C++ type's name: add #[native(name = \"my_addon::{ident}\")]"),
        );
    }
    let opaque = args.opaque.is_some();
    if let (Some(span), Some(_)) = (args.opaque, args.aggregate) {
        errors.at(
            span,
            "an opaque native type has no initializer: C++ sees no fields; remove `initializer` or `opaque`",
        );
    }
    let aggregate = args.aggregate.is_some();

    // (name, type, skipped) per field.
    let mut fields = Vec::new();
    match &data.fields {
        Fields::Named(named) => {
            for f in &named.named {
                let skip = field_skip(f, &mut errors);
                let Some(name) = &f.ident else { continue };
                if let (Some(skip), true) = (skip, aggregate) {
                    errors.at(
                        skip,
                        format!("initializer = \"aggregate\" requires every field, in declaration order, but `{name}` is #[native(skip)]: remove the skip, or leave out the initializer"),
                    );
                }
                if let (Some(skip), true) = (skip, opaque) {
                    errors.at(skip, "an opaque native type exposes no fields: #[native(skip)] has nothing to skip; remove it");
                }
                if skip.is_none() && !opaque {
                    check_cpp_field_name(name, &mut errors);
                }
                fields.push((name.clone(), f.ty.clone(), skip.is_some()));
            }
        }
        Fields::Unnamed(unnamed) if !opaque => {
            let what = if aggregate {
                "initializer = \"aggregate\" requires every field, in declaration order, by name"
            } else {
                "C++ sees a native type's fields by name"
            };
            errors.at(
                unnamed.span(),
                format!("{what}, but `{ident}` is a tuple struct: give its fields names, or make it #[native(opaque)]"),
            );
        }
        Fields::Unnamed(unnamed) => {
            for f in &unnamed.unnamed {
                field_skip(f, &mut errors);
            }
        }
        Fields::Unit => {
            errors.at(
                ident.span(),
                format!("`{ident}` has no fields, so it is zero-sized in Rust, but every C++ struct has at least one byte: give it a field"),
            );
        }
    }
    errors.finish()?;
    let Some(name) = args.name else {
        return Ok(TokenStream::new());
    };

    let p = quote!(::opbox::__private::native);
    let initializer = match (opaque, aggregate) {
        (true, _) => quote!(#p::Initializer::Opaque),
        (false, true) => quote!(#p::Initializer::Aggregate),
        (false, false) => quote!(#p::Initializer::None),
    };
    let exposed: Vec<_> = if opaque {
        Vec::new()
    } else {
        fields.iter().filter(|(_, _, skip)| !skip).collect()
    };
    // One local trait per exposed field, so that rustc's message for a type that cannot be a
    // field names the field; it forwards to NativeField.
    let field_trait = |i: usize| format_ident!("__OpboxNativeField{}", i);
    let field_traits = exposed.iter().enumerate().map(|(i, (fname, _, _))| {
        let tr = field_trait(i);
        let message = LitStr::new(
            &format!(
                "field `{}` of native type `{ident}` is a `{{Self}}`, which cannot cross to C++",
                unraw(fname)
            ),
            Span::call_site(),
        );
        quote! {
            #[diagnostic::on_unimplemented(
                message = #message,
                label = "this field's type is not native-compatible",
                note = "a #[derive(NativeType)] field must be a scalar (f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool), half::f16 or half::bf16 (also opbox::native::f16, bf16), another #[derive(NativeType)] type, or a fixed array [T; N] of those",
                note = "to keep a field out of C++'s view, mark it #[native(skip)] (not allowed with initializer = \"aggregate\"), or make the whole type #[native(opaque)]"
            )]
            trait #tr {
                const FIELD_TYPE: #p::FieldType;
            }
            impl<T: #p::NativeField> #tr for T {
                const FIELD_TYPE: #p::FieldType = <T as #p::NativeField>::FIELD_TYPE;
            }
        }
    });
    let field_schemas = exposed.iter().enumerate().map(|(i, (fname, ty, _))| {
        let fname_str = unraw(fname);
        let tr = field_trait(i);
        let field_type = quote_spanned!(ty.span()=> <#ty as #tr>::FIELD_TYPE);
        quote! {
            #p::NativeFieldSchema {
                name: #fname_str,
                ty: #field_type,
                offset: ::core::mem::offset_of!(#ident, #fname),
            }
        }
    });
    let ident_str = ident.to_string();
    let lit = |s: String| LitStr::new(&s, Span::call_site());
    let nonzero = lit(format!(
        "opbox: native type `{ident_str}` is zero-sized, but every C++ struct has at least one byte: give it a field"
    ));
    let field_asserts = exposed.iter().enumerate().map(|(i, (fname, ty, _))| {
        let f = unraw(fname);
        let tr = field_trait(i);
        let size_msg = lit(format!("opbox: the NativeField type of `{ident_str}::{f}` declares another size than Rust gives it"));
        let align_msg = lit(format!("opbox: `{ident_str}::{f}` is not aligned for its type"));
        let order_msg = lit(format!("opbox: `{ident_str}::{f}` is not after the field declared before it; repr(C) keeps declaration order"));
        let schema_msg = lit(format!("opbox: the schema's offset of `{ident_str}::{f}` is not Rust's"));
        let order = (i > 0).then(|| {
            let (prev, _, _) = exposed[i - 1];
            quote! {
                ::core::assert!(
                    ::core::mem::offset_of!(#ident, #fname) >= ::core::mem::offset_of!(#ident, #prev),
                    #order_msg
                );
            }
        });
        quote! {
            ::core::assert!(
                <#ty as #tr>::FIELD_TYPE.size() == ::core::mem::size_of::<#ty>(),
                #size_msg
            );
            ::core::assert!(
                ::core::mem::offset_of!(#ident, #fname) % ::core::mem::align_of::<#ty>() == 0,
                #align_msg
            );
            ::core::assert!(
                <#ident as #p::NativeType>::SCHEMA.fields[#i].offset == ::core::mem::offset_of!(#ident, #fname),
                #schema_msg
            );
            #order
        }
    });
    let size_msg = lit(format!(
        "opbox: the schema's size of `{ident_str}` is not Rust's"
    ));
    let align_msg = lit(format!(
        "opbox: the schema's alignment of `{ident_str}` is not Rust's"
    ));
    let code_static = format_ident!("OPBOX_TYPE_CODE");

    Ok(quote! {
        const _: () = {
        #(#field_traits)*

        // SAFETY: the schema is built from rustc's own layout of this #[repr(C)] struct
        // (size_of, align_of, offset_of!), and the const block below re-checks it.
        unsafe impl #p::NativeType for #ident {
            const SCHEMA: &'static #p::NativeSchema = &#p::NativeSchema {
                rust_name: ::core::concat!(::core::module_path!(), "::", #ident_str),
                native_name: #name,
                size: ::core::mem::size_of::<#ident>(),
                align: ::core::mem::align_of::<#ident>(),
                initializer: #initializer,
                fields: &[#(#field_schemas),*],
            };

            fn type_code() -> &'static str {
                static #code_static: #p::OnceLock<::std::string::String> = #p::OnceLock::new();
                #code_static
                    .get_or_init(|| #p::type_code(<#ident as #p::NativeType>::SCHEMA))
                    .as_str()
            }
        }

        impl #p::NativeField for #ident {
            const FIELD_TYPE: #p::FieldType =
                #p::FieldType::Native(<#ident as #p::NativeType>::SCHEMA);
        }

        const _: () = {
            ::core::assert!(::core::mem::size_of::<#ident>() != 0, #nonzero);
            ::core::assert!(
                <#ident as #p::NativeType>::SCHEMA.size == ::core::mem::size_of::<#ident>(),
                #size_msg
            );
            ::core::assert!(
                <#ident as #p::NativeType>::SCHEMA.align == ::core::mem::align_of::<#ident>(),
                #align_msg
            );
            #(#field_asserts)*
        };

        ::opbox::__private::inventory::submit! {
            #p::NativeTypeRegistration {
                schema: <#ident as #p::NativeType>::SCHEMA,
                site: ::opbox::__private::Site { file: ::core::file!(), line: ::core::line!() },
            }
        }
        };
    })
}

fn unraw(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_string).unwrap_or(s)
}

fn check_repr(input: &DeriveInput, errors: &mut Errors) {
    let mut has_c = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") {
                has_c = true;
            } else if meta.path.is_ident("packed") {
                errors.at(
                    meta.path.span(),
                    "a native type cannot be #[repr(packed)]: its C++ twin must be a standard-layout struct with natural alignment; remove `packed` (use explicit padding fields if needed)",
                );
            }
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if !has_c {
        let ident = &input.ident;
        errors.at(
            ident.span(),
            format!("#[derive(NativeType)] needs #[repr(C)] on `{ident}`: Rust's default layout may reorder fields, and the C++ twin must match field for field; add #[repr(C)]"),
        );
    }
}

fn type_args(input: &DeriveInput, errors: &mut Errors) -> TypeArgs {
    let mut args = TypeArgs {
        name: None,
        aggregate: None,
        opaque: None,
    };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("native")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                args.name = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("initializer") {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value() != "aggregate" {
                    return Err(syn::Error::new(
                        lit.span(),
                        "initializer must be \"aggregate\" or left out",
                    ));
                }
                args.aggregate = Some(lit.span());
            } else if meta.path.is_ident("opaque") {
                args.opaque = Some(meta.path.span());
            } else if meta.path.is_ident("skip") {
                return Err(meta.error("#[native(skip)] goes on a field, not on the struct"));
            } else {
                return Err(meta.error(
                    "unknown #[native] argument: expected `name = \"ns::Type\"`, `initializer = \"aggregate\"` or `opaque`",
                ));
            }
            Ok(())
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    args
}

/// The span of a field's `#[native(skip)]`, if it has one.
fn field_skip(field: &syn::Field, errors: &mut Errors) -> Option<Span> {
    let mut skip = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("native")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = Some(meta.path.span());
                Ok(())
            } else {
                Err(meta.error("unknown #[native] field argument: expected `skip`"))
            }
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    skip
}

/// C++ keywords that are not Rust keywords: a Rust field may be named so, but C++ cannot name it.
const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "double",
    "dynamic_cast",
    "explicit",
    "export",
    "float",
    "friend",
    "goto",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "short",
    "signed",
    "sizeof",
    "static_assert",
    "static_cast",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// An exposed field's name must also be a C++ member name (Warp: "fields keys must be valid C++
/// identifiers").
fn check_cpp_field_name(name: &syn::Ident, errors: &mut Errors) {
    let n = unraw(name);
    if !n.is_ascii() {
        errors.at(
            name.span(),
            format!("field `{n}` must have an ASCII name to be seen from C++: rename it, or mark it #[native(skip)]"),
        );
    } else if CPP_KEYWORDS.contains(&n.as_str()) {
        errors.at(
            name.span(),
            format!("field `{n}` is named by a C++ keyword, so its C++ twin cannot have it: rename it, or mark it #[native(skip)]"),
        );
    }
}
