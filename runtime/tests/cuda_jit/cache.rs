//! Disk-cache tests that need NVRTC: hits, rebuilds of corrupt entries, concurrent processes.

use std::fs;
use std::path::Path;
use std::process::{Command, ExitCode};

use opbox_runtime::backend::cuda::{
    compile_cached, compile_for_device, CacheOutcome, DiskCache, Target,
};

use crate::support::*;

pub const TESTS: &[Test] = &[
    (
        "cache::second_compile_hits_and_corrupt_entries_are_rebuilt",
        hit_then_rebuild,
    ),
    (
        "cache::two_processes_compiling_one_kernel_both_succeed",
        two_processes,
    ),
    (
        "cache::a_warm_device_alias_loads_without_nvrtc",
        device_alias,
    ),
];

const CHILD_FLAG: &str = "--opbox-child-compile";
const ALIAS_CHILD_FLAG: &str = "--opbox-child-device-alias";

fn sm90() -> Target {
    Target::cubin(90)
}

fn hit_then_rebuild() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cache = DiskCache::new(dir.path());
        let run = |expected: &str| -> Result<opbox_runtime::backend::cuda::Compiled, String> {
            let c = compile_cached(&AXPBY, &[], sm90(), Some(&cache)).map_err(|e| e.to_string())?;
            let got = match &c.outcome {
                CacheOutcome::Hit => "hit",
                CacheOutcome::Compiled => "compiled",
                CacheOutcome::Rebuilt { .. } => "rebuilt",
                CacheOutcome::DeviceHit => "device hit",
            };
            ensure(got == expected, || {
                format!("expected {expected}, got {:?}", c.outcome)
            })?;
            Ok(c)
        };
        let first = run("compiled")?;
        let path = cache.entry_path(&first.key);
        ensure(path.is_file(), || format!("no entry at {}", path.display()))?;
        let hit = run("hit")?;
        ensure(hit.artifact == first.artifact, || {
            "the hit returns the stored artifact".into()
        })?;

        // Truncate the entry: detected, recompiled, replaced.
        let bytes = fs::read(&path).map_err(|e| e.to_string())?;
        fs::write(&path, &bytes[..bytes.len() / 2]).map_err(|e| e.to_string())?;
        let rebuilt = run("rebuilt")?;
        ensure(rebuilt.artifact == first.artifact, || {
            "the rebuild matches".into()
        })?;
        run("hit")?;

        // Flip one byte of the image: the hash catches it.
        let mut bytes = fs::read(&path).map_err(|e| e.to_string())?;
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        fs::write(&path, &bytes).map_err(|e| e.to_string())?;
        match run("rebuilt")?.outcome {
            CacheOutcome::Rebuilt { why } => ensure(why.contains("hash mismatch"), || why.clone())?,
            other => return Err(format!("{other:?}")),
        }
        run("hit")?;
        Ok(Outcome::Pass)
    })
}

fn two_processes() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        // Each child is a fresh process (no shared in-process state) compiling the same kernel
        // into the same empty cache dir; both race to the same entry.
        let children: Vec<_> = (0..2)
            .map(|_| Command::new(&exe).arg(CHILD_FLAG).arg(dir.path()).output())
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        for (i, out) in children.iter().enumerate() {
            ensure(out.status.success(), || {
                format!(
                    "child {i} failed ({}):\n{}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            })?;
        }
        let entries = fs::read_dir(dir.path()).map_err(|e| e.to_string())?.count();
        ensure(entries == 1, || {
            format!("{entries} files in the cache dir, expected one entry and no temp files")
        })?;
        let c = compile_cached(&AXPBY, &[], sm90(), Some(&DiskCache::new(dir.path())))
            .map_err(|e| e.to_string())?;
        ensure(c.outcome == CacheOutcome::Hit, || {
            format!("{:?}", c.outcome)
        })?;
        Ok(Outcome::Pass)
    })
}

fn device_alias() -> TestResult {
    with_nvrtc(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let cache = DiskCache::new(dir.path());
        let first =
            compile_for_device(&AXPBY, &[], (9, 0), Some(&cache)).map_err(|e| e.to_string())?;
        ensure(first.outcome == CacheOutcome::Compiled, || {
            format!("{:?}", first.outcome)
        })?;
        let again =
            compile_for_device(&AXPBY, &[], (9, 0), Some(&cache)).map_err(|e| e.to_string())?;
        ensure(again.outcome == CacheOutcome::DeviceHit, || {
            format!("{:?}", again.outcome)
        })?;
        ensure(again.artifact == first.artifact, || {
            "the alias serves the compiled image".into()
        })?;
        // Another source is another alias: compiled, not served stale.
        let changed = axpby_with_source(&AXPBY_CU.replace("a * x[i]", "x[i] * a"));
        let other =
            compile_for_device(&changed, &[], (9, 0), Some(&cache)).map_err(|e| e.to_string())?;
        ensure(other.outcome == CacheOutcome::Compiled, || {
            format!("{:?}", other.outcome)
        })?;
        // A fresh process reads the alias without ever mapping libnvrtc.
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let out = Command::new(exe)
            .arg(ALIAS_CHILD_FLAG)
            .arg(dir.path())
            .output()
            .map_err(|e| e.to_string())?;
        ensure(out.status.success(), || {
            format!(
                "child: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        Ok(Outcome::Pass)
    })
}

/// The child side of `device_alias`: a device hit, and libnvrtc absent from the process's maps.
fn alias_child(dir: &str) -> ExitCode {
    let cache = DiskCache::new(Path::new(dir));
    match compile_for_device(&AXPBY, &[], (9, 0), Some(&cache)) {
        Ok(c) if c.outcome == CacheOutcome::DeviceHit => {}
        Ok(c) => {
            println!("expected a device hit, got {:?}", c.outcome);
            return ExitCode::FAILURE;
        }
        Err(e) => {
            println!("{e}");
            return ExitCode::FAILURE;
        }
    }
    match fs::read_to_string("/proc/self/maps") {
        Ok(maps) if maps.contains("libnvrtc") => {
            println!("libnvrtc was loaded for a device hit");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

/// The child side of `two_processes`: compile three times into the given cache dir (and of
/// `device_alias`).
pub fn child_main(args: &[String]) -> Option<ExitCode> {
    if let Some(pos) = args.iter().position(|a| a == ALIAS_CHILD_FLAG) {
        return Some(alias_child(args.get(pos + 1)?));
    }
    let pos = args.iter().position(|a| a == CHILD_FLAG)?;
    let dir = args.get(pos + 1)?;
    let cache = DiskCache::new(Path::new(dir));
    for _ in 0..3 {
        if let Err(e) = compile_cached(&AXPBY, &[], sm90(), Some(&cache)) {
            eprintln!("child compile failed: {e}");
            return Some(ExitCode::FAILURE);
        }
    }
    Some(ExitCode::SUCCESS)
}
