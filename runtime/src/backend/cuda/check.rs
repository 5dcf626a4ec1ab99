//! Checking a binary's kernels without a GPU, in one call: every `#[extern_kernel]` and
//! `#[kernel]` linked in, NVRTC-compiled for the given arches with its signature checks, and no
//! file written. `opbox check` runs the same session ([`check_request`]).

use std::sync::Mutex;

use super::aot::AotTargets;
use super::aot_session::{check_request, AotEvent, AotRequest};
use crate::error::{Error, Result};

/// A failed compile's line, after its sort key: the arch's position in the request, then the
/// kernel.
type Failure = (usize, String, String);

/// What [`check_all_kernels`] covered, when every kernel compiled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    /// (kernel, arch) compiles that passed.
    pub compiled: usize,
    /// Kernels with `#[constexpr]` parameters, which have no single image and were not
    /// compiled: launch or `opbox::aot::compile` their specializations to check them.
    pub skipped: Vec<String>,
}

/// NVRTC-compiles every kernel linked into this binary for each arch (`"sm_90"`,
/// `"compute_80"`), as a launch would compile it, signature checks included: one line in a
/// `#[test]` makes `cargo test` catch a `.cu` entry that no longer matches its Rust
/// declaration. Needs NVRTC, not a GPU, and writes no file (compiles go through the kernel disk
/// cache, as launches' do).
///
/// Errors: [`Error::KernelCheck`] listing every kernel and arch that failed (the others still
/// compile); [`Error::NoCuda`] when NVRTC cannot be loaded (a test that should pass on machines
/// without it can match that variant); [`Error::InvalidArgument`] for an arch NVRTC does not
/// know, or a binary with no kernels (an integration test links a crate's kernels only when it
/// names the crate: `use your_crate as _;`).
///
/// `opbox::testing` re-exports it, with an example.
pub fn check_all_kernels(arches: &[&str]) -> Result<CheckSummary> {
    let request = AotRequest {
        targets: AotTargets {
            arches: arches.iter().map(|a| a.to_string()).collect(),
            ..AotTargets::default()
        },
        ..AotRequest::default()
    };
    // Jobs finish in whatever order the compile threads take; failures are listed in the
    // caller's arch order, then by kernel, so that the error reads the same on every machine.
    let found: Mutex<(Vec<Failure>, Vec<String>)> = Mutex::new((Vec::new(), Vec::new()));
    let summary = check_request(&request, &|event| {
        let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            AotEvent::Failed {
                kernel,
                target,
                message,
            } => {
                let arch = arches.iter().position(|a| *a == target);
                found.0.push((
                    arch.unwrap_or(arches.len()),
                    kernel.to_string(),
                    format!("[{target}] {message}"),
                ));
            }
            AotEvent::Skipped { kernel, .. } => found.1.push(kernel.to_string()),
            AotEvent::Listed { .. } | AotEvent::Planned { .. } | AotEvent::Done { .. } => {}
        }
    })?;
    let (mut failures, skipped) = found.into_inner().unwrap_or_else(|e| e.into_inner());
    if !failures.is_empty() {
        failures.sort();
        return Err(Error::KernelCheck {
            checked: summary.written + summary.failed,
            failures: failures.into_iter().map(|(_, _, line)| line).collect(),
        });
    }
    Ok(CheckSummary {
        compiled: summary.written,
        skipped,
    })
}
