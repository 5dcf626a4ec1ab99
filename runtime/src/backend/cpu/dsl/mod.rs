//! The CPU build of `#[kernel]` (DSL) kernels: the same body the macro turns into CUDA C++,
//! compiled by rustc and run over the launch's grid.
//!
//! A DSL kernel's [`KernelHandle`](crate::kernel::KernelHandle) carries its CPU entry (a fn the
//! macro generates); `submit` runs it for a launch whose tensors are on the CPU, after the same
//! [`prepare`](fn@crate::kernel::prepare) checks a CUDA launch passes.
//!
//! - [`ops`]: the operators with the DSL's Rust semantics, shared with the C++ helpers;
//! - [`grid`]: blocks across cores, threads in order, the thread-index functions;
//! - [`fission`]: a body split at its barriers and warp exchanges, each piece run for every
//!   thread of the block in turn (what the macro emits where it can);
//! - [`ranged`]: a barrier-free body's threads split into a checked part and a proven part, the
//!   latter run with its indices unchecked (what the macro emits where it can prove them);
//! - [`coop`]: a block's threads as coroutines, for the barrier kernels the split does not cover;
//! - [`shared`]: a block's shared memory;
//! - [`local`]: a thread's local arrays (`let mut v = [0.0f32; N];`);
//! - [`warp`]: warp shuffles and votes, emulated over a warp's 32 lanes;
//! - [`args`]: buffers locked for the launch, scalars, structs and constexprs read back.

pub mod args;
pub mod coop;
pub mod fission;
pub mod grid;
pub mod local;
pub mod ops;
pub mod ranged;
pub mod shared;
pub mod warp;

use crate::error::{Error, Result};
use crate::kernel::PreparedLaunch;

/// The CPU entry of a DSL kernel: runs the body over `prepared`'s grid.
pub type CpuEntry = fn(&PreparedLaunch<'_>) -> Result<()>;

/// Runs a checked launch whose tensors are on the CPU.
pub(crate) fn submit(prepared: &PreparedLaunch<'_>) -> Result<()> {
    match prepared.handle().cpu() {
        Some(entry) => entry(prepared),
        None => Err(Error::Unsupported(format!(
            "kernel {} has no CPU build: only #[kernel] (DSL) kernels run on CPU tensors; an #[extern_kernel] runs on CUDA tensors",
            prepared.decl().rust_name
        ))),
    }
}
