//! NVRTC and GPU tests of the JIT, with a harness that counts skips.
//!
//! libtest cannot report a test as skipped at run time, and a test that returns early would pass
//! silently. So each test here returns `Pass` or `Skip(reason)`, the harness prints every skip
//! with its reason, and the closing line counts them (as "ignored"). With OPBOX_REQUIRE_NVRTC=1
//! (set in CI) an NVRTC skip is a failure; with OPBOX_REQUIRE_GPU=1 (set by scripts/gpu-check) a
//! GPU skip is too.
//!
//! Run one test: `cargo test -p opbox-runtime --test cuda_jit -- NAME_SUBSTRING`.

// The shared harness (tests/harness in the workspace root) names the facade `opbox`; these are
// the runtime's paths to what it uses.
extern crate self as opbox;
pub use opbox_runtime::{Error, Result};
mod cuda {
    pub use opbox_codegen::cuda as codegen;
    pub use opbox_runtime::backend::cuda::{compile_for_arch, device_count, nvrtc};
}

#[path = "../../../tests/harness/mod.rs"]
mod harness;

mod cache;
mod compile;
mod gpu;
mod headers;
mod support;
mod tensors;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = cache::child_main(&args) {
        return code;
    }
    let tests: Vec<harness::Test> = compile::TESTS
        .iter()
        .chain(headers::TESTS)
        .chain(cache::TESTS)
        .chain(gpu::TESTS)
        .chain(tensors::TESTS)
        .copied()
        .collect();
    harness::run(&tests)
}
