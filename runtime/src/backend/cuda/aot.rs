//! Ahead-of-time compilation: kernels → cubin / PTX files, for shipping without NVRTC or for
//! external runtimes (`abi = "constant_params"` entries).
//!
//! [`compile`] writes one file per (target, kernel): `<out_dir>/<kernel>.<arch>.cubin` for an
//! `sm_XX` target and `.ptx` for `compute_XX` (a specialization's stem adds a digest of its
//! constexpr values), through the same emitter, build options and checks as a launch. It
//! returns the paths in target order: the devices' targets first (each device's best target,
//! as a launch would load it: its own cubin when NVRTC supports its arch), then the explicit
//! arches; within a target, the kernels in the order given: one path per (target, kernel), a
//! file shared when a device's target equals an explicit arch.
//!
//! Compiles go through the process's disk cache (`OPBOX_CACHE_DIR`), so running AOT twice, or
//! after the kernels were launched once, compiles nothing new; they run in parallel.
//! [`session`](super::aot_session) drives the same steps for the `opbox aot` command.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use opbox_codegen::cuda::{ConstValue, KernelDecl};

use super::artifact::ImageKind;
use super::context::device;
use super::jit::{compile_ahead, compile_cached, compile_specializations, default_cache};
use super::nvrtc;
use super::target::Target;
use crate::error::{Error, Result};

/// One kernel to compile: a declaration and, for a kernel with `#[constexpr]` params, the values
/// of one specialization (in declaration order).
#[derive(Clone, Copy, Debug)]
pub struct AotKernel<'a> {
    /// The kernel's declaration (`k::DECL`).
    pub decl: &'a KernelDecl,
    /// One specialization's `#[constexpr]` values; empty for a kernel without any.
    pub constexprs: &'a [ConstValue],
}

impl<'a> From<&'a KernelDecl> for AotKernel<'a> {
    fn from(decl: &'a KernelDecl) -> AotKernel<'a> {
        AotKernel {
            decl,
            constexprs: &[],
        }
    }
}

/// What to compile for, and where the files go.
#[derive(Clone, Debug, Default)]
pub struct AotTargets {
    /// CUDA device ordinals: each contributes its best target (needs the driver and the device).
    pub devices: Vec<usize>,
    /// `sm_XX` (cubin) or `compute_XX` (PTX); needs NVRTC only.
    pub arches: Vec<String>,
    /// The directory the files are written to (created when missing).
    pub out_dir: PathBuf,
}

/// One (target, kernel) compile and the file it produces.
#[derive(Clone, Debug)]
pub struct AotJob<'a> {
    /// What to compile.
    pub kernel: AotKernel<'a>,
    /// What to compile it for.
    pub target: Target,
    /// The file the image goes to.
    pub path: PathBuf,
    /// False when an earlier job writes the same file (a device's target equal to an explicit
    /// arch): the path is listed again, but compiled and written once.
    pub writes: bool,
}

/// Compiles every kernel for every target and writes the images; returns their paths, devices'
/// targets first, then the explicit arches (see the module docs), or the first job's failure
/// (every job runs either way).
pub fn compile(kernels: &[AotKernel<'_>], targets: &AotTargets) -> Result<Vec<PathBuf>> {
    let jobs = plan(kernels, targets)?;
    let results = run_jobs(&jobs, default_threads(), &|_, _| {});
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(jobs.into_iter().map(|j| j.path).collect())
}

/// Resolves the targets and names every output file, without compiling anything. Creates the
/// output directory. Errors: no kernels, no targets, an unknown arch, a device that is not
/// there, two different kernels that would write one file.
pub fn plan<'a>(kernels: &[AotKernel<'a>], targets: &AotTargets) -> Result<Vec<AotJob<'a>>> {
    let jobs = plan_jobs(kernels, targets)?;
    std::fs::create_dir_all(&targets.out_dir).map_err(|e| io(&targets.out_dir, e))?;
    Ok(jobs)
}

