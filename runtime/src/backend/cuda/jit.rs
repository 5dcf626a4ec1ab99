//! The JIT, GPU-free half: declaration + constexpr values + arch → compiled artifact, through the
//! disk cache. Loading onto a device is `loader`'s job.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use opbox_codegen::cuda::{
    alias_key, cache_key, emit_module, shares_module, AliasInputs, CacheKey, ConstValue,
    ConstexprStyle, KernelDecl, KeyInputs, ModuleMember, TranslationUnit,
};

use super::artifact::Artifact;
use super::disk_cache::{DiskCache, Lookup};
use super::nvrtc;
use super::single_flight::{Role, SingleFlight};
use super::target::Target;
use super::toolkit;
use crate::error::{Error, Result};

static COMPILES: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);
static WAITS: AtomicU64 = AtomicU64::new(0);
pub(crate) static MEMORY_ENTRIES: AtomicU64 = AtomicU64::new(0);

/// What the kernel caches did in this process: `opbox::cache::stats()`.
///
/// One module (every kernel declared over one source file with the same build inputs, or one
/// `#[constexpr]` specialization) is compiled once: the first request runs NVRTC (`compiles`) or
/// reads the disk cache (`disk_hits`); a launch on a device then keeps the loaded function in
/// memory (`memory_entries`, one per kernel, specialization and device), and every later launch
/// of it finds it there, with no hashing. The other kernels of a loaded module take their
/// functions from it, with neither NVRTC nor the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// NVRTC compilations.
    pub compiles: u64,
    /// Requests served by the disk cache (full key or device alias).
    pub disk_hits: u64,
    /// Requests that waited for another thread's compile (or lookup) of the same kernel
    /// instead of running NVRTC again.
    pub waits: u64,
    /// Loaded functions held in memory.
    pub memory_entries: u64,
}

impl std::fmt::Display for CacheStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} NVRTC compiles, {} disk-cache hits, {} kernels in memory, {} waits for a compile in flight",
            self.compiles, self.disk_hits, self.memory_entries, self.waits
        )
    }
}

/// The process's kernel-cache counters.
pub fn stats() -> CacheStats {
    CacheStats {
        compiles: COMPILES.load(Ordering::Relaxed),
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
        waits: WAITS.load(Ordering::Relaxed),
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
    Rebuilt {
        /// What was wrong with the entry.
        why: String,
    },
    /// Read from the disk cache through the device alias, without loading NVRTC
    /// (see [`compile_for_device`]).
    DeviceHit,
}

/// One compile's result: the module's image, its cache key and how the cache served it.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The module's image, with every member's symbol.
    pub artifact: Artifact,
    /// The content-addressed key the image is stored under.
    pub key: CacheKey,
    /// Whether it was compiled, read from the disk cache, or rebuilt.
    pub outcome: CacheOutcome,
    /// The requested kernel's place among the module's members.
    pub member: usize,
}

impl Compiled {
    /// The requested kernel's symbol in the image.
    pub fn lowered_name(&self) -> &str {
        self.artifact
            .lowered_names
            .get(self.member)
            .map_or("", String::as_str)
    }
}

/// Compiles `decl` specialized by `constexprs` for `arch` (`sm_90` or `compute_90`), through the
/// process's disk cache (see [`DiskCache::from_env`]). Needs NVRTC, not a GPU.
/// The artifact holds the image of `decl`'s whole module and the one symbol of `decl`.
pub fn compile_for_arch(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    arch: &str,
) -> Result<Artifact> {
    let c = compile_cached(decl, constexprs, Target::parse(arch)?, default_cache())?;
    Ok(Artifact {
        kind: c.artifact.kind,
        lowered_names: vec![c.lowered_name().to_string()],
        image: c.artifact.image,
    })
}

/// The disk cache from the environment, resolved once per process.
pub fn default_cache() -> Option<&'static DiskCache> {
    static CACHE: OnceLock<Option<DiskCache>> = OnceLock::new();
    CACHE.get_or_init(DiskCache::from_env).as_ref()
}

