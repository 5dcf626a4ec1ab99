//! CUDA streams behind opbox's backend-neutral [`Stream`] handle.

use std::any::Any;
use std::sync::Arc;

use cudarc::driver::CudaStream;
use opbox_codegen::cuda::KernelDecl;

use super::context::device;
use crate::error::{Error, Result};
use crate::kernel::config::BackendStream;
use crate::kernel::Stream;
use crate::tensor::Device;

struct CudaStreamHandle {
    ordinal: u32,
    stream: Arc<CudaStream>,
}

impl BackendStream for CudaStreamHandle {
    fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Stream {
    /// A new stream on CUDA device `ordinal`: launches on it are ordered with each other, and
    /// with nothing else until the caller synchronizes.
    pub fn new_cuda(ordinal: usize) -> Result<Stream> {
        let dev = device(ordinal)?;
        let stream = dev.context.new_stream().map_err(|e| Error::Cuda {
            kernel: format!("device cuda:{ordinal}"),
            message: format!("creating a stream: {e}"),
        })?;
        Ok(Stream::from_cuda(stream))
    }

    /// Wraps a cudarc stream, for code that already has one.
    pub fn from_cuda(stream: Arc<CudaStream>) -> Stream {
        let ordinal = stream.context().ordinal() as u32;
        Stream::from_backend(Arc::new(CudaStreamHandle { ordinal, stream }))
    }

    /// The cudarc stream, when this is a CUDA stream.
    pub fn as_cuda(&self) -> Option<&Arc<CudaStream>> {
        self.backend::<CudaStreamHandle>().map(|h| &h.stream)
    }
}

/// The cudarc stream of `stream`, which a launch of `decl` on `cuda:ordinal` is to use.
pub(crate) fn cuda_stream<'s>(
    stream: &'s Stream,
    ordinal: usize,
    decl: &KernelDecl,
) -> Result<&'s Arc<CudaStream>> {
    match stream.backend::<CudaStreamHandle>() {
        Some(h) if h.ordinal as usize == ordinal => Ok(&h.stream),
        _ => Err(Error::InvalidArgument(format!(
            "kernel {}: its tensors are on cuda:{ordinal}, but the launch config's stream is on {}; \
             use a stream of that device (opbox::kernel::Stream::new_cuda({ordinal}))",
            decl.rust_name,
            stream.device()
        ))),
    }
}
