//! opbox's attribute macros: only the entry points. Each is one call into opbox-macros-backend,
//! which does the work (parse → model → validate → expand) on `proc_macro2` tokens, where it can
//! be tested in process.

use opbox_macros_backend as backend;
use proc_macro::TokenStream;

/// Defines the namespace's ops from `m.def("schema")` calls, checked at compile time.
///
/// ```ignore
/// #[stable_library(mylib)]
/// fn mylib(m: &mut Library) {
///     m.def("axpby(Tensor x, Tensor y, float a=1.0, float b=1.0) -> Tensor");
/// }
/// ```
/// Generates a module named after the function (`mod mylib` here) with one marker type per op
/// (`mylib::axpby`), which `#[stable_impl(mylib, KEY)]` checks kernel signatures against.
#[proc_macro_attribute]
pub fn stable_library(attr: TokenStream, item: TokenStream) -> TokenStream {
    backend::stable_library(attr.into(), item.into()).into()
}

/// More ops for a namespace that a `#[stable_library]` defines elsewhere. Like a library, it
/// generates a marker module named after its function: `#[stable_fragment(mylib)] fn more`
/// gives `mod more`, so its kernels are `#[stable_impl(more, CPU)]`.
#[proc_macro_attribute]
pub fn stable_fragment(attr: TokenStream, item: TokenStream) -> TokenStream {
    backend::stable_fragment(attr.into(), item.into()).into()
}

/// Registers kernels for one dispatch key: on a module, every `fn` in it implements the op of
/// the same name; on a single fn, `#[stable_impl(mylib::axpby, CPU)]` names the op.
#[proc_macro_attribute]
pub fn stable_impl(attr: TokenStream, item: TokenStream) -> TokenStream {
    backend::stable_impl(attr.into(), item.into()).into()
}

/// Declares a hand-written CUDA C++ kernel, called through a checked launch stub.
///
/// ```ignore
/// #[extern_kernel(source = "kernels/axpby.cu", include_dirs = ["kernels/include"], entry = "axpby")]
/// fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);
///
/// axpby_f32::launch(LaunchConfig::for_elems(n), &x, &y, &out, 2.0, 3.0, n as i64)?;
/// ```
/// Paths are relative to the declaring file, as with `include_str!`. The source's whole
/// `#include` closure is scanned now and embedded, so cargo rebuilds when any file of it changes.
/// Generates a module named after the fn with `DECL` (the declaration as static data), `HANDLE`
/// (the loaded kernel per device) and `launch(cfg, args…)`: tensors for `In`/`Out`/`InOut`
/// params, scalars by value, and `#[constexpr]` values as ordinary arguments that pick the
/// specialization. NVRTC checks the C++ entry's signature against this declaration.
#[proc_macro_attribute]
pub fn extern_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    // The declaring file comes from the compiler, which only a proc-macro crate may ask.
    let declaring_file = || proc_macro::Span::call_site().local_file();
    backend::extern_kernel(
        attr.into(),
        item.into(),
        &backend::CompilerFiles(declaring_file),
    )
    .into()
}

/// Kernels that dispatch as one unit (PyPTO's kernel groups): on an inline module of
/// `#[kernel]` fns, or of `#[extern_kernel]` fns (one kind for all, a compile error otherwise),
/// which all take the same parameters.
///
/// ```ignore
/// #[kernel_group]
/// mod step {
///     use super::*;
///     #[kernel]
///     fn scale(x: InOut<[f32]>, s: f32, n: u32) { /* .. */ }
///     #[kernel]
///     fn shift(x: InOut<[f32]>, s: f32, n: u32) { /* .. */ }
/// }
///
/// step::launch(cfg, &x, 2.0, n)?;              // scale, then shift, on one stream
/// let node = step::launch_in(r, cfg, &x, 2.0, n)?; // one node of a kernel graph
/// ```
/// Adds `GROUP` (the members, in order), `launch(cfg, ..)` and `launch_in(r, cfg, ..)`, taking
/// the members' parameters.
#[proc_macro_attribute]
pub fn kernel_group(attr: TokenStream, item: TokenStream) -> TokenStream {
    backend::kernel_group(attr.into(), item.into()).into()
}