/// [`plan`] without creating the output directory: what a check (`opbox check`), which writes
/// no files, runs.
pub(crate) fn plan_jobs<'a>(
    kernels: &[AotKernel<'a>],
    targets: &AotTargets,
) -> Result<Vec<AotJob<'a>>> {
    if kernels.is_empty() {
        return Err(Error::InvalidArgument(
            "aot::compile: no kernels to compile".into(),
        ));
    }
    if targets.devices.is_empty() && targets.arches.is_empty() {
        return Err(Error::InvalidArgument(
            "aot::compile: no targets (give device ordinals or arches such as sm_90)".into(),
        ));
    }
    let mut resolved = Vec::with_capacity(targets.devices.len() + targets.arches.len());
    if !targets.devices.is_empty() {
        let supported = nvrtc::supported_archs()?;
        for &ordinal in &targets.devices {
            let cc = device(ordinal)?.compute_capability;
            resolved.push(Target::for_device(cc, &supported));
        }
    }
    for arch in &targets.arches {
        let target = Target::parse(arch)?;
        target.check_supported()?;
        resolved.push(target);
    }
    let mut jobs: Vec<AotJob<'a>> = Vec::with_capacity(resolved.len() * kernels.len());
    for target in &resolved {
        for k in kernels {
            let ext = match target.kind {
                ImageKind::Cubin => "cubin",
                ImageKind::Ptx => "ptx",
            };
            let path = targets
                .out_dir
                .join(format!("{}.{}.{ext}", file_stem(k), target.name()));
            let earlier = jobs.iter().find(|j| j.path == path);
            let writes = match earlier {
                None => true,
                // A device target equal to an explicit arch (or a kernel given twice): one file,
                // listed at each place, so the result keeps one path per (target, kernel).
                Some(j) if same_kernel(&j.kernel, k) => false,
                Some(j) => return Err(collision(&j.kernel, k, &path)),
            };
            jobs.push(AotJob {
                kernel: *k,
                target: *target,
                path,
                writes,
            });
        }
    }
    Ok(jobs)
}

/// Compiles one job (through the disk cache) and writes its file when it is the job's to write.
///
/// A cubin also becomes the disk cache's device alias for its arch ([`compile_ahead`]): a cache
/// directory filled by AOT (`OPBOX_CACHE_DIR=dist/kernels opbox aot --arch sm_90`) and shipped
/// serves launches on sm_90 devices where NVRTC is not installed.
pub fn run_job(job: &AotJob<'_>) -> Result<()> {
    if !job.writes {
        return Ok(());
    }
    let compiled = compile_ahead(
        job.kernel.decl,
        job.kernel.constexprs,
        job.target,
        default_cache(),
    )?;
    std::fs::write(&job.path, &compiled.artifact.image).map_err(|e| io(&job.path, e))
}

/// Compiles one job as a launch would (through the disk cache, best effort) and writes no file:
/// a check's job.
pub(crate) fn check_job(job: &AotJob<'_>) -> Result<()> {
    if !job.writes {
        return Ok(());
    }
    compile_cached(
        job.kernel.decl,
        job.kernel.constexprs,
        job.target,
        default_cache(),
    )
    .map(drop)
}

