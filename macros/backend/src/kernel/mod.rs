//! `#[kernel]`: a Rust kernel DSL. One body becomes CUDA C++ (through NVRTC, like an
//! `#[extern_kernel]`'s source) and, unchanged but for its operators, the CPU build.
//!
//! parse (`attr.rs`; the parameters with [`crate::kernel_params`], shared with
//! `#[extern_kernel]`) → model and validate (`lower.rs` into `ir.rs`, every rejected construct a
//! spanned error) → emit C++ (`cpp.rs`) and the CPU build (`cpu.rs`) → expand (`expand.rs`, the
//! same module an `#[extern_kernel]` gets, plus the CPU entry). `#[device]` fns (`device.rs`)
//! are helpers kernels call, emitted as `__device__` functions.

mod attr;
mod cpp;
mod cpu;
mod device;
mod divergence;
mod expand;
mod fission;
mod ir;
mod lower;
mod ranged;

use proc_macro2::TokenStream;

use crate::errors::with_item;
use crate::extern_kernel::SourceLoader;

/// `#[kernel]` / `#[kernel(build = OPTS, options = ["--fmad=false"])]` on a fn with a body.
pub fn expand(attr: TokenStream, item: TokenStream, files: &dyn SourceLoader) -> TokenStream {
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(func) => match expand::kernel(attr, &func, files) {
            Ok(tokens) => tokens,
            // The fn is valid Rust: it stays, so the IDE keeps working and the user sees the
            // DSL's errors only.
            Err((e, fallback)) => with_item(e, fallback),
        },
        Err(e) => e.to_compile_error(),
    }
}

/// `#[device]` on a helper fn that kernels call.
pub fn expand_device(
    attr: TokenStream,
    item: TokenStream,
    files: &dyn SourceLoader,
) -> TokenStream {
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(func) => match device::expand(attr, &func, files) {
            Ok(tokens) => tokens,
            Err(e) => with_item(e, func),
        },
        Err(e) => e.to_compile_error(),
    }
}