/// [`compile_for_arch`] with an explicit cache (`None`: always compile). A cache that cannot be
/// written is a warning (printed once per process): the kernel is compiled, and the next process
/// compiles it again.
pub fn compile_cached(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    target: Target,
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    with_fallback(decl, constexprs, |built| {
        let unit = emit_unit(built)?;
        compile_prepared(built, &unit, target, cache, Writes::BestEffort)
    })
}

/// [`compile_cached`] for ahead-of-time builds: a portable cubin is also stored under the device
/// alias of its arch, the entry a launch on such a device reads without loading NVRTC, so a
/// cache directory filled ahead of time serves launches where NVRTC is not installed. The build
/// options are resolved and the unit emitted once for both keys. Filling the cache is part of
/// the job here: an entry that cannot be written is an error.
pub fn compile_ahead(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    target: Target,
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    with_fallback(decl, constexprs, |built| {
        let unit = emit_unit(built)?;
        let compiled = compile_prepared(built, &unit, target, cache, Writes::Required)?;
        if let (Some(cache), Some(cc)) = (cache, target.alias_cc()) {
            cache.store(&device_alias(built, cc), &compiled.artifact)?;
        }
        Ok(compiled)
    })
}

/// Runs `compile` on `decl`'s module and, when the module does not compile but has other
/// kernels too, on `decl` alone: a mistake in one declaration of a file (a signature mismatch)
/// is reported for that kernel and does not take its file's other kernels down with it.
fn with_fallback(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    compile: impl Fn(&Built<'_>) -> Result<Compiled>,
) -> Result<Compiled> {
    fallback_from(
        &apply_build(decl, constexprs, Grouping::Module)?,
        decl,
        constexprs,
        compile,
    )
}

/// [`with_fallback`] over a module already built.
fn fallback_from(
    module: &Built<'_>,
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    compile: impl Fn(&Built<'_>) -> Result<Compiled>,
) -> Result<Compiled> {
    match compile(module) {
        Err(Error::Compile { .. }) if module.members.len() > 1 => {
            compile(&apply_build(decl, constexprs, Grouping::Alone)?)
        }
        result => result,
    }
}

/// Compiles the `#[constexpr]` specializations `specs` of one template-style kernel
/// (`constexpr = "template"`) as one unit, one NVRTC compile for all of them, and stores the image
/// under each specialization's own keys: its full key and, for a cubin, its device alias. Compiling
/// or launching any one of them afterwards reads the disk cache, as if each had been compiled on
/// its own (the image holds the others' functions too, which nothing loads).
///
/// What `opbox aot` runs before its per-kernel jobs. Returns how many specializations it stored;
/// nothing to share (no cache, fewer than two, defines rather than template arguments) is `Ok(0)`.
pub fn compile_specializations(
    decl: &KernelDecl,
    specs: &[&[ConstValue]],
    target: Target,
    cache: Option<&DiskCache>,
) -> Result<usize> {
    let (Some(cache), [first, ..]) = (cache, specs) else {
        return Ok(0);
    };
    if specs.len() < 2 || decl.constexpr_style != ConstexprStyle::TemplateArgs {
        return Ok(0);
    }
    let single = apply_build(decl, first, Grouping::Alone)?;
    let built_decl = single.members[0].0.clone();
    fn with<'d>(
        members: Vec<(Cow<'d, KernelDecl>, &'d [ConstValue])>,
        like: &Built<'_>,
    ) -> Built<'d> {
        Built {
            members,
            requested: 0,
            include_options: like.include_options.clone(),
            key: like.key,
            alias: OnceCell::new(),
        }
    }
    let group = with(
        specs.iter().map(|v| (built_decl.clone(), *v)).collect(),
        &single,
    );
    let artifact = run_nvrtc(&group, &emit_unit(&group)?, target)?;
    for (v, name) in specs.iter().zip(&artifact.lowered_names) {
        let own = with(vec![(built_decl.clone(), *v)], &single);
        let key = full_key(&own, &emit_unit(&own)?, target)?;
        let image = Artifact {
            kind: artifact.kind,
            lowered_names: vec![name.clone()],
            image: artifact.image.clone(),
        };
        cache.store(&key, &image)?;
        if let Some(cc) = target.alias_cc() {
            cache.store(&device_alias(&own, cc), &image)?;
        }
    }
    Ok(specs.len())
}

