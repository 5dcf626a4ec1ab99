//! Where kernels run and tensor bytes live: one module per backend.
//!
//! The kernel layer ([`crate::kernel`]) checks and packs a launch without knowing any backend;
//! a backend submits it. Tensor storage reaches a backend's memory through one trait
//! (`tensor::storage::Memory`), so a new backend, or foreign memory, is a new
//! implementation rather than a new match arm in the tensor code.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
