//! The CUDA toolkit's headers on this machine, for `<cuda_fp16.h>` and friends. They are found
//! per machine, so they reach NVRTC's options but never a cache key: a key holds no machine path,
//! and a cache filled where a toolkit is installed serves a machine without one.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

/// `--include-path=` options for this process's toolkit (see [`include_dirs`]), found once.
pub(crate) fn include_options() -> &'static [String] {
    static OPTIONS: OnceLock<Vec<String>> = OnceLock::new();
    OPTIONS.get_or_init(|| {
        let env = ["CUDA_HOME", "CUDA_PATH"].map(std::env::var_os);
        include_dirs(env.into_iter().flatten())
            .iter()
            .map(|d| format!("--include-path={}", d.display()))
            .collect()
    })
}

/// `<toolkit>/include` (and its CCCL dir, which CUDA 13's headers need) of the first root that
/// holds `include/cuda_fp16.h`, trying `roots` (`$CUDA_HOME`, `$CUDA_PATH`) and then
/// `/usr/local/cuda`.
pub(crate) fn include_dirs(roots: impl IntoIterator<Item = OsString>) -> Vec<PathBuf> {
    let roots = roots
        .into_iter()
        .map(PathBuf::from)
        .chain([PathBuf::from("/usr/local/cuda")]);
    for root in roots {
        let include = root.join("include");
        if include.join("cuda_fp16.h").is_file() {
            let cccl = include.join("cccl");
            return if cccl.is_dir() {
                vec![include, cccl]
            } else {
                vec![include]
            };
        }
    }
    Vec::new()
}
