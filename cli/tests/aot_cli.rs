//! `opbox aot` end to end, as a user runs it: this test binary links extern kernels and is
//! itself the "binary" whose kernels are compiled (it re-runs itself as `opbox_cli::main` when
//! OPBOX_CLI_TEST_CHILD is set); the standalone `opbox` command compiles the example plugin
//! (`examples/aot_plugin.rs`, a cdylib). Compiling needs NVRTC, not a GPU; `--device` needs the
//! GPU.

#[path = "../../tests/harness/mod.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};

use harness::{ensure, with_gpu, with_nvrtc, Outcome, TestResult};
use opbox::prelude::*;

#[extern_kernel(source = "kernels/twice.cu")]
fn twice(x: In<[f32]>, out: Out<[f32]>, n: i64);

#[extern_kernel(source = "kernels/negate.cu")]
fn negate(x: In<[i32]>, out: Out<[i32]>, n: i64);

#[extern_kernel(source = "kernels/broken.cu")]
fn broken(out: Out<[f32]>, n: i64);

#[extern_kernel(source = "kernels/tile_fill.cu", constexpr = "define")]
fn tile_fill(out: Out<[f32]>, n: i64, #[constexpr] VALUE: f32);

const CHILD: &str = "OPBOX_CLI_TEST_CHILD";
const LAUNCHER: &str = "OPBOX_CLI_TEST_LAUNCH";

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        // The "user binary": its own kernels, through the library's entry point.
        return opbox_cli::run(std::env::args_os().skip(1));
    }
    if std::env::var_os(LAUNCHER).is_some() {
        // A fresh process that launches `twice` and says what the kernel caches did.
        return match launch_twice() {
            Ok(stats) => {
                println!("{stats}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    harness::run(&[
        ("in_process_list", in_process_list),
        ("in_process_compile_every_kernel", in_process_compile),
        (
            "in_process_failure_is_reported_others_compile",
            in_process_failure,
        ),
        (
            "in_process_check_compiles_and_writes_nothing",
            in_process_check,
        ),
        (
            "check_all_kernels_lists_every_failure",
            check_all_kernels_lists_every_failure,
        ),
        ("in_process_unknown_kernel_suggests", unknown_kernel),
        (
            "in_process_constexpr_kernel_named_is_refused",
            constexpr_named,
        ),
        ("usage_errors_name_the_flag", usage_errors),
        (
            "arches_are_checked_against_what_nvrtc_supports",
            arches_nvrtc_supports,
        ),
        (
            "a_cache_that_cannot_be_written_fails_the_run",
            unwritable_cache,
        ),
        ("in_process_device_target", device_target),
        (
            "aot_fills_the_disk_cache_and_device_alias",
            aot_fills_the_cache,
        ),
        (
            "aot_cache_serves_a_fresh_process_without_compiling",
            shipped_cache,
        ),
        ("plugin_list", plugin_list),
        ("plugin_compile", plugin_compile),
        ("plugin_refusals", plugin_refusals),
    ])
}

/// Runs this test binary as the user's binary: `opbox <args>`.
fn in_process(args: &[&str]) -> Result<Output, String> {
    this_binary(&[(CHILD, Path::new("1"))], &[&["opbox"], args].concat())
}

/// Runs this test binary again with `env` set: as the user's binary (CHILD) or the launcher.
fn this_binary(env: &[(&str, &Path)], args: &[&str]) -> Result<Output, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    Command::new(exe)
        .envs(env.iter().map(|&(k, v)| (k, v)))
        .args(args)
        .output()
        .map_err(|e| e.to_string())
}

/// The standalone `opbox` command (OPBOX_CLI_BIN overrides cargo's path, for copied binaries).
fn standalone(args: &[&str]) -> Result<Output, String> {
    let bin = std::env::var_os("OPBOX_CLI_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_opbox")));
    Command::new(bin)
        .args(args)
        .output()
        .map_err(|e| e.to_string())
}

