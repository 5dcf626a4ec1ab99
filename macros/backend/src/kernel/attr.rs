//! `#[kernel(build = path::to::OPTIONS, options = ["--fmad=false"])]`: both optional.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Token};

use crate::errors::Errors;

#[derive(Default)]
pub(super) struct Args {
    /// A static that derefs to `opbox::BuildOptions`: the group's preamble (the C++ behind its
    /// `#[builtin]`s), include dirs and dependencies.
    pub build: Option<syn::Path>,
    /// Extra NVRTC options (`--fmad=false` for bit-exact float agreement with the CPU build).
    pub options: Vec<LitStr>,
}

pub(super) const USAGE: &str =
    "expected `#[kernel]` or `#[kernel(build = path::to::OPTIONS, options = [\"--fmad=false\"])]`";

pub(super) fn parse(attr: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let Some(pairs) =
        errors.ok(Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated.parse2(attr))
    else {
        return args;
    };
    for pair in pairs {
        let key = pair
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match (key.as_str(), &pair.value) {
            ("build", Expr::Path(p)) if p.qself.is_none() => args.build = Some(p.path.clone()),
            ("options", Expr::Array(a)) => {
                for e in &a.elems {
                    match e {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) => args.options.push(s.clone()),
                        other => errors.at(
                            other.span(),
                            "NVRTC options are string literals: options = [\"--fmad=false\"]",
                        ),
                    }
                }
            }
            ("build", other) => errors.at(
                other.span(),
                "`build` names a static holding the group's options: `build = path::to::OPTIONS`",
            ),
            ("options", other) => errors.at(
                other.span(),
                "`options` is a list of string literals: options = [\"--fmad=false\"]",
            ),
            _ => errors.at(
                pair.path.span(),
                format!("unknown #[kernel] argument `{key}`; {USAGE}"),
            ),
        }
    }
    args
}
