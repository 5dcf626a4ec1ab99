//! The JIT, GPU-free half: declaration + constexpr values + arch → compiled artifact, through the
//! disk cache. Loading onto a device is `loader`'s job.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use opbox_codegen::cuda::{
    alias_key, cache_key, emit_with_structs, AliasInputs, CacheKey, ConstValue, KernelDecl,
    KeyInputs, TranslationUnit,
};

use super::artifact::{Artifact, ImageKind};
use super::disk_cache::{DiskCache, Lookup};
use super::nvrtc;
use crate::error::{Error, Result};

/// What a compile request targets: a cubin for `sm_XX`, or PTX for `compute_XX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub kind: ImageKind,
    /// `90` for sm_90.
    pub arch: u32,
}

impl Target {
    /// Parses `sm_90` (cubin) or `compute_90` (PTX).
    pub fn parse(arch: &str) -> Result<Target> {
        let (kind, num) = if let Some(n) = arch.strip_prefix("sm_") {
            (ImageKind::Cubin, n)
        } else if let Some(n) = arch.strip_prefix("compute_") {
            (ImageKind::Ptx, n)
        } else {
            return Err(Error::InvalidArgument(format!(
                "unknown GPU arch '{arch}': expected sm_XX or compute_XX"
            )));
        };
        let arch = num.parse().map_err(|_| {
            Error::InvalidArgument(format!(
                "unknown GPU arch '{arch}': expected sm_XX or compute_XX"
            ))
        })?;
        Ok(Target { kind, arch })
    }

    pub fn name(&self) -> String {
        match self.kind {
            ImageKind::Cubin => format!("sm_{}", self.arch),
            ImageKind::Ptx => format!("compute_{}", self.arch),
        }
    }

    /// The best target for a device of compute capability `cc` given the `sm_XX` numbers this
    /// NVRTC supports: the device's own cubin when supported; else PTX for the newest supported
    /// arch below it, which the driver JIT-compiles forward; else the device's own PTX.
    pub fn for_device(cc: (u32, u32), supported: &[i32]) -> Target {
        let want = cc.0 * 10 + cc.1;
        if supported.iter().any(|&a| a as u32 == want) {
            return Target {
                kind: ImageKind::Cubin,
                arch: want,
            };
        }
        let below = supported
            .iter()
            .map(|&a| a as u32)
            .filter(|&a| a < want)
            .max();
        Target {
            kind: ImageKind::Ptx,
            arch: below.unwrap_or(want),
        }
    }
}

static COMPILES: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);
pub(crate) static MEMORY_ENTRIES: AtomicU64 = AtomicU64::new(0);

/// What the kernel caches did in this process: `opbox::cache::stats()`.
///
/// One kernel specialization (a declaration and its `#[constexpr]` values) is compiled once: the
/// first request runs NVRTC (`compiles`) or reads the disk cache (`disk_hits`); a launch on a
/// device then keeps the loaded function in memory (`memory_entries`, one per kernel,
/// specialization and device), and every later launch of it finds it there, with no hashing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// NVRTC compilations.
    pub compiles: u64,
    /// Requests served by the disk cache (full key or device alias).
    pub disk_hits: u64,
    /// Loaded functions held in memory.
    pub memory_entries: u64,
}

impl std::fmt::Display for CacheStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} NVRTC compiles, {} disk-cache hits, {} kernels in memory",
            self.compiles, self.disk_hits, self.memory_entries
        )
    }
}

/// The process's kernel-cache counters.
pub fn stats() -> CacheStats {
    CacheStats {
        compiles: COMPILES.load(Ordering::Relaxed),
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
        memory_entries: MEMORY_ENTRIES.load(Ordering::Relaxed),
    }
}

/// How a compile request was served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Read from the disk cache.
    Hit,
    /// Compiled and stored (or compiled with the disk cache off).
    Compiled,
    /// The entry was corrupt; recompiled and replaced.
    Rebuilt { why: String },
    /// Read from the disk cache through the device alias, without loading NVRTC
    /// (see [`compile_for_device`]).
    DeviceHit,
}