/// The example plugin next to the `opbox` binary (`cargo test` builds examples), or
/// OPBOX_AOT_PLUGIN.
fn plugin_path() -> Result<PathBuf, String> {
    let path = match std::env::var_os("OPBOX_AOT_PLUGIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let bin = PathBuf::from(env!("CARGO_BIN_EXE_opbox"));
            let dir = bin.parent().ok_or("no bin dir")?;
            dir.join("examples").join(format!(
                "{}aot_plugin{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ))
        }
    };
    ensure(path.is_file(), || {
        format!(
            "the example plugin {} is not built: `cargo test` builds it, or run `cargo build -p opbox-cli --example aot_plugin`",
            path.display()
        )
    })?;
    Ok(path)
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

fn file_names(stdout: &str) -> Vec<String> {
    let mut names: Vec<String> = stdout
        .lines()
        .filter_map(|l| {
            Path::new(l)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

fn check_images(stdout: &str) -> Result<(), String> {
    for line in stdout.lines() {
        let bytes = std::fs::read(line).map_err(|e| format!("{line}: {e}"))?;
        let ok = if line.ends_with(".cubin") {
            bytes.starts_with(b"\x7fELF")
        } else {
            String::from_utf8_lossy(&bytes).contains(".entry")
        };
        ensure(ok, || format!("{line} is not a cubin / PTX image"))?;
    }
    Ok(())
}

fn in_process_list() -> TestResult {
    let o = in_process(&["aot", "--list"])?;
    let stdout = text(&o.stdout);
    ensure(o.status.success(), || show(&o))?;
    let names: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split('\t').next())
        .collect();
    ensure(names == ["broken", "negate", "tile_fill", "twice"], || {
        show(&o)
    })?;
    ensure(
        stdout.contains("aot_cli::twice\t") && stdout.contains("aot_cli.rs:"),
        || show(&o),
    )?;
    Ok(Outcome::Pass)
}

fn in_process_compile() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = dir.path().join("aot");
        let out_s = out.to_string_lossy();
        let o = in_process(&[
            "aot",
            "--arch",
            "sm_90,compute_80",
            "--kernel",
            "twice",
            "-k",
            "negate",
            "--out",
            &out_s,
        ])?;
        ensure(o.status.success(), || show(&o))?;
        let stdout = text(&o.stdout);
        let names = file_names(&stdout);
        ensure(
            names
                == [
                    "negate.compute_80.ptx",
                    "negate.sm_90.cubin",
                    "twice.compute_80.ptx",
                    "twice.sm_90.cubin",
                ],
            || show(&o),
        )?;
        check_images(&stdout)?;
        ensure(
            text(&o.stderr).contains("opbox aot: 4 written to")
                && text(&o.stderr).contains("0 failed"),
            || show(&o),
        )?;
        Ok(Outcome::Pass)
    })
}

fn in_process_failure() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out_s = dir.path().to_string_lossy().into_owned();
        // Every kernel: `broken` fails, the constexpr one is skipped, the other two compile.
        let o = in_process(&["aot", "--arch", "sm_90", "--out", &out_s, "--quiet"])?;
        let stderr = text(&o.stderr);
        ensure(o.status.code() == Some(1), || show(&o))?;
        ensure(
            file_names(&text(&o.stdout)) == ["negate.sm_90.cubin", "twice.sm_90.cubin"],
            || show(&o),
        )?;
        ensure(
            stderr.contains("error [sm_90]: kernel 'broken' failed to compile")
                && stderr.contains("this_name_is_not_declared")
                && stderr.contains("broken.cu"),
            || show(&o),
        )?;
        ensure(
            stderr.contains("skipped: kernel 'tile_fill' has #[constexpr] parameters"),
            || show(&o),
        )?;
        ensure(
            stderr.contains("2 written to") && stderr.contains("1 failed; 1 skipped"),
            || show(&o),
        )?;
        Ok(Outcome::Pass)
    })
}

fn in_process_check() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        // Every kernel, as `aot` above, but nothing is written: not even the default --out.
        let o = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
            .env(CHILD, "1")
            .current_dir(dir.path())
            .args(["opbox", "check", "--arch", "sm_90", "--quiet"])
            .output()
            .map_err(|e| e.to_string())?;
        let stderr = text(&o.stderr);
        ensure(o.status.code() == Some(1), || show(&o))?;
        ensure(o.stdout.is_empty(), || show(&o))?;
        ensure(
            stderr.contains("error [sm_90]: kernel 'broken' failed to compile")
                && stderr.contains("this_name_is_not_declared"),
            || show(&o),
        )?;
        ensure(
            stderr.contains("opbox check: 2 compiled, 1 failed; 1 skipped, nothing written"),
            || show(&o),
        )?;
        let written: Vec<_> = std::fs::read_dir(dir.path())
            .map_err(|e| e.to_string())?
            .collect();
        ensure(written.is_empty(), || format!("check wrote {written:?}"))?;

        let o = in_process(&["check", "--arch", "sm_90", "--kernel", "twice,negate"])?;
        ensure(o.status.success(), || show(&o))?;
        ensure(text(&o.stderr).contains("2 compiled, 0 failed"), || {
            show(&o)
        })?;
        Ok(Outcome::Pass)
    })
}

