//! The compile paths (`compile_cached`, `compile_for_device`, `compile_ahead` / `aot::compile`):
//! 7. a cache that cannot be written is an error for ahead-of-time builds and a warning for the
//!    JIT (which still returns the kernel);
//! 8. an entry that cannot be read, for a reason other than its absence, is named in the error
//!    that ends the request: a compile error, or the missing NVRTC (a child process without it);
//! 10. eight threads asking for one kernel at once run NVRTC once; the other seven wait for it
//!    (or, arriving after it landed, read the disk cache).

use std::borrow::Cow;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Barrier;

use opbox::cache::stats;
use opbox::cuda::codegen::SourceFile;
use opbox::cuda::{
    compile_ahead, compile_cached, compile_for_device, CacheOutcome, DiskCache, Target,
};
use opbox::Error;

use crate::harness::{ensure, expect_err, s, with_nvrtc, Outcome, TestResult};
use crate::variant;

const CHILD: &str = "--child-no-nvrtc";
/// The child's exit status when NVRTC loaded after all.
const NVRTC_FOUND: u8 = 3;

pub fn unwritable_cache() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").map_err(|e| e.to_string())?;
        let cache = DiskCache::new(&file);
        let decl = variant("unwritable cache");
        expect_err(
            compile_ahead(&decl, &[], Target::cubin(90), Some(&cache)),
            "compile_ahead stored nothing, yet succeeded",
            &["kernel cache: cannot", "a-file"],
        )?;
        let c = compile_cached(&decl, &[], Target::cubin(90), Some(&cache)).map_err(s)?;
        ensure(c.outcome == CacheOutcome::Compiled, || {
            format!("{:?}", c.outcome)
        })?;
        Ok(Outcome::Pass)
    })
}

/// A file where the cache directory should be: every read fails with ENOTDIR (a permission
/// error would not show for root, who reads through permissions).
fn cache_under_a_file(dir: &Path) -> Result<DiskCache, String> {
    let file = dir.join("a-file");
    std::fs::write(&file, "").map_err(|e| e.to_string())?;
    Ok(DiskCache::new(file.join("kernels")))
}

pub fn unreadable_cache() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cache = cache_under_a_file(dir.path())?;
        let mut broken = variant("broken");
        broken.sources = Cow::Owned(vec![SourceFile {
            name: "broken.cu".into(),
            content: "this is not C++;\n".into(),
            includes: Cow::Borrowed(&[]),
        }]);
        expect_err(
            compile_cached(&broken, &[], Target::cubin(90), Some(&cache)),
            "a broken kernel compiled",
            &[
                "failed to compile",
                "the disk cache could not serve it either: cannot read",
                "Not a directory",
            ],
        )?;
        // Without NVRTC, the error says the cache could not serve the launch either.
        let (status, stdout, shown) =
            crate::run_child(|c| c.arg(CHILD).arg(dir.path()).env_remove("LD_LIBRARY_PATH"))?;
        if status.code() == Some(NVRTC_FOUND.into()) {
            return Ok(Outcome::Skip(format!(
                "a child without LD_LIBRARY_PATH still loads libnvrtc ({})",
                stdout.trim()
            )));
        }
        ensure(
            status.success()
                && stdout.contains("CUDA is not available: NVRTC")
                && stdout.contains("the disk cache could not serve it either: cannot read")
                && stdout.contains("Not a directory"),
            || shown,
        )?;
        Ok(Outcome::Pass)
    })
}

/// The child: a launch's compile for an sm_90 device, over the unreadable cache, with no NVRTC.
pub fn child(args: &[String]) -> Option<ExitCode> {
    let pos = args.iter().position(|a| a == CHILD)?;
    let cache = match cache_under_a_file(Path::new(args.get(pos + 1)?)) {
        Ok(c) => c,
        Err(e) => {
            println!("{e}");
            return Some(ExitCode::FAILURE);
        }
    };
    Some(
        match compile_for_device(&crate::axpby_f32::DECL, &[], (9, 0), Some(&cache)) {
            Err(e @ Error::NoCuda { .. }) => {
                println!("{e}");
                ExitCode::SUCCESS
            }
            other => {
                println!("{:?}", other.map(|c| c.outcome));
                ExitCode::from(NVRTC_FOUND)
            }
        },
    )
}

pub fn single_flight() -> TestResult {
    with_nvrtc(|| {
        for path in ["compile_cached", "compile_for_device", "aot::compile"] {
            let decl = variant(path);
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let cache = DiskCache::new(dir.path().join("cache"));
            let compile = |i: usize| -> Result<Vec<u8>, String> {
                match path {
                    "compile_cached" => compile_cached(&decl, &[], Target::cubin(90), Some(&cache))
                        .map(|c| c.artifact.image)
                        .map_err(s),
                    "compile_for_device" => compile_for_device(&decl, &[], (9, 0), Some(&cache))
                        .map(|c| c.artifact.image)
                        .map_err(s),
                    // Through the process's cache (OPBOX_CACHE_DIR), each into its own dir.
                    _ => {
                        let targets = opbox::aot::AotTargets {
                            arches: vec!["sm_90".into()],
                            out_dir: dir.path().join(format!("out-{i}")),
                            ..Default::default()
                        };
                        let paths = opbox::aot::compile(&[(&decl).into()], &targets).map_err(s)?;
                        let first = paths.first().ok_or("no path")?;
                        std::fs::read(first).map_err(|e| e.to_string())
                    }
                }
            };
            let before = stats();
            let start = Barrier::new(8);
            let images: Vec<Result<Vec<u8>, String>> = std::thread::scope(|scope| {
                let threads: Vec<_> = (0..8)
                    .map(|i| {
                        let (start, compile) = (&start, &compile);
                        scope.spawn(move || {
                            start.wait();
                            compile(i)
                        })
                    })
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().unwrap_or_else(|_| Err("a thread panicked".into())))
                    .collect()
            });
            let after = stats();
            let images = images.into_iter().collect::<Result<Vec<_>, _>>()?;
            ensure(images.windows(2).all(|w| w[0] == w[1]), || {
                format!("{path}: the eight images differ")
            })?;
            let compiles = after.compiles - before.compiles;
            let served = (after.waits - before.waits) + (after.disk_hits - before.disk_hits);
            ensure(compiles == 1 && served == 7, || {
                format!("{path}: {compiles} compiles, {served} waits or disk hits, for 8 requests")
            })?;
        }
        Ok(Outcome::Pass)
    })
}
