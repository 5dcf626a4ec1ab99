//! [`launch`]: what `#[extern_kernel]`'s generated `launch(cfg, args…)` calls. Two steps:
//! check and pack ([`prepare`](fn@super::prepare()), backend-neutral), then submit to the
//! backend of the tensors' device. A kernel with a [`LaunchPlan`](super::plan::LaunchPlan)
//! first tries the CUDA backend's one-pass launch, which takes the usual launch and leaves the
//! rest (and every error) to those two steps.
//!
//! Kernels run asynchronously: a fault inside one (an illegal address, say) is reported by the
//! next call that synchronizes, such as `opbox::cuda::synchronize` or a download.

use opbox_codegen::cuda::ConstValue;

use super::arg::LaunchArg;
use super::config::LaunchConfig;
use super::handle::KernelHandle;
use super::prepare::{prepare, ParamBuffer, PreparedLaunch};
use crate::error::{Error, Result};
use crate::tensor::Device;

/// Checks `args` against `handle`'s declaration, then launches it with `cfg`, specialized by
/// `constexprs` (one value per `#[constexpr]` param, in declaration order).
#[inline]
pub fn launch(
    handle: &'static KernelHandle,
    cfg: &LaunchConfig,
    args: &[LaunchArg<'_>],
    constexprs: &[ConstValue],
) -> Result<()> {
    #[cfg(feature = "cuda")]
    if let (Some(plan), []) = (handle.plan(), constexprs) {
        if crate::backend::cuda::submit::launch_planned(handle, plan, cfg, args)? {
            return Ok(());
        }
    }
    let mut buffer = ParamBuffer::new();
    let mut prepared = prepare(handle, cfg, args, constexprs, &mut buffer)?;
    submit(&mut prepared)
}

/// Runs a prepared launch on its device's backend; while this thread records a kernel graph
/// ([`record`](fn@crate::graph::record)), the launch is recorded instead.
pub fn submit(prepared: &mut PreparedLaunch<'_>) -> Result<()> {
    if crate::graph::recording() {
        return crate::graph::record::record_launches(None, std::slice::from_ref(prepared), None)
            .map(drop);
    }
    match prepared.device() {
        #[cfg(feature = "cuda")]
        Device::Cuda(_) => crate::backend::cuda::submit::submit(prepared),
        Device::Cpu => crate::backend::cpu::dsl::submit(prepared),
        device => Err(no_backend(prepared, device)),
    }
}

#[cold]
#[inline(never)]
fn no_backend(prepared: &PreparedLaunch<'_>, device: Device) -> Error {
    let reason = if cfg!(feature = "cuda") {
        format!("extern kernels run on CUDA devices; its tensors are on {device}")
    } else {
        "opbox-runtime was built without its \"cuda\" feature".to_string()
    };
    Error::NoCuda {
        reason: format!(
            "cannot launch kernel {}: {reason}",
            prepared.decl().rust_name
        ),
    }
}
