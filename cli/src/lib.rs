//! The `opbox` command line.
//!
//! `opbox aot` compiles every `#[extern_kernel]` of a binary or a plugin to cubin / PTX files,
//! in parallel, with a progress bar:
//! - in a binary that links the kernels, call [`main`] (say from `src/bin/opbox.rs`:
//!   `fn main() -> ExitCode { opbox_cli::main() }`) and run `cargo run --bin opbox -- aot
//!   --arch sm_90`;
//! - for a cdylib plugin that calls `opbox::export_aot!()`, run the standalone command:
//!   `opbox aot --plugin target/release/libyours.so --arch sm_90`.
//!
//! `opbox check --arch sm_90` compiles the same kernels of a binary with NVRTC, each with its
//! signature check, and writes nothing: a mismatched `.cu` fails it (no GPU needed).
//!
//! `opbox ops [--plugin lib.so]... [--json]` lists the ops this process can call (the standalone
//! command links none, so it lists what the plugins register), with schemas, backends and the
//! image that registered each.
//!
//! The written paths go to stdout, one per line; the progress bar, compile errors and the
//! summary go to stderr. Exit status: 0 all compiled, 1 some kernels failed, 2 a bad request.

mod aot;
mod check;
mod ops;
mod plugin;
mod progress;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use aot::AotArgs;
pub use check::CheckArgs;
pub use ops::{OpRow, OpsArgs};

#[derive(Debug, Parser)]
#[command(name = "opbox", version, about = "opbox's command line")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile extern kernels ahead of time to cubin (sm_XX) or PTX (compute_XX) files.
    Aot(AotArgs),
    /// Compile every kernel of this binary with NVRTC, signature checks included, and write
    /// nothing (no GPU needed).
    Check(CheckArgs),
    /// List every op: namespaces, schemas, backends, and the image that registered each
    /// (`--plugin` loads op plugins first).
    Ops(OpsArgs),
}

/// Runs the command line of this process.
pub fn main() -> ExitCode {
    run(std::env::args_os())
}

/// Runs one command line (`args[0]` is the program name), printing as [`main`] does.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version are successes; usage errors exit 2, as clap's own exit does.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::Aot(args) => aot::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Ops(args) => ops::run(&args),
    }
}
