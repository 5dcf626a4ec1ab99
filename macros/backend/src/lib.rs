//! What opbox's macros do, as an ordinary library over `proc_macro2`: parse → model
//! (opbox-codegen) → validate (every error collected) → expand. `opbox-macros` holds only the
//! `#[proc_macro*]` entry points, each a call into one function here, so that every expansion
//! can be run and checked in process.
//!
//! On error a macro emits all its errors at once, with the original item where it is valid Rust,
//! so that one mistake gives one error and the IDE keeps working.

mod builtin;
mod constexpr_enum;
mod diagnostic;
mod errors;
mod extern_kernel;
mod kernel;
mod kernel_arg;
mod kernel_group;
mod kernel_params;
mod library;
mod naming;
mod native_type;
mod paths;
mod repr;
mod rust_forms;
mod schema_error;
mod stable_impl;
#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;

pub use extern_kernel::{CompilerFiles, DeclaringFile, SourceLoader};

/// `#[stable_library(ns)]` on `fn ns(m: &mut Library) { m.def("..."); }`.
pub fn stable_library(attr: TokenStream, item: TokenStream) -> TokenStream {
    library::expand(attr, item, library::Kind::Library)
}

/// `#[stable_fragment(ns)]`: more ops for a namespace defined elsewhere.
pub fn stable_fragment(attr: TokenStream, item: TokenStream) -> TokenStream {
    library::expand(attr, item, library::Kind::Fragment)
}

/// `#[stable_impl(path, KEY)]` on a module of kernels or on one kernel fn.
pub fn stable_impl(attr: TokenStream, item: TokenStream) -> TokenStream {
    stable_impl::expand(attr, item)
}

/// `#[extern_kernel(source = "..", ..)]` on a body-less fn; `files` finds the declaring file and
/// reads the kernel source with its include closure.
pub fn extern_kernel(
    attr: TokenStream,
    item: TokenStream,
    files: &dyn SourceLoader,
) -> TokenStream {
    extern_kernel::expand(attr, item, files)
}

/// `#[kernel_group]` on an inline module of kernels that dispatch as one unit.
pub fn kernel_group(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel_group::expand(attr, item)
}

/// `#[kernel]` on a fn with a body: the DSL. `files` finds the declaring file (for `#line`).
pub fn kernel(attr: TokenStream, item: TokenStream, files: &dyn SourceLoader) -> TokenStream {
    kernel::expand(attr, item, files)
}

/// `#[device]` on a helper fn that DSL kernels call.
pub fn device(attr: TokenStream, item: TokenStream, files: &dyn SourceLoader) -> TokenStream {
    kernel::expand_device(attr, item, files)
}

/// `#[derive(NativeType)]`.
pub fn derive_native_type(item: TokenStream) -> TokenStream {
    native_type::expand(item)
}

/// `#[builtin(native = "ns::f")]` on a fn, with or without a body.
pub fn builtin(attr: TokenStream, item: TokenStream) -> TokenStream {
    builtin::expand(attr, item)
}

/// `#[derive(KernelArg)]`.
pub fn derive_kernel_arg(item: TokenStream) -> TokenStream {
    kernel_arg::expand(item)
}

/// `#[derive(ConstexprEnum)]`.
pub fn derive_constexpr_enum(item: TokenStream) -> TokenStream {
    constexpr_enum::expand(item)
}
