//! cuBLAS for CUDA kernels: one handle per (device, stream), bound to that stream, created on
//! first use and kept (cuBLAS handles are costly to make and PyTorch keeps them too).
//! libcublas is loaded at run time like the driver: without it, [`handle`] is
//! [`Error::NoCuda`] naming the library, and nothing else changes.
//!
//! ```ignore
//! let blas = opbox::cuda::cublas::current_handle(0)?;   // this thread's current stream
//! unsafe { opbox::cuda::cudarc::cublas::result::sgemm(*blas.handle(), ...) }?;
//! ```

use std::sync::{Arc, Mutex};

use cudarc::cublas::CudaBlas;

use super::current::cuda_stream_for;
use super::probe;
use crate::kernel::Stream;
use crate::{Error, Result};

/// The handles made so far, by (device ordinal, raw stream). Each holds its stream (an `Arc`), so
/// a key's stream cannot be freed and its address reused while the entry lives.
static HANDLES: Mutex<Vec<(StreamKey, Arc<CudaBlas>)>> = Mutex::new(Vec::new());

/// (device ordinal, raw `CUstream` as an address).
type StreamKey = (u32, usize);

/// The cuBLAS handle bound to `stream` (made on first use). Work submitted with it runs on
/// `stream`, ordered with opbox's launches and copies there.
pub fn handle(stream: &Stream) -> Result<Arc<CudaBlas>> {
    probe::cublas()?;
    let cuda = stream
        .as_cuda()
        .ok_or_else(|| Error::InvalidArgument(format!("cublas: {stream:?} is no CUDA stream")))?;
    let key = (cuda.context().ordinal() as u32, cuda.cu_stream() as usize);
    // A panic while the lock was held cannot leave the list half-written (push is the only
    // write), so a poisoned lock is still good.
    let mut handles = HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, h)) = handles.iter().find(|(k, _)| *k == key) {
        return Ok(h.clone());
    }
    let blas = CudaBlas::new(cuda.clone()).map_err(|e| Error::Cuda {
        kernel: format!("device {} (creating a cuBLAS handle)", stream.device()),
        message: e.to_string(),
    })?;
    let blas = Arc::new(blas);
    handles.push((key, blas.clone()));
    Ok(blas)
}

/// The cuBLAS handle of this thread's current stream on `cuda:ordinal` (see
/// [`current_stream`](super::current::current_stream)).
pub fn current_handle(ordinal: usize) -> Result<Arc<CudaBlas>> {
    probe::cublas()?;
    handle(&Stream::from_cuda(cuda_stream_for(ordinal)?))
}

/// The number of handles made so far (one per (device, stream) used), for tests.
pub fn handle_count() -> usize {
    HANDLES.lock().unwrap_or_else(|p| p.into_inner()).len()
}
