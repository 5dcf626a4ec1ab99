//! The CPU backend: host memory for tensors, and the CPU build of `#[kernel]` (DSL) kernels
//! ([`dsl`]), which consumes the same [`PreparedLaunch`](crate::kernel::PreparedLaunch) checks
//! as a GPU launch.

pub mod dsl;
pub mod memory;