/// What a cache entry that cannot be written costs the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Writes {
    /// A warning: the next process compiles again (launches, compile-only calls).
    BestEffort,
    /// An error: filling the cache is what was asked (`opbox aot`).
    Required,
}

/// One flight per (key, cache directory, write policy): concurrent requests for one kernel wait
/// for one lookup and compile.
type FlightKey = (CacheKey, Option<PathBuf>, Writes);
static FLIGHTS: SingleFlight<FlightKey, Result<Compiled>> = SingleFlight::new();

/// The disk-cache lookup and, on a miss, the NVRTC compile of an emitted unit, run once however
/// many threads ask for it at the same time.
fn compile_prepared(
    built: &Built<'_>,
    unit: &TranslationUnit,
    target: Target,
    cache: Option<&DiskCache>,
    writes: Writes,
) -> Result<Compiled> {
    let key = full_key(built, unit, target)?;
    let flight = (key, cache.map(|c| c.dir().to_path_buf()), writes);
    let (result, role) = FLIGHTS.run(flight, || {
        lookup_or_compile(built, unit, target, key, cache, writes)
    });
    if role == Role::Waited {
        WAITS.fetch_add(1, Ordering::Relaxed);
    }
    result
}

fn lookup_or_compile(
    built: &Built<'_>,
    unit: &TranslationUnit,
    target: Target,
    key: CacheKey,
    cache: Option<&DiskCache>,
    writes: Writes,
) -> Result<Compiled> {
    let mut outcome = CacheOutcome::Compiled;
    let mut unreadable = None;
    if let Some(cache) = cache {
        match cache.load(&key) {
            Lookup::Hit(artifact)
                if artifact.kind == target.kind
                    && artifact.lowered_names.len() == built.members.len() =>
            {
                return Ok(disk_hit(artifact, key, CacheOutcome::Hit, built));
            }
            Lookup::Hit(_) | Lookup::Miss => {}
            Lookup::Corrupt(why) => outcome = CacheOutcome::Rebuilt { why },
            Lookup::Unreadable(why) => unreadable = Some(why),
        }
    }
    let artifact =
        run_nvrtc(built, unit, target).map_err(|e| with_cache_note(e, unreadable.as_deref()))?;
    if let Some(cache) = cache {
        stored(cache.store(&key, &artifact), writes)?;
    }
    Ok(Compiled {
        artifact,
        key,
        outcome,
        member: built.requested,
    })
}

/// The full cache key of `built`'s module as `unit`, compiled for `target`.
fn full_key(built: &Built<'_>, unit: &TranslationUnit, target: Target) -> Result<CacheKey> {
    Ok(cache_key(&KeyInputs {
        opbox_version: env!("CARGO_PKG_VERSION"),
        nvrtc_version: nvrtc::version()?,
        arch: &target.name(),
        options: &options_for(built.decl(), target),
        members: &built.members(),
        unit,
        build: built.key,
    }))
}

/// Runs NVRTC on `built`'s unit for `target` (the key's options, then the machine's include
/// dirs), counted in [`stats`]; a compile error comes back explained.
fn run_nvrtc(built: &Built<'_>, unit: &TranslationUnit, target: Target) -> Result<Artifact> {
    let decl = built.decl();
    let mut options = options_for(decl, target);
    options.extend(toolkit::include_options().iter().cloned());
    options.extend(built.include_options.iter().cloned());
    let artifact = nvrtc::compile(unit, &options, target.kind, &decl.rust_name)
        .map_err(|e| explained(e, built))?;
    COMPILES.fetch_add(1, Ordering::Relaxed);
    Ok(artifact)
}

/// A request the disk cache served (counted in [`stats`]).
fn disk_hit(
    artifact: Artifact,
    key: CacheKey,
    outcome: CacheOutcome,
    built: &Built<'_>,
) -> Compiled {
    DISK_HITS.fetch_add(1, Ordering::Relaxed);
    Compiled {
        artifact,
        key,
        outcome,
        member: built.requested,
    }
}

