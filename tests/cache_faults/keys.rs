//! 2. Keys hold no machine path: `opbox aot` on a machine whose CUDA toolkit is at one place
//!    fills a cache that a machine with the toolkit elsewhere (or none) reads. Expected: the same
//!    entry names (full key and device alias) under two different CUDA_HOMEs. The toolkit is
//!    found once per process, so each CUDA_HOME gets a child process.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use opbox::cuda::{compile_ahead, DiskCache, Target};

use crate::harness::{ensure, with_nvrtc, Outcome, TestResult};

const CHILD: &str = "--child-compile-ahead";

pub fn two_cuda_homes() -> TestResult {
    with_nvrtc(|| {
        let root = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut entries = Vec::new();
        for (home, cccl) in [("cuda-a", false), ("cuda-b", true)] {
            // A stand-in toolkit: what the lookup looks for, so its dirs reach NVRTC's options.
            let include = root.path().join(home).join("include");
            fs::create_dir_all(if cccl {
                include.join("cccl")
            } else {
                include.clone()
            })
            .map_err(|e| e.to_string())?;
            fs::write(include.join("cuda_fp16.h"), "// stand-in\n").map_err(|e| e.to_string())?;
            let cache = root.path().join(format!("{home}-cache"));
            let (status, _, shown) = crate::run_child(|c| {
                c.arg(CHILD)
                    .arg(&cache)
                    .env("CUDA_HOME", root.path().join(home))
                    .env_remove("CUDA_PATH")
            })?;
            ensure(status.success(), || format!("under {home}: {shown}"))?;
            entries.push(entry_names(&cache)?);
        }
        ensure(entries[0].len() == 2 && entries[0] == entries[1], || {
            format!("entries differ between the two CUDA_HOMEs: {entries:?}")
        })?;
        Ok(Outcome::Pass)
    })
}

fn entry_names(dir: &Path) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The child: `compile_ahead` into the cache dir named by the argument after the flag.
pub fn child(args: &[String]) -> Option<ExitCode> {
    let pos = args.iter().position(|a| a == CHILD)?;
    let dir = args.get(pos + 1)?;
    let cache = DiskCache::new(dir);
    Some(
        match compile_ahead(
            &crate::axpby_f32::DECL,
            &[],
            Target::cubin(90),
            Some(&cache),
        ) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                println!("{e}");
                ExitCode::FAILURE
            }
        },
    )
}
