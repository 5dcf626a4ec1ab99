//! `#[extern_kernel(source = "...", include_dirs = [...], entry = "...", ...)]`: what the
//! attribute says, with every wrong argument reported.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprArray, ExprLit, Ident, Lit, LitStr, Token};

use crate::errors::Errors;

/// What the attribute says.
pub(super) struct Args {
    pub source: LitStr,
    pub include_dirs: Vec<LitStr>,
    pub entry: Option<LitStr>,
    pub options: Vec<LitStr>,
    /// `constexpr = "template"`.
    pub template: bool,
    /// `build = path::to::OPTIONS`: a static that derefs to `opbox::BuildOptions`.
    pub build: Option<syn::Path>,
    /// `abi = "constant_params"`.
    pub constant_params: bool,
}

pub(super) const USAGE: &str = "expected `#[extern_kernel(source = \"kernels/x.cu\", include_dirs = [\"kernels/include\"], entry = \"x\")]`; only `source` is required (also: `options = [\"--use_fast_math\"]`, `constexpr = \"define\" | \"template\"`, `build = path::to::OPTIONS`, a static deref'ing to opbox::BuildOptions, `abi = \"constant_params\"`)";

/// The arguments, with every wrong one reported to `errors`; `None` without a usable `source`.
pub(super) fn parse(attr: TokenStream, errors: &mut Errors) -> Option<Args> {
    let mut own = Errors::default();
    let args = parse_pairs(attr, &mut own);
    errors.append(own);
    args
}

fn parse_pairs(attr: TokenStream, errors: &mut Errors) -> Option<Args> {
    let pairs =
        errors.ok(Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated.parse2(attr))?;
    let mut source = None;
    let mut include_dirs = Vec::new();
    let mut entry = None;
    let mut options = Vec::new();
    let mut template = false;
    let mut build = None;
    let mut constant_params = false;
    for pair in pairs {
        let key = pair
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        let value = &pair.value;
        match key.as_str() {
            "source" => source = errors.ok(lit_str(value)),
            "entry" => entry = errors.ok(lit_str(value)),
            "include_dirs" => include_dirs = errors.ok(lit_str_list(value)).unwrap_or_default(),
            "options" => options = errors.ok(lit_str_list(value)).unwrap_or_default(),
            "abi" => {
                if let Some(on) = either(value, ("params", "constant_params"), ABI, errors) {
                    constant_params = on;
                }
            }
            "build" => match value {
                Expr::Path(p) if p.qself.is_none() => build = Some(p.path.clone()),
                other => errors.at(
                    other.span(),
                    "`build` names a static holding the group's options: `build = path::to::OPTIONS`, e.g. a `static OPTIONS: LazyLock<opbox::BuildOptions>`",
                ),
            },
            "constexpr" => {
                if let Some(on) = either(value, ("define", "template"), CONSTEXPR, errors) {
                    template = on;
                }
            }
            _ => errors.at(
                pair.path.span(),
                format!("unknown #[extern_kernel] argument `{key}`; {USAGE}"),
            ),
        }
    }
    // Said once: an unknown argument's message already shows the usage.
    if source.is_none() && errors.is_empty() {
        errors.at(Span::call_site(), USAGE);
    }
    Some(Args {
        source: source?,
        include_dirs,
        entry,
        options,
        template,
        build,
        constant_params,
    })
}

const ABI: &str = "`abi` is \"params\" (the default: the entry takes the parameters) or \"constant_params\" (an extern \"C\" entry with no parameters reads its one struct from the __constant__ symbol `params`)";

const CONSTEXPR: &str = "`constexpr` is \"define\" (each #[constexpr] param becomes a #define, the default) or \"template\" (the entry is a template over them, in order)";

/// A string that is one of two words: whether it is the second. Anything else is an error
/// saying `choices`.
fn either(
    value: &Expr,
    (off, on): (&str, &str),
    choices: &str,
    errors: &mut Errors,
) -> Option<bool> {
    let lit = errors.ok(lit_str(value))?;
    match lit.value() {
        v if v == off => Some(false),
        v if v == on => Some(true),
        _ => {
            errors.at(lit.span(), choices);
            None
        }
    }
}

fn lit_str(e: &Expr) -> syn::Result<LitStr> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new(
            other.span(),
            "expected a string literal, e.g. \"kernels/axpby.cu\"",
        )),
    }
}

fn lit_str_list(e: &Expr) -> syn::Result<Vec<LitStr>> {
    match e {
        Expr::Array(ExprArray { elems, .. }) => elems.iter().map(lit_str).collect(),
        other => Err(syn::Error::new(
            other.span(),
            "expected a list of string literals, e.g. [\"kernels/include\"]",
        )),
    }
}
