//! One `opbox aot` run over the kernels registered in this binary: select, plan, compile in
//! parallel, and report each step as an [`AotEvent`]. The CLI draws its progress bar from the
//! events; a plugin runs the same session in its own process image and forwards the events
//! across the C ABI (`aot_plugin`).

use std::path::Path;

use super::aot::{
    check_job, plan, plan_jobs, run_job, run_jobs_with, AotJob, AotKernel, AotTargets,
};
use super::nvrtc;
use crate::error::{Error, Result};
use crate::kernel::registry::{registered_kernels, select_kernels, ExternKernelRegistration};

/// What to compile: the CLI's arguments, parsed.
#[derive(Clone, Debug, Default)]
pub struct AotRequest {
    /// The devices and arches to compile for, and the output directory.
    pub targets: AotTargets,
    /// Kernel names to compile; empty means every registered kernel.
    pub kernels: Vec<String>,
    /// Compile threads; 0 means one per core.
    pub jobs: usize,
    /// List the registered kernels instead of compiling.
    pub list_only: bool,
}

/// What a session reports, in order: `Listed` per kernel (listing only), or `Skipped` per
/// kernel that cannot be compiled ahead of time, one `Planned`, then `Done` or `Failed` per
/// (target, kernel) as each finishes.
#[derive(Clone, Copy, Debug)]
pub enum AotEvent<'a> {
    /// A registered kernel (listing only).
    Listed {
        /// The kernel's Rust name.
        kernel: &'a str,
        /// The Rust module of its declaration.
        module: &'a str,
        /// Its declaration site, `file:line`.
        declared_at: &'a str,
    },
    /// A kernel that is not compiled, and why (it has `#[constexpr]` parameters).
    Skipped {
        /// The kernel's Rust name.
        kernel: &'a str,
        /// Why it was skipped.
        reason: &'a str,
    },
    /// The plan is made: this many (target, kernel) jobs follow.
    Planned {
        /// The number of jobs.
        jobs: usize,
    },
    /// One job compiled (and, for `opbox aot`, its file written).
    Done {
        /// The kernel's Rust name.
        kernel: &'a str,
        /// The target, `sm_90` or `compute_90`.
        target: &'a str,
        /// The file written (in a check, the file `opbox aot` would write).
        path: &'a Path,
    },
    /// One job failed; the others still run.
    Failed {
        /// The kernel's Rust name.
        kernel: &'a str,
        /// The target.
        target: &'a str,
        /// The error, with NVRTC's log.
        message: &'a str,
    },
}

/// How a session ended, when it got as far as compiling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AotSummary {
    /// Kernels listed.
    pub listed: usize,
    /// Kernels skipped (`#[constexpr]` parameters).
    pub skipped: usize,
    /// Jobs that compiled (and, for `opbox aot`, were written).
    pub written: usize,
    /// Jobs that failed.
    pub failed: usize,
}

/// Why a kernel with `#[constexpr]` parameters is not compiled by a whole-binary AOT run.
pub const CONSTEXPR_SKIP: &str = "has #[constexpr] parameters, so it has no single image: compile \
its specializations with opbox::aot::compile(&[AotKernel { decl: &k::DECL, constexprs: &[..] }], ..)";

/// Runs `request` over this binary's registered kernels. A request that cannot start (no
/// targets, an unknown kernel name, NVRTC missing) is an `Err`; a kernel that fails to compile
/// is a `Failed` event and counts in the summary, and the others still compile.
pub fn run_request(
    request: &AotRequest,
    on_event: &(dyn Fn(AotEvent<'_>) + Sync),
) -> Result<AotSummary> {
    session(request, Mode::Write, on_event)
}

/// [`run_request`] as a check (`opbox check`, `opbox::testing::check_all_kernels`): the same
/// kernels, targets and parallel NVRTC compiles, each signature check included, but no file is
/// written (`out_dir` is not used; compiles go through the disk cache, as a launch's do). A
/// `Done` event's path is the file `opbox aot` would write.
pub fn check_request(
    request: &AotRequest,
    on_event: &(dyn Fn(AotEvent<'_>) + Sync),
) -> Result<AotSummary> {
    session(request, Mode::Check, on_event)
}

/// Whether a session writes the images or only compiles them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Write,
    Check,
}

fn session(
    request: &AotRequest,
    mode: Mode,
    on_event: &(dyn Fn(AotEvent<'_>) + Sync),
) -> Result<AotSummary> {
    let mut summary = AotSummary::default();
    if request.list_only {
        for k in registered_kernels() {
            on_event(AotEvent::Listed {
                kernel: &k.decl.rust_name,
                module: k.module_path,
                declared_at: &k.decl.declared_at,
            });
            summary.listed += 1;
        }
        return Ok(summary);
    }
    let selected = select_kernels(&request.kernels)?;
    let mut kernels: Vec<AotKernel<'static>> = Vec::with_capacity(selected.len());
    for k in selected {
        if k.decl.constexpr_params().next().is_none() {
            kernels.push(k.decl.into());
        } else if request.kernels.is_empty() {
            on_event(AotEvent::Skipped {
                kernel: &k.decl.rust_name,
                reason: CONSTEXPR_SKIP,
            });
            summary.skipped += 1;
        } else {
            return Err(named_constexpr(k));
        }
    }
    if kernels.is_empty() {
        let command = match mode {
            Mode::Write => "aot",
            Mode::Check => "check",
        };
        return Err(Error::InvalidArgument(if registered_kernels().is_empty() {
            format!(
                "{command}: no #[extern_kernel] is linked into this binary; run \
                 `opbox {command}` from a binary that links your kernels (opbox_cli::main){}",
                if mode == Mode::Write {
                    ", or pass --plugin path/to/libyours.so"
                } else {
                    "; an integration test (tests/*.rs) links a crate's kernels only when it \
                     names the crate: add `use your_crate as _;`"
                }
            )
        } else {
            format!(
                "{command}: every selected kernel has #[constexpr] parameters; nothing to compile"
            )
        }));
    }
    // Before planning: a missing NVRTC is one clear error, not one failure per job.
    nvrtc::version()?;
    let (jobs, run): (_, fn(&AotJob<'_>) -> Result<()>) = match mode {
        Mode::Write => (plan(&kernels, &request.targets)?, run_job),
        Mode::Check => (plan_jobs(&kernels, &request.targets)?, check_job),
    };
    on_event(AotEvent::Planned { jobs: jobs.len() });
    let threads = match request.jobs {
        0 => super::aot::default_threads(),
        n => n,
    };
    let results = run_jobs_with(&jobs, threads, run, &|i, result| {
        let Some(job) = jobs.get(i) else { return };
        let kernel = &job.kernel.decl.rust_name;
        let target = job.target.name();
        match result {
            Ok(()) => on_event(AotEvent::Done {
                kernel,
                target: &target,
                path: &job.path,
            }),
            Err(e) => on_event(AotEvent::Failed {
                kernel,
                target: &target,
                message: &e.to_string(),
            }),
        }
    });
    for r in &results {
        match r {
            Ok(()) => summary.written += 1,
            Err(_) => summary.failed += 1,
        }
    }
    Ok(summary)
}

#[cold]
fn named_constexpr(k: &ExternKernelRegistration) -> Error {
    Error::InvalidArgument(format!(
        "aot: kernel '{}' ({}) {CONSTEXPR_SKIP}",
        k.decl.rust_name, k.decl.declared_at
    ))
}
