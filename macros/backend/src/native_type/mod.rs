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
//! parse (`attr.rs`) → validate (here, into a [`NativeStruct`]) → expand (`expand.rs`):
//! `unsafe impl NativeType` with a const schema built from rustc's layout
//! (`size_of`, `align_of`, `offset_of!`), a type code computed once at run time (std has no const
//! SHA-256), `impl NativeField` so the type nests, const asserts on the layout, and an inventory
//! registration.

mod attr;
mod expand;

use proc_macro2::TokenStream;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, LitStr, Type};

use opbox_codegen::cpp_ident;
use opbox_codegen::native::validate_native_name;

use crate::errors::Errors;
use crate::naming::unraw;
use crate::repr::{check_repr, ReprRule};

pub fn expand(input: TokenStream) -> TokenStream {
    syn::parse2::<DeriveInput>(input)
        .and_then(|input| validate(&input).map(|model| expand::emit(&model)))
        .unwrap_or_else(|e| e.to_compile_error())
}

const REPR: ReprRule = ReprRule {
    derive: "NativeType",
    what: "a native type",
    why_c: "Rust's default layout may reorder fields, and the C++ twin must match field for field; add #[repr(C)]",
};

/// A checked native type: what the expansion needs.
struct NativeStruct<'a> {
    ident: &'a Ident,
    name: LitStr,
    initializer: Initializer,
    /// The fields C++ sees, in declaration order (none for an opaque type).
    exposed: Vec<(&'a Ident, &'a Type)>,
}

#[derive(Clone, Copy)]
enum Initializer {
    Opaque,
    Aggregate,
    None,
}

fn validate(input: &DeriveInput) -> syn::Result<NativeStruct<'_>> {
    let ident = &input.ident;
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
    let mut errors = Errors::default();
    if !input.generics.params.is_empty() {
        errors.at(
            input.generics.span(),
            format!("a native type cannot be generic: a C++ name names one layout; write one #[derive(NativeType)] struct per instantiation of `{ident}`"),
        );
    }
    check_repr(input, &REPR, &mut errors);
    let args = attr::type_args(input, &mut errors);

    if let Some(name) = &args.name {
        if let Err(e) = validate_native_name(&name.value()) {
            errors.at(name.span(), e);
        }
    } else {
        errors.push(missing_name(ident));
    }
    let opaque = args.opaque.is_some();
    if let (Some(span), Some(_)) = (args.opaque, args.aggregate) {
        errors.at(
            span,
            "an opaque native type has no initializer: C++ sees no fields; remove `initializer` or `opaque`",
        );
    }
    let aggregate = args.aggregate.is_some();

    let mut exposed = Vec::new();
    match &data.fields {
        Fields::Named(named) => {
            for f in &named.named {
                let skip = attr::field_skip(f, &mut errors);
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
                    exposed.push((name, &f.ty));
                }
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
                attr::field_skip(f, &mut errors);
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
    let name = args.name.ok_or_else(|| missing_name(ident))?;
    let initializer = match (opaque, aggregate) {
        (true, _) => Initializer::Opaque,
        (false, true) => Initializer::Aggregate,
        (false, false) => Initializer::None,
    };
    Ok(NativeStruct {
        ident,
        name,
        initializer,
        exposed,
    })
}

fn missing_name(ident: &Ident) -> syn::Error {
    syn::Error::new(
        ident.span(),
        format!("#[derive(NativeType)] on `{ident}` needs the C++ type's name: add #[native(name = \"my_addon::{ident}\")]"),
    )
}

/// An exposed field's name must also be a C++ member name (Warp: "fields keys must be valid C++
/// identifiers").
fn check_cpp_field_name(name: &Ident, errors: &mut Errors) {
    let n = unraw(name);
    if !n.is_ascii() {
        errors.at(
            name.span(),
            format!("field `{n}` must have an ASCII name to be seen from C++: rename it, or mark it #[native(skip)]"),
        );
    } else if cpp_ident::is_keyword(&n) {
        errors.at(
            name.span(),
            format!("field `{n}` is named by a C++ keyword, so its C++ twin cannot have it: rename it, or mark it #[native(skip)]"),
        );
    }
}
