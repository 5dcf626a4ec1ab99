//! The CUDA half of a launch: a [`PreparedLaunch`] goes to `cuLaunchKernel` with the cached
//! function handle and the packed parameter buffer (no launch builder, so no per-launch
//! allocation and no event bookkeeping), on the config's stream, else the thread's current one.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaStream, DevicePtrMut, DriverError};
use opbox_codegen::cuda::{EntryAbi, KernelDecl};

use super::context::{device, MAX_DEVICES};
use super::loader::LoadedKernel;
use super::stream::cuda_stream;
use crate::error::{Error, Result};
use crate::kernel::plan::{LaunchPlan, MAX_PLANNED};
use crate::kernel::prepare::check_aliases;
use crate::kernel::{
    KernelHandle, LaunchArg, LaunchConfig, NativeBytes, PreparedLaunch, MAX_LAUNCH_ARGS,
};
use crate::tensor::Device;

/// The last kernel launched per device, for [`synchronize`]'s message.
static LAST_LAUNCHED: [AtomicPtr<KernelDecl>; MAX_DEVICES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_DEVICES];

/// The name of the last kernel graph replayed per device, when no kernel was launched there
/// after it (a launch clears the kernel slot's null): what [`synchronize`] names then.
static LAST_GRAPH: [AtomicPtr<String>; MAX_DEVICES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_DEVICES];

/// Notes that graph `name` is the last work launched on `cuda:ordinal`.
pub(crate) fn note_graph(ordinal: usize, name: &'static String) {
    if let (Some(kernel), Some(graph)) = (LAST_LAUNCHED.get(ordinal), LAST_GRAPH.get(ordinal)) {
        graph.store((name as *const String).cast_mut(), Ordering::Relaxed);
        kernel.store(std::ptr::null_mut(), Ordering::Relaxed);
    }
}

/// Loads (first time only) and launches `prepared` on its CUDA device. Its rare paths (a
/// config's stream, a constexpr specialization, `constant_params`, another context current,
/// every error) are out of line, so that what a plain launch runs is a short run of code.
pub(crate) fn submit(prepared: &mut PreparedLaunch<'_>) -> Result<()> {
    let handle = prepared.handle();
    let decl = handle.decl();
    let Device::Cuda(ordinal) = prepared.device() else {
        return Err(not_cuda(prepared));
    };
    let ordinal = ordinal as usize;
    let cfg = prepared.config();
    let specialized;
    let loaded: &LoadedKernel = if prepared.constexprs().is_empty() {
        handle.get(ordinal)?
    } else {
        specialized = handle.get_specialized(ordinal, prepared.constexprs())?;
        &specialized
    };
    // The config's stream, else the thread's scoped stream (`with_stream`).
    let scoped;
    let explicit: Option<&Arc<CudaStream>> = match &cfg.stream {
        Some(s) => Some(cuda_stream(s, ordinal, decl)?),
        None => {
            scoped = super::current::scoped(ordinal);
            scoped.as_ref()
        }
    };
    let mut params = [std::ptr::null_mut(); MAX_LAUNCH_ARGS];
    let mut pushed = prepared.param_addresses(&mut params);
    if decl.abi == EntryAbi::ConstantParams {
        constant_params(prepared, loaded, explicit, ordinal)?;
        pushed = 0;
    }
    // SAFETY: `params[..pushed]` point into `prepared`'s packed buffer, which outlives the
    // call; they are exactly the declaration's launch parameters in order (checked by
    // `prepare`), each a device pointer of a live CUDA tensor (kept alive by the caller's borrow
    // for the call) or a value of that parameter's size.
    unsafe { launch_loaded(decl, loaded, explicit, ordinal, cfg, &mut params[..pushed]) }
}

