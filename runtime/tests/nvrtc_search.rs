//! NVRTC found in a pip install with no `LD_LIBRARY_PATH`: this test binary runs itself again
//! without it, once with `OPBOX_NVRTC_DIR` naming a `pip install --target` directory and once
//! with `VIRTUAL_ENV` naming a virtualenv whose site-packages holds the wheel, and the child
//! compiles a program. The install is the one this process was given on `LD_LIBRARY_PATH`
//! (`scripts/install-nvrtc`'s); without one the test says it skipped, and fails under
//! `OPBOX_REQUIRE_NVRTC=1`.
#![cfg(feature = "cuda")]

use std::path::{Path, PathBuf};
use std::process::Command;

use opbox_runtime::backend::cuda::nvrtc;

const EXPECT: &str = "OPBOX_NVRTC_SEARCH_EXPECT";

/// The `--target` directory above an `LD_LIBRARY_PATH` entry `<dir>/nvidia/cu13/lib` that holds
/// libnvrtc.
fn pip_target() -> Option<PathBuf> {
    let paths = std::env::var_os("LD_LIBRARY_PATH")?;
    std::env::split_paths(&paths)
        .filter(|d| d.join("libnvrtc.so.13").is_file() && d.ends_with("nvidia/cu13/lib"))
        .find_map(|d| Some(d.parent()?.parent()?.parent()?.to_path_buf()))
}

/// Runs the child test with `env`, without LD_LIBRARY_PATH or any other search place; its
/// result is this test's.
fn run_child(env: &[(&str, &Path)], expect: &Path) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new(exe)
        .args([
            "--exact",
            "child_loads_nvrtc_from_the_expected_dir",
            "--ignored",
        ])
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("OPBOX_NVRTC_DIR")
        .env_remove("VIRTUAL_ENV")
        // No python3 either: the child must find NVRTC by the one place it is given.
        .env("PATH", "/nonexistent")
        .envs(env.iter().map(|&(k, v)| (k, v)))
        .env(EXPECT, expect)
        .output()
        .expect("the child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn nvrtc_is_found_in_a_pip_install_without_ld_library_path() {
    let Some(target) = pip_target() else {
        assert!(
            std::env::var_os("OPBOX_REQUIRE_NVRTC").is_none(),
            "OPBOX_REQUIRE_NVRTC is set, but no LD_LIBRARY_PATH entry holds nvidia/cu13/lib/libnvrtc.so.13"
        );
        println!("skipped: no pip install of NVRTC on LD_LIBRARY_PATH");
        return;
    };
    // `pip install --target DIR` and OPBOX_NVRTC_DIR=DIR.
    run_child(
        &[("OPBOX_NVRTC_DIR", &target)],
        &target.join("nvidia/cu13/lib"),
    );

    // A virtualenv: <venv>/lib/python3.X/site-packages/nvidia is the wheel's.
    let venv = tempfile::tempdir().expect("a temp dir");
    let site = venv.path().join("lib/python3.12/site-packages");
    std::fs::create_dir_all(&site).expect("site-packages");
    std::os::unix::fs::symlink(target.join("nvidia"), site.join("nvidia")).expect("a symlink");
    run_child(
        &[("VIRTUAL_ENV", venv.path())],
        &site.join("nvidia/cu13/lib"),
    );
}

#[test]
#[ignore = "run by nvrtc_is_found_in_a_pip_install_without_ld_library_path, in a child process"]
fn child_loads_nvrtc_from_the_expected_dir() {
    let expect = PathBuf::from(std::env::var_os(EXPECT).expect("run by the parent test"));
    let version = nvrtc::version().expect("NVRTC found without LD_LIBRARY_PATH");
    assert_eq!(version.0, 13);
    assert_eq!(nvrtc::pip_lib_dir(), Some(expect.as_path()));
    // A compile loads libnvrtc-builtins, which NVRTC opens by name: it must resolve too.
    assert!(nvrtc::accepts_arch("sm_90").expect("a compile"));
}
