//! The current stream and device of a thread, as PyTorch's CUDA helpers give them:
//! [`current_stream`], a scoped [`with_stream`] that launches, copies and allocations honour,
//! a [`stream_from_pool`], a [`DeviceGuard`], [`synchronize_stream`], and the raw `CUstream`
//! ([`Stream::cu_stream`]) for interop.
//!
//! # What "current" means
//!
//! Each thread has, per device, a current stream: the innermost [`with_stream`] for that device,
//! else the device's default (legacy) stream. opbox queues its work for a device on it:
//! - launches whose [`LaunchConfig`](crate::kernel::LaunchConfig) names no stream;
//! - tensor allocations (`Tensor::empty` on cuda) and the copies `to`, `copy_from`, `to_vec`,
//!   `fill_` make (each copy also waits for its stream before returning);
//! - the cuBLAS handle [`cublas::current_handle`](super::cublas::current_handle) gives.
//!
//! So work inside one `with_stream` is ordered. Work on two streams is not: a tensor made or
//! written under stream A and read under stream B needs `synchronize_stream(&a)` (or an event)
//! in between, as in PyTorch (where `record_stream` covers the allocator's half of it).
//!
//! Nothing here is on the dispatch path; a launch reads one thread-local (a length) when no
//! stream is scoped.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaStream;

use super::context::{device, MAX_DEVICES};
use crate::kernel::Stream;
use crate::{Error, Result};

thread_local! {
    /// The scoped streams, innermost last: (device ordinal, stream).
    static SCOPED: RefCell<Vec<(u32, Arc<CudaStream>)>> = const { RefCell::new(Vec::new()) };
    /// How many scopes `SCOPED` holds: a plain `Cell` with no destructor, so the question every
    /// launch asks (is anything scoped?) is one load, with no lazy-destructor check and no
    /// borrow.
    static SCOPES: Cell<usize> = const { Cell::new(0) };
    /// In a loaded plugin, the host's streams it has been handed, wrapped:
    /// (device ordinal, `CUstream` address, wrapper).
    static BORROWED: RefCell<Vec<(usize, usize, Arc<CudaStream>)>> = const { RefCell::new(Vec::new()) };
    /// The device a [`DeviceGuard`] made current, if any.
    static DEVICE: Cell<Option<u32>> = const { Cell::new(None) };
}

/// The innermost scoped stream of `cuda:ordinal` on this thread, if any. In a loaded plugin, a
/// scope of its own comes first, then the stream its host made current (plugin ABI 1.2): the
/// plugin's runtime is a copy with thread-locals of its own, and without asking, its work would
/// go to the legacy default stream, which does not wait for the host's non-blocking streams.
///
/// Every launch asks, and almost always nothing is scoped: that answer is a thread-local read
/// and a null check, with the searches out of line.
#[inline]
pub(crate) fn scoped(ordinal: usize) -> Option<Arc<CudaStream>> {
    if SCOPES.get() > 0 {
        let own = SCOPED
            .try_with(|s| innermost(&s.borrow(), ordinal))
            .ok()
            .flatten();
        if own.is_some() {
            return own;
        }
    }
    // Only a loaded plugin has a host to ask.
    crate::plugin::guest::host()?;
    host_scoped(ordinal)
}

#[inline(never)]
fn innermost(scopes: &[(u32, Arc<CudaStream>)], ordinal: usize) -> Option<Arc<CudaStream>> {
    scopes
        .iter()
        .rev()
        .find(|(o, _)| *o as usize == ordinal)
        .map(|(_, st)| st.clone())
}

/// The host's current stream on `cuda:ordinal`, when this image is a loaded plugin and the host
/// has one scoped, as a borrowed cudarc stream. The wrappers are kept per thread (a few), so a
/// plugin's copies do not allocate one each.
#[inline(never)]
fn host_scoped(ordinal: usize) -> Option<Arc<CudaStream>> {
    /// Enough for a pool's streams on a device or two; the oldest goes first past it.
    const KEPT: usize = 16;
    let raw = crate::plugin::call_stream::host_current_stream(ordinal)?;
    BORROWED
        .try_with(|kept| {
            let mut kept = kept.borrow_mut();
            if let Some((_, _, s)) = kept
                .iter()
                .find(|(o, r, _)| *o == ordinal && *r == raw as usize)
            {
                return Some(s.clone());
            }
            let context = &device(ordinal).ok()?.context;
            // SAFETY: the host's stream of this device, whose context is the same primary
            // context; it is live while the host's scope lasts, which covers the plugin call
            // that asked. A kept wrapper is used again only when the host names the same
            // handle again, so the stream is live then too; dropping one destroys nothing.
            let s = unsafe { context.wrap_borrowed_stream(raw.cast()) };
            if kept.len() == KEPT {
                kept.remove(0);
            }
            kept.push((ordinal, raw as usize, s.clone()));
            Some(s)
        })
        .ok()
        .flatten()
}

/// The cudarc stream opbox queues `cuda:ordinal`'s work on, on this thread.
pub(crate) fn cuda_stream_for(ordinal: usize) -> Result<Arc<CudaStream>> {
    match scoped(ordinal) {
        Some(s) => Ok(s),
        None => Ok(device(ordinal)?.stream.clone()),
    }
}

