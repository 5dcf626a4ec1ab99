//! Paths the expansions share. Every path an expansion names is under `::opbox::__private`: the
//! facade's re-exports for the macros, which stay put while the public paths (and the runtime
//! modules behind them) move.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote_spanned, ToTokens};
use syn::{Ident, Path, PathArguments};

/// `Site { file, line }` of the tokens at `span`: where a registration was declared, for the
/// registry's messages.
pub(crate) fn site(span: Span) -> TokenStream {
    quote_spanned! {span=>
        ::opbox::__private::Site { file: ::core::file!(), line: ::core::line!() }
    }
}

/// A path written next to an item, as an item generated inside a child module must write it:
/// `mylib` → `super::mylib`, `self::x` → `super::x`, `super::x` → `super::super::x`;
/// `crate::` and `::` paths stay as they are.
pub(crate) fn from_child(path: &Path) -> Path {
    if path.leading_colon.is_some() {
        return path.clone();
    }
    let first = path
        .segments
        .first()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    match first.as_str() {
        "crate" => path.clone(),
        "self" => {
            let mut p = path.clone();
            if let Some(seg) = p.segments.first_mut() {
                seg.ident = Ident::new("super", seg.ident.span());
            }
            p
        }
        _ => {
            let mut p: Path = syn::parse_quote!(super);
            for seg in &path.segments {
                p.segments.push(seg.clone());
            }
            p
        }
    }
}

/// `library::name`.
pub(crate) fn join(library: &Path, name: Ident) -> Path {
    let mut p = library.clone();
    p.segments.push(syn::PathSegment {
        ident: name,
        arguments: PathArguments::None,
    });
    p
}

/// The path with every token moved to `span`, so rustc reports a failed check at the kernel's
/// parameter rather than at the attribute.
pub(crate) fn respan(path: &Path, span: Span) -> TokenStream {
    respan_tokens(path.to_token_stream(), span)
}

/// `tokens` with every token at `span`, inside groups too.
pub(crate) fn respan_tokens(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut inner = Group::new(group.delimiter(), respan_tokens(group.stream(), span));
                inner.set_span(span);
                TokenTree::Group(inner)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