/// Compiles the specializations of each template-style kernel that `jobs` asks for on one target
/// as one unit (see [`compile_specializations`]), filling the disk cache that the jobs then read:
/// one NVRTC compile per (kernel, target) rather than per specialization. A group that fails is
/// left to its jobs, which report the error for each specialization.
fn share_specializations(jobs: &[AotJob<'_>]) {
    let mut groups: Vec<(&KernelDecl, Target, Vec<&[ConstValue]>)> = Vec::new();
    for job in jobs
        .iter()
        .filter(|j| j.writes && !j.kernel.constexprs.is_empty())
    {
        let k = job.kernel;
        match groups
            .iter_mut()
            .find(|(d, t, _)| std::ptr::eq(*d, k.decl) && *t == job.target)
        {
            Some((_, _, specs)) => specs.push(k.constexprs),
            None => groups.push((k.decl, job.target, vec![k.constexprs])),
        }
    }
    for (decl, target, specs) in groups {
        let _ =
            crate::panic::catch(|| compile_specializations(decl, &specs, target, default_cache()));
    }
}

/// Runs `jobs` on up to `threads` threads, calling `on_done(index, result)` as each finishes
/// (from the worker threads, one call at a time); returns every job's result in job order.
/// Every job runs even after one fails, so a build reports all its broken kernels at once.
pub fn run_jobs(
    jobs: &[AotJob<'_>],
    threads: usize,
    on_done: &(dyn Fn(usize, &Result<()>) + Sync),
) -> Vec<Result<()>> {
    run_jobs_with(jobs, threads, run_job, on_done)
}

/// [`run_jobs`] with `run` doing each job: [`run_job`] for AOT, [`check_job`] for a check.
pub(crate) fn run_jobs_with(
    jobs: &[AotJob<'_>],
    threads: usize,
    run: fn(&AotJob<'_>) -> Result<()>,
    on_done: &(dyn Fn(usize, &Result<()>) + Sync),
) -> Vec<Result<()>> {
    share_specializations(jobs);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<()>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(job) = jobs.get(i) else { break };
        // A panic (a build options initializer's, say) fails this job only.
        let result = crate::panic::catch(|| run(job)).unwrap_or_else(|message| {
            Err(Error::Message(format!(
                "kernel '{}' panicked while compiling for {}: {message}",
                job.kernel.decl.rust_name,
                job.target.name()
            )))
        });
        // Reported under the results' lock, so one report runs at a time: callers draw
        // progress bars and print from here.
        let mut all = results.lock().unwrap_or_else(|e| e.into_inner());
        on_done(i, &result);
        if let Some(slot) = all.get_mut(i) {
            *slot = Some(result);
        }
    };
    let threads = threads.clamp(1, jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(worker);
        }
        worker();
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(Error::InvalidArgument(
                    "aot: a compile thread stopped before finishing its job".into(),
                ))
            })
        })
        .collect()
}

/// One compile thread per core: NVRTC compiles are single-threaded and independent.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The longest file stem: with the longest `.compute_XXXf.ptx` it stays far below the 255 bytes
/// a file name may have.
const MAX_STEM: usize = 160;

/// The kernel's name; a specialization adds a digest of its constexpr values, so each of a
/// kernel's specializations gets its own file. A stem too long for a file name keeps its start
/// and ends in a digest of the whole.
fn file_stem(k: &AotKernel<'_>) -> String {
    let name = &k.decl.rust_name;
    let stem = if k.constexprs.is_empty() {
        name.to_string()
    } else {
        format!("{name}-{}", digest(&format!("{:?}", k.constexprs)))
    };
    if stem.len() <= MAX_STEM {
        return stem;
    }
    let keep = MAX_STEM - 17;
    let cut = (0..=keep)
        .rev()
        .find(|&i| stem.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}-{}", &stem[..cut], digest(&stem))
}

/// 16 hex digits of the SHA-256 of `text`.
fn digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn same_kernel(a: &AotKernel<'_>, b: &AotKernel<'_>) -> bool {
    std::ptr::eq(a.decl, b.decl) && a.constexprs == b.constexprs
}

#[cold]
fn collision(first: &AotKernel<'_>, second: &AotKernel<'_>, path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "aot::compile: two different kernels named '{}' ({} and {}) would both be written to '{}'; rename one, or compile them into different directories",
        second.decl.rust_name,
        first.decl.declared_at,
        second.decl.declared_at,
        path.display()
    ))
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::InvalidArgument(format!("aot::compile: writing '{}': {e}", path.display()))
}
