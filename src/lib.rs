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
#![warn(missing_docs)]

pub use opbox_macros::{builtin, ConstexprEnum, KernelArg, NativeType};
pub use opbox_macros::{device, kernel, kernel_group};
pub use opbox_macros::{extern_kernel, stable_fragment, stable_impl, stable_library};

// Each public item is re-exported once, by name: the runtime's own module tree (its typemap,
// its cudarc) stays behind the facade.
pub use opbox_runtime::dispatch::{init, op, DispatchKey, Library, OpHandle};
// The schema's value types beyond DType, Device and Scalar.
pub use opbox_runtime::error::{Error, Result, Site};
pub use opbox_runtime::{Generator, Layout, MemoryFormat, OpTag, PhiloxState, Stream};
// The traits, next to the derives of the same names (as serde does with Serialize).
pub use opbox_runtime::kernel::KernelArg;
pub use opbox_runtime::native::{BuildOptions, NativeField, NativeType};
pub use opbox_runtime::scalar::Scalar;
pub use opbox_runtime::tensor::{DType, Device, Element, Tensor};
pub use opbox_runtime::value::{StableValue, Stack, Tag};
/// `f16` and `bf16` (half) and `F8E4M3`/`F8E5M2` (float8): the element crates of the type table.
pub use opbox_runtime::{float8, half, num_complex};

mod expansions;

/// The boxed stack's values beyond [`StableValue`] and [`Stack`]: conversions, lists, and the
/// live-handle count that leak tests read.
pub mod value {
    /// What a typed pop ([`Stack::pop_as`](crate::Stack::pop_as)) and a typed call's result
    /// read a value as.
    pub use opbox_runtime::dispatch::FromOutput;
    pub use opbox_runtime::value::{
        live_handles, Devices, FromStable, IntoStable, List, Mismatch, TypedKey, INLINE_SLOTS,
    };
}

/// Tensor bookkeeping (live counts, the host alignment) and DLPack interchange
/// ([`tensor::dlpack`]: `Tensor::from_dlpack`, `Tensor::to_dlpack` and the C types).
pub mod tensor {
    pub use opbox_runtime::tensor::dlpack;
    pub use opbox_runtime::tensor::{live_tensors, live_tensors_on_this_thread, CPU_ALIGN};
}

/// `opbox::warn!` from kernels: warns once per call site (every time under
/// [`warnings::set_warn_always`]), to the handler in force, with the `log` crate as the default.
pub use opbox_runtime::warn;

/// Where `opbox::warn!` goes: handlers (process-wide, or scoped to a thread and a closure) and
/// the `warn_always` switch (PyTorch's `TORCH_WARN_ONCE` / `torch.set_warn_always`).
pub mod warnings {
    pub use opbox_runtime::warning::{
        reset_warning_handler, set_warn_always, set_warning_handler, warn_always,
        with_warning_handler, Warning, WarningHandler,
    };
}

/// The boxed kernel ABI and the registry, for code that registers or calls kernels by hand.
pub mod dispatch {
    pub use opbox_runtime::dispatch::{
        boxed_call, boxed_entry, registered_ops, take_last_error, BoxedKernel, BoxedKernelFn,
        BoxedOp, FixedList, FromStack, IntoStack, KernelArgs, KernelBody, KernelBodyFn,
        KernelGroup, KernelOutputs, KernelRegistration, LibraryKind, LibraryRegistration, OpDef,
        OpExtras, OpSpec, SchemaCell, STATUS_ERROR, STATUS_OK, STATUS_PANIC,
    };
    /// Panic payloads leaked because dropping them panicked too (the process lives on).
    pub use opbox_runtime::panic::leaked_panic_payloads;
}

