//! # opbox
//!
//! Define an operator once, as a schema string; implement it per dispatch key in plain Rust;
//! call it through a tagged, boxed, stable C ABI. Signature mismatches between a kernel and its
//! schema are rustc errors.
//!
//! ```
//! use opbox::prelude::*;
//!
//! #[stable_library(doclib)]
//! fn doclib(m: &mut Library) {
//!     m.def("add(int a, int b=1) -> int");
//! }
//!
//! #[stable_impl(doclib, CPU)]
//! mod cpu {
//!     pub fn add(a: i64, b: i64) -> i64 {
//!         a + b
//!     }
//! }
//!
//! fn main() -> opbox::Result<()> {
//!     let add = opbox::op("doclib::add")?;
//!     let sum: i64 = add.call((2i64, 40i64))?;
//!     assert_eq!(sum, 42);
//!     let defaulted: i64 = add.call((41i64,))?;
//!     assert_eq!(defaulted, 42);
//!     Ok(())
//! }
//! ```
//!
//! Libraries and impl modules are items: put them at module level (a `mod cpu` inside a function
//! body cannot name the library's marker module through `super::`).

pub use opbox_macros::{builtin, ConstexprEnum, KernelArg, NativeType};
pub use opbox_macros::{extern_kernel, stable_fragment, stable_impl, stable_library};
// The trait, next to the derive of the same name (as serde does with Serialize).
pub use opbox_runtime::native::NativeType;
pub use opbox_runtime::*;

/// Ahead-of-time compilation: `opbox::aot::compile(&[(&k::DECL).into()], &targets)` for chosen
/// kernels, or [`aot::run_request`] over every `#[extern_kernel]` linked in (what `opbox aot`
/// runs). A cdylib plugin calls [`export_aot!`] once so that `opbox aot --plugin` reaches its
/// kernels.
pub mod aot {
    pub use opbox_runtime::cuda::aot::{
        compile, default_threads, plan, run_job, run_jobs, AotJob, AotKernel, AotTargets,
    };
    pub use opbox_runtime::cuda::aot_session::{
        run_request, AotEvent, AotRequest, AotSummary, CONSTEXPR_SKIP,
    };
    pub use opbox_runtime::cuda::kernels::{
        registered_kernels, select_kernels, ExternKernelRegistration,
    };

    /// The C ABI between `opbox aot --plugin` and a plugin.
    pub mod plugin {
        pub use opbox_runtime::cuda::aot_plugin::*;
    }
}

/// Exports `opbox_aot_v1` from a cdylib, so that `opbox aot --plugin path/to/lib.so` compiles
/// the kernels the plugin links. Call it once, at the crate root of the plugin.
#[macro_export]
macro_rules! export_aot {
    () => {
        /// The entry `opbox aot --plugin` calls (opbox's AOT plugin ABI, version 1).
        ///
        /// # Safety
        /// The caller keeps the contract of `opbox::aot::plugin::serve_v1`.
        #[no_mangle]
        pub unsafe extern "C" fn opbox_aot_v1(
            request: *const $crate::aot::plugin::AotRequestV1,
            callback: $crate::aot::plugin::AotEventCallbackV1,
            ctx: *mut ::core::ffi::c_void,
        ) -> i32 {
            // SAFETY: forwarded unchanged; the caller keeps serve_v1's contract.
            unsafe { $crate::aot::plugin::serve_v1(request, callback, ctx) }
        }
    };
}

/// The kernel caches' counters: `opbox::cache::stats()`.
pub mod cache {
    pub use opbox_runtime::cuda::jit::{stats, CacheStats};
}

/// The kernel argument trait, next to its derive (as `NativeType` is).
pub use opbox_runtime::cuda::KernelArg;

/// Everything a library author writes against.
pub mod prelude {
    pub use crate::{
        extern_kernel, op, stable_fragment, stable_impl, stable_library, DType, Device,
        DispatchKey, Error, Library, OpHandle, Result, Scalar, StableValue, Stack, Tensor,
    };
    pub use opbox_runtime::cuda::{In, InOut, LaunchConfig, Out};
}

/// What the macros' expansions name. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use opbox_runtime::dispatch::{
        boxed_call, KernelRegistration, LibraryKind, LibraryRegistration, OpDef, OpSpec,
    };
    pub use opbox_runtime::schema;
    pub use opbox_runtime::typemap::{ty, KernelReturn, RustParam};
    pub use opbox_runtime::Site;
    pub use opbox_runtime::{BuildOptions, DispatchKey, Result, StableValue, Tensor};
    pub use std::borrow::Cow;

    /// What `#[derive(NativeType)]` and `#[builtin]` expansions name.
    pub mod native {
        pub use opbox_runtime::native::{
            type_code, BuiltinDecl, BuiltinParam, BuiltinRegistration, FieldType, Initializer,
            NativeField, NativeFieldSchema, NativeSchema, NativeType, NativeTypeRegistration,
        };
        pub use std::sync::OnceLock;
    }

    /// What `#[extern_kernel]` expansions name.
    pub mod cuda {
        pub use opbox_runtime::cuda::codegen::{
            BuildRef, ConstValue, ConstexprStyle, ElemType, EntryAbi, EnumParam, IncludeEdge,
            KernelDecl, NativeParam, Param, ParamKind, ScalarType, SourceFile,
        };
        pub use opbox_runtime::cuda::{
            launch, ConstexprArg, ConstexprEnum, DerivedKernelArg, KernelArgStruct, KernelHandle,
            LaunchConfig, NativeBytes, OwnedArg,
        };
        pub use opbox_runtime::cuda::{ExternKernelRegistration, KernelArg, LaunchArg};
    }
}