/// The test helper a user crate calls: every failure in one error, the others compiled.
fn check_all_kernels_lists_every_failure() -> TestResult {
    with_nvrtc(|| {
        let err = match opbox::testing::check_all_kernels(&["sm_90", "compute_80"]) {
            Ok(summary) => return Err(format!("the broken kernel passed: {summary:?}")),
            Err(e) => e,
        };
        let Error::KernelCheck { checked, failures } = &err else {
            return Err(format!("not a KernelCheck error: {err}"));
        };
        ensure(*checked == 6 && failures.len() == 2, || err.to_string())?;
        ensure(
            failures[0].starts_with("[sm_90] kernel 'broken' failed to compile")
                && failures[1].starts_with("[compute_80] kernel 'broken' failed to compile")
                && failures
                    .iter()
                    .all(|f| f.contains("this_name_is_not_declared")),
            || err.to_string(),
        )?;
        ensure(
            err.to_string()
                .starts_with("2 of 6 kernel compiles failed:\n[sm_90] kernel 'broken'"),
            || err.to_string(),
        )?;
        let bad_arch = opbox::testing::check_all_kernels(&["sm_1"]).map(|_| ());
        ensure(bad_arch.is_err(), || "sm_1 was accepted".to_string())?;
        Ok(Outcome::Pass)
    })
}

fn unknown_kernel() -> TestResult {
    let o = in_process(&["aot", "--arch", "sm_90", "--kernel", "twcie"])?;
    ensure(o.status.code() == Some(2), || show(&o))?;
    ensure(
        text(&o.stderr).contains("no extern kernel named 'twcie'; did you mean 'twice'?"),
        || show(&o),
    )?;
    Ok(Outcome::Pass)
}

fn constexpr_named() -> TestResult {
    let o = in_process(&["aot", "--arch", "sm_90", "--kernel", "tile_fill"])?;
    ensure(o.status.code() == Some(2), || show(&o))?;
    ensure(
        text(&o.stderr).contains("kernel 'tile_fill' (")
            && text(&o.stderr).contains("compile its specializations with opbox::aot::compile"),
        || show(&o),
    )?;
    Ok(Outcome::Pass)
}

fn usage_errors() -> TestResult {
    let o = in_process(&["aot", "--arch", "sm90"])?;
    ensure(o.status.code() == Some(2), || show(&o))?;
    ensure(
        text(&o.stderr).contains("invalid value 'sm90' for '--arch <ARCH>'")
            && text(&o.stderr).contains("expected sm_XX or compute_XX"),
        || show(&o),
    )?;
    let o = in_process(&["aot"])?;
    ensure(o.status.code() == Some(2), || show(&o))?;
    ensure(
        text(&o.stderr).contains("the following required arguments were not provided")
            && text(&o.stderr).contains("--arch <ARCH>"),
        || show(&o),
    )?;
    let o = in_process(&["aot", "--help"])?;
    ensure(
        o.status.success() && text(&o.stdout).contains("--plugin <LIB>"),
        || show(&o),
    )?;
    Ok(Outcome::Pass)
}

/// Out-of-range, signed and zero-padded arches are usage errors (exit 2), not one failure per
/// kernel; NVRTC's suffixed targets are accepted and compiled.
fn arches_nvrtc_supports() -> TestResult {
    with_nvrtc(|| {
        for arch in ["sm_0", "compute_1000", "sm_4294967295", "sm_+90", "sm_090"] {
            let o = in_process(&["aot", "--arch", arch, "-k", "twice"])?;
            ensure(
                o.status.code() == Some(2)
                    && text(&o.stderr)
                        .contains(&format!("invalid value '{arch}' for '--arch <ARCH>'")),
                || show(&o),
            )?;
        }
        let o = in_process(&["aot", "--arch", "compute_1000"])?;
        ensure(
            text(&o.stderr).contains("is not supported by NVRTC") && text(&o.stderr).contains("90"),
            || show(&o),
        )?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out_s = dir.path().to_string_lossy().into_owned();
        let o = in_process(&[
            "aot",
            "-a",
            "sm_90a,sm_100f",
            "-k",
            "twice",
            "--out",
            &out_s,
        ])?;
        ensure(o.status.success(), || show(&o))?;
        ensure(
            file_names(&text(&o.stdout)) == ["twice.sm_100f.cubin", "twice.sm_90a.cubin"],
            || show(&o),
        )?;
        check_images(&text(&o.stdout))?;
        Ok(Outcome::Pass)
    })
}

