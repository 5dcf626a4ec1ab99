//! The `#[repr]` rule of the derives whose struct has a C++ twin of the same layout
//! (`NativeType`, `KernelArg`): `repr(C)`, with `align(N)` allowed and `packed` refused.

use proc_macro2::TokenStream;
use syn::spanned::Spanned;
use syn::DeriveInput;

use crate::errors::Errors;

/// Which derive checks, for its messages.
pub(crate) struct ReprRule {
    /// `NativeType`.
    pub derive: &'static str,
    /// What the struct is, as a message's subject: `a native type`.
    pub what: &'static str,
    /// Why Rust's default layout will not do.
    pub why_c: &'static str,
}

pub(crate) fn check_repr(input: &DeriveInput, rule: &ReprRule, errors: &mut Errors) {
    let mut has_c = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") {
                has_c = true;
            } else if meta.path.is_ident("packed") {
                errors.at(
                    meta.path.span(),
                    format!(
                        "{} cannot be #[repr(packed)]: its C++ twin must be a standard-layout struct with natural alignment; write #[repr(C)] instead, without `packed` (use explicit padding fields if needed)",
                        rule.what
                    ),
                );
            }
            // `align(16)`, `packed(2)`: the argument does not matter here.
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            Ok(())
        });
        errors.ok(r);
    }
    if !has_c {
        let ident = &input.ident;
        errors.at(
            ident.span(),
            format!(
                "#[derive({})] needs #[repr(C)] on `{ident}`: {}",
                rule.derive, rule.why_c
            ),
        );
    }
}