/// A launch of a kernel with a [`LaunchPlan`] (the common shape), checked and packed in one
/// pass: `Ok(false)` when it must go the general way instead (an argument the plan does not
/// take, a config's stream, a graph being recorded), whose checks then give any error.
#[inline(never)]
pub(crate) fn launch_planned(
    handle: &'static KernelHandle,
    plan: &LaunchPlan,
    cfg: &LaunchConfig,
    args: &[LaunchArg<'_>],
) -> Result<bool> {
    if cfg.stream.is_some() || crate::graph::recording() {
        return Ok(false);
    }
    let mut words = [[0u8; 8]; MAX_PLANNED];
    let Some(Device::Cuda(ordinal)) = plan.pack(args, &mut words) else {
        return Ok(false);
    };
    if plan.aliasing() && check_aliases(handle.decl(), args).is_err() {
        return Ok(false);
    }
    let ordinal = ordinal as usize;
    let loaded = handle.get(ordinal)?;
    let scoped = super::current::scoped(ordinal);
    let mut params = [std::ptr::null_mut(); MAX_PLANNED];
    for (param, word) in params.iter_mut().zip(&mut words).take(args.len()) {
        *param = word.as_mut_ptr().cast();
    }
    // SAFETY: `params[..args.len()]` point into `words`, which outlives the call: one word per
    // launch parameter, in order, each the device pointer of a live CUDA tensor (borrowed by
    // `args` for the call), a null one, or a scalar's bytes, as the plan checked them against
    // the declaration (`pack` refused any other argument count).
    unsafe {
        launch_loaded(
            handle.decl(),
            loaded,
            scoped.as_ref(),
            ordinal,
            cfg,
            &mut params[..args.len()],
        )
    }?;
    Ok(true)
}

/// Launches `loaded` with `params` on `explicit`, else the device's default stream (which the
/// loaded kernel caches).
///
/// It does not ask the driver which context is current first, as cudarc's `bind_to_thread`
/// does before every launch: almost always it is the stream's own, and the driver refuses a
/// launch whose function or stream belongs to a context that is not current (or when none is).
/// Only when the launch fails does it look, and if another context (or none) was current, it
/// binds the stream's and launches again; `tests/cuda_interop.rs` holds both cases to that.
///
/// # Safety
/// `params` are the declaration's launch parameters in order, each pointing to a value of its
/// parameter's size that outlives the call (a device pointer of a live allocation for a buffer).
/// The translation unit's static_assert proved at compile time that the entry's C++ signature
/// is the one the declaration implies.
#[inline]
unsafe fn launch_loaded(
    decl: &'static KernelDecl,
    loaded: &LoadedKernel,
    explicit: Option<&Arc<CudaStream>>,
    ordinal: usize,
    cfg: &LaunchConfig,
    params: &mut [*mut std::ffi::c_void],
) -> Result<()> {
    let (cu_stream, cu_ctx) = match explicit {
        Some(s) => (s.cu_stream(), s.context().cu_ctx()),
        None => (loaded.target.stream, loaded.target.context),
    };
    if let Some(last) = LAST_LAUNCHED.get(ordinal) {
        last.store((decl as *const KernelDecl).cast_mut(), Ordering::Relaxed);
    }
    // SAFETY: the caller's contract covers `params`; the function belongs to the module loaded
    // in the stream's context, and a launch while another context is current is refused by
    // the driver, not run. What the kernel does with the grid and the buffers' lengths is the
    // kernel's contract, as with any CUDA launch; faults surface as errors at synchronization.
    let launch = |params: &mut [*mut std::ffi::c_void]| unsafe {
        result::launch_kernel(
            loaded.target.function,
            cfg.grid,
            cfg.block,
            cfg.shared_mem_bytes,
            cu_stream,
            params,
        )
    };
    match launch(params) {
        Ok(()) => Ok(()),
        Err(e) => relaunch_bound(decl, explicit, ordinal, cu_ctx, e, || launch(params)),
    }
}

/// A launch failed with `error`: if the stream's context `cu_ctx` was not the thread's current
/// one, makes it current and launches again (`launch`); otherwise the launch really failed.
#[cold]
#[inline(never)]
fn relaunch_bound(
    decl: &KernelDecl,
    explicit: Option<&Arc<CudaStream>>,
    ordinal: usize,
    cu_ctx: sys::CUcontext,
    error: DriverError,
    launch: impl FnOnce() -> std::result::Result<(), DriverError>,
) -> Result<()> {
    let current = result::ctx::get_current().map_err(|e| launch_failed(decl, ordinal, e))?;
    if current == Some(cu_ctx) {
        return Err(launch_failed(decl, ordinal, error));
    }
    bind(decl, explicit, ordinal)?;
    launch().map_err(|e| launch_failed(decl, ordinal, e))
}

/// `abi = constant_params`: the one struct goes to the module's `params` symbol, ordered on the
/// stream before the launch (and after any earlier launch on it); the entry takes no
/// parameters.
#[inline(never)]
fn constant_params(
    prepared: &PreparedLaunch<'_>,
    loaded: &LoadedKernel,
    explicit: Option<&Arc<CudaStream>>,
    ordinal: usize,
) -> Result<()> {
    let decl = prepared.decl();
    let [LaunchArg::Native(n)] = prepared.args() else {
        return Err(Error::InvalidArgument(format!(
            "kernel {}: abi constant_params takes exactly one struct argument",
            decl.rust_name
        )));
    };
    let stream = match explicit {
        Some(s) => s,
        None => &device(ordinal)?.stream,
    };
    write_params(decl, loaded, stream, ordinal, n)
}

/// Makes the launch's context current on this thread (another one, or none, was).
#[cold]
#[inline(never)]
fn bind(decl: &KernelDecl, explicit: Option<&Arc<CudaStream>>, ordinal: usize) -> Result<()> {
    let context = match explicit {
        Some(s) => s.context(),
        None => &device(ordinal)?.context,
    };
    context
        .bind_to_thread()
        .map_err(|e| launch_failed(decl, ordinal, e))
}

#[cold]
#[inline(never)]
fn launch_failed(decl: &KernelDecl, ordinal: usize, e: DriverError) -> Error {
    Error::Cuda {
        kernel: decl.rust_name.to_string(),
        message: format!("launch on cuda:{ordinal} failed: {e}"),
    }
}

#[cold]
#[inline(never)]
fn not_cuda(prepared: &PreparedLaunch<'_>) -> Error {
    Error::InvalidArgument(format!(
        "kernel {}: a launch on {} reached the CUDA backend",
        prepared.decl().rust_name,
        prepared.device()
    ))
}

/// The device address of `loaded`'s `__constant__ params` symbol, checked to hold `n`.
pub(crate) fn params_symbol(
    decl: &KernelDecl,
    loaded: &LoadedKernel,
    stream: &Arc<CudaStream>,
    ordinal: usize,
    n: &NativeBytes<'_>,
) -> Result<sys::CUdeviceptr> {
    let mut global = loaded
        .module
        .get_global("params", stream)
        .map_err(|e| driver(decl, ordinal, "finding the __constant__ symbol 'params'", e))?;
    if global.len() != n.len() {
        return Err(Error::Cuda {
            kernel: decl.rust_name.to_string(),
            message: format!(
                "the module's 'params' symbol has {} bytes, but {} has {}",
                global.len(),
                n.schema.rust_name,
                n.len()
            ),
        });
    }
    let (dst, _sync) = global.device_ptr_mut(stream);
    Ok(dst)
}

fn driver(decl: &KernelDecl, ordinal: usize, what: &str, e: DriverError) -> Error {
    Error::Cuda {
        kernel: decl.rust_name.to_string(),
        message: format!("{what} on cuda:{ordinal}: {e}"),
    }
}

/// Copies `n` into `loaded`'s `__constant__ params` symbol on `stream`.
fn write_params(
    decl: &KernelDecl,
    loaded: &LoadedKernel,
    stream: &Arc<CudaStream>,
    ordinal: usize,
    n: &NativeBytes<'_>,
) -> Result<()> {
    let dst = params_symbol(decl, loaded, stream, ordinal, n)?;
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| driver(decl, ordinal, "binding the context", e))?;
    let src = n.as_uninit();
    // SAFETY: `dst` is the module's `params` symbol, exactly `src.len()` bytes (checked above),
    // alive while `loaded` is; `src` is borrowed for the call and a pageable source is staged
    // before the call returns. The copy is ordered on `stream` before the launch that follows.
    unsafe { result::memcpy_htod_async(dst, src, stream.cu_stream()) }
        .map_err(|e| driver(decl, ordinal, "writing 'params'", e))
}