/// Native types, builtins and build options (Warp's side).
pub mod native {
    pub use opbox_runtime::native::{
        bf16, builtins, f16, native_types, register_builtin, register_native_type,
        resolve_build_options, split_native_name, type_code, validate_native_name,
        BuildInputsError, BuiltinDecl, BuiltinParam, BuiltinRegistration, BuiltinRegistry,
        Dependency, FieldType, Initializer, NativeFieldSchema, NativeFn, NativeNameError,
        NativeRegistry, NativeScalar, NativeSchema, NativeTypeRegistration, Overload,
        ResolvedBuildOptions,
    };
}

/// Kernels, whatever runs them: the argument protocol, launch configs and streams, check and
/// pack ([`kernel::PreparedLaunch`]), runtime-typed launches from a stack, and the registry.
pub mod kernel {
    pub use opbox_runtime::kernel::{
        kernel_arg_adapters, launch, launch_group, launch_stack, lower_any, lower_stack,
        lower_value, prepare, register_kernel_arg_adapter, registered_kernels, select_kernels,
        struct_bytes, submit, Access, ConstexprArg, ConstexprEnum, DerivedKernelArg,
        ExternKernelRegistration, In, InOut, KernelArgAdapter, KernelArgStruct, KernelGroupDecl,
        KernelHandle, LaunchArg, LaunchConfig, NativeBytes, Out, OwnedArg, ParamBuffer,
        PreparedLaunch, SpecTable, StackArgs, Stream, StructBytes, MAX_LAUNCH_ARGS,
        MAX_PARAM_BYTES, VECTOR_ALIGN,
    };
}

/// Kernel graphs: launches recorded without running ([`graph::record`](fn@graph::record), [`graph::record_op`];
/// each kernel's `launch_in(r, cfg, ..)`), their dependencies derived from what each reads and
/// writes ([`graph::Graph::edges`], [`graph::Graph::to_dot`]), run now on a stream pool
/// ([`graph::Graph::launch`]) or instantiated as a CUDA graph and replayed with re-bound
/// tensors (`Graph::instantiate`, `GraphExec::replay`).
pub mod graph {
    #[cfg(feature = "cuda")]
    pub use opbox_runtime::graph::GraphExec;
    pub use opbox_runtime::graph::{
        record, record_named, record_op, recording, Bindings, Edge, Graph, Hazards, NodeId,
        Recorder, Region,
    };
}

/// The CUDA backend (feature `cuda`, on by default; loaded at run time, so a machine without a
/// GPU builds and runs every CPU path): devices, NVRTC, the JIT and its caches.
#[cfg(feature = "cuda")]
pub mod cuda {
    /// cuBLAS handles per (device, stream), loaded at run time (`Error::NoCuda` without it).
    pub use opbox_runtime::backend::cuda::cublas;
    /// The cudarc opbox is built on, for raw driver and cuBLAS calls.
    pub use opbox_runtime::backend::cuda::cudarc;
    /// Streams and devices as PyTorch's CUDA helpers give them: the thread's current stream, a
    /// scoped `with_stream` that launches, allocations and copies honour, a stream pool, a
    /// device guard, stream synchronization (and `Stream::cu_stream` for interop).
    pub use opbox_runtime::backend::cuda::current::{
        current_device, current_stream, default_stream, stream_from_pool, synchronize_stream,
        with_stream, DeviceGuard, POOL_STREAMS,
    };
    pub use opbox_runtime::backend::cuda::{
        compile_ahead, compile_cached, compile_for_arch, compile_for_device, cuda_include_options,
        default_cache, device, device_count, nvrtc, options_for, probe, synchronize,
        translation_unit, ArchVariant, Artifact, CacheOutcome, Compiled, CudaDevice, DiskCache,
        ImageKind, KernelReport, LoadedKernel, Lookup, Target,
    };
    pub use opbox_runtime::kernel::Stream;

    /// The CUDA code model (declarations, emitter, cache key), for tools and tests.
    pub use opbox_codegen::cuda as codegen;
}

