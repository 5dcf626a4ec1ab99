//! The CPU backend: host memory for tensors today; the `#[kernel]` DSL's CPU build of a kernel
//! lands here too, consuming the same [`PreparedLaunch`](crate::kernel::PreparedLaunch) checks
//! as a GPU launch.

pub mod memory;