/// Waits for all work on device `ordinal` and returns any fault it raised, such as an illegal
/// address in a kernel, as `Error::Cuda` naming the last kernel launched there. After such a
/// fault the device's context is unusable for the rest of the process (CUDA's rule).
pub fn synchronize(ordinal: usize) -> Result<()> {
    let dev = device(ordinal)?;
    dev.context.synchronize().map_err(|e| {
        let last = LAST_LAUNCHED
            .get(ordinal)
            .map(|p| p.load(Ordering::Relaxed))
            .unwrap_or(std::ptr::null_mut());
        // SAFETY: LAST_LAUNCHED only ever holds null or a `&'static KernelDecl` (from a
        // `&'static KernelHandle`), which lives for the whole process.
        let kernel = match unsafe { last.as_ref() } {
            Some(d) => d.rust_name.to_string(),
            None => {
                let graph = LAST_GRAPH
                    .get(ordinal)
                    .map(|p| p.load(Ordering::Relaxed))
                    .unwrap_or(std::ptr::null_mut());
                // SAFETY: LAST_GRAPH only ever holds null or an interned, leaked `&'static
                // String` (graph/exec.rs), alive for the whole process.
                match unsafe { graph.as_ref() } {
                    Some(name) => {
                        return Error::Graph {
                            graph: name.clone(),
                            message: format!(
                                "a kernel on cuda:{ordinal} failed during a replay (reported at synchronization; this graph was the last work launched there): {e}"
                            ),
                        }
                    }
                    None => format!("device cuda:{ordinal}"),
                }
            }
        };
        Error::Cuda {
            kernel,
            message: format!(
                "a kernel on cuda:{ordinal} failed (reported at synchronization; this was the last kernel launched there): {e}"
            ),
        }
    })
}
