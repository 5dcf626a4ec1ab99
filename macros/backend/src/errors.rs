//! Collects a declaration's errors, so one expansion reports all of them at once instead of
//! one per compile.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};

#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub(crate) fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    /// The value, or `None` with the error collected.
    pub(crate) fn ok<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// Moves `other`'s errors after these.
    pub(crate) fn append(&mut self, other: Errors) {
        if let Some(e) = other.0 {
            self.push(e);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `Err` with every collected error, or `Ok` when there was none.
    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }

    /// `value` when there was no error. Every check that leaves a value out records why, so
    /// `None` without an error is the macro's own bug, and said to be one.
    pub(crate) fn finish_with<T>(self, value: Option<T>) -> syn::Result<T> {
        self.finish()?;
        value.ok_or_else(|| {
            syn::Error::new(
                Span::call_site(),
                "opbox's macro rejected this item without saying why; please report it",
            )
        })
    }
}

/// The errors, then the item as written: the user sees these errors and not a cascade from
/// names the item defines, and the IDE keeps the item.
pub(crate) fn with_item(error: syn::Error, item: impl ToTokens) -> TokenStream {
    let error = error.to_compile_error();
    quote!(#error #item)
}
