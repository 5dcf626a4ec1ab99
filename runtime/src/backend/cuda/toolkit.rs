//! The CUDA headers on this machine (`<cuda_fp16.h>`, `<cuda/std/*>`, CUB, ...), for NVRTC's
//! include path. They are found per machine, so they reach NVRTC's options but never a cache
//! key: a key holds no machine path, and a cache filled where a toolkit is installed serves a
//! machine without one.
//!
//! Where they are looked for, in order: `$CUDA_HOME`, `$CUDA_PATH`, beside the libnvrtc this
//! process loaded (the PyPI wheels `nvidia-cuda-runtime`, `nvidia-cuda-cccl` and
//! `nvidia-cuda-crt` put `include/` next to NVRTC's `lib/`, which `scripts/install-nvrtc` does),
//! and `/usr/local/cuda`. The first root whose `include/` holds `cuda_fp16.h` wins.

use std::ffi::{CStr, OsString};

use opbox_codegen::cuda::{KernelDecl, Unresolved};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One place looked at, and whether the headers were there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Where the root came from: `$CUDA_HOME`, `beside libnvrtc`, ...
    pub(crate) origin: &'static str,
    /// The root's `include` dir, or `None` where the origin gave no path (an unset variable).
    pub(crate) include: Option<PathBuf>,
    pub(crate) found: bool,
}

/// The search, done once per process.
struct Search {
    candidates: Vec<Candidate>,
    options: Vec<String>,
}

fn search() -> &'static Search {
    static SEARCH: OnceLock<Search> = OnceLock::new();
    SEARCH.get_or_init(|| {
        let roots = [
            (
                "$CUDA_HOME",
                std::env::var_os("CUDA_HOME").map(PathBuf::from),
            ),
            (
                "$CUDA_PATH",
                std::env::var_os("CUDA_PATH").map(PathBuf::from),
            ),
            ("beside libnvrtc", nvrtc_root()),
            ("the default", Some(PathBuf::from("/usr/local/cuda"))),
        ];
        let candidates = candidates(roots);
        let options = candidates
            .iter()
            .find(|c| c.found)
            .and_then(|c| c.include.as_deref())
            .map(include_dirs)
            .unwrap_or_default()
            .iter()
            .map(|d| format!("--include-path={}", d.display()))
            .collect();
        Search {
            candidates,
            options,
        }
    })
}

/// `--include-path=` options for this process's CUDA headers (see the module docs): what the
/// JIT passes NVRTC after the options a cache key holds. Empty when no headers were found.
pub fn include_options() -> &'static [String] {
    &search().options
}

