//! `#[native(..)]` on the struct and on its fields.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{DeriveInput, LitStr};

use crate::errors::Errors;

pub(super) struct TypeArgs {
    pub name: Option<LitStr>,
    /// `initializer = "aggregate"`, the only initializer there is.
    pub aggregate: Option<Span>,
    pub opaque: Option<Span>,
}

pub(super) fn type_args(input: &DeriveInput, errors: &mut Errors) -> TypeArgs {
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
        errors.ok(r);
    }
    args
}

/// The span of a field's `#[native(skip)]`, if it has one.
pub(super) fn field_skip(field: &syn::Field, errors: &mut Errors) -> Option<Span> {
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
        errors.ok(r);
    }
    skip
}