#[derive(Clone, Debug)]
pub struct Compiled {
    pub artifact: Artifact,
    pub key: CacheKey,
    pub outcome: CacheOutcome,
}

/// Compiles `decl` specialized by `constexprs` for `arch` (`sm_90` or `compute_90`), through the
/// process's disk cache (see [`DiskCache::from_env`]). Needs NVRTC, not a GPU.
pub fn compile_for_arch(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    arch: &str,
) -> Result<Artifact> {
    compile_cached(decl, constexprs, Target::parse(arch)?, default_cache()).map(|c| c.artifact)
}

/// The disk cache from the environment, resolved once per process.
pub fn default_cache() -> Option<&'static DiskCache> {
    static CACHE: OnceLock<Option<DiskCache>> = OnceLock::new();
    CACHE.get_or_init(DiskCache::from_env).as_ref()
}

/// [`compile_for_arch`] with an explicit cache (`None`: always compile).
pub fn compile_cached(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    target: Target,
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    let built = apply_build(decl)?;
    let unit = emit_unit(&built.decl, constexprs)?;
    compile_prepared(&built, &unit, constexprs, target, cache)
}

/// [`compile_cached`] for ahead-of-time builds: a cubin is also stored under the device alias
/// of its arch, the entry a launch on such a device reads without loading NVRTC, so a cache
/// directory filled ahead of time serves launches where NVRTC is not installed. The build
/// options are resolved and the unit emitted once for both keys.
pub fn compile_ahead(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    target: Target,
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    let built = apply_build(decl)?;
    let unit = emit_unit(&built.decl, constexprs)?;
    let compiled = compile_prepared(&built, &unit, constexprs, target, cache)?;
    if let (Some(cache), ImageKind::Cubin) = (cache, target.kind) {
        let cc = (target.arch / 10, target.arch % 10);
        let key = device_alias(&built, constexprs, cc);
        // Losing the alias costs a launch an NVRTC load later, nothing more.
        let _ = cache.store(&key, &compiled.artifact);
    }
    Ok(compiled)
}

/// The disk-cache lookup and, on a miss, the NVRTC compile of an emitted unit.
fn compile_prepared(
    built: &Built<'_>,
    unit: &TranslationUnit,
    constexprs: &[ConstValue],
    target: Target,
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    let decl: &KernelDecl = &built.decl;
    let kernel = decl.rust_name.as_ref();
    let options = options_for(decl, target);
    let key = cache_key(&KeyInputs {
        opbox_version: env!("CARGO_PKG_VERSION"),
        nvrtc_version: nvrtc::version()?,
        arch: &target.name(),
        options: &options,
        decl,
        constexprs,
        unit,
        build: built.key,
    });
    let mut outcome = CacheOutcome::Compiled;
    if let Some(cache) = cache {
        match cache.load(&key) {
            Lookup::Hit(artifact) if artifact.kind == target.kind => {
                DISK_HITS.fetch_add(1, Ordering::Relaxed);
                return Ok(Compiled {
                    artifact,
                    key,
                    outcome: CacheOutcome::Hit,
                });
            }
            Lookup::Hit(_) | Lookup::Miss => {}
            Lookup::Corrupt(why) => outcome = CacheOutcome::Rebuilt { why },
        }
    }
    let mut nvrtc_options = options;
    nvrtc_options.extend(built.include_options.iter().cloned());
    let artifact = nvrtc::compile(unit, &nvrtc_options, target.kind, kernel)
        .map_err(|e| with_site(e, decl))?;
    COMPILES.fetch_add(1, Ordering::Relaxed);
    if let Some(cache) = cache {
        // A cache that cannot be written costs the next process a compile, nothing more.
        let _ = cache.store(&key, &artifact);
    }
    Ok(Compiled {
        artifact,
        key,
        outcome,
    })
}