/// Each root looked at, in order, with whether its `include/` holds `cuda_fp16.h`.
pub(crate) fn candidates(
    roots: impl IntoIterator<Item = (&'static str, Option<PathBuf>)>,
) -> Vec<Candidate> {
    roots
        .into_iter()
        .map(|(origin, root)| {
            let include = root.map(|r| r.join("include"));
            let found = include
                .as_deref()
                .is_some_and(|i| i.join("cuda_fp16.h").is_file());
            Candidate {
                origin,
                include,
                found,
            }
        })
        .collect()
}

/// `include` and, where it exists, its CCCL dir (`include/cccl`, which CUDA 13 keeps apart).
pub(crate) fn include_dirs(include: &Path) -> Vec<PathBuf> {
    let cccl = include.join("cccl");
    if cccl.is_dir() {
        vec![include.to_path_buf(), cccl]
    } else {
        vec![include.to_path_buf()]
    }
}

/// The directory above the loaded libnvrtc's own (`nvidia/cu13` for the wheel's
/// `nvidia/cu13/lib/libnvrtc.so.13`): found through the dynamic loader, so it is the library
/// this process really uses, wherever `LD_LIBRARY_PATH` or the system put it.
fn nvrtc_root() -> Option<PathBuf> {
    let lib = loaded_library_path("nvrtc", c"nvrtcVersion")?;
    Some(lib.parent()?.parent()?.to_path_buf())
}

/// The file of the already-loaded library `lib` (one of cudarc's candidate names) that defines
/// `symbol`, asked of the loader without loading anything.
fn loaded_library_path(lib: &str, symbol: &CStr) -> Option<PathBuf> {
    for name in cudarc::get_lib_name_candidates(lib) {
        let Ok(name) = std::ffi::CString::new(name) else {
            continue;
        };
        // SAFETY: RTLD_NOLOAD only looks the name up among loaded libraries (no constructor
        // runs); the handle is closed below, which only drops the reference this call added.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: `handle` is a live handle and `symbol` is NUL-terminated.
        let address = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
        let mut info: libc::Dl_info = libc::Dl_info {
            dli_fname: std::ptr::null(),
            dli_fbase: std::ptr::null_mut(),
            dli_sname: std::ptr::null(),
            dli_saddr: std::ptr::null_mut(),
        };
        // SAFETY: `info` is valid for writes; dladdr accepts any address (null included) and
        // fills `info` only on success.
        let found = !address.is_null() && unsafe { libc::dladdr(address, &mut info) } != 0;
        let path = (found && !info.dli_fname.is_null()).then(|| {
            // SAFETY: dladdr succeeded, so `dli_fname` is a NUL-terminated path owned by the
            // loader, valid while the library is loaded (it is: `handle` holds it); copied here.
            let bytes = unsafe { CStr::from_ptr(info.dli_fname) }
                .to_bytes()
                .to_vec();
            PathBuf::from(OsString::from(String::from_utf8_lossy(&bytes).into_owned()))
        });
        // SAFETY: `handle` came from dlopen above and is closed once.
        unsafe { libc::dlclose(handle) };
        if path.is_some() {
            return path;
        }
    }
    None
}

/// For an NVRTC log that could not open a header: which header, which lines of `decl`'s sources
/// include it, where opbox looked for CUDA's headers, and how to get them. `None` when the log
/// has no such error.
pub(crate) fn missing_header_note(log: &str, decl: &KernelDecl) -> Option<String> {
    note_for(log, &search().candidates, &decl.unresolved_includes())
}

pub(crate) fn note_for(
    log: &str,
    candidates: &[Candidate],
    unresolved: &[Unresolved],
) -> Option<String> {
    let header = log.lines().find_map(|l| {
        let start = l
            .find("open source file \"")
            .map(|i| i + "open source file \"".len())?;
        let rest = &l[start..];
        Some(&rest[..rest.find('"')?])
    })?;
    let looked: Vec<String> = candidates
        .iter()
        .map(|c| match (&c.include, c.found) {
            (None, _) => format!("  {}: not set", c.origin),
            (Some(p), true) => format!("  {}: {} (used)", c.origin, p.display()),
            (Some(p), false) => format!("  {}: {} (no cuda_fp16.h there)", c.origin, p.display()),
        })
        .collect();
    let sites: Vec<String> = unresolved
        .iter()
        .filter(|u| u.spelling == header)
        .map(|u| format!("{}:{}", u.file, u.line))
        .collect();
    let included = if sites.is_empty() {
        String::new()
    } else {
        format!(
            " It is included at {}, and opbox's scanner found no file of that name next to the including file or in the declaration's include_dirs, so it was left to NVRTC's include path.",
            sites.join(", ")
        )
    };
    Some(format!(
        "opbox: NVRTC found no header \"{header}\".{included} The CUDA headers were looked for in:\n{}\n\
         CUDA's headers (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h, cuda/std/*, cub, cooperative_groups.h) \
         come from the PyPI wheels nvidia-cuda-runtime, nvidia-cuda-cccl and nvidia-cuda-crt 13.0: \
         run scripts/install-nvrtc, which installs them beside NVRTC, or set CUDA_HOME to a CUDA toolkit. \
         A header of your own belongs next to the file that includes it or in the declaration's include_dirs.",
        looked.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_root_with_the_headers_wins_and_cccl_comes_along() {
        let empty = tempfile::tempdir().expect("tempdir");
        let toolkit = tempfile::tempdir().expect("tempdir");
        let include = toolkit.path().join("include");
        std::fs::create_dir_all(include.join("cccl")).expect("mkdir");
        std::fs::write(include.join("cuda_fp16.h"), "").expect("write");
        let found = candidates([
            ("$CUDA_HOME", None),
            ("$CUDA_PATH", Some(empty.path().to_path_buf())),
            ("beside libnvrtc", Some(toolkit.path().to_path_buf())),
        ]);
        assert_eq!(
            found.iter().map(|c| c.found).collect::<Vec<_>>(),
            [false, false, true]
        );
        assert_eq!(
            include_dirs(&include),
            vec![include.clone(), include.join("cccl")]
        );
    }

    #[test]
    fn a_missing_header_says_where_opbox_looked_and_what_to_install() {
        let log = "k.cu(1): catastrophic error: cannot open source file \"cuda_fp16.h\"\n  #include <cuda_fp16.h>";
        let candidates = vec![
            Candidate {
                origin: "$CUDA_HOME",
                include: None,
                found: false,
            },
            Candidate {
                origin: "beside libnvrtc",
                include: Some(PathBuf::from("/opt/nv/include")),
                found: false,
            },
        ];
        let unresolved = [Unresolved {
            file: "kernels/k.cu".into(),
            line: 1,
            spelling: "cuda_fp16.h".into(),
            angled: true,
        }];
        let note = note_for(log, &candidates, &unresolved).expect("a note");
        assert!(
            note.starts_with("opbox: NVRTC found no header \"cuda_fp16.h\". It is included at kernels/k.cu:1, and opbox's scanner found no file"),
            "{note}"
        );
        assert!(note.contains("  $CUDA_HOME: not set\n"), "{note}");
        assert!(
            note.contains("  beside libnvrtc: /opt/nv/include (no cuda_fp16.h there)"),
            "{note}"
        );
        assert!(note.contains("run scripts/install-nvrtc"), "{note}");
        assert_eq!(
            note_for("k.cu(3): error: expected a \";\"", &candidates, &unresolved),
            None
        );
    }
}