/// A store's result under `writes`: a best-effort failure is warned about once per process.
fn stored(result: Result<()>, writes: Writes) -> Result<()> {
    static WARNED: AtomicBool = AtomicBool::new(false);
    match (result, writes) {
        (Err(e), Writes::BestEffort) => {
            if !WARNED.swap(true, Ordering::Relaxed) {
                eprintln!("opbox: warning: {e}; kernels are compiled again in the next process");
            }
            Ok(())
        }
        (result, _) => result,
    }
}

/// Adds why the disk cache could not serve a request to the error that ended it, which would
/// otherwise blame NVRTC alone.
fn with_cache_note(e: Error, unreadable: Option<&str>) -> Error {
    let Some(why) = unreadable else { return e };
    let note = format!("the disk cache could not serve it either: {why}");
    match e {
        Error::NoCuda { reason } => Error::NoCuda {
            reason: format!("{reason} ({note})"),
        },
        Error::Compile { kernel, log } => Error::Compile {
            kernel,
            log: format!("{log}\n({note})"),
        },
        other => other,
    }
}

/// The artifact to load on a device of compute capability `cc`: from the disk cache through a
/// *device alias* when one exists, else through [`compile_cached`] (which needs NVRTC).
///
/// Why an alias: the full key holds NVRTC's version and the target depends on the archs NVRTC
/// supports, so computing it loads libnvrtc, about 10 ms in a fresh process, five times the
/// budget of a first launch over a warm cache. The alias is a second cache entry keyed by
/// everything except NVRTC (opbox version, the device's arch, options, preamble, constexpr
/// values, every closure file's relative name and content, and the emitter by its source
/// digest in place of the emitted unit, so a lookup emits nothing), written after each
/// successful compile or hit. A fresh process reads it with no NVRTC at all.
///
/// Trade-off: after an NVRTC upgrade the alias still serves the image the old NVRTC made. That
/// image is valid for the device; to rebuild with the new compiler, clear the cache directory.
pub fn compile_for_device(
    decl: &KernelDecl,
    constexprs: &[ConstValue],
    cc: (u32, u32),
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    compile_device_module(&device_module(decl, constexprs, cc)?, cache)
}

/// [`compile_for_device`] for a module the caller already looked up by its alias (the loader):
/// the build options are resolved and the alias hashed once for both.
pub(crate) fn compile_device_module(
    module: &DeviceModule<'_>,
    cache: Option<&DiskCache>,
) -> Result<Compiled> {
    let (decl, constexprs, cc) = (module.decl, module.constexprs, module.cc);
    let Some(cache) = cache else {
        let target = Target::for_device(cc, &nvrtc::supported_archs()?);
        return compile_cached(decl, constexprs, target, None);
    };
    fallback_from(&module.built, decl, constexprs, |built| {
        // The alias needs no unit: it is emitted only for a compile.
        let key = device_alias(built, cc);
        let unreadable = match cache.load(&key) {
            Lookup::Hit(artifact) if artifact.lowered_names.len() == built.members.len() => {
                return Ok(disk_hit(artifact, key, CacheOutcome::DeviceHit, built));
            }
            Lookup::Unreadable(why) => Some(why),
            Lookup::Hit(_) | Lookup::Miss | Lookup::Corrupt(_) => None,
        };
        let note = |e| with_cache_note(e, unreadable.as_deref());
        let target = Target::for_device(cc, &nvrtc::supported_archs().map_err(note)?);
        let unit = emit_unit(built)?;
        let compiled = compile_prepared(built, &unit, target, Some(cache), Writes::BestEffort)
            .map_err(note)?;
        // Losing the alias costs the next process an NVRTC load, nothing more.
        stored(cache.store(&key, &compiled.artifact), Writes::BestEffort)?;
        Ok(compiled)
    })
}

/// `decl`'s module for a device of compute capability `cc`, its build options applied, with its
/// device alias key (see [`compile_for_device`]): what the loader keys its loaded modules by,
/// and, on a miss, what it compiles.
pub(crate) struct DeviceModule<'d> {
    decl: &'d KernelDecl,
    constexprs: &'d [ConstValue],
    cc: (u32, u32),
    built: Built<'d>,
}