/// `OPBOX_CACHE_DIR` names a file: nothing can reach the cache, so every job fails (exit 1)
/// saying why, instead of "2 written".
fn unwritable_cache() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, "").map_err(|e| e.to_string())?;
        let out_s = dir.path().join("out").to_string_lossy().into_owned();
        let o = this_binary(
            &[(CHILD, Path::new("1")), ("OPBOX_CACHE_DIR", &file)],
            &[
                "opbox",
                "aot",
                "-a",
                "sm_90",
                "-k",
                "twice,negate",
                "--out",
                &out_s,
            ],
        )?;
        let stderr = text(&o.stderr);
        ensure(o.status.code() == Some(1), || show(&o))?;
        ensure(
            stderr.contains("kernel cache: cannot")
                && stderr.contains("not-a-dir")
                && stderr.contains("0 written")
                && stderr.contains("2 failed"),
            || show(&o),
        )?;
        Ok(Outcome::Pass)
    })
}

fn device_target() -> TestResult {
    with_gpu(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out_s = dir.path().to_string_lossy().into_owned();
        let o = in_process(&["aot", "--device", "0", "-k", "twice", "--out", &out_s])?;
        ensure(o.status.success(), || show(&o))?;
        let names = file_names(&text(&o.stdout));
        // The device's own cubin when NVRTC supports its arch (sm_90 on an H200).
        ensure(
            names.len() == 1 && names[0].starts_with("twice.") && names[0].ends_with(".cubin"),
            || show(&o),
        )?;
        check_images(&text(&o.stdout))?;
        Ok(Outcome::Pass)
    })
}

fn launch_twice() -> opbox::Result<opbox::cache::CacheStats> {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.5], &[3])?.to(Device::Cuda(0))?;
    let out = x.zeros_like()?;
    twice::launch(LaunchConfig::for_elems(3), &x, &out, 3)?;
    let got = out.to_vec::<f32>()?;
    if got != [2.0, -4.0, 7.0] {
        return Err(opbox::Error::InvalidArgument(format!("twice gave {got:?}")));
    }
    Ok(opbox::cache::stats())
}

/// Each image goes into the disk cache, and a cubin also under its arch's device alias (what a
/// launch reads without NVRTC): sm_90 + compute_90 make three entries.
fn aot_fills_the_cache() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cache = dir.path().join("cache");
        let out_s = dir.path().join("out").to_string_lossy().into_owned();
        let o = this_binary(
            &[(CHILD, Path::new("1")), ("OPBOX_CACHE_DIR", &cache)],
            &[
                "opbox",
                "aot",
                "-a",
                "sm_90,compute_90",
                "-k",
                "twice",
                "--out",
                &out_s,
            ],
        )?;
        ensure(o.status.success(), || show(&o))?;
        let entries = std::fs::read_dir(&cache)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "kernel"))
            .count();
        ensure(entries == 3, || {
            format!("{entries} cache entries, expected 2 images + 1 device alias")
        })?;
        Ok(Outcome::Pass)
    })
}

/// AOT into a cache directory, then launch from a fresh process on that cache: the launch reads
/// the AOT's image through the device alias, with no NVRTC compile (the ship-without-NVRTC path).
fn shipped_cache() -> TestResult {
    with_gpu(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cache = dir.path().join("cache");
        let out_s = dir.path().join("out").to_string_lossy().into_owned();
        let o = this_binary(
            &[(CHILD, Path::new("1")), ("OPBOX_CACHE_DIR", &cache)],
            &[
                "opbox", "aot", "--device", "0", "-k", "twice", "--out", &out_s,
            ],
        )?;
        ensure(o.status.success(), || show(&o))?;
        let o = this_binary(
            &[(LAUNCHER, Path::new("1")), ("OPBOX_CACHE_DIR", &cache)],
            &[],
        )?;
        ensure(o.status.success(), || show(&o))?;
        ensure(
            text(&o.stdout).starts_with("0 NVRTC compiles, 1 disk-cache hits"),
            || show(&o),
        )?;
        Ok(Outcome::Pass)
    })
}

