//! [`LaunchConfig`]: grid, block, dynamic shared memory and [`Stream`] of one launch.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::tensor::Device;

/// A backend's queue of work, behind an opbox handle so that no backend's types appear in the
/// launch API. `opbox::cuda::Stream::new(ordinal)` (or `Stream::from_cuda`) makes a CUDA one.
#[derive(Clone)]
pub struct Stream {
    inner: Arc<dyn BackendStream>,
}

/// What a backend's stream object gives the kernel layer; the backend downcasts its own.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) trait BackendStream: Any + Send + Sync {
    fn device(&self) -> Device;
    fn as_any(&self) -> &dyn Any;
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl Stream {
    pub(crate) fn from_backend(inner: Arc<dyn BackendStream>) -> Stream {
        Stream { inner }
    }

    /// The device the stream's work runs on.
    pub fn device(&self) -> Device {
        self.inner.device()
    }

    /// The backend's own stream object, if it is a `T`.
    pub(crate) fn backend<T: 'static>(&self) -> Option<&T> {
        self.inner.as_any().downcast_ref::<T>()
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream({})", self.device())
    }
}

/// Grid, block, dynamic shared memory and stream of one launch.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    /// Blocks per grid, `(x, y, z)`.
    pub grid: (u32, u32, u32),
    /// Threads per block, `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
    /// `None`: the thread's current stream for the device (`opbox::cuda::with_stream`, else the
    /// default stream), where opbox's own copies run, so a launch is ordered after the uploads
    /// that fed it. Another stream is the caller's to order.
    pub stream: Option<Stream>,
}

impl LaunchConfig {
    /// Threads per block of [`LaunchConfig::for_elems`].
    pub const DEFAULT_BLOCK: u32 = 256;

    /// One thread per element, 256 per block, enough blocks to cover `n` (at least one).
    pub fn for_elems(n: usize) -> LaunchConfig {
        let block = Self::DEFAULT_BLOCK;
        let blocks = n.div_ceil(block as usize).clamp(1, u32::MAX as usize) as u32;
        LaunchConfig {
            grid: (blocks, 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes: 0,
            stream: None,
        }
    }

    /// One block of one thread.
    pub fn single() -> LaunchConfig {
        LaunchConfig {
            grid: (1, 1, 1),
            block: (1, 1, 1),
            shared_mem_bytes: 0,
            stream: None,
        }
    }

    /// Sets the grid's dimensions.
    pub fn grid(mut self, x: u32, y: u32, z: u32) -> LaunchConfig {
        self.grid = (x, y, z);
        self
    }

    /// Sets the block's dimensions.
    pub fn block(mut self, x: u32, y: u32, z: u32) -> LaunchConfig {
        self.block = (x, y, z);
        self
    }

    /// Sets the dynamic shared memory per block.
    pub fn shared_mem(mut self, bytes: u32) -> LaunchConfig {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Launch on `stream` instead of the thread's current stream.
    pub fn stream(mut self, stream: Stream) -> LaunchConfig {
        self.stream = Some(stream);
        self
    }
}