/// The artifact to load on a device of compute capability `cc`: from the disk cache through a
/// *device alias* when one exists, else through [`compile_cached`] (which needs NVRTC).
///
/// Why an alias: the full key holds NVRTC's version and the target depends on the archs NVRTC
/// supports, so computing it loads libnvrtc, about 10 ms in a fresh process, five times the
/// budget of a first launch over a warm cache. The alias is a second cache entry keyed by
/// everything except NVRTC (opbox version, the device's arch, options, preamble, constexpr
/// values, every closure file's relative name and content, the emitted translation unit), written
/// after each successful compile or hit. A fresh process reads it with no NVRTC at all.
///
/// Trade-off: after an NVRTC upgrade the alias still serves the image the old NVRTC made. That
/// image is valid for the device; to rebuild with the new compiler, clear the cache directory.
pub fn compile_for_device(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    cc: (u32, u32),
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    let Some(cache) = cache else {
        let target = Target::for_device(cc, &nvrtc::supported_archs()?);
        return compile_cached(decl, constexprs, target, None);
    };
    // The alias needs no unit: it is emitted only for a compile.
    let built = apply_build(decl)?;
    let key = device_alias(&built, constexprs, cc);
    if let Lookup::Hit(artifact) = cache.load(&key) {
        DISK_HITS.fetch_add(1, Ordering::Relaxed);
        return Ok(Compiled {
            artifact,
            key,
            outcome: CacheOutcome::DeviceHit,
        });
    }
    let target = Target::for_device(cc, &nvrtc::supported_archs()?);
    let unit = emit_unit(&built.decl, constexprs)?;
    let compiled = compile_prepared(&built, &unit, constexprs, target, Some(cache))?;
    // Losing the alias costs the next process an NVRTC load, nothing more.
    let _ = cache.store(&key, &compiled.artifact);
    Ok(compiled)
}

/// The device alias key (see [`compile_for_device`]): computed without NVRTC and without
/// emitting the unit, which in a fresh process costs more than the rest of a first launch's
/// lookup together.
fn device_alias(built: &Built<'_>, constexprs: &[ConstValue], cc: (u32, u32)) -> CacheKey {
    let decl: &KernelDecl = &built.decl;
    let arch = cc.0 * 10 + cc.1;
    let target = Target {
        kind: ImageKind::Cubin,
        arch,
    };
    let shared = crate::kernel::registry::shared_structs(decl);
    alias_key(&AliasInputs {
        opbox_version: env!("CARGO_PKG_VERSION"),
        arch,
        options: &portable_options(decl, target),
        decl,
        constexprs,
        build: built.key,
        shared_structs: &shared,
    })
}

/// A declaration with its build options (`build = path::to::OPTIONS`) applied: their preamble in
/// front of the declaration's own, their include dirs as NVRTC options (kept out of the key:
/// absolute paths), and their key component (preamble and dependency contents).
struct Built<'d> {
    decl: Cow<'d, KernelDecl>,
    include_options: Vec<String>,
    key: Option<[u8; 32]>,
}

/// Resolves `decl`'s build options (checking every path, reading every dependency).
fn apply_build(decl: &KernelDecl) -> Result<Built<'_>> {
    let Some(build) = decl.build else {
        return Ok(Built {
            decl: Cow::Borrowed(decl),
            include_options: Vec::new(),
            key: None,
        });
    };
    let resolved = (build.get)().resolve().map_err(|e| {
        Error::BuildInputs(format!(
            "kernel {} (build = {}): {e}",
            decl.rust_name, build.path
        ))
    })?;
    let mut owned = decl.clone();
    if !resolved.preamble.is_empty() {
        owned.preamble = Cow::Owned(format!("{}{}", resolved.preamble, decl.preamble));
    }
    Ok(Built {
        decl: Cow::Owned(owned),
        include_options: resolved
            .include_dirs
            .iter()
            .map(|d| format!("--include-path={}", d.display()))
            .collect(),
        key: Some(resolved.key_component()),
    })
}