/// Ahead-of-time compilation: `opbox::aot::compile(&[(&k::DECL).into()], &targets)` for chosen
/// kernels, or [`aot::run_request`] over every `#[extern_kernel]` linked in (what `opbox aot`
/// runs). A cdylib plugin calls [`export_aot!`] once so that `opbox aot --plugin` reaches its
/// kernels.
#[cfg(feature = "cuda")]
pub mod aot {
    pub use opbox_runtime::backend::cuda::aot::{
        compile, default_threads, plan, run_job, run_jobs, AotJob, AotKernel, AotTargets,
    };
    pub use opbox_runtime::backend::cuda::aot_session::{
        check_request, run_request, AotEvent, AotRequest, AotSummary, CONSTEXPR_SKIP,
    };

    /// The C ABI between `opbox aot --plugin` and a plugin (`opbox_aot_v1`).
    pub mod plugin {
        pub use opbox_runtime::abi::aot_v1::*;
    }
}

/// Exports `opbox_aot_v1` from a cdylib, so that `opbox aot --plugin path/to/lib.so` compiles
/// the kernels the plugin links. Call it once, at the crate root of the plugin.
#[cfg(feature = "cuda")]
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

/// Op plugins over the versioned C ABI: [`plugin::load`] a cdylib (Rust, C or C++) and call its
/// ops through [`op`] like any other. A Rust plugin uses the usual macros and adds
/// [`export_plugin!`]; a C or C++ plugin includes `include/opbox.h`.
pub mod plugin {
    pub use opbox_runtime::plugin::guest::{host_has, host_warn};
    pub use opbox_runtime::plugin::{load, load_with, loaded, LoadOptions, PluginInfo};

    /// The ABI's `#[repr(C)]` types and constants (`opbox.h` declares the same).
    pub mod abi {
        pub use opbox_runtime::abi::plugin_v1::*;
    }

    #[doc(hidden)]
    pub use opbox_runtime::plugin::guest as __guest;
}

/// Exports `opbox_plugin_v1` from a cdylib, so that [`plugin::load`] registers the libraries,
/// fragments and impls the cdylib defines with the usual macros. Call it once, at the crate
/// root. `export_plugin!(min_host = opbox::plugin::abi::ABI_V1_1)` refuses hosts older than
/// 1.1 at load; without it the plugin loads on any 1.x host and checks newer host functions
/// with [`plugin::host_has`] (or a helper with a fallback, like [`plugin::host_warn`]).
#[macro_export]
macro_rules! export_plugin {
    () => {
        $crate::export_plugin!(min_host = $crate::plugin::abi::ABI_V1_0);
    };
    (min_host = $version:expr) => {
        /// The entry a host's `opbox::plugin::load` calls (opbox's plugin ABI, version 1).
        ///
        /// # Safety
        /// `host` is null or a host table that lives as long as the process.
        #[no_mangle]
        pub unsafe extern "C" fn opbox_plugin_v1(
            host: *const $crate::plugin::abi::HostV1,
        ) -> *const $crate::plugin::abi::PluginV1 {
            static DESCRIPTOR: $crate::plugin::__guest::Descriptor =
                $crate::plugin::__guest::Descriptor::new(concat!(env!("CARGO_CRATE_NAME"), "\0"))
                    .requiring($version);
            // SAFETY: forwarded unchanged; the caller keeps the entry's contract.
            unsafe { $crate::plugin::__guest::entry(host, &DESCRIPTOR) }
        }
    };
}

/// Test helpers: [`testing::check_all_kernels`] NVRTC-compiles every kernel linked into the
/// test binary (no GPU needed), so one `#[test]` catches a `.cu` that no longer matches its
/// declaration. An integration test (`tests/*.rs`) links only the crates it names, so it starts
/// with `use your_crate as _;`:
///
/// ```no_run
/// // use your_crate as _;
/// #[test]
/// fn kernels_compile() {
///     if let Err(e) = opbox::testing::check_all_kernels(&["sm_90"]) {
///         panic!("{e}"); // one entry per failure, with NVRTC's log
///     }
/// }
/// ```
#[cfg(feature = "cuda")]
pub mod testing {
    pub use opbox_runtime::backend::cuda::check::{check_all_kernels, CheckSummary};
}

