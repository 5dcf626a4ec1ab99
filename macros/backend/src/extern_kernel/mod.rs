//! `#[extern_kernel(source = "...", include_dirs = [...], entry = "...")]` on a body-less fn.
//!
//! parse (`attr.rs`; the parameters with [`crate::kernel_params`]) → validate (`valid.rs`; every
//! error collected, each at its own span) → the source's include closure (`source.rs`, through a
//! [`SourceLoader`]) → expand (`expand.rs`).

mod attr;
pub(crate) mod expand;
mod source;
mod valid;

use proc_macro2::TokenStream;

pub use source::{CompilerFiles, DeclaringFile, SourceLoader};

use crate::errors::Errors;
use crate::kernel_params::{classify_inputs, KernelMacro};

const EXTERN_KERNEL: KernelMacro = KernelMacro {
    attr: "#[extern_kernel]",
    an: "an #[extern_kernel]",
};

pub fn expand(attr: TokenStream, item: TokenStream, files: &dyn SourceLoader) -> TokenStream {
    // On error only the errors are emitted: the item is a body-less fn, which is not valid Rust
    // on its own, so emitting it would add a second, confusing error.
    try_expand(attr, item, files).unwrap_or_else(|e| e.to_compile_error())
}

fn try_expand(
    attr: TokenStream,
    item: TokenStream,
    files: &dyn SourceLoader,
) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let args = attr::parse(attr, &mut errors);
    let func = errors.ok(valid::declaration(item));
    let params = func.as_ref().map(|func| {
        valid::check_signature(&func.sig, &mut errors);
        let params = classify_inputs(&func.sig.inputs, EXTERN_KERNEL, &mut errors);
        valid::check_variadic(&func.sig, &mut errors);
        params
    });
    if let (Some(args), Some(func), Some(params)) = (&args, &func, &params) {
        valid::check_params(args, &func.sig, params, &mut errors);
    }
    let closure = args
        .as_ref()
        .and_then(|args| source::load(args, files, &mut errors));
    let parts = match (func, args, params, closure) {
        (Some(func), Some(args), Some(params), Some(closure)) => {
            Some((func, args, params, closure))
        }
        _ => None,
    };
    let (func, args, params, closure) = errors.finish_with(parts)?;
    Ok(expand::emit(&func, &args, &params, &closure.files))
}
