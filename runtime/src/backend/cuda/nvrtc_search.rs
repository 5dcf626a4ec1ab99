//! Finding NVRTC where pip put it, when the dynamic loader does not (no `LD_LIBRARY_PATH`).
//!
//! cudarc loads libnvrtc by name. A library opened here first, by its full path, is the one
//! cudarc's `dlopen("libnvrtc.so.13")` then gets: the loader matches a loaded library's soname
//! before it searches. NVRTC opens its builtins library by name too, at its first compile, so
//! that one is opened from beside it first as well.
//!
//! Where, in order (the first directory that holds libnvrtc wins):
//! 1. `$OPBOX_NVRTC_DIR`: a `pip install --target` directory (what `scripts/install-nvrtc`
//!    fills);
//! 2. `$VIRTUAL_ENV`'s site-packages;
//! 3. the site-packages of the `python3` on `PATH`, its user site included.
//!
//! Each is searched for the `nvidia-cuda-nvrtc` 13 wheel's `nvidia/cu13/lib`.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the wheel puts its libraries, under a site-packages or `--target` directory.
const WHEEL_LIB: &str = "nvidia/cu13/lib";

/// The environment variable naming a `pip install --target` directory.
pub(crate) const NVRTC_DIR_ENV: &str = "OPBOX_NVRTC_DIR";

/// What the search found, once per process.
struct Search {
    /// The directory NVRTC was loaded from.
    loaded: Option<PathBuf>,
    /// The directories looked in.
    looked: Vec<PathBuf>,
}

fn search() -> &'static Search {
    static SEARCH: OnceLock<Search> = OnceLock::new();
    SEARCH.get_or_init(|| {
        let looked = lib_dirs(
            std::env::var_os(NVRTC_DIR_ENV).map(PathBuf::from),
            std::env::var_os("VIRTUAL_ENV").map(PathBuf::from),
            &python_sites(),
        );
        let loaded = looked.iter().find(|dir| load_from(dir)).cloned();
        Search { loaded, looked }
    })
}

/// Opens NVRTC from a pip install (see the module docs), once per process; true when it did.
/// Called only when the loader cannot find libnvrtc by itself.
pub(crate) fn preload() -> bool {
    search().loaded.is_some()
}

/// The pip install directory (`.../nvidia/cu13/lib`) NVRTC was loaded from, when the loader
/// did not find it by itself and opbox found it there; `None` otherwise.
pub fn pip_lib_dir() -> Option<&'static Path> {
    search().loaded.as_deref()
}

/// Where the search for a pip install looked, for the error that says NVRTC is missing.
pub(crate) fn looked_in() -> String {
    let looked = &search().looked;
    if looked.is_empty() {
        return format!("no ${NVRTC_DIR_ENV}, $VIRTUAL_ENV or python3 on PATH to look in");
    }
    let dirs: Vec<String> = looked.iter().map(|d| d.display().to_string()).collect();
    format!("looked in {}", dirs.join(", "))
}

/// The candidate wheel lib directories, in search order, without repeats.
fn lib_dirs(target: Option<PathBuf>, venv: Option<PathBuf>, python: &[PathBuf]) -> Vec<PathBuf> {
    let mut sites: Vec<PathBuf> = target.into_iter().collect();
    if let Some(venv) = venv {
        sites.extend(venv_sites(&venv));
    }
    sites.extend(python.iter().cloned());
    let mut dirs: Vec<PathBuf> = Vec::with_capacity(sites.len());
    for dir in sites.into_iter().map(|s| s.join(WHEEL_LIB)) {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// `<venv>/lib/python3.X/site-packages` for each Python of a virtualenv, sorted.
fn venv_sites(venv: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        return Vec::new();
    };
    let mut sites: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().as_bytes().starts_with(b"python"))
        .map(|e| e.path().join("site-packages"))
        .collect();
    sites.sort();
    sites
}

/// The site-packages of the `python3` on PATH (its user site last); none without one.
fn python_sites() -> Vec<PathBuf> {
    let script =
        "import site\nfor p in site.getsitepackages() + [site.getusersitepackages()]: print(p)";
    let Ok(out) = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    if !out.status.success() {
        return Vec::new();
    }
    out.stdout
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| PathBuf::from(OsStr::from_bytes(line)))
        .collect()
}

/// Opens the builtins library and then libnvrtc from `dir`, by full path; true when libnvrtc
/// opened. The handles stay open for the life of the process, as cudarc's own does.
fn load_from(dir: &Path) -> bool {
    let Some(nvrtc) = ["libnvrtc.so.13", "libnvrtc.so"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
    else {
        return false;
    };
    if let Some(builtins) = builtins_in(dir) {
        open_global(&builtins);
    }
    open_global(&nvrtc)
}

/// `libnvrtc-builtins.so.13.x` in `dir` (not the wheel's `.alt.` variant).
fn builtins_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.as_bytes().starts_with(b"libnvrtc-builtins.so."))
        })
        .collect();
    found.sort();
    found.pop()
}

fn open_global(path: &Path) -> bool {
    let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is NUL-terminated. Opening NVRTC runs its initializers, as cudarc's own
    // dlopen of it would; the handle is never closed, so the library stays loaded for the
    // symbols cudarc resolves later.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    !handle.is_null()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_in_order_target_venv_python_without_repeats() {
        let venv = tempfile::tempdir().unwrap();
        for py in ["python3.12", "python3.11", "not-python"] {
            std::fs::create_dir_all(venv.path().join("lib").join(py)).unwrap();
        }
        let site = venv.path().join("lib/python3.12/site-packages");
        let dirs = lib_dirs(
            Some(PathBuf::from("/opt/nvrtc")),
            Some(venv.path().to_path_buf()),
            &[
                site.clone(),
                PathBuf::from("/usr/lib/python3/dist-packages"),
            ],
        );
        assert_eq!(
            dirs,
            [
                PathBuf::from("/opt/nvrtc/nvidia/cu13/lib"),
                venv.path()
                    .join("lib/python3.11/site-packages/nvidia/cu13/lib"),
                site.join("nvidia/cu13/lib"),
                PathBuf::from("/usr/lib/python3/dist-packages/nvidia/cu13/lib"),
            ]
        );
        assert!(lib_dirs(None, None, &[]).is_empty());
    }

    #[test]
    fn a_dir_without_nvrtc_loads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("libnvrtc-builtins.so.13.0"), b"").unwrap();
        std::fs::write(dir.path().join("libnvrtc-builtins.alt.so.13.0"), b"").unwrap();
        assert_eq!(
            builtins_in(dir.path()),
            Some(dir.path().join("libnvrtc-builtins.so.13.0"))
        );
        assert!(!load_from(dir.path()), "no libnvrtc.so.13 there");
    }
}
