//! CUDA through cudarc, loaded at run time (feature `cuda`, on by default).
//!
//! Every entry point probes for the driver or NVRTC first and returns `Error::NoCuda` when one is
//! missing: cudarc itself panics on a missing library, and a machine without a GPU must still run
//! every CPU path.
//!
//! - [`probe`]: is the driver / NVRTC loadable?
//! - [`nvrtc`]: compile a translation unit to a cubin or PTX (no GPU needed).
//! - [`jit`]: declaration → artifact through the content-addressed [`disk_cache`].
//! - [`context`]: one context and default stream per device.
//! - [`loader`]: the in-process cache of loaded functions, one [`KernelHandle`] per declaration.
//! - [`launch`]: the checked launch behind `#[extern_kernel]`'s `launch(cfg, args…)`.
//! - [`kernels`]: every `#[extern_kernel]` linked in; [`aot`], [`aot_session`] and
//!   [`aot_plugin`] compile them ahead of time (`opbox aot`).

pub mod aot;
pub mod aot_plugin;
pub mod aot_session;
pub mod arg;
pub mod artifact;
pub mod context;
pub mod disk_cache;
pub mod jit;
pub mod kernels;
pub mod launch;
pub mod loader;
pub mod nvrtc;
pub mod probe;
pub mod stack_launch;

/// The cudarc this module is built on, for launch code (and, later, macro-generated stubs).
pub use cudarc;

/// The CUDA code model (declarations, emitter, cache key), for macro expansions and tools.
pub use opbox_codegen::cuda as codegen;

pub use arg::{
    kernel_arg_adapters, lower_any, lower_value, register_kernel_arg_adapter, ConstexprArg,
    ConstexprEnum, DerivedKernelArg, Element, KernelArg, KernelArgAdapter, KernelArgStruct,
    LaunchArg, NativeBytes, OwnedArg,
};
pub use artifact::{Artifact, ImageKind};
pub use context::{device, device_count, CudaDevice};
pub use disk_cache::DiskCache;
pub use jit::{
    compile_ahead, compile_cached, compile_for_arch, compile_for_device, translation_unit,
    CacheOutcome, Compiled, Target,
};
pub use kernels::{registered_kernels, select_kernels, ExternKernelRegistration};
pub use launch::{launch, synchronize, In, InOut, LaunchConfig, Out};
pub use loader::{KernelHandle, LoadedKernel, SpecTable};
pub use stack_launch::{launch_stack, lower_stack, struct_bytes};