/// A kernel written in Rust (the DSL): one body, compiled to CUDA C++ for NVRTC and built as
/// Rust for the CPU.
///
/// ```ignore
/// #[kernel]
/// fn axpy(x: In<[f32]>, y: InOut<[f32]>, a: f32, n: u32) {
///     let i = global_id_x();
///     if i < n {
///         y[i] = a * x[i] + y[i];
///     }
/// }
///
/// axpy::launch(LaunchConfig::for_elems(n), &x, &y, 2.0, n as u32)?; // CPU or CUDA tensors
/// ```
/// Generates the module an `#[extern_kernel]` gets (`DECL`, `HANDLE`, `launch`, `specialize`),
/// whose launch runs on the tensors' device. Outside the subset (see the README) the macro
/// names the construct and what to write instead. `#[kernel(build = OPTS, options = [..])]`
/// takes the group's build options (the C++ behind its `#[builtin]`s) and NVRTC options.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let declaring_file = || proc_macro::Span::call_site().local_file();
    backend::kernel(
        attr.into(),
        item.into(),
        &backend::CompilerFiles(declaring_file),
    )
    .into()
}

/// A helper fn that `#[kernel]`s call: built as Rust for the CPU, and emitted as a `__device__`
/// function into each kernel that reaches it.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    let declaring_file = || proc_macro::Span::call_site().local_file();
    backend::device(
        attr.into(),
        item.into(),
        &backend::CompilerFiles(declaring_file),
    )
    .into()
}

/// A `#[repr(C)]` struct with a C++ twin of the same layout: `#[native(name = "my_addon::Color",
/// initializer = "aggregate")]`, or `#[native(name = "...", opaque)]`; `#[native(skip)]` on a
/// field keeps it out of C++'s view (not with an aggregate initializer).
///
/// Implements `opbox::NativeType` (a const layout schema and its `nt…` type code) and
/// `opbox::NativeField` (so the type nests), asserts the layout at compile time, and registers
/// the type. Kernel translation units that use it get C++ `static_assert`s against the same
/// schema.
#[proc_macro_derive(NativeType, attributes(native))]
pub fn derive_native_type(item: TokenStream) -> TokenStream {
    backend::derive_native_type(item.into()).into()
}

/// Declares a C++ device function with a Rust signature: `#[builtin(native = "my_addon::scale")]
/// fn scale(c: Color, s: f32) -> Color;`. An optional body is the CPU implementation.
/// Registered by name and input types: an identical declaration again is accepted, the same inputs
/// with another return type or native function are an error naming both sites.
#[proc_macro_attribute]
pub fn builtin(attr: TokenStream, item: TokenStream) -> TokenStream {
    backend::builtin(attr.into(), item.into()).into()
}

/// A plain `#[repr(C)]` struct passed to kernels by value: opbox emits a C++ struct that mirrors
/// it (same name, or `#[kernel_arg(name = "ns::Name")]`; fields in order) before the kernel's
/// sources, and checks its layout with the native types' `static_assert`s.
#[proc_macro_derive(KernelArg, attributes(kernel_arg))]
pub fn derive_kernel_arg(item: TokenStream) -> TokenStream {
    backend::derive_kernel_arg(item.into()).into()
}

/// An enum for `#[constexpr]` parameters: each unit variant names a C++ type
/// (`#[cpp = "my_ns::Relu"]`), which becomes the kernel's template argument.
#[proc_macro_derive(ConstexprEnum, attributes(cpp))]
pub fn derive_constexpr_enum(item: TokenStream) -> TokenStream {
    backend::derive_constexpr_enum(item.into()).into()
}
