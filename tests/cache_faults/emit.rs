//! 1. A diamond lattice of guarded headers: `l{i}a` and `l{i}b` each include both headers of
//!    level `i + 1`, so level 20 is reached by a million paths. Expected: each header written
//!    once (a unit under 16 KB, where inlining every path gave hundreds of MB), and NVRTC
//!    compiles it.

use std::borrow::Cow;
use std::fs;

use opbox::cuda::codegen::{scan_closure, ScanRequest};
use opbox::cuda::{compile_cached, translation_unit, CacheOutcome, Target};

use crate::harness::{ensure, s, with_nvrtc, Outcome, TestResult};

const LEVELS: usize = 21;

pub fn lattice() -> TestResult {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let write = |name: &str, text: String| {
        fs::write(dir.path().join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    let entry = crate::axpby_f32::DECL.sources[0].content.to_string();
    write(
        "k.cu",
        format!("#include \"l0a.cuh\"\n#include \"l0b.cuh\"\n{entry}"),
    )?;
    for level in 0..LEVELS {
        for side in ["a", "b"] {
            let includes = if level + 1 < LEVELS {
                format!(
                    "#include \"l{n}a.cuh\"\n#include \"l{n}b.cuh\"\n",
                    n = level + 1
                )
            } else {
                String::new()
            };
            write(
                &format!("l{level}{side}.cuh"),
                format!(
                    "#pragma once\n{includes}__device__ inline int f{level}{side}() {{ return {level}; }}\n"
                ),
            )?;
        }
    }
    let closure = scan_closure(&ScanRequest {
        source: "k.cu",
        include_dirs: &[],
        base_dir: dir.path(),
        declared_in: "tests/cache_faults/emit.rs",
    })
    .map_err(|e| e.to_string())?;
    ensure(closure.files.len() == 2 * LEVELS + 1, || {
        format!("{} files in the closure", closure.files.len())
    })?;
    let mut decl = crate::axpby_f32::DECL.clone();
    decl.sources = Cow::Owned(closure.to_sources());
    let unit = translation_unit(&decl, &[]).map_err(s)?;
    ensure(unit.source.len() < 16_000, || {
        format!("a {}-byte unit", unit.source.len())
    })?;
    ensure(unit.source.matches("int f20b()").count() == 1, || {
        "the deepest header is written once".into()
    })?;
    with_nvrtc(|| {
        let c = compile_cached(&decl, &[], Target::cubin(90), None).map_err(s)?;
        ensure(c.outcome == CacheOutcome::Compiled, || {
            format!("{:?}", c.outcome)
        })?;
        Ok(Outcome::Pass)
    })
}
