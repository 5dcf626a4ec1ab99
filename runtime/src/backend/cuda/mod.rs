//! The CUDA backend, through cudarc loaded at run time (feature `cuda`, on by default).
//!
//! Every entry point probes for the driver or NVRTC first and returns `Error::NoCuda` when one is
//! missing: cudarc itself panics on a missing library, and a machine without a GPU must still run
//! every CPU path.
//!
//! - [`probe`]: is the driver / NVRTC loadable?
//! - [`nvrtc`]: compile a translation unit to a cubin or PTX (no GPU needed).
//! - [`jit`]: declaration → artifact for a [`target`] through the content-addressed
//!   [`disk_cache`], one compile per kernel however many threads ask at once.
//! - [`context`]: one context and default stream per device; [`stream`]: other streams.
//! - [`loader`]: the loaded functions each `KernelHandle` caches per device.
//! - [`submit`]: a prepared launch to `cuLaunchKernel`; [`synchronize`].
//! - `memory`: tensor storage in device memory.
//! - `toolkit`: where CUDA's headers are (`cuda_include_options`).
//! - [`aot`] and [`aot_session`]: every `#[extern_kernel]` compiled ahead of time (`opbox aot`).

pub mod aot;
pub mod aot_session;
pub mod artifact;
pub mod check;
pub mod context;
pub mod cublas;
pub mod current;
pub mod disk_cache;
pub(crate) mod interop;
pub mod jit;
pub mod loader;
pub(crate) mod memory;
pub mod nvrtc;
mod nvrtc_search;
pub mod probe;
pub mod report;
mod single_flight;
pub mod stream;
pub mod submit;
pub mod target;
mod toolkit;

/// The cudarc this backend is built on, for code that launches around opbox (tests, tools).
pub use cudarc;

pub use artifact::{Artifact, ImageKind};
pub use context::{device, device_count, CudaDevice};
pub use disk_cache::{DiskCache, Lookup};
pub use jit::{
    compile_ahead, compile_cached, compile_for_arch, compile_for_device, default_cache,
    options_for, translation_unit, CacheOutcome, Compiled,
};
pub use loader::LoadedKernel;
pub use report::KernelReport;
pub use submit::synchronize;
pub use target::{ArchVariant, Target};
pub use toolkit::include_options as cuda_include_options;
