//! One wrong declaration in a file does not take the file's other kernels down: the module of
//! `kernels/two_entries.cu` fails its signature check for `shift_wrong`, the correct kernel then
//! compiles alone, and the wrong one is reported with its own one-line message.

mod harness;

use std::process::ExitCode;

use harness::{ensure, with_nvrtc, Outcome, Test};
use opbox::prelude::*;

#[extern_kernel(source = "kernels/two_entries.cu")]
fn scale_ok(x: In<[f32]>, out: Out<[f32]>, a: f32, n: i64);

// The C++ entry takes `float b`; this declaration says f64.
#[extern_kernel(source = "kernels/two_entries.cu", entry = "shift_ok")]
fn shift_wrong(x: In<[f32]>, out: Out<[f32]>, b: f64, n: i64);

const TESTS: &[Test] = &[("a_wrong_declaration_fails_alone", || {
    with_nvrtc(|| {
        ensure(
            opbox::cuda::codegen::shares_module(&scale_ok::DECL, &shift_wrong::DECL),
            || "the two declarations should form one module".into(),
        )?;
        opbox::cuda::compile_for_arch(&scale_ok::DECL, &[], "sm_90")
            .map_err(|e| format!("the correct kernel of the file did not compile: {e}"))?;
        let err = match opbox::cuda::compile_for_arch(&shift_wrong::DECL, &[], "sm_90") {
            Ok(_) => return Err("the wrong declaration compiled".into()),
            Err(e) => e.to_string(),
        };
        let want = "parameter #2 (b) of shift_wrong is `float` in C++ but the Rust declaration `f64` needs `double`";
        ensure(err.contains(want), || {
            format!("the error lacks {want:?}:\n{err}")
        })?;
        Ok(Outcome::Pass)
    })
})];

fn main() -> ExitCode {
    let cache = tempfile::tempdir().ok();
    if let Some(dir) = &cache {
        std::env::set_var("OPBOX_CACHE_DIR", dir.path());
    }
    harness::run(TESTS)
}
