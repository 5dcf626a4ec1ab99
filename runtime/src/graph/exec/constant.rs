//! `abi = "constant_params"` kernels in a CUDA graph: their struct is copied into the module's
//! `params` symbol by a memcpy node, from a device buffer the exec owns.

use cudarc::driver::sys;

use super::{ExecLaunch, GraphExec};
use crate::backend::cuda::current::cuda_stream_for;
use crate::backend::cuda::loader::LoadedKernel;
use crate::error::{Error, Result};
use crate::kernel::OwnedArg;
use crate::tensor::{Device, Tensor};

/// Adds the memcpy node that writes `launch`'s struct into its module's `params` symbol (after
/// `deps`), from a device buffer filled now: a graph copies device to device, so no host buffer
/// has to outlive it. Returns the node, which the kernel node then depends on.
pub(super) fn params_node(
    launch: &mut ExecLaunch,
    loaded: &LoadedKernel,
    exec: &GraphExec,
    deps: &[sys::CUgraphNode],
) -> Result<sys::CUgraphNode> {
    let decl = launch.launch.decl();
    let [OwnedArg::Native { schema, bytes }] = launch.launch.args.as_slice() else {
        return Err(exec.error(format!(
            "kernel {}: abi constant_params takes exactly one struct argument",
            decl.rust_name
        )));
    };
    let stream = cuda_stream_for(exec.ordinal)?;
    let native = crate::kernel::NativeBytes::from_slice(schema, bytes);
    let symbol =
        crate::backend::cuda::submit::params_symbol(decl, loaded, &stream, exec.ordinal, &native)?;
    let src = Tensor::zeros(
        &[bytes.len()],
        crate::tensor::DType::U8,
        Device::Cuda(exec.ordinal as u32),
    )?;
    upload(exec.name, &src, bytes, exec.ordinal)?;
    let len = bytes.len();
    let copy = sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src.device_ptr()?,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: len,
        srcHeight: 1,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: symbol,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: len,
        dstHeight: 1,
        WidthInBytes: len,
        Height: 1,
        Depth: 1,
    };
    exec.context
        .bind_to_thread()
        .map_err(|e| exec.error(format!("binding the context: {e}")))?;
    let mut node: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: `exec.graph` is live and `deps` are its nodes; the copy reads `len` bytes of
    // `src`, a device buffer this launch keeps as long as the exec lives, and writes the
    // `params` symbol of a module the kernel's handle keeps loaded, `len` bytes long (checked by
    // `params_symbol`). Both are in the context passed.
    unsafe {
        sys::cuGraphAddMemcpyNode(
            &mut node,
            exec.graph,
            deps.as_ptr(),
            deps.len(),
            &copy,
            exec.context.cu_ctx(),
        )
    }
    .result()
    .map_err(|e| {
        exec.error(format!(
            "adding the params copy of kernel {}: {e}",
            decl.rust_name
        ))
    })?;
    launch.constant = Some(src);
    Ok(node)
}

/// Writes a struct's bytes into `src` on the thread's current stream (where replays run).
pub(super) fn upload(
    graph: &str,
    src: &Tensor,
    bytes: &[std::mem::MaybeUninit<u8>],
    ordinal: usize,
) -> Result<()> {
    let stream = cuda_stream_for(ordinal)?;
    let dst = src.device_ptr()?;
    // SAFETY: `dst` is `src`'s device buffer, allocated with exactly `bytes.len()` bytes and
    // alive for the call; `bytes` is borrowed for the call, and a pageable source is staged
    // before the call returns. Possibly uninitialized padding is copied as bytes, never read.
    unsafe { cudarc::driver::result::memcpy_htod_async(dst, bytes, stream.cu_stream()) }.map_err(
        |e| Error::Graph {
            graph: graph.to_string(),
            message: format!("writing a constant_params struct on cuda:{ordinal}: {e}"),
        },
    )
}
