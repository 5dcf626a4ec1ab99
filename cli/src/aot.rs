//! `opbox aot`: arguments, and one run over this binary's kernels or a plugin's.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{ArgGroup, Args};
use opbox::aot::{run_request, AotRequest, AotSummary, AotTargets};

use crate::plugin::Plugin;
use crate::progress::Progress;

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("what").required(true).multiple(true).args(["arches", "devices", "list"])
))]
pub struct AotArgs {
    /// A target: sm_XX writes a cubin, compute_XX writes PTX, either with NVRTC's a or f suffix
    /// where it has one (sm_90a); repeat, or separate with commas.
    #[arg(short, long = "arch", value_name = "ARCH", value_delimiter = ',', value_parser = parse_arch)]
    pub arches: Vec<String>,

    /// Also compile for this CUDA device's best target, as a launch would load it (needs the
    /// device).
    #[arg(short, long = "device", value_name = "ORDINAL", value_delimiter = ',')]
    pub devices: Vec<usize>,

    /// The directory the files are written to (created when missing).
    #[arg(short, long, value_name = "DIR", default_value = "opbox-aot")]
    pub out: PathBuf,

    /// Only this kernel, by its Rust fn name (repeat, or separate with commas); default: every
    /// registered kernel without `#[constexpr]` parameters.
    #[arg(short, long = "kernel", value_name = "NAME", value_delimiter = ',')]
    pub kernels: Vec<String>,

    /// Parallel compiles; 0 means one per core.
    #[arg(short, long, value_name = "N", default_value_t = 0)]
    pub jobs: usize,

    /// List the registered kernels instead of compiling.
    #[arg(long)]
    pub list: bool,

    /// A cdylib that calls `opbox::export_aot!()`: compile its kernels instead of this
    /// binary's.
    #[arg(long, value_name = "LIB")]
    pub plugin: Option<PathBuf>,

    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(short, long)]
    pub quiet: bool,
}

/// `sm_90` / `compute_90` / `sm_90a`, checked while parsing so that a typo, or an arch this
/// NVRTC does not support, is a usage error naming the flag.
pub(crate) fn parse_arch(arch: &str) -> Result<String, String> {
    let target = opbox::cuda::Target::parse(arch).map_err(|e| e.to_string())?;
    match target.check_supported() {
        // Without NVRTC only the spelling can be checked; the run then says NVRTC is missing.
        Ok(()) | Err(opbox::Error::NoCuda { .. }) => Ok(arch.to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

pub fn run(args: &AotArgs) -> ExitCode {
    let request = AotRequest {
        targets: AotTargets {
            arches: args.arches.clone(),
            devices: args.devices.clone(),
            out_dir: args.out.clone(),
        },
        kernels: args.kernels.clone(),
        jobs: args.jobs,
        list_only: args.list,
    };
    let progress = Progress::new(args.quiet, true);
    let started = Instant::now();
    let outcome = match &args.plugin {
        None => run_request(&request, &|e| progress.event(e)),
        Some(path) => Plugin::load(path).and_then(|p| p.run(&request, &|e| progress.event(e))),
    };
    progress.finish();
    match outcome {
        Ok(summary) => {
            report(args, &summary, started);
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

fn report(args: &AotArgs, summary: &AotSummary, started: Instant) {
    if args.list {
        eprintln!("opbox aot: {} kernels registered", summary.listed);
        return;
    }
    let skipped = match summary.skipped {
        0 => String::new(),
        n => format!("; {n} skipped"),
    };
    eprintln!(
        "opbox aot: {} written to {}, {} failed{skipped} ({:.2} s)",
        summary.written,
        args.out.display(),
        summary.failed,
        started.elapsed().as_secs_f64()
    );
}