/// The kernel caches' counters: `opbox::cache::stats()`.
#[cfg(feature = "cuda")]
pub mod cache {
    pub use opbox_runtime::backend::cuda::jit::{stats, CacheStats};
}

/// The `#[kernel]` DSL's functions and operators, as its CPU build runs them: the thread and
/// block indices (`global_id_x()`, ...) and, in [`dsl::ops`], the operators with the DSL's
/// semantics (wrapping integers, `x / 0 == 0`, masked shifts, saturating casts).
pub mod dsl {
    pub use opbox_runtime::backend::cpu::dsl::grid::{
        block_dim_x, block_dim_y, block_dim_z, block_id_x, block_id_y, block_id_z, global_id_x,
        global_id_y, global_id_z, grid_dim_x, grid_dim_y, grid_dim_z, thread_id_x, thread_id_y,
        thread_id_z,
    };
    pub use opbox_runtime::backend::cpu::dsl::ops;
    pub use opbox_runtime::kernel::vec4::F32x4;
}

/// Everything a library author writes against.
pub mod prelude {
    pub use crate::dsl::{
        block_dim_x, block_dim_y, block_dim_z, block_id_x, block_id_y, block_id_z, global_id_x,
        global_id_y, global_id_z, grid_dim_x, grid_dim_y, grid_dim_z, thread_id_x, thread_id_y,
        thread_id_z, F32x4,
    };
    pub use crate::kernel::{In, InOut, LaunchConfig, Out};
    pub use crate::{
        device, extern_kernel, kernel, kernel_group, op, stable_fragment, stable_impl,
        stable_library, DType, Device, DispatchKey, Error, Generator, Layout, Library,
        MemoryFormat, OpHandle, OpTag, Result, Scalar, StableValue, Stack, Stream, Tensor,
    };
}

/// The README's `rust` blocks, run as doctests; `tests/readme.rs` checks that its other code
/// blocks are excerpts of files CI builds.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The tutorial's (`docs/tutorial.md`) `rust` blocks, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/tutorial.md")]
pub struct TutorialDoctests;

/// What the macros' expansions name. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::{
        __opbox_kernel_items as kernel_items, __opbox_op_markers as op_markers,
        __opbox_op_table as op_table,
    };
    pub use inventory;
    pub use opbox_runtime::dispatch::{
        BoxedOp, FixedList, KernelArgs, KernelGroup, KernelOutputs, KernelRegistration,
        LibraryKind, LibraryRegistration, OpDef, OpExtras, OpSpec, SchemaCell, UnboxedBody,
    };
    pub use opbox_runtime::schema;
    pub use opbox_runtime::typemap::{KernelReturn, ParamSignature, RustParam, Signature};
    pub use opbox_runtime::OpTag;
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

    /// What `#[kernel]` and `#[device]` expansions name.
    pub mod dsl {
        pub use opbox_codegen::cuda::dsl::{dsl_build_options, DslBody, DslCode, DslFn};
        pub use opbox_runtime::backend::cpu::dsl::{args, fission, grid, local, ops, ranged};
        pub use opbox_runtime::kernel::PreparedLaunch;
    }

    /// What `#[extern_kernel]` expansions name.
    pub mod cuda {
        pub use opbox_codegen::cuda::{
            BuildRef, ConstValue, ConstexprStyle, ElemType, EntryAbi, EnumParam, IncludeEdge,
            KernelDecl, NativeParam, Param, ParamKind, ScalarType, SourceFile,
        };
        pub use opbox_runtime::graph::{NodeId, Recorder};
        pub use opbox_runtime::kernel::{
            launch, launch_group, ConstexprArg, ConstexprEnum, DerivedKernelArg,
            ExternKernelRegistration, KernelArg, KernelArgStruct, KernelGroupDecl, KernelHandle,
            LaunchArg, LaunchConfig, NativeBytes, OwnedArg, VectorParam,
        };
    }
}
