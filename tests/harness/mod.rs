//! The harness shared by the GPU test binaries (`harness = false` in Cargo.toml; the runtime's
//! cuda_jit binary includes it too, with opbox_runtime named `opbox`): each test passes, fails
//! (an error or a panic), or skips with a printed reason, and OPBOX_REQUIRE_NVRTC=1 / OPBOX_REQUIRE_GPU=1
//! turn skips into failures. The closing line is libtest's, so CI and `scripts/gpu-check` count
//! passes, failures and skips alike.

// Each binary uses its own subset of the helpers.
#![allow(dead_code)]

use std::process::ExitCode;

use opbox::Error;

pub enum Outcome {
    Pass,
    Skip(String),
}

pub type TestResult = Result<Outcome, String>;
pub type Test = (&'static str, fn() -> TestResult);

/// Runs `tests` (those whose name contains the first non-flag argument, if any), printing one
/// line each and libtest's closing line. `--list` lists them instead.
pub fn run(tests: &[Test]) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filter = args.iter().find(|a| !a.starts_with('-'));
    let (mut passed, mut failed, mut skipped, mut filtered) = (0, 0, 0, 0);
    for (name, run) in tests {
        if filter.is_some_and(|f| !name.contains(f.as_str())) {
            filtered += 1;
            continue;
        }
        match catch_panic(*run).and_then(require) {
            Ok(Outcome::Pass) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Ok(Outcome::Skip(why)) => {
                println!("test {name} ... skipped: {why}");
                skipped += 1;
            }
            Err(e) => {
                println!("test {name} ... FAILED\n{e}");
                failed += 1;
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {passed} passed; {failed} failed; {skipped} ignored; 0 measured; {filtered} filtered out\n"
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs one test; a panic fails it (with its message) instead of ending the whole binary.
fn catch_panic(run: fn() -> TestResult) -> TestResult {
    std::panic::catch_unwind(run).unwrap_or_else(|panic| {
        Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panicked".into()))
    })
}

/// A skip is a failure where the environment promises the dependency.
fn require(o: Outcome) -> TestResult {
    let required = |var: &str| std::env::var(var).is_ok_and(|v| v == "1");
    match o {
        Outcome::Skip(why) if why.starts_with("NVRTC") && required("OPBOX_REQUIRE_NVRTC") => {
            Err(format!("OPBOX_REQUIRE_NVRTC=1 but {why}"))
        }
        Outcome::Skip(why) if why.starts_with("no GPU") && required("OPBOX_REQUIRE_GPU") => {
            Err(format!("OPBOX_REQUIRE_GPU=1 but {why}"))
        }
        o => Ok(o),
    }
}

pub fn ensure(cond: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(message())
    }
}

/// `result` must be an error whose message contains every one of `needles`; `accepted` is the
/// failure to report when it succeeded.
pub fn expect_err<T>(
    result: opbox::Result<T>,
    accepted: &str,
    needles: &[&str],
) -> Result<(), String> {
    match result {
        Ok(_) => Err(accepted.to_owned()),
        Err(e) => {
            let m = e.to_string();
            ensure(needles.iter().all(|n| m.contains(n)), || {
                format!("unexpected error: {m}\n(expected it to contain {needles:?})")
            })
        }
    }
}

pub fn s(e: Error) -> String {
    e.to_string()
}

/// Runs `f` when NVRTC is usable, else skips saying why.
pub fn with_nvrtc(f: impl FnOnce() -> TestResult) -> TestResult {
    match opbox::cuda::nvrtc::version() {
        Err(Error::NoCuda { reason }) => Ok(Outcome::Skip(format!("NVRTC not usable ({reason})"))),
        Err(e) => Err(e.to_string()),
        Ok(_) => f(),
    }
}

/// Runs `f` when a GPU and NVRTC are there, else skips saying why.
pub fn with_gpu(f: impl FnOnce() -> TestResult) -> TestResult {
    match opbox::cuda::device_count() {
        Err(Error::NoCuda { reason }) => return Ok(Outcome::Skip(format!("no GPU ({reason})"))),
        Err(e) => return Err(e.to_string()),
        Ok(0) => {
            return Ok(Outcome::Skip(
                "no GPU (the driver reports 0 devices)".into(),
            ))
        }
        Ok(_) => {}
    }
    with_nvrtc(f)
}

/// Each declaration compiles for sm_90 under NVRTC (no GPU needed); the first failure names its
/// kernel.
pub fn compile_sm90(decls: &[&opbox::cuda::codegen::KernelDecl]) -> Result<(), String> {
    for decl in decls {
        compile_sm90_with(decl, &[])?;
    }
    Ok(())
}

/// `decl` specialized by `values`, compiled for sm_90 under NVRTC: the module's image, or an
/// error that names the kernel.
pub fn compile_sm90_with(
    decl: &opbox::cuda::codegen::KernelDecl,
    values: &[opbox::cuda::codegen::ConstValue],
) -> Result<Vec<u8>, String> {
    opbox::cuda::compile_for_arch(decl, values, "sm_90")
        .map(|artifact| artifact.image)
        .map_err(|e| format!("{}: {e}", decl.rust_name))
}

/// `decl` specialized by `values` compiles for sm_90 under NVRTC into a module with no device
/// globals, for a kernel that declares none itself: opbox's checks and helpers must add none,
/// since loading a module with globals costs its first launch a device allocation and a copy.
pub fn compile_sm90_without_globals(
    decl: &opbox::cuda::codegen::KernelDecl,
    values: &[opbox::cuda::codegen::ConstValue],
) -> Result<(), String> {
    let image = compile_sm90_with(decl, values)?;
    // A cubin names its sections in its string table: `.nv.global` (zeroed) and
    // `.nv.global.init` (initialized) hold device globals, and no symbol contains a dot.
    let section = b".nv.global";
    let has_globals = image.windows(section.len()).any(|w| w == section);
    ensure(!has_globals, || {
        format!(
            "{}: the module has device globals, but the kernel declares none",
            decl.rust_name
        )
    })
}

/// Runs this test binary again with `flag` (a child that may poison its CUDA context, say) and
/// passes when the child exits 0, printing its one-line verdict.
pub fn run_child(flag: &str) -> TestResult {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .arg(flag)
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure(out.status.success(), || {
        format!("the child ({flag}) failed:\n{stdout}{stderr}")
    })?;
    println!("    child: {}", stdout.trim());
    Ok(Outcome::Pass)
}

/// The child's side of [`run_child`]: prints the verdict of `run` and exits 0 only on `Ok`.
pub fn child_verdict(run: impl FnOnce() -> Result<String, String>) -> std::process::ExitCode {
    match run() {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