fn plugin_list() -> TestResult {
    let plugin = plugin_path()?;
    let o = standalone(&["aot", "--list", "--plugin", &plugin.to_string_lossy()])?;
    ensure(o.status.success(), || show(&o))?;
    let stdout = text(&o.stdout);
    let names: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split('\t').next())
        .collect();
    ensure(
        names == ["plugin_block_sum", "plugin_offset", "plugin_scale"],
        || show(&o),
    )?;
    ensure(text(&o.stderr).contains("3 kernels registered"), || {
        show(&o)
    })?;
    Ok(Outcome::Pass)
}

fn plugin_compile() -> TestResult {
    let plugin = plugin_path()?;
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out_s = dir.path().to_string_lossy().into_owned();
        let o = standalone(&[
            "aot",
            "--plugin",
            &plugin.to_string_lossy(),
            "--arch",
            "sm_90",
            "--arch",
            "compute_90",
            "--out",
            &out_s,
            "-j",
            "2",
        ])?;
        ensure(o.status.success(), || show(&o))?;
        let stdout = text(&o.stdout);
        ensure(
            file_names(&stdout)
                == [
                    "plugin_offset.compute_90.ptx",
                    "plugin_offset.sm_90.cubin",
                    "plugin_scale.compute_90.ptx",
                    "plugin_scale.sm_90.cubin",
                ],
            || show(&o),
        )?;
        check_images(&stdout)?;
        ensure(
            text(&o.stderr).contains("skipped: kernel 'plugin_block_sum' has #[constexpr]"),
            || show(&o),
        )?;
        Ok(Outcome::Pass)
    })
}

fn plugin_refusals() -> TestResult {
    // The standalone binary links no kernels itself.
    let o = standalone(&["aot", "--arch", "sm_90"])?;
    ensure(
        o.status.code() == Some(2)
            && text(&o.stderr).contains("no #[extern_kernel] is linked into this binary")
            && text(&o.stderr).contains("--plugin"),
        || show(&o),
    )?;
    let o = standalone(&["aot", "--arch", "sm_90", "--plugin", "/no/such/libx.so"])?;
    ensure(
        o.status.code() == Some(2)
            && text(&o.stderr).contains("plugin '/no/such/libx.so': no such file"),
        || show(&o),
    )?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let fake = dir.path().join("libfake.so");
    std::fs::write(&fake, "not a shared library").map_err(|e| e.to_string())?;
    let empty = dir.path().join("libempty.so");
    std::fs::write(&empty, "").map_err(|e| e.to_string())?;
    // Each says dlopen's own reason, which starts with the path it was given.
    for lib in [fake.as_path(), empty.as_path(), Path::new("/bin/ls")] {
        if !lib.is_file() {
            continue;
        }
        let lib = lib.to_string_lossy();
        let o = standalone(&["aot", "--arch", "sm_90", "--plugin", &lib])?;
        ensure(
            o.status.code() == Some(2)
                && text(&o.stderr).contains(&format!("cannot be loaded: dlopen failed: {lib}: ")),
            || show(&o),
        )?;
    }
    // A real library that is not a plugin: the message says what to add.
    let plugin = plugin_path()?;
    let libc = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/libc.so.6",
    ]
    .into_iter()
    .find(|p| Path::new(p).is_file());
    let Some(libc) = libc else {
        return Ok(Outcome::Skip(format!(
            "no libc.so.6 at the usual paths to load as a non-plugin (plugin at {})",
            plugin.display()
        )));
    };
    let o = standalone(&["aot", "--arch", "sm_90", "--plugin", libc])?;
    ensure(
        o.status.code() == Some(2)
            && text(&o.stderr)
                .contains("does not export opbox_aot_v1; add `opbox::export_aot!();`"),
        || show(&o),
    )?;
    // An unknown kernel inside the plugin: the plugin's own registry answers.
    let o = standalone(&[
        "aot",
        "--arch",
        "sm_90",
        "--plugin",
        &plugin.to_string_lossy(),
        "-k",
        "plugin_scal",
    ])?;
    ensure(
        o.status.code() == Some(2)
            && text(&o.stderr)
                .contains("no extern kernel named 'plugin_scal'; did you mean 'plugin_scale'?"),
        || show(&o),
    )?;
    Ok(Outcome::Pass)
}