/// This thread's current stream on `cuda:ordinal`: the innermost [`with_stream`] for it, else
/// the device's default stream.
pub fn current_stream(ordinal: usize) -> Result<Stream> {
    Ok(Stream::from_cuda(cuda_stream_for(ordinal)?))
}

/// The device's default (legacy) stream, whatever is scoped.
pub fn default_stream(ordinal: usize) -> Result<Stream> {
    Ok(Stream::from_cuda(device(ordinal)?.stream.clone()))
}

/// Runs `f` with `stream` as this thread's current stream on its device: launches without an
/// explicit stream, allocations and copies on that device go to it. Scopes nest; the previous
/// stream is current again when `f` returns or unwinds. A stream of no CUDA device scopes
/// nothing.
pub fn with_stream<R>(stream: &Stream, f: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            let _ = SCOPED.try_with(|s| s.borrow_mut().pop());
            SCOPES.set(SCOPES.get() - 1);
        }
    }
    let Some(cuda) = stream.as_cuda() else {
        return f();
    };
    let ordinal = cuda.context().ordinal() as u32;
    SCOPED.with(|s| s.borrow_mut().push((ordinal, cuda.clone())));
    SCOPES.set(SCOPES.get() + 1);
    let _pop = Pop;
    f()
}

/// Streams per device in the pool: enough for independent work to overlap, few enough that
/// each is reused (PyTorch keeps 32 per priority; opbox's users run far fewer at once).
pub const POOL_STREAMS: usize = 8;

struct Pool {
    streams: Vec<Stream>,
    next: AtomicUsize,
}

static POOLS: [OnceLock<Pool>; MAX_DEVICES] = [const { OnceLock::new() }; MAX_DEVICES];

/// A stream from `cuda:ordinal`'s pool, round robin over [`POOL_STREAMS`] streams created on
/// first use (non-blocking: they do not wait for the default stream).
pub fn stream_from_pool(ordinal: usize) -> Result<Stream> {
    let slot = POOLS.get(ordinal).ok_or_else(|| Error::Cuda {
        kernel: format!("device cuda:{ordinal}"),
        message: format!("opbox supports device ordinals below {MAX_DEVICES}"),
    })?;
    let pool = match slot.get() {
        Some(p) => p,
        None => {
            let streams = (0..POOL_STREAMS)
                .map(|_| Stream::new_cuda(ordinal))
                .collect::<Result<Vec<_>>>()?;
            // Two threads may both build a pool; one wins and the other's streams are dropped.
            slot.get_or_init(|| Pool {
                streams,
                next: AtomicUsize::new(0),
            })
        }
    };
    let i = pool.next.fetch_add(1, Ordering::Relaxed) % POOL_STREAMS;
    Ok(pool.streams[i].clone())
}

/// Waits on the host until the work queued on `stream` is done.
pub fn synchronize_stream(stream: &Stream) -> Result<()> {
    let cuda = stream.as_cuda().ok_or_else(|| {
        Error::InvalidArgument(format!("synchronize_stream: {stream:?} is no CUDA stream"))
    })?;
    cuda.synchronize().map_err(|e| Error::Cuda {
        kernel: format!("device {} (synchronizing a stream)", stream.device()),
        message: e.to_string(),
    })
}

impl Stream {
    /// The raw driver handle, for interop with code that takes a `CUstream` (cuBLAS, cuDNN,
    /// another library's launches); null is the legacy default stream. `None` for a stream of
    /// no CUDA device. The handle lives as long as this `Stream` (or a clone).
    pub fn cu_stream(&self) -> Option<cudarc::driver::sys::CUstream> {
        self.as_cuda().map(|s| s.cu_stream())
    }

    /// [`synchronize_stream`] on this stream.
    pub fn synchronize(&self) -> Result<()> {
        synchronize_stream(self)
    }
}

/// Makes `cuda:ordinal` this thread's current device (its context bound, as `cudaSetDevice`
/// does) until dropped, when the previous device is current again: PyTorch's
/// `CUDAGuard`. Raw driver and library calls (cuBLAS, `cu*` through `opbox::cuda::cudarc`) on
/// this thread then reach that device.
#[must_use = "the device is current only while the guard lives"]
pub struct DeviceGuard {
    previous: Option<u32>,
}

impl DeviceGuard {
    /// Makes `cuda:ordinal` this thread's current device (its context bound) until the guard drops;
    /// an error when the device is not there.
    pub fn new(ordinal: usize) -> Result<DeviceGuard> {
        bind(ordinal)?;
        let previous = DEVICE.with(|d| d.replace(Some(ordinal as u32)));
        Ok(DeviceGuard { previous })
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        let _ = DEVICE.try_with(|d| d.set(self.previous));
        if let Some(p) = self.previous {
            // Re-binding a device that was bound before cannot fail short of a lost context,
            // and a destructor has no one to report to.
            let _ = bind(p as usize);
        }
    }
}

fn bind(ordinal: usize) -> Result<()> {
    device(ordinal)?
        .context
        .bind_to_thread()
        .map_err(|e| Error::Cuda {
            kernel: format!("device cuda:{ordinal} (making it current)"),
            message: e.to_string(),
        })
}

/// This thread's current device: the innermost [`DeviceGuard`]'s, else 0.
pub fn current_device() -> usize {
    DEVICE.with(|d| d.get()).unwrap_or(0) as usize
}