impl DeviceModule<'_> {
    /// The module's device alias.
    pub(crate) fn alias(&self) -> CacheKey {
        device_alias(&self.built, self.cc)
    }

    /// `decl`'s index among the members.
    pub(crate) fn member(&self) -> usize {
        self.built.requested
    }

    pub(crate) fn members(&self) -> usize {
        self.built.members.len()
    }
}

pub(crate) fn device_module<'d>(
    decl: &'d KernelDecl,
    constexprs: &'d [ConstValue],
    cc: (u32, u32),
) -> Result<DeviceModule<'d>> {
    Ok(DeviceModule {
        decl,
        constexprs,
        cc,
        built: apply_build(decl, constexprs, Grouping::Module)?,
    })
}

/// The device alias key (see [`compile_for_device`]): computed without NVRTC and without
/// emitting the unit, which in a fresh process costs more than the rest of a first launch's
/// lookup together. Computed once per built module (the loader's lookup and its compile on a
/// miss share it).
fn device_alias(built: &Built<'_>, cc: (u32, u32)) -> CacheKey {
    if let Some((memo_cc, key)) = built.alias.get() {
        if *memo_cc == cc {
            return *key;
        }
    }
    let key = compute_device_alias(built, cc);
    let _ = built.alias.set((cc, key));
    key
}

fn compute_device_alias(built: &Built<'_>, cc: (u32, u32)) -> CacheKey {
    let decl = built.decl();
    let arch = cc.0 * 10 + cc.1;
    let shared = crate::kernel::registry::shared_structs(decl);
    alias_key(&AliasInputs {
        opbox_version: env!("CARGO_PKG_VERSION"),
        arch,
        options: &options_for(decl, Target::cubin(arch)),
        members: &built.members(),
        build: built.key,
        shared_structs: &shared,
    })
}

/// Which kernels a compile puts in one unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grouping {
    /// The requested kernel's whole module.
    Module,
    /// The requested kernel only.
    Alone,
}

/// A module with its build options (`build = path::to::OPTIONS`) applied to every member: their
/// preamble in front of the declaration's own, their include dirs as NVRTC options (kept out of
/// the key: absolute paths), and their key component (preamble and dependency contents).
struct Built<'d> {
    /// `(declaration, #[constexpr] values)` of each member, in the unit's order.
    members: Vec<(Cow<'d, KernelDecl>, &'d [ConstValue])>,
    /// The requested kernel's index in `members`.
    requested: usize,
    include_options: Vec<String>,
    key: Option<[u8; 32]>,
    /// The device alias once computed, with the compute capability it is for.
    alias: OnceCell<((u32, u32), CacheKey)>,
}

impl Built<'_> {
    fn members(&self) -> Vec<ModuleMember<'_>> {
        self.members
            .iter()
            .map(|(decl, constexprs)| ModuleMember { decl, constexprs })
            .collect()
    }

    /// The requested kernel's declaration.
    fn decl(&self) -> &KernelDecl {
        &self.members[self.requested].0
    }
}

/// The kernels compiled in one unit with `decl` (see `shares_module`): when `decl` is a
/// registered kernel without `#[constexpr]` parameters, every such registered kernel over the
/// same file and build inputs, in registry order; `decl` alone otherwise. Returns the members
/// and `decl`'s index among them.
fn module_members<'d>(
    decl: &'d KernelDecl,
    constexprs: &'d [ConstValue],
    grouping: Grouping,
) -> (Vec<(&'d KernelDecl, &'d [ConstValue])>, usize) {
    let alone = (vec![(decl, constexprs)], 0);
    let groupable = |d: &KernelDecl| d.constexpr_params().next().is_none();
    if grouping == Grouping::Alone || !groupable(decl) {
        return alone;
    }
    let registered = crate::kernel::registry::registered_kernels();
    if !registered.iter().any(|k| std::ptr::eq(k.decl, decl)) {
        return alone;
    }
    let mut members: Vec<(&'d KernelDecl, &'d [ConstValue])> = Vec::new();
    let mut requested = 0;
    for k in registered {
        if std::ptr::eq(k.decl, decl) {
            requested = members.len();
            members.push((decl, constexprs));
        } else if groupable(k.decl) && shares_module(decl, k.decl) {
            members.push((k.decl, &[]));
        }
    }
    (members, requested)
}

