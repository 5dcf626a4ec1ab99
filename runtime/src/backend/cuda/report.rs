//! How a loaded kernel uses the GPU, as the driver reports it (`cuFuncGetAttribute`): the first
//! thing to read when a kernel is slower than it should be. Registers and local (spill) memory
//! per thread, and static shared memory per block, bound how many blocks an SM holds at once;
//! `blocks_per_sm` is that occupancy for a given block size.
//!
//! `OPBOX_KERNEL_REPORT=1` prints each kernel's report to stderr when it is loaded, and
//! [`crate::backend::cuda::translation_unit`] gives the C++ NVRTC compiled.

use std::fmt;
use std::sync::OnceLock;

use cudarc::driver::sys::CUfunction_attribute_enum as Attr;
use opbox_codegen::cuda::ConstValue;

use super::loader::LoadedKernel;
use crate::error::{Error, Result};
use crate::kernel::KernelHandle;

/// A loaded kernel's resources, from the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelReport {
    /// The kernel's Rust name.
    pub kernel: String,
    /// The symbol loaded (a template's mangled name for a `#[constexpr]` specialization).
    pub symbol: String,
    /// Registers per thread.
    pub registers: u32,
    /// Statically declared shared memory per block (`__shared__` arrays), in bytes.
    pub shared_bytes: u32,
    /// Local memory per thread (register spills and indexed local arrays), in bytes: more than 0
    /// in a hot loop is usually the reason a kernel is slow.
    pub local_bytes: u32,
    /// The largest block this kernel can be launched with on the device.
    pub max_threads_per_block: u32,
    /// The PTX version it was built for (`90` for compute_90).
    pub ptx_version: u32,
    /// The SASS version it runs as (`90` for sm_90).
    pub binary_version: u32,
}

impl fmt::Display for KernelReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel {} ({}): {} registers/thread, {} B static shared/block, {} B local/thread, at most {} threads/block, sm_{}",
            self.kernel,
            self.symbol,
            self.registers,
            self.shared_bytes,
            self.local_bytes,
            self.max_threads_per_block,
            self.binary_version
        )
    }
}

impl LoadedKernel {
    /// This kernel's resources on its device (see [`KernelReport`]).
    pub fn report(&self, kernel: &str) -> Result<KernelReport> {
        let attr = |a: Attr| {
            self.function
                .get_attribute(a)
                .map(|v| v.max(0) as u32)
                .map_err(|e| Error::Cuda {
                    kernel: kernel.to_string(),
                    message: format!("cuFuncGetAttribute({a:?}): {e}"),
                })
        };
        Ok(KernelReport {
            kernel: kernel.to_string(),
            symbol: self.lowered_name.clone(),
            registers: attr(Attr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            shared_bytes: attr(Attr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: attr(Attr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_threads_per_block: attr(Attr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            ptx_version: attr(Attr::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: attr(Attr::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }

    /// Blocks of `block_threads` threads (and `dynamic_shared` bytes of dynamic shared memory)
    /// that one SM runs at once: the occupancy the registers and shared memory allow.
    pub fn blocks_per_sm(&self, block_threads: u32, dynamic_shared: u32) -> Result<u32> {
        self.function
            .occupancy_max_active_blocks_per_multiprocessor(
                block_threads,
                dynamic_shared as usize,
                None,
            )
            .map_err(|e| Error::Cuda {
                kernel: self.lowered_name.clone(),
                message: format!("cuOccupancyMaxActiveBlocksPerMultiprocessor: {e}"),
            })
    }
}

impl KernelHandle {
    /// The resources of this kernel, specialized by `constexprs` (empty when it has none), on
    /// device `ordinal`; loads it first if no launch has.
    pub fn report(&self, ordinal: usize, constexprs: &[ConstValue]) -> Result<KernelReport> {
        let name = self.decl().rust_name.to_string();
        if constexprs.is_empty() {
            self.get(ordinal)?.report(&name)
        } else {
            self.get_specialized(ordinal, constexprs)?.report(&name)
        }
    }
}

/// Prints `kernel`'s report to stderr when `OPBOX_KERNEL_REPORT=1` (read once per process).
pub(crate) fn report_if_asked(kernel: &str, loaded: &LoadedKernel) {
    static ASKED: OnceLock<bool> = OnceLock::new();
    if !*ASKED.get_or_init(|| std::env::var("OPBOX_KERNEL_REPORT").is_ok_and(|v| v == "1")) {
        return;
    }
    match loaded.report(kernel) {
        Ok(r) => eprintln!("opbox: {r}"),
        Err(e) => eprintln!("opbox: no report for kernel {kernel}: {e}"),
    }
}
