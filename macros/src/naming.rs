//! The names the library macro generates and the impl macro refers to. Both sides call these,
//! so the convention lives in one place.

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

pub fn arity_trait(marker: &str, span: Span) -> Ident {
    Ident::new(&format!("{marker}__arity"), span)
}

pub fn arg_trait(marker: &str, index: usize, span: Span) -> Ident {
    Ident::new(&format!("{marker}__arg{index}"), span)
}

pub fn returns_trait(marker: &str, span: Span) -> Ident {
    Ident::new(&format!("{marker}__returns"), span)
}
