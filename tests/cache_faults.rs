//! The kernel cache, the emitter, `opbox aot` and the raw kernel entry under hostile conditions:
//! nothing wrong served, nothing hung, nothing lost. Each case says the outcome it expects:
//! rebuilt (a bad entry is removed and replaced), refused with a message, or an error.
//!
//! Every case runs without a GPU; those that compile need NVRTC and skip without it (a failure
//! under OPBOX_REQUIRE_NVRTC=1). A custom harness like cuda_launch's, and sequential, so the
//! process-wide cache counters read by the single-flight case are this binary's own. Three cases
//! run in a child process (this binary again, with a flag): one needs its own CUDA_HOME, one its
//! own loader path, and one must show that the process survives.
//!
//! The `opbox aot` command's own cases (exit statuses, `--arch` usage errors, a plugin's dlopen
//! reason) are in cli/tests/aot_cli.rs, which drives the command.

#[path = "harness/mod.rs"]
mod harness;

#[path = "cache_faults/aot.rs"]
mod aot;
#[path = "cache_faults/disk.rs"]
mod disk;
#[path = "cache_faults/emit.rs"]
mod emit;
#[path = "cache_faults/jit.rs"]
mod jit;
#[path = "cache_faults/keys.rs"]
mod keys;
#[path = "cache_faults/raw.rs"]
mod raw;

use std::borrow::Cow;
use std::process::{Command, ExitCode};
use std::sync::LazyLock;

use harness::Test;
use opbox::cuda::codegen::{KernelDecl, SourceFile};
use opbox::prelude::*;
use opbox::BuildOptions;

#[extern_kernel(source = "../examples/kernels/axpby.cu", entry = "axpby")]
fn axpby_f32(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

/// A group whose build options cannot be built: resolving them panics.
static PANICKY: LazyLock<BuildOptions> =
    LazyLock::new(|| panic!("these build options cannot be built"));

#[extern_kernel(source = "../examples/kernels/axpby.cu", entry = "axpby", build = PANICKY)]
fn axpby_panicky(x: In<[f32]>, y: In<[f32]>, out: Out<[f32]>, a: f32, b: f32, n: i64);

#[stable_library(cache_faults)]
fn cache_faults(m: &mut Library) {
    m.def("nothing() -> ()");
    m.def("one(int a) -> int");
    m.def("bomb() -> ()");
    m.def("dtype_code(ScalarType d) -> int");
    m.def("device_kind(Device d) -> int");
    m.def("scalar_kind(Scalar s) -> int");
}

/// A panic payload whose drop panics as well.
pub struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the panic payload's drop panics too");
    }
}

#[stable_impl(cache_faults, CPU)]
mod cpu {
    use opbox::prelude::*;

    pub fn nothing() {}
    pub fn one(a: i64) -> i64 {
        a
    }
    pub fn bomb() {
        std::panic::panic_any(super::Bomb)
    }
    pub fn dtype_code(_d: DType) -> i64 {
        0
    }
    pub fn device_kind(_d: Device) -> i64 {
        0
    }
    pub fn scalar_kind(_s: Scalar) -> i64 {
        0
    }
}

/// `axpby_f32` with a comment that makes its cache key its own: a case that counts compiles
/// starts from a key no other case has compiled.
fn variant(tag: &str) -> KernelDecl {
    let mut decl = axpby_f32::DECL.clone();
    let entry = &decl.sources[0];
    let content = format!("{}// cache_faults variant: {tag}\n", entry.content);
    decl.sources = Cow::Owned(vec![SourceFile {
        name: entry.name.clone(),
        content: Cow::Owned(content),
        includes: entry.includes.clone(),
    }]);
    decl
}

/// This binary again, as a child: `configure` adds its flag (and environment). Returns the exit
/// status and stdout, and the whole output as text for a failure message.
fn run_child(
    configure: impl FnOnce(&mut Command) -> &mut Command,
) -> Result<(std::process::ExitStatus, String, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = configure(&mut Command::new(exe))
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let shown = format!(
        "child: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status, stdout, shown))
}

const TESTS: &[Test] = &[
    // 1. The emitter
    (
        "emit::a_lattice_of_42_guarded_headers_is_written_once_and_compiles",
        emit::lattice,
    ),
    // 2. Relocatable keys
    (
        "keys::two_cuda_homes_give_the_same_entries",
        keys::two_cuda_homes,
    ),
    // 3, 4, 8, 9. The disk cache
    (
        "disk::an_entry_copied_onto_another_key_is_rebuilt",
        disk::copied_entry,
    ),
    (
        "disk::special_files_at_an_entry_path_are_healed_and_rebuilt",
        disk::special_files,
    ),
    ("disk::entries_are_created_0644", disk::entry_mode),
    (
        "disk::stale_temp_files_of_dead_writers_are_swept",
        disk::stale_temps,
    ),
    // 5, 14. The raw kernel entry
    (
        "raw::a_payload_whose_drop_panics_is_leaked_and_the_process_lives",
        raw::bomb,
    ),
    (
        "raw::a_null_stack_runs_an_empty_call_and_is_refused_otherwise",
        raw::null_stack,
    ),
    ("raw::a_tensor_with_a_stray_aux_is_released", raw::stray_aux),
    (
        "raw::invalid_payloads_are_named_in_the_error",
        raw::invalid_payloads,
    ),
    // 6, 11, 13. Ahead of time
    (
        "aot::a_panicking_build_options_initializer_fails_its_kernel_only",
        aot::panicking_build_options,
    ),
    ("aot::arches_are_checked_against_nvrtc", aot::arch_range),
    (
        "aot::a_263_character_kernel_name_gets_a_short_file_name",
        aot::long_names,
    ),
    // 7, 8, 10. The JIT's compile paths
    (
        "jit::an_unwritable_cache_is_an_error_for_aot_and_a_warning_for_the_jit",
        jit::unwritable_cache,
    ),
    (
        "jit::an_unreadable_cache_is_named_in_the_final_error",
        jit::unreadable_cache,
    ),
    (
        "jit::eight_threads_asking_for_one_kernel_compile_it_once",
        jit::single_flight,
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = keys::child(&args)
        .or_else(|| raw::child(&args))
        .or_else(|| jit::child(&args))
    {
        return code;
    }
    // The process's default cache, resolved once at first use: a directory of this run's own,
    // set while no other thread runs, so no case reads or fills the user's cache.
    let cache = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("cache_faults: no temp dir: {e}");
            return ExitCode::FAILURE;
        }
    };
    std::env::set_var("OPBOX_CACHE_DIR", cache.path());
    harness::run(TESTS)
}
