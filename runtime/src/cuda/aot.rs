//! Ahead-of-time compilation: kernels → cubin / PTX files, for shipping without NVRTC or for
//! external runtimes (`abi = "constant_params"` entries).
//!
//! [`compile`] writes one file per (target, kernel), `<out_dir>/<kernel>.<arch>.cubin` for an
//! `sm_XX` target and `.ptx` for `compute_XX`, through the same emitter, build options and
//! checks as a launch, and returns the paths in target order: the devices' targets first (each
//! device's best target, as a launch would load it: its own cubin when NVRTC supports its arch),
//! then the explicit arches; within a target, the kernels in the order given: one path per
//! (target, kernel), a file shared when a device's target equals an explicit arch.

use std::path::{Path, PathBuf};

use opbox_codegen::cuda::{ConstValue, KernelDecl};

use super::artifact::ImageKind;
use super::context::device;
use super::jit::{compile_cached, Target};
use super::nvrtc;
use crate::error::{Error, Result};

/// One kernel to compile: a declaration and, for a kernel with `#[constexpr]` params, the values
/// of one specialization (in declaration order).
#[derive(Clone, Copy, Debug)]
pub struct AotKernel<'a> {
    pub decl: &'a KernelDecl,
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

/// Compiles every kernel for every target and writes the images; returns their paths, devices'
/// targets first, then the explicit arches (see the module docs).
pub fn compile(kernels: &[AotKernel<'_>], targets: &AotTargets) -> Result<Vec<PathBuf>> {
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
        resolved.push(Target::parse(arch)?);
    }
    std::fs::create_dir_all(&targets.out_dir).map_err(|e| io(&targets.out_dir, e))?;
    let mut paths = Vec::with_capacity(resolved.len() * kernels.len());
    let mut written: Vec<(PathBuf, &KernelDecl)> = Vec::new();
    for target in &resolved {
        for k in kernels {
            let compiled = compile_cached(k.decl, k.constexprs, *target, None)?;
            let ext = match compiled.artifact.kind {
                ImageKind::Cubin => "cubin",
                ImageKind::Ptx => "ptx",
            };
            let path =
                targets
                    .out_dir
                    .join(format!("{}.{}.{ext}", k.decl.rust_name, target.name()));
            match written.iter().find(|(p, _)| *p == path) {
                // A device target equal to an explicit arch (or a kernel given twice): one file,
                // listed at each place, so the result keeps one path per (target, kernel).
                Some((_, decl)) if std::ptr::eq(*decl, k.decl) => {}
                Some(_) => {
                    return Err(Error::InvalidArgument(format!(
                    "aot::compile: two different kernels named '{}' would both be written to '{}'",
                    k.decl.rust_name,
                    path.display()
                )))
                }
                None => {
                    std::fs::write(&path, &compiled.artifact.image).map_err(|e| io(&path, e))?;
                    written.push((path.clone(), k.decl));
                }
            }
            paths.push(path);
        }
    }
    Ok(paths)
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::InvalidArgument(format!("aot::compile: writing '{}': {e}", path.display()))
}
