//! Random numbers for kernels: the schema's `Generator` ([`Generator`], a shared seed and
//! offset), and the counter-based Philox4x32-10 generator it feeds ([`PhiloxState`]), which
//! CPU kernels call directly and CUDA kernels receive by value.

mod generator;
mod kernel_arg;
mod philox;

pub use generator::Generator;
pub use philox::PhiloxState;
