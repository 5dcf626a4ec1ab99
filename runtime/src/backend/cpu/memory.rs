//! Host memory for cpu tensors: zeroed, [`CPU_ALIGN`]-aligned, behind a lock.
//!
//! Tensors are shared handles, so writing through `&Tensor` needs the lock. Only `try_read` and
//! `try_write` are used, never a blocking lock, so a thread that reads and writes the same
//! storage at once (a tensor and its own view, say) gets [`Error::StorageBusy`] instead of a
//! deadlock, and no thread ever waits.

use std::any::Any;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

use crate::tensor::storage::{too_big, Memory};
use crate::tensor::Device;
use crate::{Error, Result};

/// The alignment of every cpu buffer, in bytes (a cache line; enough for any SIMD load).
pub const CPU_ALIGN: usize = 64;

/// The unit a cpu buffer is allocated in: its alignment is the buffer's alignment.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub(crate) struct Chunk([u8; CPU_ALIGN]);

const _: () = assert!(std::mem::align_of::<Chunk>() == CPU_ALIGN);
const _: () = assert!(std::mem::size_of::<Chunk>() == CPU_ALIGN);

/// Host memory: zeroed, [`CPU_ALIGN`]-aligned, guarded by a lock.
pub(crate) struct HostMemory {
    chunks: RwLock<Box<[Chunk]>>,
}

impl HostMemory {
    pub(crate) fn zeroed(nbytes: usize) -> Result<HostMemory> {
        let n = nbytes.div_ceil(CPU_ALIGN);
        let chunks: Box<[Chunk]> = if n == 0 {
            Box::new([])
        } else {
            let layout = std::alloc::Layout::array::<Chunk>(n).map_err(|_| too_big(nbytes))?;
            // SAFETY: `layout` has a nonzero size (n > 0 chunks of 64 bytes).
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            if p.is_null() {
                return Err(Error::InvalidArgument(format!(
                    "could not allocate {nbytes} bytes on cpu: out of memory"
                )));
            }
            // SAFETY: `p` is non-null and was allocated by the global allocator with
            // `Layout::array::<Chunk>(n)`, the layout `Box<[Chunk]>` of length n uses, so the Box
            // may own and free it. The bytes are zeroed and all-zero is a valid `Chunk` (it is
            // `Zeroable`), so all n elements are initialised.
            unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p.cast::<Chunk>(), n)) }
        };
        Ok(HostMemory {
            chunks: RwLock::new(chunks),
        })
    }

    /// Shared access to the first `nbytes` bytes. `op` names the caller in errors.
    pub(crate) fn read(&self, op: &str, nbytes: usize) -> Result<HostRead<'_>> {
        let guard = match self.chunks.try_read() {
            Ok(g) => g,
            // A panic inside a with_slice_mut closure poisons the lock; the bytes are still
            // valid elements (they are plain bit patterns), so carry on.
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::StorageBusy(format!(
                    "{op} needs to read the tensor's elements, but they are being written: \
                     a with_slice_mut on this tensor or a view of it is still running, here \
                     or on another thread"
                )))
            }
        };
        Ok(HostRead { guard, nbytes })
    }

    /// Exclusive access to the first `nbytes` bytes. `op` names the caller in errors.
    pub(crate) fn write(&self, op: &str, nbytes: usize) -> Result<HostWrite<'_>> {
        let guard = match self.chunks.try_write() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::StorageBusy(format!(
                    "{op} needs to write the tensor's elements, but they are in use: a \
                     with_slice or with_slice_mut on this tensor or a view of it (or a \
                     tensor sharing its storage) is still running, here or on another thread"
                )))
            }
        };
        Ok(HostWrite { guard, nbytes })
    }
}

impl Memory for HostMemory {
    fn device(&self) -> Device {
        Device::Cpu
    }

    fn host(&self) -> Option<&HostMemory> {
        Some(self)
    }

    fn no_host_access(&self, op: &str) -> Error {
        // Unreachable in practice: `host` is always Some for host memory.
        Error::Unsupported(format!("{op}: host memory is host-accessible"))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Shared access to a storage's bytes; other readers may hold one too, writers get
/// [`Error::StorageBusy`] until it is dropped.
pub(crate) struct HostRead<'a> {
    guard: RwLockReadGuard<'a, Box<[Chunk]>>,
    nbytes: usize,
}

impl HostRead<'_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        let all: &[u8] = bytemuck::cast_slice(&self.guard[..]);
        // nbytes <= chunks * CPU_ALIGN by construction.
        &all[..self.nbytes]
    }
}

/// Exclusive access to a storage's bytes.
pub(crate) struct HostWrite<'a> {
    guard: RwLockWriteGuard<'a, Box<[Chunk]>>,
    nbytes: usize,
}

impl HostWrite<'_> {
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        let all: &mut [u8] = bytemuck::cast_slice_mut(&mut self.guard[..]);
        &mut all[..self.nbytes]
    }
}
