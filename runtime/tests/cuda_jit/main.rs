//! NVRTC and GPU tests of the JIT, with a harness that counts skips.
//!
//! libtest cannot report a test as skipped at run time, and a test that returns early would pass
//! silently. So each test here returns `Pass` or `Skip(reason)`, the harness prints every skip
//! with its reason, and the closing line counts them (as "ignored"). With OPBOX_REQUIRE_NVRTC=1
//! (set in CI) an NVRTC skip is a failure; with OPBOX_REQUIRE_GPU=1 (set by scripts/gpu-check) a
//! GPU skip is too.
//!
//! Run one test: `cargo test -p opbox-runtime --test cuda_jit -- NAME_SUBSTRING`.

mod cache;
mod compile;
mod gpu;
mod support;
mod tensors;

use std::process::ExitCode;
use std::time::Instant;

use support::{Outcome, Test};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = cache::child_main(&args) {
        return code;
    }
    let tests: Vec<Test> = compile::TESTS
        .iter()
        .chain(cache::TESTS)
        .chain(gpu::TESTS)
        .chain(tensors::TESTS)
        .copied()
        .collect();
    if args.iter().any(|a| a == "--list") {
        for t in &tests {
            println!("{}: test", t.name);
        }
        return ExitCode::SUCCESS;
    }
    let filter = args.iter().find(|a| !a.starts_with('-')).cloned();
    let selected: Vec<&Test> = tests
        .iter()
        .filter(|t| filter.as_deref().is_none_or(|f| t.name.contains(f)))
        .collect();
    let filtered_out = tests.len() - selected.len();
    let start = Instant::now();
    println!("\nrunning {} tests", selected.len());
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for t in selected {
        match support::run(t) {
            Outcome::Pass => {
                println!("test {} ... ok", t.name);
                passed += 1;
            }
            Outcome::Skip(reason) => {
                println!("test {} ... skipped: {reason}", t.name);
                skipped += 1;
            }
            Outcome::Fail(message) => {
                println!("test {} ... FAILED\n{message}", t.name);
                failed += 1;
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {passed} passed; {failed} failed; {skipped} ignored; 0 measured; {filtered_out} filtered out; finished in {:.2}s\n",
        start.elapsed().as_secs_f64()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