/// The translation unit NVRTC gets for `decl` specialized by `constexprs`, its build options
/// applied (for tools and tests; needs neither NVRTC nor a GPU).
pub fn translation_unit(decl: &KernelDecl, constexprs: &[ConstValue]) -> Result<TranslationUnit> {
    let built = apply_build(decl)?;
    emit_unit(&built.decl, constexprs)
}

/// NVRTC options for `decl` on `target`: the arch, C++17, the CUDA headers when a toolkit is
/// installed (for <cuda_fp16.h> and friends), then the declaration's own options.
pub fn options_for(decl: &KernelDecl, target: Target) -> Vec<String> {
    let mut options = portable_options(decl, target);
    let own = options.split_off(2);
    for dir in cuda_include_dirs() {
        options.push(format!("--include-path={}", dir.display()));
    }
    options.extend(own);
    options
}

/// [`options_for`] without the toolkit's include paths, which differ between machines.
fn portable_options(decl: &KernelDecl, target: Target) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={}", target.name()),
        "-std=c++17".to_string(),
    ];
    options.extend(decl.options.iter().map(|o| o.to_string()));
    options
}

/// `<toolkit>/include` (and its CCCL dir, which CUDA 13's headers need) for the first toolkit
/// found in `$CUDA_HOME`, `$CUDA_PATH` or `/usr/local/cuda`; found once per process.
fn cuda_include_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let roots = ["CUDA_HOME", "CUDA_PATH"]
            .into_iter()
            .filter_map(std::env::var_os)
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
    })
}

/// Adds where the Rust declaration is to a compile error, which the translation unit leaves out
/// to keep the cache key independent of it.
fn with_site(e: Error, decl: &KernelDecl) -> Error {
    match e {
        Error::Compile { kernel, log } => Error::Compile {
            log: format!(
                "{log}\n(Rust declaration at {}: {}; entry '{}' in {})",
                decl.declared_at,
                decl.rust_signature(),
                decl.entry,
                decl.entry_file()
            ),
            kernel,
        },
        other => other,
    }
}

/// The unit NVRTC compiles for `decl`: its own declaration, plus the C++ twins of the structs
/// that the other kernels in its entry file take (see [`super::kernels::shared_structs`]).
fn emit_unit(decl: &KernelDecl, constexprs: &[ConstValue]) -> Result<TranslationUnit> {
    let shared = crate::kernel::registry::shared_structs(decl);
    emit_with_structs(decl, constexprs, &shared).map_err(|e| Error::InvalidArgument(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print() {
        assert_eq!(
            Target::parse("sm_90").ok(),
            Some(Target {
                kind: ImageKind::Cubin,
                arch: 90
            })
        );
        assert_eq!(
            Target::parse("compute_89").ok(),
            Some(Target {
                kind: ImageKind::Ptx,
                arch: 89
            })
        );
        assert_eq!(
            Target::parse("sm_90").map(|t| t.name()).ok().as_deref(),
            Some("sm_90")
        );
        assert!(Target::parse("gfx90a").is_err());
        assert!(Target::parse("sm_x").is_err());
    }

    #[test]
    fn device_targets_prefer_cubin_then_fall_back_to_ptx() {
        let supported = [75, 80, 86, 89, 90, 100, 120];
        assert_eq!(
            Target::for_device((9, 0), &supported),
            Target {
                kind: ImageKind::Cubin,
                arch: 90
            }
        );
        // A device newer than this NVRTC knows: PTX of the newest arch below it.
        assert_eq!(
            Target::for_device((12, 1), &supported),
            Target {
                kind: ImageKind::Ptx,
                arch: 120
            }
        );
        // Older than anything supported: its own PTX (NVRTC will say why if it cannot).
        assert_eq!(
            Target::for_device((5, 0), &supported),
            Target {
                kind: ImageKind::Ptx,
                arch: 50
            }
        );
    }
}
