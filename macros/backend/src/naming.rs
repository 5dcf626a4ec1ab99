//! The names the macros generate and refer to. The library macro and the impl macro both call
//! these, so each convention lives in one place.

use proc_macro2::{Ident, Span};

/// Arg-check traits exist for at least this many parameter positions, so an extra kernel
/// parameter gets a message of its own instead of a missing-trait error.
pub const ARG_TRAIT_MIN: usize = 16;

/// `add` → `add`; `add.Scalar` → `add_Scalar`.
pub fn marker_name(name: &str, overload: &str) -> String {
    if overload.is_empty() {
        name.to_string()
    } else {
        format!("{name}_{overload}")
    }
}

/// The marker type inside an op's module: `mylib::axpby::Op`.
pub fn marker_type(span: Span) -> Ident {
    Ident::new("Op", span)
}

pub fn arity_trait(span: Span) -> Ident {
    Ident::new("Arity", span)
}

pub fn arg_trait(index: usize, span: Span) -> Ident {
    Ident::new(&format!("Arg{index}"), span)
}

/// The one trait every parameter position past the schema's arguments is checked against
/// (re-exported under each position's `Arg{index}` name).
pub fn extra_arg_trait(span: Span) -> Ident {
    Ident::new("ExtraArg", span)
}

pub fn returns_trait(span: Span) -> Ident {
    Ident::new("Returns", span)
}

/// The module holding an op's marker type and its check traits, named after the op
/// (`mylib::axpby`). The impl macro imports it once, so an op that does not exist is one
/// unresolved-import error, with rustc's "a similar name exists" hint, not one per check.
pub fn op_module(marker: &str, span: Span) -> Ident {
    Ident::new(marker, span)
}

/// An identifier as C++ and the registry see it: `r#type` is `type`.
pub fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_string).unwrap_or(s)
}