/// Resolves the build options of `decl`'s module (checking every path, reading every
/// dependency, once for all members: they share one build).
fn apply_build<'d>(
    decl: &'d KernelDecl,
    constexprs: &'d [ConstValue],
    grouping: Grouping,
) -> Result<Built<'d>> {
    let (members, requested) = module_members(decl, constexprs, grouping);
    let Some(build) = decl.build else {
        return Ok(Built {
            members: members
                .into_iter()
                .map(|(d, c)| (Cow::Borrowed(d), c))
                .collect(),
            requested,
            include_options: Vec::new(),
            key: None,
            alias: OnceCell::new(),
        });
    };
    let resolved = (build.get)().resolve().map_err(|e| {
        Error::BuildInputs(format!(
            "kernel {} (build = {}): {e}",
            decl.rust_name, build.path
        ))
    })?;
    let with_preamble = |d: &KernelDecl| {
        let mut owned = d.clone();
        if !resolved.preamble.is_empty() {
            owned.preamble = Cow::Owned(format!("{}{}", resolved.preamble, d.preamble));
        }
        owned
    };
    Ok(Built {
        members: members
            .into_iter()
            .map(|(d, c)| (Cow::Owned(with_preamble(d)), c))
            .collect(),
        requested,
        include_options: resolved
            .include_dirs
            .iter()
            .map(|d| format!("--include-path={}", d.display()))
            .collect(),
        key: Some(resolved.key_component()),
        alias: OnceCell::new(),
    })
}

/// The translation unit NVRTC gets for `decl` specialized by `constexprs`, its build options
/// applied (for tools and tests; needs neither NVRTC nor a GPU).
pub fn translation_unit(decl: &KernelDecl, constexprs: &[ConstValue]) -> Result<TranslationUnit> {
    emit_unit(&apply_build(decl, constexprs, Grouping::Alone)?)
}

/// The NVRTC options for `decl` on `target` that a cache key holds: the arch, C++17, then the
/// declaration's own options. The include dirs of the CUDA toolkit (`toolkit`) and of the
/// build options are machine paths: they are passed to NVRTC after these, and no key sees them.
pub fn options_for(decl: &KernelDecl, target: Target) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={}", target.name()),
        "-std=c++17".to_string(),
    ];
    options.extend(decl.options.iter().map(|o| o.to_string()));
    options
}

/// A compile error made readable: a failed signature check as one line per mismatch
/// (`explain_check_failures`), a missing header with where opbox looked for it, and where the
/// Rust declaration is, which the unit leaves out to keep the cache key independent of it.
fn explained(e: Error, built: &Built<'_>) -> Error {
    let decl = built.decl();
    match e {
        Error::Compile { kernel, log } => {
            let mut head = String::new();
            if let Some(checks) = opbox_codegen::cuda::explain_check_failures(&log) {
                head = format!("{checks}\n\nNVRTC's log:\n");
            }
            let header_note = toolkit::missing_header_note(&log, decl)
                .map(|n| format!("\n{n}"))
                .unwrap_or_default();
            let others = if built.members.len() > 1 {
                format!(
                    "; compiled in one unit with the other {} kernels of {}",
                    built.members.len() - 1,
                    decl.entry_file()
                )
            } else {
                String::new()
            };
            Error::Compile {
                log: format!(
                    "{head}{log}{header_note}\n(Rust declaration at {}: {}; entry '{}' in {}{others})",
                    decl.declared_at,
                    decl.rust_signature(),
                    decl.entry,
                    decl.entry_file()
                ),
                kernel,
            }
        }
        other => other,
    }
}

/// The unit NVRTC compiles for a module: its members, plus the C++ twins of the structs that the
/// other kernels in its entry file take (see [`super::kernels::shared_structs`]).
fn emit_unit(built: &Built<'_>) -> Result<TranslationUnit> {
    let shared = crate::kernel::registry::shared_structs(built.decl());
    emit_module(&built.members(), &shared).map_err(|e| Error::InvalidArgument(e.to_string()))
}
