//! The names the macros generate and refer to. The library macro and the impl macro both call
//! these, so each convention lives in one place.

use proc_macro2::{Ident, Span};
use quote::{format_ident, ToTokens};

/// Rust's keywords (strict and reserved, every edition): an op named after one gets a raw
/// marker module, `r#where`.
const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "else", "enum", "extern", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "static",
    "struct", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn",
    "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized",
    "virtual", "yield", "try", "gen",
];

/// The keywords that cannot be raw identifiers (and `_`, no identifier at all): an op named
/// after one gets a trailing underscore instead, `self` → `self_`, and so does its kernel fn.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// The name of an op's marker module as a string (what its kernel fn is called, raw prefix
/// aside): `add` → `add`; `add.Scalar` → `add_Scalar`; `self` → `self_`. Two ops with the same
/// marker name are one module, which the library reports as a duplicate.
pub fn marker_name(name: &str, overload: &str) -> String {
    if !overload.is_empty() {
        format!("{name}_{overload}")
    } else if NOT_RAW.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// The marker type inside an op's module: `mylib::axpby::Op`.
pub fn marker_type(span: Span) -> Ident {
    Ident::new("Op", span)
}

/// The `const` in an op's module holding its `Signature`, which each kernel's signature is
/// checked against at compile time (`mylib::axpby::SIGNATURE`).
pub fn signature_const(span: Span) -> Ident {
    Ident::new("SIGNATURE", span)
}

/// The `const` reference to an op's static data inside its module (`mylib::axpby::BOXED`),
/// which its kernels' shims hand to the shared code behind the ABI.
pub fn boxed_const(span: Span) -> Ident {
    Ident::new("BOXED", span)
}

/// A library's table of `OpDef`s, a `static` in its markers module: one element an op.
pub fn op_table(span: Span) -> Ident {
    Ident::new("__OPBOX_OPS", span)
}

/// The zeroed cells a library's ops' schemas are parsed into, one an op, beside its table.
pub fn schema_cells(span: Span) -> Ident {
    Ident::new("__OPBOX_SCHEMAS", span)
}

/// The module holding an op's marker type and its signature, named after the op
/// (`mylib::axpby`). The impl macro imports it once, so an op that does not exist is one
/// unresolved-import error, with rustc's "a similar name exists" hint, not one per check.
pub fn op_module(marker: &str, span: Span) -> Ident {
    if KEYWORDS.contains(&marker) {
        Ident::new_raw(marker, span)
    } else {
        Ident::new(marker, span)
    }
}

/// A path or type as a message shows it: its tokens with no spaces (`my::Color`, `In<[f32]>`).
pub fn shown(tokens: &impl ToTokens) -> String {
    tokens.to_token_stream().to_string().replace(' ', "")
}

/// An identifier as C++ and the registry see it: `r#type` is `type`.
pub fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_string).unwrap_or(s)
}

/// The hidden const a `#[device]` fn or `#[builtin]` `name` defines, and a kernel's call to
/// `name` reads (its C++ and callees). Named as an instruction: calling a plain fn from a
/// kernel fails to find this const, and rustc's "cannot find value" message then says what to do.
pub fn dsl_fn_const(name: &str, span: Span) -> Ident {
    format_ident!("mark_{}_with_device_or_builtin", name, span = span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_become_raw_or_get_an_underscore() {
        let span = Span::call_site();
        assert_eq!(
            op_module(&marker_name("where", ""), span).to_string(),
            "r#where"
        );
        assert_eq!(
            op_module(&marker_name("type", ""), span).to_string(),
            "r#type"
        );
        assert_eq!(
            op_module(&marker_name("where", "self"), span).to_string(),
            "where_self"
        );
        for name in NOT_RAW {
            let module = op_module(&marker_name(name, ""), span).to_string();
            assert_eq!(module, format!("{name}_"));
        }
        assert_eq!(op_module(&marker_name("add", ""), span).to_string(), "add");
    }
}
