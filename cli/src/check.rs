//! `opbox check`: NVRTC-compiles every kernel of this binary for the given arches, with each
//! signature check, and writes nothing; `opbox aot`'s session in its check mode.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use opbox::aot::{check_request, AotRequest, AotSummary, AotTargets};

use crate::aot::parse_arch;
use crate::progress::Progress;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A target to compile for: sm_XX (cubin) or compute_XX (PTX), with NVRTC's a or f suffix
    /// where it has one; repeat, or separate with commas.
    #[arg(short, long = "arch", value_name = "ARCH", value_delimiter = ',', value_parser = parse_arch, required = true)]
    pub arches: Vec<String>,

    /// Only this kernel, by its Rust fn name (repeat, or separate with commas); default: every
    /// registered kernel without `#[constexpr]` parameters.
    #[arg(short, long = "kernel", value_name = "NAME", value_delimiter = ',')]
    pub kernels: Vec<String>,

    /// Parallel compiles; 0 means one per core.
    #[arg(short, long, value_name = "N", default_value_t = 0)]
    pub jobs: usize,

    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(args: &CheckArgs) -> ExitCode {
    let request = AotRequest {
        targets: AotTargets {
            arches: args.arches.clone(),
            ..AotTargets::default()
        },
        kernels: args.kernels.clone(),
        jobs: args.jobs,
        list_only: false,
    };
    let progress = Progress::new(args.quiet, false);
    let started = Instant::now();
    let outcome = check_request(&request, &|e| progress.event(e));
    progress.finish();
    match outcome {
        Ok(summary) => {
            report(&summary, started);
            if summary.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn report(summary: &AotSummary, started: Instant) {
    let skipped = match summary.skipped {
        0 => String::new(),
        n => format!("; {n} skipped"),
    };
    eprintln!(
        "opbox check: {} compiled, {} failed{skipped}, nothing written ({:.2} s)",
        summary.written,
        summary.failed,
        started.elapsed().as_secs_f64()
    );
}
